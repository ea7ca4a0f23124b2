/* Shared parts of the libFuzzer targets (tests/fuzz/fuzz_*.c): decoding a
 * fuzzer input into a problem, exact-size buffers, a host-side model of the
 * documented contracts, and the checks every target applies.
 *
 * Decoding: choice bytes are read from the front of the input, a read past
 * the end gives 0, and the all-zero input is a small valid problem; nonzero
 * bytes pick the interesting cases (vocabularies that cross noise blocks of
 * 16 and mask words of 32, special values, malformed arguments).  Bulk
 * values (logits, weights, seeds) come from a PRNG seeded by bytes read from
 * the back of the input, then explicit edits from the input put special
 * values (NaN, +-inf, huge, denormal) where the fuzzer chooses.
 *
 * Every buffer handed to the library is malloc'd at exactly its documented
 * size (fz_alloc), so AddressSanitizer reports any read or write past it.
 * A contract violation prints what was expected and aborts: libFuzzer
 * saves the input as a crash. */
#ifndef FZ_SUPPORT_H
#define FZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "flashspec.h"

/* ---- input decoding ------------------------------------------------------ */
typedef struct fz_in {
    const uint8_t *p;
    size_t n, at, tail; /* choices are read from the front, seeds from the back */
} fz_in;

void fz_begin(fz_in *in, const uint8_t *data, size_t size);
uint8_t fz_u8(fz_in *in);
uint32_t fz_u32(fz_in *in);
uint64_t fz_u64(fz_in *in);
/* A 64-bit seed for bulk values, read from the end of the input backwards
 * (0 when the bytes run out), so that every choice stays near the front
 * where short inputs reach it. */
uint64_t fz_seed(fz_in *in);
/* A choice in [0, n) (one byte, two when n > 256). */
int64_t fz_below(fz_in *in, int64_t n);
/* 1 with probability k/256 for a random byte, 0 for a zero byte. */
int fz_chance(fz_in *in, int k);
/* An element of a table. */
#define FZ_PICK(in, table) ((table)[fz_below((in), (int64_t)(sizeof(table) / sizeof((table)[0])))])

/* ---- buffers ------------------------------------------------------------- */
/* malloc of exactly `bytes` (0 allowed), freed by fz_end(). */
void *fz_alloc(size_t bytes);
void *fz_dup(const void *src, size_t bytes);
/* Free every buffer of this input. */
void fz_end(void);

/* ---- failures ------------------------------------------------------------ */
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
void fz_fail(const char *fmt, ...);
#define FZ_CHECK(cond, ...)                                                                  \
    do {                                                                                     \
        if (!(cond))                                                                         \
            fz_fail(__VA_ARGS__);                                                            \
    } while (0)

/* The CPU context of the process (created once). */
fs_context *fz_ctx(void);

/* ---- problems -------------------------------------------------------------
 * The scanned rows of one call (logits or hidden states) and the parameters
 * of its requests.  l[row * V + v] is the logit the library must see; when
 * known[] is 0 the value is not determined by the inputs alone (a fused dot
 * product of huge finite terms, whose rounding depends on summation order),
 * and only the order-independent contracts are checked on that row. */
typedef struct fz_problem {
    int fused;
    fs_dtype dt;
    int64_t rows, V, D;
    void *logits;          /* logits variant: [rows, V] in dt */
    void *weight, *hidden; /* fused: [V, D] and [rows, D] in dt */
    fs_lm_head head;
    float *l;              /* [rows, V] */
    uint8_t *known;        /* [rows, V] */
    int64_t requests;
    float *temperature;    /* [requests] */
    uint64_t *seed;        /* [requests] */
    uint64_t *offset;      /* [requests] or NULL */
    float *bias;           /* [rows, V] or NULL */
    uint32_t *allowed;     /* [rows, ceil(V / 32)] or NULL */
    fs_sampling params;
} fz_problem;

/* Choose V, D, dtype and the input variant's values for `rows` rows
 * (fused = -1: the input chooses). */
void fz_gen_inputs(fz_in *in, fz_problem *p, int fused, int64_t rows);
/* Temperatures, seeds, offsets for `requests`, bias and mask for every row. */
void fz_gen_params(fz_in *in, fz_problem *p, int64_t requests);
/* A CPU scan tile size for this input (0 = the default). */
int64_t fz_gen_tile(fz_in *in, int64_t V);

/* ---- the documented semantics --------------------------------------------- */
int32_t fz_temperature_status(float T); /* FS_ROW_OK or FS_ROW_BAD_TEMPERATURE */
int fz_is_greedy(float T);               /* T < FS_MIN_TEMPERATURE */
float fz_inv_temp(float T);              /* 1 for greedy rows, else 1 / T (float) */
int fz_allowed(const fz_problem *p, int64_t row, int64_t v);

