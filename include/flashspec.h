/*
 * flashspec — the last step of LLM decoding in one pass over the vocabulary.
 *
 * LM-head projection, exact sampling, greedy-draft argmax and speculative
 * verify/resample, computed as one scan over the vocabulary that never writes
 * logits, probabilities or residual distributions to memory.
 *
 * Conventions (shared by every function below):
 *  - Every function returns an fs_status.  fs_status_string() names it and
 *    fs_context_last_error() gives a detailed message for the last failure.
 *  - A context owns a device (CPU or one CUDA GPU) and a stream.  Ops never
 *    allocate and never synchronize the host: scratch memory is a
 *    caller-provided workspace whose size is queried first, so CUDA ops can be
 *    captured in a CUDA graph.
 *  - Pointers are host pointers for a CPU context and device pointers for a
 *    CUDA context (all of them: inputs, per-request parameters and outputs).
 *  - Arguments the host can see (NULL pointers, sizes, dtypes, workspace size)
 *    are validated before any work; a failure returns an error status and
 *    writes nothing.
 *  - Values that live in (possibly device) arrays -- temperatures, draft ids,
 *    draft offsets, non-finite logits, rows whose every token is masked -- are
 *    checked per row where the data lives.  A bad row gets a non-zero
 *    fs_row_status in out_row_status and sentinel outputs (token -1, logprob
 *    NaN, zero emitted); the other rows of the batch are computed normally.
 *    A CPU context also returns FS_ERR_INVALID_ROWS for such a call (a CUDA
 *    context cannot know without synchronizing, so it returns FS_OK).
 *  - Layouts: LM head [V, D] row-major (as nn.Linear stores it); hidden states
 *    [rows, D] row-major; logits [rows, V]; token ids int32.
 *
 * Randomness: counter-based Philox4x32-10.  Every random number is a pure
 * function of (seed, offset, position within the request, noise block =
 * token id / 16, purpose), never of the batch, the tile, the backend or the
 * GPU count, so a request gets the same tokens whatever batch it is in (up to
 * floating-point near-ties of the logits between backends).
 *
 * Sampling law: for a row with temperature T > 0, additive bias b and allowed
 * set A, the scores are s_i = (l_i + b_i) * (1/T) for i in A and -inf
 * otherwise, and P(token = i) = softmax(s)_i exactly: two-level Gumbel-max,
 * a Gumbel key per block of 16 token ids on the log of the block's mass, then
 * the inverse CDF inside the winning block (src/record.h).  T = 0 is
 * greedy: the argmax of l + b over A, lowest token id on ties; so is any
 * T < FS_MIN_TEMPERATURE (there (l + b) / T overflows float, and the law is
 * greedy up to logit gaps of ~1e-4, as in vLLM and SGLang).  A logit of
 * -inf means probability zero; NaN or +inf on an allowed token makes the row
 * FS_ROW_NONFINITE.
 */
#ifndef FLASHSPEC_H
#define FLASHSPEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FS_VERSION_MAJOR 0
#define FS_VERSION_MINOR 1
#define FS_VERSION_PATCH 0
#define FS_VERSION ((FS_VERSION_MAJOR * 10000) + (FS_VERSION_MINOR * 100) + FS_VERSION_PATCH)

/* Temperatures in [0, FS_MIN_TEMPERATURE) sample greedily (see below). */
#define FS_MIN_TEMPERATURE 1e-5f

#if defined(_WIN32)
#define FS_API
#else
#define FS_API __attribute__((visibility("default")))
#endif

/* Version the library was built as (FS_VERSION of its header). */
FS_API int fs_version(void);

typedef enum fs_status {
    FS_OK = 0,
    FS_ERR_NULL_POINTER = 1,       /* a required pointer was NULL */
    FS_ERR_INVALID_SIZE = 2,       /* a size was zero, negative or inconsistent */
    FS_ERR_INVALID_ARGUMENT = 3,   /* an enum or other argument out of range */
    FS_ERR_WORKSPACE_TOO_SMALL = 4,
    FS_ERR_INVALID_ROWS = 5,       /* CPU only: some rows failed; see out_row_status */
    FS_ERR_UNSUPPORTED = 6,        /* backend or feature not built / not available */
    FS_ERR_NO_DEVICE = 7,          /* no usable CUDA device */
    FS_ERR_CUDA = 8,               /* a CUDA runtime call failed */
    FS_ERR_NCCL = 9,               /* an NCCL call failed */
    FS_ERR_OUT_OF_MEMORY = 10      /* context creation could not allocate */
} fs_status;

