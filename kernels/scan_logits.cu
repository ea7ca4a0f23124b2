/* Scan over materialised logits [rows, V] (the *_logits ops): one pass, one
 * CTA per (row, chunk of the vocabulary), one record per CTA.
 *
 * A thread takes BATCH noise blocks (16 consecutive global ids each; by
 * mode, Tune) at a time, issuing all their loads before it reduces any of
 * them; consecutive threads take consecutive blocks.  When every block is whole and aligned
 * (vocab_offset and V multiples of 16, 16-byte aligned logits) a block's
 * logits are 16-byte vector loads (two for fp16 / bf16, four for fp32);
 * otherwise guarded scalar loads.
 *
 * Three kernels by what the rows need (Mode), the first two compiled per
 * dtype:
 *   ARGMAX  draft argmax (fs_scan_args.lse = 0; it has no bias, mask or
 *           temperature): a running max and its id per thread, ids rising
 *           so a strict > keeps the lowest on ties, as the benchmark's
 *           one-pass argmax does; no exponentials, sum_exp meaningless.
 *   PLAIN   sample and verify rows without bias, mask, filters or tree:
 *           fs_record_push_block on the scores.
 *   FULL    the rest: fs_push_block (bias, mask, candidate lists, tree
 *           children), dtype read at run time.
 * Under ncu at 1024 rows of 151936 bf16 logits (H100) the one kernel that
 * did all three (runtime dtype, every pointer tested per block, one block
 * a thread per 4096-token CTA) executed 79 warp instructions per 32 tokens
 * for draft argmax (770 us) and 108 for sampling (1005 us), where the
 * benchmark's one-pass baselines execute 12 (120 us) and 47 (360 us).  A
 * CTA ends with a block reduce of its threads' records (~10 record merges
 * a thread), so chunks are long when rows are many (fs_logits_chunk). */
#include <cuda_fp16.h>

#include "cuda_common.cuh"
#include "logits_plan.h"

namespace {

constexpr int THREADS = FS_SCAN_THREADS;
enum Mode { ARGMAX, PLAIN, FULL };

/* Noise blocks in flight per thread (32 (fp16 / bf16) or 64 (fp32) bytes of
   loads each) and CTAs an SM, by mode.  PLAIN and FULL are bound by their
   arithmetic, not by memory (1024 rows of 151936 bf16 logits would stream
   in ~75 us of PLAIN's 560): one block a thread, which frees the registers
   for more CTAs an SM, issues faster than two blocks at 117-124 registers
   and two CTAs.  On an H200 (bench/results/2026-11-28-h200-logits-occupancy/):
   PLAIN at four CTAs (64 registers, 28 bytes of spills) 18-40% shorter at
   1-1024 rows, where five (48 registers, 128 bytes) took up to 3.5 us off
   some calls of 1-64 rows and added up to 60 us at 80-1000; FULL at three
   (80 registers, none spilled) 15-17% shorter at 1-64 filtered rows, as
   fast as at four (64 registers, 84 bytes of spills). */
template <Mode MODE> struct Tune {
    static constexpr int BATCH = MODE == ARGMAX ? 2 : 1;
    static constexpr int CTAS = MODE == FULL ? 3 : 4;
};

/* The 16 logits of a whole, 16-byte aligned noise block at element e (DT:
   the dtype when known at compile time, as in the ARGMAX and PLAIN
   kernels; -1: dt). */
template <int DT>
__device__ __forceinline__ void load_block_vec(const void *logits, fs_dtype dt, int e,
                                               float (&l)[FS_NOISE_BLOCK])
{
    const fs_dtype t = DT >= 0 ? (fs_dtype)DT : dt;
    if (t == FS_DTYPE_F32) {
        const float4 *p = reinterpret_cast<const float4 *>(static_cast<const float *>(logits) + e);
#pragma unroll
        for (int q = 0; q < FS_NOISE_BLOCK / 4; ++q) {
            const float4 v = __ldg(p + q);
            l[4 * q + 0] = v.x;
            l[4 * q + 1] = v.y;
            l[4 * q + 2] = v.z;
            l[4 * q + 3] = v.w;
        }
    } else {
        const uint4 *p =
            reinterpret_cast<const uint4 *>(static_cast<const unsigned short *>(logits) + e);
#pragma unroll
        for (int q = 0; q < FS_NOISE_BLOCK / 8; ++q) {
            const uint4 v = __ldg(p + q);
            const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                l[8 * q + 2 * k] = fs_half_bits_to_float((uint16_t)(w[k] & 0xffffu), t);
                l[8 * q + 2 * k + 1] = fs_half_bits_to_float((uint16_t)(w[k] >> 16), t);
            }
        }
    }
}