/* What the documented law says about one scanned row at 1/T = inv:
 * status_mask has bit s set for each row status it may have (OK,
 * NONFINITE, ALL_MASKED); when exact, argmax (lowest id among the max
 * finite scores) and lse (log-sum-exp of the finite allowed scores, in
 * double) are defined. */
typedef struct fz_rowref {
    unsigned status_mask;
    int exact;
    int32_t argmax;
    float max_s;
    double lse;
} fz_rowref;
void fz_row_ref(const fz_problem *p, int64_t row, float inv, fz_rowref *ref);
/* Score (l + b) * inv of a token; *known = 0 if not determined. */
float fz_score(const fz_problem *p, int64_t row, int64_t v, float inv, int *known);
/* tok can be emitted from the row: in [0, V), allowed, finite score (> -inf). */
void fz_check_token(const fz_problem *p, int64_t row, int32_t tok, float inv, const char *what,
                    int64_t index);
/* lp is the log-probability of tok under softmax of the row's scores at inv
 * (finite, <= 0, and within rounding of the double reference when exact). */
void fz_check_logprob(const fz_problem *p, int64_t row, int32_t tok, float inv,
                      const fz_rowref *ref, float lp, const char *what, int64_t index);

/* ---- calls ------------------------------------------------------------------ */
typedef enum fz_op {
    FZ_SAMPLE = 0,
    FZ_ARGMAX = 1,
    FZ_VERIFY = 2
} fz_op;

/* One call of a public op, with every argument as it will be passed. */
typedef struct fz_call {
    fz_op op;
    int fused;
    fs_context *ctx;
    const fs_lm_head *head;
    fs_lm_head head_v;
    const void *input; /* hidden (fused) or logits */
    fs_dtype dtype;    /* logits dtype (logits variant) */
    int64_t rows;      /* sample / argmax */
    int64_t vocab;     /* logits variant (fused: head_v.vocab_size) */
    const fs_sampling *params;
    fs_sampling params_v;
    const fs_drafts *drafts;
    fs_drafts drafts_v;
    void *ws;
    size_t ws_bytes;
    int32_t *tok;
    float *vals;
    int32_t *nem;
    int32_t *st;
    size_t tok_n, vals_n, nem_n, st_n; /* element counts of the outputs */
} fz_call;

/* A well-formed call over p (drafts: verify's, else NULL), outputs and
 * workspace allocated at their documented sizes; *need = the workspace
 * size the query returned. */
void fz_call_init(fz_call *c, fz_op op, fz_problem *p, const fs_drafts *drafts, int vals,
                  size_t *need);
/* Maybe break host-visible arguments (NULL pointers, bad sizes and dtypes,
 * small workspace): rarely, so most inputs reach the per-row checks. */
void fz_corrupt(fz_in *in, fz_call *c, size_t need);
/* Bitmask (bit s = fs_status s) of the host-level errors the call's
 * arguments violate; 0 when none. */
unsigned fz_host_expect(const fz_call *c, size_t need);
fs_status fz_invoke(const fz_call *c);
/* Invoke with canaries in the outputs.  A call that breaks a host-level
 * rule must return one of the matching statuses, write no output and leave
 * a message (returns 0); any other call must return FS_OK or
 * FS_ERR_INVALID_ROWS, the latter iff some row status is not FS_ROW_OK
 * (returns 1: outputs written, for the op's own checks).  Inputs are never
 * written. */
int fz_run(const fz_call *c, size_t need, const fz_problem *p, fs_status *status);
/* The same call with the scan tile set to `tile`, into fresh outputs:
 * tokens, statuses and counts must be identical, values within rounding. */
void fz_check_rerun(const fz_call *c, int64_t tile);

/* The workspace query of the op with these sizes (rows = scanned rows for
 * sample / argmax, requests and num_draft_tokens for verify): its status
 * against the documented rules, and no write on failure. */
void fz_check_workspace_query(fz_in *in, fz_op op, int64_t rows, int64_t requests,
                              int64_t num_draft_tokens, int64_t vocab);

/* ---- shared run checks, generalised -----------------------------------------
 * fz_run's contract for any op: the outputs listed (each `bytes` long, NULL
 * ones skipped) hold canaries before the call; a call whose arguments break
 * a host rule (expect != 0: the bitmask of acceptable errors) must return
 * one of them, write none of the outputs and leave a message (returns 0);
 * any other call must return FS_OK or FS_ERR_INVALID_ROWS, the latter iff
 * some of the st_n row statuses is not FS_ROW_OK, each in
 * [FS_ROW_OK, max_row_status] (returns 1).  The inputs registered with
 * fz_watch (fz_call_init registers the ones it knows) are never written. */