/* Per-row (per-request for verify) outcome written to out_row_status. */
typedef enum fs_row_status {
    FS_ROW_OK = 0,
    FS_ROW_BAD_TEMPERATURE = 1, /* temperature NaN, infinite, negative, or in (0, FLT_MIN) */
    FS_ROW_BAD_DRAFT = 2,       /* a draft token id outside [0, V) */
    FS_ROW_BAD_OFFSETS = 3,     /* draft offsets not monotone, not ending at num_draft_tokens,
                                   or a request with more than max_drafts drafts */
    FS_ROW_NONFINITE = 4,       /* an allowed token's logit (or logit + bias) was NaN or +inf */
    FS_ROW_ALL_MASKED = 5,      /* no token of the row is allowed */
    FS_ROW_BAD_TREE = 6,        /* tree verify: a parent index not in [-1, node), a node
                                   deeper than max_depth, or more than max_children
                                   children under one node */
    FS_ROW_BAD_FILTER = 7       /* top_k < 0, top_p outside (0, 1] or min_p outside [0, 1)
                                   (NaN included) */
} fs_row_status;

FS_API const char *fs_status_string(fs_status status);
FS_API const char *fs_row_status_string(int32_t row_status);

typedef enum fs_dtype {
    FS_DTYPE_F32 = 0,
    FS_DTYPE_F16 = 1,
    FS_DTYPE_BF16 = 2
} fs_dtype;

typedef enum fs_device_kind {
    FS_DEVICE_CPU = 0,
    FS_DEVICE_CUDA = 1
} fs_device_kind;

typedef struct fs_context fs_context;

/* 1 when the library was built with CUDA and at least one GPU is visible. */
FS_API int fs_cuda_available(void);

/* Create a context on the CPU (device_ordinal ignored) or on CUDA device
 * device_ordinal, using the default stream until fs_context_set_stream. */
FS_API fs_status fs_context_create(fs_context **out_ctx, fs_device_kind kind, int device_ordinal);
FS_API void fs_context_destroy(fs_context *ctx);
/* cuda_stream is a cudaStream_t (NULL = the legacy default stream). */
FS_API fs_status fs_context_set_stream(fs_context *ctx, void *cuda_stream);
FS_API fs_device_kind fs_context_device(const fs_context *ctx);
/* Detailed message for the last failed call on ctx ("" if none). */
FS_API const char *fs_context_last_error(const fs_context *ctx);

/* Tensor parallelism: this context's LM head (and logits) hold the tokens
 * [vocab_offset, vocab_offset + V_local) of a vocabulary of global_vocab_size
 * tokens.  Token ids in inputs and outputs are global.  nccl_comm is an
 * ncclComm_t over which every rank of the shard group calls the same op with
 * the same rows and parameters; each rank then receives identical outputs.
 * vocab_offset must be a multiple of 16: sampling noise is drawn per block of
 * 16 consecutive token ids, and a block cannot span two shards (vLLM-style
 * shards of a vocabulary padded to 64 satisfy this up to 4 ranks, and for
 * the common vocabularies up to 8).  Pass nccl_comm = NULL, vocab_offset = 0,
 * global_vocab_size = 0 to detach.  Needs a CUDA context built with NCCL. */
FS_API fs_status fs_context_set_vocab_shard(fs_context *ctx, void *nccl_comm,
                                            int64_t vocab_offset, int64_t global_vocab_size);

/* The LM head (or this rank's shard of it). */
typedef struct fs_lm_head {
    const void *weight;  /* [vocab_size, hidden_dim] row-major */
    int64_t vocab_size;  /* rows of weight (tokens held by this context) */
    int64_t hidden_dim;
    fs_dtype dtype;      /* dtype of weight and of the hidden states */
} fs_lm_head;

