/* Shared pieces of the CUDA backend: the scan arguments every scan kernel
 * receives, the per-block token push (mask, bias, temperature, noise) used by
 * the generic scan paths, warp reductions of records, and the host-side launchers
 * each kernel file provides.
 *
 * The arithmetic itself (Philox, Gumbel, score, push, merge, finalizers) is
 * the shared host/device code in src/philox.h, src/record.h and
 * src/finalize.h, so the GPU makes the same decisions as the CPU oracle. */
#ifndef FS_CUDA_COMMON_CUH
#define FS_CUDA_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "backend.h"
#include "filter_cands.cuh"
#include "filter_finalize.h"
#include "finalize.h"
#include "philox.h"
#include "record.h"
#include "record_shfl.cuh"
#include "tree_scan.cuh"

/* Every record covers at least FS_REC_MIN_TOKENS tokens (except the last of a row), so a row never has
 * more than ceil(V / FS_REC_MIN_TOKENS) records.  The workspace is sized with
 * this bound whatever path (fused or logits, any dtype) runs. */
#define FS_REC_MIN_TOKENS 128

/* Vocabulary tile of the fused kernels (tokens per CTA and per record). */
#define FS_FUSED_TILE_V 128

#define FS_SCAN_THREADS 256

/* What the scan kernels need besides their input. */
typedef struct fs_scan_args {
    const fs_row_desc *descs; /* [rows] */
    const float *bias;        /* [rows, global_vocab] or NULL */
    const uint32_t *allowed;  /* [rows, words] or NULL */
    int64_t rows;
    int64_t vocab;        /* tokens held here */
    int64_t vocab_offset; /* global id of local token 0 */
    int64_t global_vocab;
    int64_t words;        /* ceil(global_vocab / 32) */
    fs_record *tile_recs; /* [rows][tiles_per_row] */
    int64_t tiles_per_row;
    /* the filters' candidate lists (src/cand_list.h), one per (row, tile):
       cands[row * tiles_per_row + tile] for the rows flagged FS_ROWF_FILTER;
       NULL when the op has no filters */
    fs_cand_list *cands;
    /* tree verify only, NULL for every other op (tree_scan.cuh) */
    const fs_tree_row *tree_rows; /* [rows] */
    float *tree_child_s;          /* [rows][FS_TREE_MAX_CHILDREN] */
    /* 0 for draft argmax, which reads only a record's max, its id and its
       flags: a scan may then leave sum_exp meaningless (scan_logits.cu) */
    int lse;
} fs_scan_args;

/* What a scan kernel needs to end the op itself (op_tail.cuh): the last CTA
 * merges every row's records and runs the finalizer. */
typedef struct fs_tail_args {
    int op;                /* FS_OP_* to finalize; -1: merge into row_recs only (tensor parallel) */
    unsigned int *counter; /* zeroed by the prep kernel (unused when `single`) */
    fs_record *row_recs;   /* [rows]: merged records (op -1, and verify's walk) */
    const int32_t *pre_status;
    int32_t *out_tokens;
    float *out_values;
    int32_t *out_num_emitted;
    int32_t *out_row_status;
    const int32_t *offsets; /* verify */
    const int32_t *drafts;
    int64_t num_requests;
    int64_t stride; /* max_drafts + 1 */
    /* The op in one launch (unfiltered sample, draft argmax and verify on
       the Hopper tile kernel, one GPU; cuda_ops.cu): no prep kernel ran, so
       the scan builds the row descriptors itself from these arrays and the
       verify fields above (temperature NULL: draft argmax; scan_prep.cuh),
       its CTA 0 stores them and the statuses where the op's end reads them
       (descs_out, pre_status_out), and its CTAs meet at a grid barrier (a
       cooperative launch) instead of counting on `counter`, which only a
       prep kernel could have zeroed.  1: up to tail_rows_max rows, CTA 0
       then ends the op (fs_op_tail_run); 2: more rows, every CTA merges
       rows as a merge block would (fs_op_tail_grid). */
    int single;
    const float *temperature;
    const uint64_t *seed, *offset;
    fs_row_desc *descs_out;
    int32_t *pre_status_out;
    /* verify in one launch past tail_rows_max rows (single 2), where each
       row's merging CTA takes its row's step of the walk (op_tail.cuh
       fs_walk_row): per request the rows stepped so far (zeroed by CTA 0
       with the descriptors), per row its step's verdict */
    unsigned int *walk_count;
    int32_t *walk_verdict;
} fs_tail_args;