typedef struct fz_out {
    void *p;
    size_t bytes;
} fz_out;
int fz_run_outputs(const char *name, fs_context *ctx, unsigned expect,
                   fs_status (*invoke)(const void *call), const void *call, const fz_out *outs,
                   int nouts, const int32_t *st, size_t st_n, int32_t max_row_status,
                   fs_status *status);
/* Register one more input that no call may write (after fz_call_init). */
void fz_watch(const void *p, size_t bytes);
/* Offsets of a ragged layout well-formed: start at 0, never decrease, end at
 * total. */
int fz_layout_ok(const int32_t *off, int64_t requests, int64_t total);

/* ---- filters (top-k / top-p / min-p) ------------------------------------------
 * Per-request filter arrays in p->params, each present or NULL as the input
 * chooses, with valid, edge and bad values (k < 0, p outside (0, 1], min-p
 * outside [0, 1), NaN, raw bits), and sometimes out_filter_fallback. */
void fz_gen_filters(fz_in *in, fz_problem *p, int64_t requests);
/* The documented FS_ROW_BAD_FILTER rule for request r of p->params. */
int32_t fz_filter_status(const fz_problem *p, int64_t r);
/* Some filter of request r is on (top_k in (0, V), top_p < 1, min_p > 0). */
int fz_filter_on(const fz_problem *p, int64_t r);
/* fz_run for sample / verify calls whose statuses may be FS_ROW_BAD_FILTER;
 * out_filter_fallback (c->params_v's, when set) is one more output. */
int fz_run_filters(const fz_call *c, size_t need, fs_status *status);

/* The kept set F = {finite s >= t} of a filtered row, computed from its
 * scores by the documented rule (order by score; top-k, then top-p over the
 * renormalised top-k mass, then min-p; ties at a threshold kept), with float
 * near-ties made explicit: every score >= hi is kept, no score < lo is, and
 * lo < hi only when a top-p mass or a min-p difference lies within rounding
 * of its threshold.  lse is the log-sum-exp (double) of {s >= hi}. */
typedef struct fz_kept {
    float lo, hi;
    double lse;
    float max_s;
} fz_kept;
/* Row `row` at 1/T = inv, scored exactly (fz_rowref.exact) and sampling
 * (not greedy), with the filters of request r. */
void fz_kept_ref(const fz_problem *p, int64_t row, float inv, int64_t r, fz_kept *k);
/* tok is in the kept set (up to near-ties): its score is >= lo. */
void fz_check_kept(const fz_problem *p, int64_t row, int32_t tok, float inv, const fz_kept *k,
                   const char *what, int64_t index);

/* ---- tree verify ---------------------------------------------------------------
 * One fs_verify_tree / fs_verify_tree_logits call: the shared arguments in c
 * (ctx, head, input, dtype, vocab, params, workspace, tok, vals = logprobs,
 * nem, st; c.op and c.drafts unused), the tree and the path output. */
typedef struct fz_tree_call {
    fz_call c;
    const fs_draft_tree *tree;
    fs_draft_tree tree_v;
    int32_t *path;
    size_t path_n;
} fz_tree_call;
/* A well-formed call over p and tree, outputs (logprobs if vals, path nodes
 * if path) and workspace at their documented sizes; *need as fz_call_init. */
void fz_tree_call_init(fz_tree_call *t, fz_problem *p, const fs_draft_tree *tree, int vals,
                       int path, size_t *need);
/* fz_corrupt's host-level breakages, plus the tree's own (NULL tree and
 * arrays, request and node counts, max_depth, max_children out of range). */
void fz_tree_corrupt(fz_in *in, fz_tree_call *t, size_t need);
unsigned fz_tree_host_expect(const fz_tree_call *t, size_t need);
fs_status fz_tree_invoke(const fz_tree_call *t);
/* fz_run for tree calls (row statuses up to FS_ROW_BAD_TREE). */
int fz_tree_run(const fz_tree_call *t, size_t need, fs_status *status);
/* The same call with scan tile `tile`, into fresh outputs: identical
 * statuses, counts, tokens and path nodes, logprobs within rounding. */
void fz_tree_check_rerun(const fz_tree_call *t, int64_t tile);
/* fs_verify_tree_workspace_size against the documented rules (odd counts
 * included), and no write on failure. */
void fz_tree_check_workspace_query(fz_in *in, int64_t requests, int64_t nodes, int64_t vocab);

#endif
