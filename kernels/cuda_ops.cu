/* Host-side orchestration of the CUDA backend: the workspace layout and the
 * launch sequence shared by every op.
 *
 *   prep      row descriptors + pre-scan statuses        (prep.cu)
 *   scan      per-(row, tile or CTA) records, logits never stored (scan_hopper.cu,
 *             scan_hopper_rows.cu, scan_mma.cu, scan_simt.cu, scan_logits.cu)
 *   merge     per-row records into row_recs               (merge_finalize.cu,
 *             a programmatic launch; for ops of a few rows the Hopper scans
 *             do it in their last CTA, op_tail.cuh)
 *   exchange  tensor parallel only: all-gather + merge of row_recs across
 *             vocabulary shards                          (tp_exchange.cu)
 *   finalize  the op's finalizer writes every output     (merge_finalize.cu;
 *             done by the merge itself -- or the Hopper scan's last CTA --
 *             when no exchange runs in between)
 *
 * Everything is enqueued on the context's stream: no allocation, no host
 * synchronisation, no copy to the host, so a call can be captured in a CUDA
 * graph.  One exception: a filtered call on a sharded context reads the
 * count of rows handed to the second pass to the host (a stream
 * synchronisation; fs_tp_filter_second_pass), except while the stream is
 * being captured.
 *
 * Workspace layout (each region starts on a 256-byte boundary; the first at
 * the caller's pointer rounded up to 256 bytes):
 *   descs      fs_row_desc [rows]                      row descriptors
 *   pre_status int32       [requests]                  status before the scan
 *   counter    uint32      [1]                         the scan's CTAs done (op_tail.cuh)
 *   walk       uint32 [requests], int32 [rows]         verify only: the one-launch walk's
 *                                                      counts and verdicts (op_tail.cuh)
 *   tile_recs  fs_record   [rows][ceil(V / 128)]       per-(row, tile or CTA) records
 *   row_recs   fs_record   [rows]                      merged records (the TP seam)
 *   tp_gather  fs_record   [ranks][rows]               only when sharded over > 1 rank
 *   filters    (sample and verify) descriptors, candidate lists, the second
 *              pass's rows, histograms and records; on a sharded context
 *              also the rows' summaries, this shard's and every rank's
 *              (fs_filter_summary [rows] and [ranks][rows]), and the TP
 *              second pass's staged rows, max keys and kept records
 */
#include "cuda_common.cuh"
#include "dtype.h"
#include "filter_check.h"
#include "filter_gpu.cuh"
#include "hopper_policy.h"
#include "logits_plan.h"
#include "scan_hopper.cuh"
#include "tp_exchange.cuh"