/* Per-request sampling parameters.  For sample and draft argmax a request is
 * one row; for verify a request owns n_r + 1 target rows.  Zero-initialise
 * the struct (= {0} or designated initialisers), so that optional fields,
 * including any added at its end later, are NULL. */
typedef struct fs_sampling {
    const float *temperature;  /* [requests], required; 0 = greedy */
    const uint64_t *seed;      /* [requests], required (ignored by greedy rows) */
    const uint64_t *offset;    /* [requests], optional (NULL = all 0): the decode step */
    const float *logit_bias;   /* [rows, V_global] added to the logits, optional */
    const uint32_t *allowed;   /* [rows, ceil(V_global/32)] bitmask, bit (i%32) of word
                                  i/32 set = token i allowed; optional (NULL = all) */
    /* Filters (see "Filters" below); each optional, NULL = off for every request. */
    const int32_t *top_k;      /* [requests]: 0 or >= V_global = off */
    const float *top_p;        /* [requests]: in (0, 1], 1 = off */
    const float *min_p;        /* [requests]: in [0, 1), 0 = off */
    int32_t *out_filter_fallback; /* [requests], optional OUTPUT: how many of the request's
                                     rows needed the filters' second pass */
} fs_sampling;

/* Filters: top-k, top-p (nucleus) and min-p, exact, in sample and verify.
 *
 * They act on the scores s_i = (l_i + b_i) / T of the allowed tokens, in the
 * order top-k -> top-p -> min-p:
 *   top-k  keeps the tokens scoring >= the k-th largest score;
 *   top-p  renormalises over the top-k set and keeps a token iff the tokens
 *          scoring strictly higher hold less than top_p of that mass (the
 *          token that crosses top_p is kept);
 *   min-p  keeps a token iff s_i - s_max >= log(min_p), i.e.
 *          p_i >= min_p * p_max.
 * Ties at a threshold are kept (all tokens of equal score share one fate), so
 * the kept set F is a set of scores {s >= t}, never a function of token ids:
 * vLLM's and Hugging Face's top-k and min-p do the same; their top-p cuts a
 * sort position, which agrees except inside a tie group.  The order is vLLM
 * V0's and SGLang's (vLLM V1 applies min-p first; that differs only when both
 * min-p and top-p are set).  The row samples exactly from softmax(s) restricted
 * to F (same two-level Gumbel noise, restricted to F: a filter that cuts
 * nothing gives the unfiltered token), and logprobs are under that filtered
 * distribution.  Rows with T < FS_MIN_TEMPERATURE are greedy and the filters
 * change nothing.  In verify, p is the filtered target at every position: a
 * draft outside F has p(x) = 0 and is rejected, recovery samples the filtered
 * target without x, the bonus token the filtered last row; the emitted
 * sequence has the law of sampling token by token from the filtered target.
 * Parameters outside their ranges fail the request with FS_ROW_BAD_FILTER
 * (whatever its temperature).
 *
 * Cost: the scan keeps, per row, its best 64 scores (CPU; on CUDA an exact
 * prefix of the row's sorted scores from short per-thread candidate lists,
 * typically a few hundred tokens, of which the best 64 are used first),
 * which settle in the one pass the rows whose kept set lies among them: any
 * top_k <= 64, a nucleus or min-p band of up to 64 tokens (exceptions: ties
 * at the edge that continue past the 64th score; top-p with a top_k above 64
 * when the top-k mass beyond the 64 decides).  On one GPU a row those 64
 * leave undecided is tried again from up to 512 of its exact prefix (top_k
 * up to 512, nuclei and min-p bands of up to 512 tokens, as far as the
 * prefix reaches: on an H100 it held 330-830 tokens of a 151936-token row
 * at 1-64 rows; the fewer lists per row at 65-160 rows, the shorter).  Other
 * rows take an exact second
 * pass over the vocabulary (radix select of the threshold, then the draw;
 * nothing is materialised; on CUDA it recomputes those rows' logits and is
 * slow -- milliseconds a pass -- so flat rows with a wide nucleus or min-p
 * band are expensive); out_filter_fallback, when given, gets per request the
 * number of its rows that did (sample: 0 or 1; verify: 0 .. n_r + 1; 0 for
 * bad, greedy and unfiltered rows), without any host synchronisation.
 * docs/DESIGN.md ("Sampling filters") has the algorithm and the measured
 * costs.
 *
 * Tree verify (fs_verify_tree) applies them at every row of the tree (see
 * there). */