/* ---- device helpers ---------------------------------------------------- */

#ifdef __CUDACC__

/* A 16-bit float's bits (bf16 or fp16) as float. */
static __device__ __forceinline__ float fs_half_bits_to_float(uint16_t h, fs_dtype dt)
{
    if (dt == FS_DTYPE_BF16)
        return __uint_as_float((uint32_t)h << 16);
    return __half2float(__ushort_as_half(h));
}

/* Element i of a read-only fp32 / fp16 / bf16 array, as float. */
static __device__ __forceinline__ float fs_load_elem(const void *base, int64_t i, fs_dtype dt)
{
    if (dt == FS_DTYPE_F32)
        return __ldg(static_cast<const float *>(base) + i);
    return fs_half_bits_to_float(__ldg(static_cast<const unsigned short *>(base) + i), dt);
}

/* Push the tokens t0 .. t0+cnt-1 (global ids, 1 <= cnt <= FS_NOISE_BLOCK, all
 * in noise block t0 / FS_NOISE_BLOCK) of `row` with logits l[0..cnt) into
 * rec: every token into the log-sum-exp and argmax, the block into the
 * sampling candidate; and into the candidate list cl when the row filters
 * (cl non-NULL).  Same transform as the CPU scan: mask, bias, score. */
static __device__ __forceinline__ void fs_push_block(fs_record *rec, fs_cand_list *cl,
                                                     const fs_row_desc &d,
                                                     const fs_scan_args &a, int64_t row,
                                                     int64_t t0, int cnt, const float *l)
{
    const float *bias = a.bias ? a.bias + row * a.global_vocab : nullptr;
    const uint32_t *allowed = a.allowed ? a.allowed + row * a.words : nullptr;
    float s[FS_NOISE_BLOCK];
#pragma unroll
    for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
        s[i] = -INFINITY;
        if (i < cnt) {
            const int64_t gid = t0 + i;
            if (allowed && !((__ldg(&allowed[gid >> 5]) >> (gid & 31)) & 1u))
                continue;
            s[i] = bias ? fs_score(l[i], __ldg(&bias[gid]), d.inv_temp)
                        : fs_score_nobias(l[i], d.inv_temp);
        }
    }
    /* s is -inf past cnt: the pushes take all FS_NOISE_BLOCK places (the
       same results, without i < cnt tests of their own) */
    if (cl)
        fs_cand_push_block(cl, (int32_t)t0, s);
    if (a.tree_rows)
        fs_tree_scan_block(rec, d, a.tree_rows + row, a.tree_child_s + row * FS_TREE_MAX_CHILDREN,
                           (int32_t)t0, FS_NOISE_BLOCK, s);
    fs_record_push_block(rec, &d, (int32_t)t0, FS_NOISE_BLOCK, s);
}

/* This thread's share of a merge over recs[0 .. n): records first,
 * first + stride, ... in that order, loaded 4 at a time so the loads overlap
 * (L2 loads: the records come from other CTAs or the previous kernel). */
static __device__ __forceinline__ fs_record fs_merge_run(const fs_record *recs, int64_t n,
                                                         int64_t first, int64_t stride)
{
    constexpr int BATCH = 4;
    fs_record acc;
    fs_record_init(&acc);
    for (int64_t k0 = first; k0 < n; k0 += BATCH * stride) {
        fs_record r[BATCH];
#pragma unroll
        for (int i = 0; i < BATCH; ++i) {
            const int64_t k = k0 + i * stride;
            if (k < n) {
                const float4 *p = reinterpret_cast<const float4 *>(recs + k);
                reinterpret_cast<float4 *>(&r[i])[0] = __ldcg(p);
                reinterpret_cast<float4 *>(&r[i])[1] = __ldcg(p + 1);
            } else {
                fs_record_init(&r[i]);
            }
        }
#pragma unroll
        for (int i = 0; i < BATCH; ++i)
            fs_record_merge(&acc, &r[i]);
    }
    return acc;
}