namespace {

struct cuda_workspace {
    fs_row_desc *descs;
    int32_t *pre_status;
    unsigned int *counter;
    unsigned int *walk_count; /* verify only */
    int32_t *walk_verdict;
    fs_record *tile_recs;
    fs_record *row_recs;
    void *tp_gather;
    fs_filter_ws filt; /* sample and verify only */
};

size_t align_up(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

/* Byte size of the layout (with 256 bytes of slack, so that a caller's
 * pointer of any alignment works); fills w when base is given. */
/* Candidate lists per row the filters may need: the Hopper tile kernel's
 * FS_HOPPER_TILE_LISTS per CTA, or one per 128-token tile (generic fused
 * scan) or per chunk (logits scan). */
int64_t filter_lists_bound(const fs_context *ctx, int64_t vocab)
{
    const int64_t tiles = (vocab + FS_REC_MIN_TOKENS - 1) / FS_REC_MIN_TOKENS;
    const int64_t ctas = tiles < ctx->sm_count ? tiles : ctx->sm_count;
    const int64_t hopper = ctas * FS_HOPPER_TILE_LISTS;
    return hopper > tiles ? hopper : tiles;
}

size_t carve(const fs_context *ctx, fs_op op, int64_t rows, int64_t requests, int64_t vocab,
             void *base, cuda_workspace *w)
{
    char *p = reinterpret_cast<char *>(align_up(reinterpret_cast<uintptr_t>(base)));
    const size_t max_tiles = (size_t)((vocab + FS_REC_MIN_TOKENS - 1) / FS_REC_MIN_TOKENS);
    size_t at = 0;
    if (w)
        w->descs = reinterpret_cast<fs_row_desc *>(p + at);
    at += align_up((size_t)rows * sizeof(fs_row_desc));
    if (w)
        w->pre_status = reinterpret_cast<int32_t *>(p + at);
    at += align_up((size_t)requests * sizeof(int32_t));
    if (w)
        w->counter = reinterpret_cast<unsigned int *>(p + at);
    at += align_up(sizeof(unsigned int));
    if (w) {
        w->walk_count = nullptr;
        w->walk_verdict = nullptr;
    }
    if (op == FS_OP_VERIFY) {
        if (w)
            w->walk_count = reinterpret_cast<unsigned int *>(p + at);
        at += align_up((size_t)requests * sizeof(unsigned int));
        if (w)
            w->walk_verdict = reinterpret_cast<int32_t *>(p + at);
        at += align_up((size_t)rows * sizeof(int32_t));
    }
    if (w)
        w->tile_recs = reinterpret_cast<fs_record *>(p + at);
    at += align_up((size_t)rows * max_tiles * sizeof(fs_record));
    if (w)
        w->row_recs = reinterpret_cast<fs_record *>(p + at);
    at += align_up((size_t)rows * sizeof(fs_record));
    if (w)
        w->tp_gather = p + at;
    at += align_up(fs_tp_workspace_bytes(ctx, rows));
    if (w)
        memset(&w->filt, 0, sizeof w->filt);
    if (op == FS_OP_ARGMAX)
        return at + 256;
    /* the filters' region (used only by calls that pass filters) */
    at += fs_filter_carve(ctx, rows, vocab, w ? p + at : nullptr, w ? &w->filt : nullptr);
    return at + 256;
}

const char *op_name(fs_op op)
{
    return op == FS_OP_SAMPLE ? "sample" : op == FS_OP_ARGMAX ? "draft argmax" : "verify";
}

} // namespace

size_t fs_filter_carve(const fs_context *ctx, int64_t rows, int64_t vocab, char *p,
                       fs_filter_ws *w)
{
    const int64_t lists = filter_lists_bound(ctx, vocab);
    const int fb_grid = fs_filter_fallback_grid(ctx->sm_count);
    size_t at = 0;
    auto take = [&](size_t bytes) {
        char *q = p ? p + at : nullptr;
        at += align_up(bytes);
        return q;
    };
    if (w) {
        memset(w, 0, sizeof *w);
        w->lists_per_row = lists;
        w->fb_grid = fb_grid;
        w->defer_last = ctx->filter_defer;
        w->warm = ctx->filter_warm && fs_tp_ranks(ctx) <= 1;
        w->wide = ctx->filter_wide;
    }
    char *fdescs = take((size_t)rows * sizeof(fs_filter_desc));
    char *cands = take((size_t)rows * (size_t)lists * sizeof(fs_cand_list));
    char *flag_n = take(sizeof(unsigned int) * 2);
    char *fb = take((size_t)rows * sizeof(fs_fallback_row));
    char *hist_count = take((size_t)rows * FS_SELECT_BUCKETS * sizeof(uint32_t));
    char *hist_mass = take((size_t)rows * FS_SELECT_BUCKETS * sizeof(unsigned long long));
    char *fb_recs = take((size_t)rows * (size_t)fb_grid * sizeof(fs_record));
    char *defer = take((size_t)rows * FS_FB_DEFER_CAP * sizeof(fs_fb_defer));
    if (w) {
        w->fdescs = reinterpret_cast<fs_filter_desc *>(fdescs);
        w->cands = reinterpret_cast<fs_cand_list *>(cands);
        w->flag_n = reinterpret_cast<unsigned int *>(flag_n);
        w->fb = reinterpret_cast<fs_fallback_row *>(fb);
        w->hist_count = reinterpret_cast<uint32_t *>(hist_count);
        w->hist_mass = reinterpret_cast<unsigned long long *>(hist_mass);
        w->fb_recs = reinterpret_cast<fs_record *>(fb_recs);
        w->defer = reinterpret_cast<fs_fb_defer *>(defer);
    }
    const int ranks = fs_tp_ranks(ctx);
    if (ranks > 1) {
        /* sharded: the candidates' exchange and the second pass's buffers */
        char *sums = take((size_t)rows * sizeof(fs_filter_summary));
        char *sum_gather = take((size_t)ranks * (size_t)rows * sizeof(fs_filter_summary));
        char *fb_stage = take((size_t)rows * sizeof(fs_fallback_row));
        char *tp_max = take((size_t)rows * sizeof(uint32_t));
        char *tp_part = take((size_t)rows * sizeof(fs_record));
        if (w) {
            w->sums = reinterpret_cast<fs_filter_summary *>(sums);
            w->sum_gather = reinterpret_cast<fs_filter_summary *>(sum_gather);
            w->fb_stage = reinterpret_cast<fs_fallback_row *>(fb_stage);
            w->tp_max = reinterpret_cast<uint32_t *>(tp_max);
            w->tp_part = reinterpret_cast<fs_record *>(tp_part);
        }
    }
    return at;
}

fs_fallback_src fs_fallback_src_make(const fs_op_args *a)
{
    fs_fallback_src src = {};
    if (a->head) {
        src.weight = a->head->weight;
        src.hidden = a->hidden;
        src.D = a->head->hidden_dim;
        src.wdtype = a->head->dtype;
    } else {
        src.logits = a->logits;
        src.ldtype = a->logits_dtype;
    }
    return src;
}

fs_status fs_launch_after_merge(fs_context *ctx, const fs_op_args *a, const fs_row_desc *descs,
                                fs_filter_ws *filt, const fs_scan_args *s, fs_record *row_recs,
                                void *tp_gather, cudaStream_t stream, cudaError_t *e,
                                const char **step)
{
    const int ranks = fs_tp_ranks(ctx);
    if (*e != cudaSuccess || ranks <= 1)
        return FS_OK;
    /* row_recs of this shard become the whole vocabulary's; the filters'
       summaries travel with them */
    const fs_status st =
        fs_tp_exchange(ctx, row_recs, a->rows, tp_gather, filt ? filt->sums : nullptr,
                       filt ? filt->sum_gather : nullptr, sizeof(fs_filter_summary), stream);
    if (st != FS_OK || !filt)
        return st;
    *step = "filter resolve";
    *e = fs_launch_filter_tp_resolve(a, descs, row_recs, filt, ranks,
                                     ctx->filter_force_second_pass, stream);
    if (*e != cudaSuccess)
        return FS_OK;
    /* the rows the resolve could not decide from their candidates
       (filter_gpu.cuh) */
    const fs_fallback_src src = fs_fallback_src_make(a);
    *step = "filter second pass";
    return fs_tp_filter_second_pass(ctx, a, filt, s, &src, row_recs, tp_gather, stream);
}

/* The Hopper scan `o` picks (tile or rows-as-M kernel) over rows [r0, r0 +
 * nr) of the op: the rows' own slices of H, descriptors, bias, mask,
 * records and candidate lists.  fs_launch_fused_scan runs it once over every
 * row, or per row chunk for filtered ops past the tile kernel's 160 rows. */
static cudaError_t launch_hopper_rows(const fs_context *ctx, const fs_op_args *a,
                                      const fs_scan_args *s, fs_hopper_opts o, int64_t n_recs,
                                      int64_t r0, int64_t nr, cudaStream_t stream)
{
    const fs_lm_head *h = a->head;
    const char *H = static_cast<const char *>(a->hidden) +
                    (size_t)(r0 * h->hidden_dim) * fs_dtype_bytes(h->dtype);
    if (o.cands)
        o.cands += r0 * n_recs * FS_HOPPER_TILE_LISTS;
    if (o.tree_rows) {
        o.tree_rows += r0;
        o.tree_child_s += r0 * FS_TREE_MAX_CHILDREN;
    }
    return (cudaError_t)fs_hopper_scan_launch_ex(
        h->weight, H, h->dtype == FS_DTYPE_BF16, a->vocab_size, h->hidden_dim, nr,
        a->vocab_offset, a->global_vocab, s->descs + r0,
        s->bias ? s->bias + r0 * a->global_vocab : nullptr,
        s->allowed ? s->allowed + r0 * s->words : nullptr, s->tile_recs + r0 * n_recs, n_recs,
        ctx->sm_count, &o, stream);
}

/* The Hopper scans can take this op's fused scan (16-bit head, D and
 * alignment; the context saw an sm_90 device). */
static bool hopper_can(const fs_context *ctx, const fs_op_args *a)
{
    const fs_lm_head *h = a->head;
    return ctx->hopper && h && h->dtype != FS_DTYPE_F32 && fs_hopper_supported(h->hidden_dim, 1) &&
           fs_hopper_aligned(h->weight, a->hidden);
}

/* The Hopper scan options op takes from ctx on an LM head of hidden size D
 * (the kernel choices by chip: tests/test_hopper_policy.c). */
static fs_hopper_opts hopper_opts_for(const fs_context *ctx, fs_op op, int64_t D)
{
    fs_hopper_opts o = {};
    /* the epilogue warps from 48 or 80 rows on an H200 (fs_hopper_ew_min_fast_hbm,
       fs_hopper_rows_span_ew80), from 128 elsewhere (an H100 is not measured
       with the smaller blocks) */
    o.ew_min_bn = ctx->tile_ew_min_bn       ? ctx->tile_ew_min_bn
                  : ctx->hopper_rows_early ? fs_hopper_ew_min_fast_hbm(D)
                                           : 128;
    o.rows_min = ctx->hopper_rows_min;
    if (!o.rows_min && ctx->hopper_rows_early) { /* trees as verify */
        if (o.ew_min_bn <= 80 && !ctx->tile_no_epi_wg) {
            fs_hopper_rows_span_ew80(op == FS_OP_VERIFY_TREE, D, &o.rows_min, &o.rows_max);
        } else {
            o.rows_min = fs_hopper_rows_min_fast_hbm(op == FS_OP_ARGMAX, D);
            if (!ctx->tile_no_epi_wg)
                o.rows_max = fs_hopper_rows_max_fast_hbm(op == FS_OP_VERIFY_TREE, D);
        }
    }
    o.no_multicast = ctx->hopper_no_multicast;
    o.no_epi_wg = ctx->tile_no_epi_wg;
    o.bn_step16 = ctx->tile_bn_step16;
    /* pairs where the rows kernel's choice is automatic, or as set (never
       with no_epi_wg: fs_hopper_kernel_for) */
    o.tile_pairs_min = ctx->tile_pairs_min >= 0 ? ctx->tile_pairs_min
                       : ctx->hopper_rows_min
                           ? 0
                           : fs_hopper_pairs_min(ctx->hopper_rows_early);
    o.pairs_128 = ctx->tile_pairs_128 >= 0
                      ? ctx->tile_pairs_128
                      : fs_hopper_pairs_128(ctx->hopper_rows_early,
                                            op == FS_OP_SAMPLE || op == FS_OP_VERIFY,
                                            op == FS_OP_VERIFY_TREE, D);
    o.tile_groups_max = ctx->tile_groups_max >= 0 ? ctx->tile_groups_max
                        : ctx->hopper_rows_min || !o.tile_pairs_min
                            ? 0
                            : fs_hopper_groups_max(ctx->hopper_rows_early,
                                                   op == FS_OP_VERIFY_TREE, D);
    o.odd_pairs = ctx->hopper_odd_pairs;
    o.row_block = ctx->hopper_row_block;
    o.ties_128 = ctx->hopper_rows_ties_128;
    o.jobs = ctx->hopper_rows_jobs;
    o.w_stream = ctx->w_stream;
    o.w_hint = ctx->w_hint;
    o.argmax_only = op == FS_OP_ARGMAX;
    return o;
}

static fs_hopper_opts hopper_opts(const fs_context *ctx, const fs_op_args *a)
{
    return hopper_opts_for(ctx, a->op, a->head->hidden_dim);
}

extern "C" fs_hopper_pick fs_hopper_pick_for(const fs_context *ctx, fs_op op, int64_t rows,
                                             int64_t D)
{
    const fs_hopper_opts o = hopper_opts_for(ctx, op, D);
    fs_hopper_pick p = {};
    p.kernel = fs_hopper_kernel_plan(rows, &o, 1, &p.bn, &p.ew, &p.pair);
    return p;
}

/* Unfiltered sample, draft argmax and verify on one GPU, where the Hopper
 * tile kernel takes them: the scan builds the row descriptors and ends the
 * op itself (fs_tail_args.single), so the op is one launch instead of prep,
 * scan, merge (and verify's finalize) (DESIGN "One launch"). */
static bool single_launch(const fs_context *ctx, const fs_op_args *a, bool filters, bool sharded)
{
    if (!ctx->single_launch || filters || sharded || !hopper_can(ctx, a))
        return false;
    const fs_hopper_opts o = hopper_opts(ctx, a);
    return a->rows <= FS_HOPPER_TILE_MAX_ROWS && /* pairs: no single launch */
           fs_hopper_kernel_for(a->rows, &o) == FS_HOPPER_TILE;
}

cudaError_t fs_launch_fused_scan(fs_context *ctx, const fs_op_args *a, fs_scan_args *s,
                                 const fs_tail_args *tail, bool *tail_ran, bool *hopper_lists,
                                 cudaStream_t stream)
{
    const fs_lm_head *h = a->head;
    *tail_ran = false;
    *hopper_lists = false;
    s->tiles_per_row = (a->vocab_size + FS_FUSED_TILE_V - 1) / FS_FUSED_TILE_V;
    if (h->dtype == FS_DTYPE_F32)
        return fs_launch_scan_simt(a, s, stream);
    if (hopper_can(ctx, a)) {
        fs_hopper_opts o = hopper_opts(ctx, a);
        o.tree_rows = s->tree_rows;
        o.tree_child_s = s->tree_child_s;
        /* candidate lists: the tile kernel's per-block epilogue up to 160
           rows; past them (filter_rows_min) the rows kernel's list-keeping
           kernels, one pass over W.  Tree verify with filters, which those
           kernels do not take, goes through the tile kernel in row chunks,
           each re-reading W -- ceil(rows / 160) passes, where the generic
           tensor-core scan is ~6x slower than one pass at 320 rows */
        const bool filt = s->cands != nullptr;
        const bool filt_rows = filt && !s->tree_rows && ctx->filter_rows_min > 0 &&
                               a->rows >= ctx->filter_rows_min;
        if (filt) {
            o.kernel = filt_rows ? FS_HOPPER_ROWS : FS_HOPPER_TILE;
            o.cands = s->cands;
        }
        /* one CTA merging every row's records reads them at one SM's
           bandwidth while the others idle: past tail_rows_max rows the merge
           kernel (programmatic launch, a block per row) is faster; the
           filters and tree verify finish in the merge kernel */
        o.tail = (a->rows <= ctx->tail_rows_max || (tail && tail->single)) && !filt &&
                         !s->tree_rows
                     ? tail
                     : nullptr;
        const int64_t chunks = filt && !filt_rows
                                   ? (a->rows + FS_HOPPER_TILE_MAX_ROWS - 1) / FS_HOPPER_TILE_MAX_ROWS
                                   : 1;
        const int64_t per = (a->rows + chunks - 1) / chunks;
        const int64_t n_recs = fs_hopper_records_per_row(a->vocab_size, per, ctx->sm_count, &o);
        cudaError_t e = cudaSuccess;
        for (int64_t r0 = 0; r0 < a->rows && e == cudaSuccess; r0 += per)
            e = launch_hopper_rows(ctx, a, s, o, n_recs, r0,
                                   a->rows - r0 < per ? a->rows - r0 : per, stream);
        fs_tail_args plain;
        if (e == cudaErrorCooperativeLaunchTooLarge && tail && tail->single) {
            /* the grid could not be resident at once (SMs held by another
               context, e.g. under MPS): prep first, the last-CTA tail */
            (void)cudaGetLastError();
            plain = *tail;
            plain.single = 0;
            o.tail = a->rows <= ctx->tail_rows_max ? &plain : nullptr;
            e = fs_launch_prep(a, plain.descs_out, plain.pre_status_out, plain.counter, nullptr,
                               stream);
            if (e == cudaSuccess)
                e = launch_hopper_rows(ctx, a, s, o, n_recs, 0, a->rows, stream);
        }
        if (e != cudaErrorNoKernelImageForDevice && e != cudaErrorInvalidDeviceFunction) {
            /* at most min(sm_count, ceil(V / 128)) records per row, which the
               workspace holds */
            s->tiles_per_row = n_recs;
            *hopper_lists = true;
            *tail_ran = e == cudaSuccess && o.tail;
            return e;
        }
        (void)cudaGetLastError();
        ctx->hopper = 0;
        /* a single-launch op counted on the Hopper scan for its prep */
        if (tail && tail->single) {
            const cudaError_t ep = fs_launch_prep(a, tail->descs_out, tail->pre_status_out,
                                                  tail->counter, nullptr, stream);
            if (ep != cudaSuccess)
                return ep;
        }
    }
    return fs_launch_scan_mma(a, s, stream);
}

fs_scan_args fs_scan_args_make(const fs_op_args *a, const fs_row_desc *descs,
                               fs_record *tile_recs)
{
    fs_scan_args s = {};
    s.descs = descs;
    s.bias = a->params ? a->params->logit_bias : nullptr;
    s.allowed = a->params ? a->params->allowed : nullptr;
    s.rows = a->rows;
    s.vocab = a->vocab_size;
    s.vocab_offset = a->vocab_offset;
    s.global_vocab = a->global_vocab;
    s.words = (a->global_vocab + 31) / 32;
    s.tile_recs = tile_recs;
    s.lse = a->op != FS_OP_ARGMAX;
    return s;
}

cudaError_t fs_launch_scan(fs_context *ctx, const fs_op_args *a, fs_scan_args *s,
                           const fs_tail_args *tail, bool *tail_ran, bool *hopper_lists,
                           cudaStream_t stream)
{
    if (a->head)
        return fs_launch_fused_scan(ctx, a, s, tail, tail_ran, hopper_lists, stream);
    *tail_ran = false;
    *hopper_lists = false;
    const int64_t chunk =
        fs_logits_chunk(a->rows, a->vocab_size, ctx->sm_count, s->cands != nullptr);
    s->tiles_per_row = (a->vocab_size + chunk - 1) / chunk;
    return fs_launch_scan_logits(a, s, chunk, stream);
}

extern "C" size_t fs_cuda_workspace_bytes(const fs_context *ctx, fs_op op, int64_t rows,
                                          int64_t requests, int64_t vocab_size)
{
    return carve(ctx, op, rows, requests, vocab_size, nullptr, nullptr);
}

extern "C" fs_status fs_cuda_run(fs_context *ctx, const fs_op_args *a)
{
    const int64_t requests = a->op == FS_OP_VERIFY ? a->drafts->num_requests : a->rows;
    cuda_workspace w;
    carve(ctx, a->op, a->rows, requests, a->vocab_size, a->workspace, &w);
    const bool filters = a->op != FS_OP_ARGMAX && fs_filters_requested(a->params);
    fs_prep_filters pf = {};
    pf.fdescs = w.filt.fdescs;
    pf.flag_n = w.filt.flag_n;
    int prev_device;
    fs_status st = fs_cuda_enter(ctx, &prev_device);
    if (st != FS_OK)
        return st;
    cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
    const bool sharded = fs_tp_ranks(ctx) > 1;
    const bool single = single_launch(ctx, a, filters, sharded);
    const char *step = "prep";
    cudaError_t e =
        single ? cudaSuccess
               : fs_launch_prep(a, w.descs, w.pre_status, w.counter, filters ? &pf : nullptr,
                                stream);

    fs_scan_args s = fs_scan_args_make(a, w.descs, w.tile_recs);
    s.cands = filters ? w.filt.cands : nullptr;
    /* the end of the op, for scans that run it in their last CTA: finalize
       unless the records must first be exchanged across vocabulary shards */
    fs_tail_args t = {};
    t.op = sharded ? -1 : (int)a->op;
    t.counter = w.counter;
    t.row_recs = w.row_recs;
    t.pre_status = w.pre_status;
    t.out_tokens = a->out_tokens;
    t.out_values = a->out_values;
    t.out_num_emitted = a->out_num_emitted;
    t.out_row_status = a->out_row_status;
    t.offsets = a->op == FS_OP_VERIFY ? a->drafts->draft_offsets : nullptr;
    t.drafts = a->op == FS_OP_VERIFY ? a->drafts->draft_tokens : nullptr;
    t.num_requests = requests;
    t.stride = a->op == FS_OP_VERIFY ? a->drafts->max_drafts + 1 : 1;
    t.single = !single ? 0 : a->rows <= ctx->tail_rows_max ? 1 : 2;
    t.temperature = single && a->op != FS_OP_ARGMAX ? a->params->temperature : nullptr;
    t.seed = single && a->op != FS_OP_ARGMAX ? a->params->seed : nullptr;
    t.offset = single && a->op != FS_OP_ARGMAX ? a->params->offset : nullptr;
    t.descs_out = w.descs;
    t.pre_status_out = w.pre_status;
    t.walk_count = w.walk_count;
    t.walk_verdict = w.walk_verdict;
    bool tail_ran = false;
    if (e == cudaSuccess) {
        step = a->head ? "fused scan" : "logits scan";
        bool hopper_lists = false;
        e = fs_launch_scan(ctx, a, &s, &t, &tail_ran, &hopper_lists, stream);
        /* the candidate lists: FS_HOPPER_TILE_LISTS per record in the Hopper
           kernels, one per (row, tile or chunk) in the other scans */
        w.filt.lists_per_row =
            hopper_lists ? s.tiles_per_row * FS_HOPPER_TILE_LISTS : s.tiles_per_row;
    }
    /* without the tail, the merge kernel merges, and finalizes sample and
       argmax unless an exchange comes first */
    const bool merge_finalizes = a->op != FS_OP_VERIFY && !sharded;
    if (e == cudaSuccess && !tail_ran) {
        step = "merge";
        e = fs_launch_merge(a, w.tile_recs, s.tiles_per_row, w.descs, w.pre_status, w.row_recs,
                            merge_finalizes, filters ? &w.filt : nullptr,
                            ctx->filter_force_second_pass, &s, ctx->cc_major >= 9, stream);
    }
    /* sharded: the exchange, and the filters' resolve and second pass */
    st = fs_launch_after_merge(ctx, a, w.descs, filters ? &w.filt : nullptr, &s, w.row_recs,
                               w.tp_gather, stream, &e, &step);
    if (st != FS_OK) {
        fs_cuda_leave(prev_device);
        return st;
    }
    const bool finalized = tail_ran ? !sharded : merge_finalizes;
    if (e == cudaSuccess && !finalized) {
        step = "finalize";
        e = fs_launch_finalize(a, w.row_recs, w.descs, w.pre_status, stream);
    }
    fs_cuda_leave(prev_device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return fs_fail(ctx, FS_ERR_CUDA, "%s: %s launch failed: %s", op_name(a->op), step,
                       cudaGetErrorString(e));
    }
    return FS_OK;
}