/* Draft argmax's running state: the thread's max over finite scores and its
   lowest id, and whether a score was NaN or +inf (the record's flag). */
struct MaxRun {
    float best;
    int32_t id;
    bool bad;
};

/* DT: an fs_dtype, or -1 (FULL: read dt at run time).  ARGMAX fits in 64
   registers, four CTAs an SM, as the benchmark's argmax pass does; PLAIN
   and FULL are held to theirs by Tune. */
template <int DT, Mode MODE>
__global__ void __launch_bounds__(THREADS, Tune<MODE>::CTAS)
    fs_scan_logits_kernel(const void *__restrict__ logits, fs_dtype dt, int vec, int64_t chunk,
                          int64_t chunks, fs_scan_args a)
{
    __shared__ fs_record scratch[32];
    __shared__ fs_cand_list cand_scratch[THREADS / 32];
    const int64_t row = blockIdx.x / chunks, c = blockIdx.x % chunks;
    const fs_row_desc d = a.descs[row];
    if (!(d.flags & FS_ROWF_VALID))
        return; /* uniform over the block */

    /* Token ids (global, < 2^31 as fs_op_args requires) and slots in 32
       bits; only the row's start needs 64 (rows x V can pass 2^31). */
    const int64_t V = a.vocab;
    const int voff = (int)a.vocab_offset;
    const int lb = (int)(c * chunk), le = (int)(lb + chunk < V ? lb + chunk : V); /* local range */
    const int gb = voff + lb, ge = voff + le;                                     /* global range */
    const int B0 = gb / FS_NOISE_BLOCK, nslots = (ge - 1) / FS_NOISE_BLOCK - B0 + 1;
    const fs_dtype et = DT >= 0 ? (fs_dtype)DT : dt;
    /* element 0 of this row: logit of global id t at [t - voff] */
    const void *rowp = static_cast<const char *>(logits) +
                       row * V * (et == FS_DTYPE_F32 ? 4 : 2);

    fs_record rec;
    fs_record_init(&rec);
    MaxRun mr = {-INFINITY, -1, false};
    /* uniform over the block */
    const bool filt = MODE == FULL && a.cands && (d.flags & FS_ROWF_FILTER);
    fs_cand_list cl;
    fs_cand_init(&cl);
    constexpr int BATCH = Tune<MODE>::BATCH;
    for (int s0 = threadIdx.x; s0 < nslots; s0 += BATCH * THREADS) {
        float l[BATCH][FS_NOISE_BLOCK];
        int t0[BATCH];
        int cnt[BATCH];
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const int s = s0 + b * THREADS;
            cnt[b] = 0;
            t0[b] = 0;
            if (s >= nslots)
                continue;
            const int g16 = (B0 + s) * FS_NOISE_BLOCK;
            t0[b] = g16;
            if (vec) {
                cnt[b] = FS_NOISE_BLOCK;
                load_block_vec<DT>(rowp, dt, g16 - voff, l[b]);
            } else {
                t0[b] = g16 > gb ? g16 : gb;
                const int t1 = ge - g16 > FS_NOISE_BLOCK ? g16 + FS_NOISE_BLOCK : ge;
                cnt[b] = t1 - t0[b];
                /* -inf past cnt: every score there is -inf too (inv_temp > 0) */
#pragma unroll
                for (int i = 0; i < FS_NOISE_BLOCK; ++i)
                    l[b][i] = i < cnt[b] ? fs_load_elem(rowp, t0[b] - voff + i, et) : -INFINITY;
            }
        }
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            if (cnt[b] == 0)
                continue;
            if (MODE == ARGMAX) {
#pragma unroll
                for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
                    const float x = fs_score_nobias(l[b][i], d.inv_temp);
                    const bool fin = x < INFINITY; /* false for NaN and +inf */
                    mr.bad |= !fin;
                    if (fin && x > mr.best) {
                        mr.best = x;
                        mr.id = t0[b] + i;
                    }
                }
            } else if (MODE == PLAIN) {
                float sc[FS_NOISE_BLOCK];
#pragma unroll
                for (int i = 0; i < FS_NOISE_BLOCK; ++i)
                    sc[i] = fs_score_nobias(l[b][i], d.inv_temp);
                fs_record_push_block(&rec, &d, t0[b], FS_NOISE_BLOCK, sc);
            } else {
                fs_push_block(&rec, filt ? &cl : nullptr, d, a, row, t0[b], cnt[b], l[b]);
            }
        }
    }
    if (MODE == ARGMAX) {
        if (mr.bad)
            rec.flags |= FS_REC_NONFINITE;
        if (mr.id >= 0)
            fs_record_add_lse(&rec, mr.best, mr.id, 1.0f);
    }
    rec = fs_record_block_reduce(rec, scratch);
    if (threadIdx.x == 0)
        a.tile_recs[row * a.tiles_per_row + c] = rec;
    if (filt) {
        /* the block's candidate list: warps, then warp 0 over the warps */
        fs_cand_warp_reduce(cl);
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        if (lane == 0)
            cand_scratch[warp] = cl;
        __syncthreads();
        if (warp == 0) {
            if (lane < THREADS / 32)
                cl = cand_scratch[lane];
            else
                fs_cand_init(&cl);
            fs_cand_warp_reduce(cl);
            if (lane == 0)
                a.cands[row * a.tiles_per_row + c] = cl;
        }
    }
}