/* Merge the records of a full warp into every lane (fixed butterfly:
 * deterministic).  ROLLED: one copy of the merge's code in a loop, for code
 * that runs rarely and cold (the filters' wide resolve); the same bits. */
template <bool ROLLED = false>
static __device__ __forceinline__ void fs_record_warp_reduce(fs_record *r)
{
    if (ROLLED) {
#pragma unroll 1
        for (int mask = 16; mask > 0; mask >>= 1) {
            fs_record o = fs_record_shfl_xor(*r, mask);
            fs_record_merge(r, &o);
        }
    } else {
#pragma unroll
        for (int mask = 16; mask > 0; mask >>= 1) {
            fs_record o = fs_record_shfl_xor(*r, mask);
            fs_record_merge(r, &o);
        }
    }
}

/* %globaltimer (ns, one clock for every SM): the timing probes' clock
 * (probe_resolve.cuh, probe_tail.cuh). */
static __device__ __forceinline__ unsigned long long fs_globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* bar.sync on barrier `id` for `threads` threads (whole warps; id 0 with
 * every thread of the block is __syncthreads). */
static __device__ __forceinline__ void fs_named_bar(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/* Merge the records of threads tid 0 .. threads - 1 (a multiple of 32, at
 * most 1024; synchronised by barrier bar_id) into the return value of tid
 * 0: a fixed tree, so equal thread counts give equal bits.  `scratch` holds
 * threads / 32 records and is still being read by warp 0 when this returns.
 * ROLLED: as fs_record_warp_reduce. */
template <bool ROLLED = false>
static __device__ __forceinline__ fs_record fs_record_block_reduce_bar(fs_record r,
                                                                      fs_record *scratch, int tid,
                                                                      int threads, int bar_id)
{
    const int lane = tid & 31, warp = tid >> 5, warps = threads >> 5;
    fs_record_warp_reduce<ROLLED>(&r);
    if (lane == 0)
        scratch[warp] = r;
    fs_named_bar(bar_id, threads);
    if (warp == 0) {
        if (lane < warps) {
            r = scratch[lane];
        } else {
            fs_record_init(&r);
        }
        fs_record_warp_reduce<ROLLED>(&r);
    }
    return r;
}

/* The block's records (blockDim.x a multiple of 32, at most 1024). */
template <bool ROLLED = false>
static __device__ __forceinline__ fs_record fs_record_block_reduce(fs_record r,
                                                                   fs_record *scratch)
{
    return fs_record_block_reduce_bar<ROLLED>(r, scratch, threadIdx.x, blockDim.x, 0);
}

/* Epilogue shared by the fused kernels: S holds the tile's fp32 logits as
 * [BN rows][pitch] (local tokens v0 .. v0+vcount along a row).  One warp per
 * row: each lane takes one noise block at a time, then the warp merges and
 * lane 0 writes the (row, tile) record. */
static __device__ __forceinline__ void fs_tile_epilogue(const float *S, int pitch, int bn,
                                                        int64_t v0, int vcount, int64_t n0,
                                                        int64_t tile, const fs_scan_args &a)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = blockDim.x >> 5;
    const int64_t gb = a.vocab_offset + v0, ge = gb + vcount;
    const int64_t B0 = gb / FS_NOISE_BLOCK;
    const int nslots = (int)((ge - 1) / FS_NOISE_BLOCK - B0 + 1);
    for (int nn = warp; nn < bn; nn += warps) {
        const int64_t row = n0 + nn;
        if (row >= a.rows)
            break;
        const fs_row_desc d = a.descs[row];
        if (!(d.flags & FS_ROWF_VALID))
            continue;
        fs_record rec;
        fs_record_init(&rec);
        const bool filt = a.cands && (d.flags & FS_ROWF_FILTER);
        fs_cand_list cl;
        fs_cand_init(&cl);
        const float *srow = S + (size_t)nn * pitch;
        for (int s = lane; s < nslots; s += 32) {
            const int64_t g16 = (B0 + s) * FS_NOISE_BLOCK;
            const int64_t t0 = g16 > gb ? g16 : gb;
            const int64_t t1 = g16 + FS_NOISE_BLOCK < ge ? g16 + FS_NOISE_BLOCK : ge;
            fs_push_block(&rec, filt ? &cl : nullptr, d, a, row, t0, (int)(t1 - t0),
                          srow + (t0 - gb));
        }
        fs_record_warp_reduce(&rec);
        if (filt) /* uniform over the warp: one row per warp */
            fs_cand_warp_reduce(cl);
        if (lane == 0) {
            a.tile_recs[row * a.tiles_per_row + tile] = rec;
            if (filt)
                a.cands[row * a.tiles_per_row + tile] = cl;
        }
    }
}