/* ---- sample: one token per row, exactly from softmax((l + b) / T) ------ */

FS_API fs_status fs_sample_workspace_size(const fs_context *ctx, int64_t rows,
                                          int64_t vocab_size, size_t *out_bytes);

/* hidden [rows, D] in head->dtype.  out_tokens [rows]; out_logprobs [rows]
 * (optional, log-probability of the token under the sampled distribution;
 * under softmax(l + b) for greedy rows); out_row_status [rows]. */
FS_API fs_status fs_sample(fs_context *ctx, const fs_lm_head *head, const void *hidden,
                           int64_t rows, const fs_sampling *params,
                           void *workspace, size_t workspace_bytes,
                           int32_t *out_tokens, float *out_logprobs, int32_t *out_row_status);

/* Same, over logits [rows, vocab_size] already in memory. */
FS_API fs_status fs_sample_logits(fs_context *ctx, const void *logits, fs_dtype dtype,
                                  int64_t rows, int64_t vocab_size, const fs_sampling *params,
                                  void *workspace, size_t workspace_bytes,
                                  int32_t *out_tokens, float *out_logprobs,
                                  int32_t *out_row_status);

/* ---- draft argmax: greedy token and its logit per row ------------------ */

FS_API fs_status fs_draft_argmax_workspace_size(const fs_context *ctx, int64_t rows,
                                                int64_t vocab_size, size_t *out_bytes);

/* out_tokens [rows]: argmax of the logits, lowest id on ties; out_logits
 * [rows] (optional): that logit; out_row_status [rows]. */
FS_API fs_status fs_draft_argmax(fs_context *ctx, const fs_lm_head *head, const void *hidden,
                                 int64_t rows, void *workspace, size_t workspace_bytes,
                                 int32_t *out_tokens, float *out_logits, int32_t *out_row_status);

FS_API fs_status fs_draft_argmax_logits(fs_context *ctx, const void *logits, fs_dtype dtype,
                                        int64_t rows, int64_t vocab_size,
                                        void *workspace, size_t workspace_bytes,
                                        int32_t *out_tokens, float *out_logits,
                                        int32_t *out_row_status);

/* ---- verify: greedy-draft speculative decoding --------------------------
 *
 * Request r has n_r = draft_offsets[r+1] - draft_offsets[r] draft tokens
 * draft_tokens[draft_offsets[r] .. draft_offsets[r+1]) and owns n_r + 1 target
 * rows, stored consecutively from row draft_offsets[r] + r: row j holds the
 * target model's hidden state (or logits) at draft position j, row n_r the
 * bonus position.  Total target rows = num_draft_tokens + num_requests.
 * Offsets that are not a well-formed layout (not starting at 0, decreasing,
 * or not ending at num_draft_tokens) fail every request with
 * FS_ROW_BAD_OFFSETS; a request with more than max_drafts drafts fails alone.  A request any of whose rows is
 * non-finite or all-masked fails as a whole, whether or not the walk below
 * reaches that row.
 *
 * For each request, drafts are accepted left to right: at T > 0 draft x is
 * accepted iff u <= p(x) (u uniform, p the target at that position); at T = 0
 * iff x is the target argmax.  The first rejection emits a token from the
 * residual distribution (the target with x removed; at T = 0 the argmax); if
 * every draft is accepted, a bonus token is sampled from the last row.  The
 * emitted sequence has exactly the law of sampling token by token from the
 * target.  logit_bias and allowed are indexed by target row.
 */