template <Mode MODE>
void launch_typed(const fs_op_args *a, const fs_scan_args *s, bool vec, int64_t chunk,
                  int64_t chunks, unsigned blocks, cudaStream_t stream)
{
    const fs_dtype dt = a->logits_dtype;
    if (dt == FS_DTYPE_F32)
        fs_scan_logits_kernel<FS_DTYPE_F32, MODE>
            <<<blocks, THREADS, 0, stream>>>(a->logits, dt, vec, chunk, chunks, *s);
    else if (dt == FS_DTYPE_F16)
        fs_scan_logits_kernel<FS_DTYPE_F16, MODE>
            <<<blocks, THREADS, 0, stream>>>(a->logits, dt, vec, chunk, chunks, *s);
    else
        fs_scan_logits_kernel<FS_DTYPE_BF16, MODE>
            <<<blocks, THREADS, 0, stream>>>(a->logits, dt, vec, chunk, chunks, *s);
}

} // namespace

/* Long chunks when rows are many: each CTA ends in one block reduce of its
 * records, 64 noise blocks a thread at FS_LOGITS_CHUNK_MAX. */
int64_t fs_logits_chunk(int64_t rows, int64_t vocab, int sm_count, int filters)
{
    static_assert(FS_LOGITS_CHUNK_MIN % FS_REC_MIN_TOKENS == 0, "the workspace's record bound");
    const int64_t target = 4 * (int64_t)(sm_count > 0 ? sm_count : 100);
    int64_t chunk = filters ? FS_LOGITS_CHUNK_MAX_FILTERED : FS_LOGITS_CHUNK_MAX;
    while (chunk > FS_LOGITS_CHUNK_MIN && rows * ((vocab + chunk - 1) / chunk) < target)
        chunk >>= 1;
    return chunk;
}

cudaError_t fs_launch_scan_logits(const fs_op_args *a, const fs_scan_args *s, int64_t chunk,
                                  cudaStream_t stream)
{
    const int64_t chunks = (a->vocab_size + chunk - 1) / chunk;
    const int64_t blocks = a->rows * chunks;
    if (blocks > 0x7fffffff)
        return cudaErrorInvalidConfiguration;
    const bool vec = a->vocab_offset % FS_NOISE_BLOCK == 0 && a->vocab_size % FS_NOISE_BLOCK == 0 &&
                     ((uintptr_t)a->logits & 15) == 0;
    const bool plain = !s->bias && !s->allowed && !s->cands && !s->tree_rows;
    if (!s->lse)
        launch_typed<ARGMAX>(a, s, vec, chunk, chunks, (unsigned)blocks, stream);
    else if (plain)
        launch_typed<PLAIN>(a, s, vec, chunk, chunks, (unsigned)blocks, stream);
    else
        fs_scan_logits_kernel<-1, FULL><<<(unsigned)blocks, THREADS, 0, stream>>>(
            a->logits, a->logits_dtype, vec ? 1 : 0, chunk, chunks, *s);
    return cudaGetLastError();
}