#endif /* __CUDACC__ */

/* ---- device selection (cuda_context.cu) -------------------------------- */

/* Make ctx's device current (remembering the previous one in *prev_device,
 * -1 if unchanged) and make sure its kernels are configured. */
fs_status fs_cuda_enter(fs_context *ctx, int *prev_device);
void fs_cuda_leave(int prev_device);
/* Raise the kernels' dynamic shared-memory limits on the current device
 * (once per device). */
cudaError_t fs_cuda_configure_current(int device);

/* ---- host-side launchers (each returns cudaGetLastError()) ------------- */

/* The filters' parameters as prep reads them; fdescs NULL: the op has no
 * filters. */
typedef struct fs_prep_filters {
    const int32_t *top_k;
    const float *top_p;
    const float *min_p;
    int32_t *out_fallback;  /* zeroed per request by prep (optional) */
    fs_filter_desc *fdescs; /* [rows] out */
    unsigned int *flag_n;   /* rows handed to the second pass: zeroed by prep */
} fs_prep_filters;

#ifdef __CUDACC__
/* A scanned row of a request whose filter parameters are q (read once per
 * request, before the prep's stores): its filter descriptor into *fd, and
 * FS_ROWF_FILTER in its flags when a filter is active.  The chain, tree
 * and verify preps share it. */
static __device__ __forceinline__ void fs_prep_filter_row(fs_filter_params q, int64_t global_vocab,
                                                          fs_row_desc &d, fs_filter_desc *fd)
{
    *fd = fs_filter_desc_of(q, global_vocab, &d);
    if (fd->active)
        d.flags |= FS_ROWF_FILTER;
}
#endif

/* What a prep kernel reads: the op's filter parameters from p and the
 * workspace pointers of w; all NULL when w is (the op does not filter). */
static inline fs_prep_filters fs_prep_filters_of(const fs_sampling *p, const fs_prep_filters *w)
{
    fs_prep_filters f = {};
    if (w) {
        f.top_k = p->top_k;
        f.top_p = p->top_p;
        f.min_p = p->min_p;
        f.out_fallback = p->out_filter_fallback;
        f.fdescs = w->fdescs;
        f.flag_n = w->flag_n;
    }
    return f;
}

/* Row descriptors and pre-scan statuses, and *counter = 0 for the scan's
 * tail (kernels/prep.cu).  filters non-NULL (the op filters; only its flag_n
 * and fdescs are read, the parameters come from a->params): prep also checks
 * the filter parameters (FS_ROW_BAD_FILTER), writes every row's
 * fs_filter_desc, flags the active ones FS_ROWF_FILTER and zeroes
 * params->out_filter_fallback and *flag_n. */
cudaError_t fs_launch_prep(const fs_op_args *a, fs_row_desc *descs, int32_t *pre_status,
                           unsigned int *counter, const fs_prep_filters *filters,
                           cudaStream_t stream);