typedef struct fs_drafts {
    int64_t num_requests;
    int64_t num_draft_tokens;      /* = draft_offsets[num_requests] */
    int64_t max_drafts;            /* bound on every n_r; output row stride is max_drafts + 1 */
    const int32_t *draft_tokens;   /* [num_draft_tokens] */
    const int32_t *draft_offsets;  /* [num_requests + 1], draft_offsets[0] = 0 */
} fs_drafts;

FS_API fs_status fs_verify_workspace_size(const fs_context *ctx, int64_t num_requests,
                                          int64_t num_draft_tokens, int64_t vocab_size,
                                          size_t *out_bytes);

/* target_hidden [num_draft_tokens + num_requests, D].  Outputs per request r:
 * out_tokens[r * (max_drafts + 1) + k] for k < out_num_emitted[r] are the
 * accepted drafts followed by one recovered or bonus token, the rest -1;
 * out_logprobs (optional) alike, target log-probabilities, NaN padded;
 * out_num_emitted[r] = accepted + 1 (0 for a bad request); out_row_status[r]. */
FS_API fs_status fs_verify(fs_context *ctx, const fs_lm_head *head, const void *target_hidden,
                           const fs_drafts *drafts, const fs_sampling *params,
                           void *workspace, size_t workspace_bytes,
                           int32_t *out_tokens, int32_t *out_num_emitted,
                           float *out_logprobs, int32_t *out_row_status);

FS_API fs_status fs_verify_logits(fs_context *ctx, const void *target_logits, fs_dtype dtype,
                                  int64_t vocab_size, const fs_drafts *drafts,
                                  const fs_sampling *params,
                                  void *workspace, size_t workspace_bytes,
                                  int32_t *out_tokens, int32_t *out_num_emitted,
                                  float *out_logprobs, int32_t *out_row_status);

/* ---- tree verify: a tree of greedy drafts (EAGLE-2/3, Medusa) ----------
 *
 * Request r has a draft tree of n_r = node_offsets[r+1] - node_offsets[r]
 * nodes, numbered 0 .. n_r - 1 within the request.  Node i proposes the token
 * tokens[node_offsets[r] + i] after its parent parents[node_offsets[r] + i]:
 * a node index within the request, or -1 for the root (the last accepted
 * token, which is not a node).  A parent comes before its children
 * (parents[i] in [-1, i)), so cycles, a parent after its child and indices
 * out of range are all bad trees.  The root's children have depth 1; every
 * node must have depth <= max_depth, and every node (the root included) at
 * most max_children children.  The children of a node are tried in ascending
 * node index.  A token repeated among siblings is allowed; its second copy is
 * never accepted (the first one's rejection removed that token).
 *
 * The request owns n_r + 1 target rows, stored consecutively from row
 * node_offsets[r] + r: its row 0 holds the target model's hidden state (or
 * logits) at the root, row 1 + i at node i.  Total target rows =
 * num_nodes + num_requests; logit_bias and allowed are indexed by target row.
 * SGLang's first-child / next-sibling arrays (node 0 = the root) map onto
 * this layout as node j >= 1 -> node j - 1, in the same row order
 * (docs/DESIGN.md, "Tree verification").
 *
 * The walk, from the root: at a node with target distribution p (after
 * temperature, bias and mask) whose children carry tokens c_1 .. c_m, child
 * c_j is accepted with probability p(c_j) / (1 - p(c_1) - ... - p(c_{j-1}))
 * (p with the children tried before removed and renormalised), and the first
 * one accepted becomes the current node.  If none is, one token is drawn from
 * p with every child's token removed and the walk stops; at a leaf, a bonus
 * token is drawn from its row.  At T = 0 the child equal to the argmax is
 * accepted, else the argmax is emitted.  The emitted tokens have exactly the
 * law of sampling token by token from the target, and a chain (node i - 1
 * the parent of node i) emits exactly fs_verify's tokens with the same seeds.
 *
 * Per request: node offsets that are not a well-formed layout (not starting
 * at 0, decreasing, or not ending at num_nodes) fail every request with
 * FS_ROW_BAD_OFFSETS; otherwise a bad tree fails its request with
 * FS_ROW_BAD_TREE, then a token outside [0, V) with FS_ROW_BAD_DRAFT, then a
 * bad temperature; a request any of whose rows is non-finite or all-masked
 * fails as a whole, whether or not the walk reaches that row.
 *
 * CPU and CUDA contexts.  On a CUDA context the call is asynchronous like
 * every other op (per-request failures only in out_row_status, FS_OK
 * returned).  On a tensor-parallel context (fs_context_set_vocab_shard with
 * a communicator) every rank passes its shard of the head (or its logits'
 * columns) and the same trees, parameters and seeds, and every rank gets the
 * same outputs, equal to one GPU's over the whole vocabulary.
 *
 * Filters (top_k, top_p, min_p, out_filter_fallback; see "Filters" above)
 * apply at every row: p is the filtered target of that row, so a child
 * outside the row's kept set F has p = 0 and is never accepted, the
 * probabilities are renormalised over F, and the recovered or bonus token
 * is drawn from F with every child's token removed.  The emitted tokens have
 * the law of sampling token by token from the filtered target, and a chain
 * emits fs_verify's tokens with the same filters and seeds.
 * out_filter_fallback[r] counts request r's rows that took the second pass
 * (0 .. n_r + 1).  Bad filter values fail the request with
 * FS_ROW_BAD_FILTER, after the tree, token and temperature checks.  CPU
 * and CUDA contexts, tensor-parallel ones included; on CUDA, as for
 * fs_verify, the rows the one pass cannot decide take the (slow) second
 * pass.
 */