/* Fused LM-head scans: bf16/fp16 tensor cores (scan_mma.cu), fp32 SIMT
 * (scan_simt.cu).  They write tiles_per_row = ceil(V / FS_FUSED_TILE_V)
 * records per row. */
cudaError_t fs_launch_scan_mma(const fs_op_args *a, const fs_scan_args *s, cudaStream_t stream);
cudaError_t fs_scan_mma_configure(void); /* raise the dynamic smem limits (current device) */
cudaError_t fs_launch_scan_simt(const fs_op_args *a, const fs_scan_args *s, cudaStream_t stream);

/* The fused scan of an op (cuda_ops.cu): the Hopper scans (TMA + wgmma)
 * where the device, dtype, D and alignment allow, the generic tensor-core
 * scan otherwise, or when the library was built without sm_90a code (the
 * context then stops trying); fp32 heads the SIMT scan.  Filtered ops
 * (s->cands set) take the tile kernel up to 160 rows and the rows kernel's
 * list-keeping epilogue past them (fs_context.filter_rows_min); filtered
 * tree verify past 160 rows runs the tile kernel over row chunks of at most
 * 160.  Tree verify (s->tree_rows) takes either Hopper kernel, as the other
 * ops do.  Sets s->tiles_per_row (records per row); *hopper_lists: a Hopper
 * kernel ran, which writes FS_HOPPER_TILE_LISTS candidate lists per record;
 * the Hopper scans end the op themselves when `tail` allows, and *tail_ran
 * says whether this one did. */
struct fs_context;
cudaError_t fs_launch_fused_scan(fs_context *ctx, const fs_op_args *a, fs_scan_args *s,
                                 const fs_tail_args *tail, bool *tail_ran, bool *hopper_lists,
                                 cudaStream_t stream);

/* Scan over materialised logits (scan_logits.cu; its chunking: logits_plan.h). */
cudaError_t fs_launch_scan_logits(const fs_op_args *a, const fs_scan_args *s, int64_t chunk,
                                  cudaStream_t stream);

/* The scan arguments every op shares, from its fs_op_args (cuda_ops.cu):
 * the rest (cands, tree rows) is zero for the caller to set. */
fs_scan_args fs_scan_args_make(const fs_op_args *a, const fs_row_desc *descs,
                               fs_record *tile_recs);

/* The op's scan: fs_launch_fused_scan with an LM head, the logits scan
 * without (*tail_ran and *hopper_lists then false). */
cudaError_t fs_launch_scan(fs_context *ctx, const fs_op_args *a, fs_scan_args *s,
                           const fs_tail_args *tail, bool *tail_ran, bool *hopper_lists,
                           cudaStream_t stream);

/* Per-row merge of tile records into row_recs (merge_finalize.cu); with
 * finalize != 0, sample and argmax rows are finalized into a's outputs by the
 * merge itself (row_recs is then not written) and fs_launch_finalize must not
 * run.  filt (NULL: the op has no filters): filtered rows are resolved
 * (filter_resolve.cuh), the undecided ones handed to the second pass, which
 * then stores or finalizes them -- in the same launch on one GPU
 * (fs_launch_filter_merge, which reads the scan's arguments s), after the
 * exchange on a sharded context (filt->sums non-NULL).  overlap: launch
 * programmatically (sm_90+; see pdl.cuh). */
struct fs_filter_ws;
cudaError_t fs_launch_merge(const fs_op_args *a, const fs_record *tile_recs,
                            int64_t tiles_per_row, const fs_row_desc *descs,
                            const int32_t *pre_status, fs_record *row_recs, int finalize,
                            const struct fs_filter_ws *filt, int force_second_pass,
                            const fs_scan_args *s, bool overlap, cudaStream_t stream);

/* Per-op finalizer over merged records (merge_finalize.cu). */
cudaError_t fs_launch_finalize(const fs_op_args *a, const fs_record *row_recs,
                               const fs_row_desc *descs, const int32_t *pre_status,
                               cudaStream_t stream);

#endif