#define FS_TREE_MAX_CHILDREN 16

typedef struct fs_draft_tree {
    int64_t num_requests;
    int64_t num_nodes;           /* = node_offsets[num_requests] */
    int64_t max_depth;           /* bound on every node's depth; token output stride max_depth + 1 */
    int64_t max_children;        /* bound on every node's children, <= FS_TREE_MAX_CHILDREN */
    const int32_t *tokens;       /* [num_nodes] the draft token of each node */
    const int32_t *parents;      /* [num_nodes] parent's index within the request, -1 = root */
    const int32_t *node_offsets; /* [num_requests + 1], node_offsets[0] = 0 */
} fs_draft_tree;

FS_API fs_status fs_verify_tree_workspace_size(const fs_context *ctx, int64_t num_requests,
                                               int64_t num_nodes, int64_t vocab_size,
                                               size_t *out_bytes);

/* target_hidden [num_nodes + num_requests, D].  Outputs per request r, with
 * S = max_depth + 1:
 *  out_tokens[r * S + k] for k < out_num_emitted[r]: the accepted nodes'
 *    tokens from the root down, then one recovered or bonus token; -1 after;
 *  out_path_nodes[r * max_depth + k] (optional) for k < out_num_emitted[r] - 1:
 *    the node index (within the request) of the k-th accepted node, -1 after
 *    (the branch whose KV cache an engine keeps);
 *  out_logprobs[r * S + k] (optional): target log-probabilities of out_tokens,
 *    NaN padded;
 *  out_num_emitted[r] = accepted + 1 (0 for a bad request); out_row_status[r]. */
FS_API fs_status fs_verify_tree(fs_context *ctx, const fs_lm_head *head, const void *target_hidden,
                                const fs_draft_tree *tree, const fs_sampling *params,
                                void *workspace, size_t workspace_bytes,
                                int32_t *out_tokens, int32_t *out_path_nodes,
                                int32_t *out_num_emitted, float *out_logprobs,
                                int32_t *out_row_status);

FS_API fs_status fs_verify_tree_logits(fs_context *ctx, const void *target_logits, fs_dtype dtype,
                                       int64_t vocab_size, const fs_draft_tree *tree,
                                       const fs_sampling *params,
                                       void *workspace, size_t workspace_bytes,
                                       int32_t *out_tokens, int32_t *out_path_nodes,
                                       int32_t *out_num_emitted, float *out_logprobs,
                                       int32_t *out_row_status);

#ifdef __cplusplus
}
#endif

#endif /* FLASHSPEC_H */
