/* Hopper (sm_90a) fused LM-head scan for large row batches: rows as the
 * wgmma M dimension.
 *
 *   logits = H . W^T, rows = wgmma M (64 per consumer warpgroup), vocabulary
 *   = wgmma N (256), K = D.
 *
 * Why a second kernel: the vocabulary-as-M kernel (scan_hopper.cu) keeps a
 * tile's logits in an fp32 shared-memory buffer for its epilogue, which caps
 * its tile at 128 tokens x 128 rows and its pipeline at 5 stages; from 128
 * rows up it re-reads H for every 128 tokens and W for every row block, and
 * is bound by L2->SM traffic and latency (bench/hopper_dev/NOTES.md).  With
 * rows as M, a thread's accumulators hold 2 rows x 64 tokens and the four
 * lanes of a quad hold all 256 tokens of those rows, so the epilogue reads its
 * logits straight from registers, and each thread can keep its rows' records
 * in registers from one vocabulary tile to the next:
 *
 *   CTA        3 warpgroups, 384 threads, one CTA per SM, persistent: a
 *              producer warpgroup (one thread issues TMA; setmaxnreg 40) and
 *              2 consumer warpgroups (setmaxnreg 232: 128 accumulators each).
 *   work       CTA tile = 128 rows x 256 tokens.  CTA b owns row block
 *              b % n_rb and vocabulary tiles b / n_rb, + slots, ... (slots =
 *              grid / n_rb), so the CTAs that share a W tile run side by side
 *              and W comes from HBM once.
 *   pipeline   4 stages of { W 256 x 64, H 128 x 64 } (48 KB), 128-byte
 *              swizzle, full/empty mbarriers.
 *   epilogue   after a tile's k-loop, from registers: scores, the tile max
 *              and the sum of exp(s - max) into the carried record, then the
 *              Gumbel candidates.  The carried best key prunes the noise of
 *              every token with s + 17 < best key (exact: such a token cannot
 *              win), which on real LLM logits skips almost all of it.
 *   records    one per (row, slot): the merge of that CTA's tiles.  Which
 *              token wins is order-independent (record.h); sum_exp carries
 *              its usual rounding.  The generic merge then reads `slots`
 *              records per row instead of ceil(V / 128).
 *
 * The tensor cores idle during the epilogue (the TMA keeps prefetching); at
 * D = 4096 a tile's k-loop is ~40 us and its sampling epilogue a few us. */
#include "scan_hopper_rows.cuh"

#include <math.h>
#include <stdint.h>

#include "hopper_ptx.cuh"
#include "pdl.cuh"
#include "philox.h"
#include "record.h"
#include "gumbel_prune.cuh"
#include "record_shfl.cuh"

namespace fshr {

using namespace fshp;

constexpr int BR = 128;           /* rows per CTA tile: 2 consumer warpgroups x 64 */
constexpr int BV = 256;           /* tokens per CTA tile (wgmma N) */
constexpr int THREADS = 256;      /* 2 consumer warpgroups; thread 0 also issues the TMA */
constexpr int W_BYTES = BV * BK * 2;
constexpr int H_BYTES = BR * BK * 2;
constexpr int STAGE_BYTES = W_BYTES + H_BYTES;
constexpr int STAGES = 4;
constexpr int BAR_BYTES = 2 * STAGES * 8;
constexpr int SLOT_BYTES = 4 * THREADS * 16; /* 4 x (2 scores of 2 rows) per thread, for the noise loop */
constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + SLOT_BYTES + BAR_BYTES;
static_assert(SMEM <= SMEM_MAX, "smem");

struct Args {
    const fs_row_desc *descs;
    const float *bias;
    const uint32_t *allowed;
    fs_record *recs;
    int64_t rec_slot_stride, rec_row_stride;
    int64_t rows, V, vocab_offset, global_vocab, words;
    int n_rb, slots, n_vt, kblocks, w_evict_first;
};

#if FSH_SM90A

constexpr int NCW = THREADS / 32; /* warps that release each stage */

#define FSHR_WGMMA_M64N256(DT)                                                                   \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                                                          \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." DT "." DT " "                                                           \
                 "{"                                                                                                                    \
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"                                            \
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"                                  \
                     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"                                  \
                     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"                                  \
                     "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"                                  \
                     "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"                                  \
                     "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"                      \
                     "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"                   \
                     "}, %128, %129, p, 1, 1, 0, 0;\n}\n"                                                                               \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                      \
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),            \
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),          \
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),          \
                       "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),          \
                       "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),          \
                       "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),          \
                       "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),          \
                       "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),          \
                       "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),          \
                       "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),          \
                       "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),          \
                       "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),      \
                       "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),  \
                       "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),  \
                       "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])   \
                 : "l"(da), "l"(db), "r"(scale_d));

template <bool BF16> struct Mma256;
template <> struct Mma256<true> {
    static __device__ __forceinline__ void mma(float (&d)[128], uint64_t da, uint64_t db, int scale_d)
    {
        FSHR_WGMMA_M64N256("bf16")
    }
};
template <> struct Mma256<false> {
    static __device__ __forceinline__ void mma(float (&d)[128], uint64_t da, uint64_t db, int scale_d)
    {
        FSHR_WGMMA_M64N256("f16")
    }
};

/* The 4 k16 steps of one 64-wide k-block: A = this warpgroup's 64 H rows,
 * B = the 256-token W tile, both K-major in shared memory. */
template <bool BF16>
__device__ __forceinline__ void mma_kblock(float (&acc)[128], uint32_t ah, uint32_t bw, int first)
{
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
        Mma256<BF16>::mma(acc, make_desc(ah + kk * 32), make_desc(bw + kk * 32),
                          (first && kk == 0) ? 0 : 1);
}

/* One row's carried state in one thread. */
struct RowState {
    fs_record rec;
    fs_row_desc d;
    int64_t row;
    int scan; /* row in range and FS_ROWF_VALID */
};

/* Whether token (id, s) of row r needs its noise: a Gumbel candidate that
 * can still reach the row's carried best key. */
__device__ __forceinline__ bool wants_noise(const RowState &r, int32_t id, float s)
{
    return r.scan && !(r.d.flags & FS_ROWF_GREEDY) && s > -INFINITY && id != r.d.excluded &&
           !fs_noise_hopeless(s, r.rec.best_key);
}

__device__ __forceinline__ void offer(RowState &r, int32_t id, float s, float g)
{
    const float key = s + g;
    if (fs_beats(key, id, r.rec.best_key, r.rec.best_id)) {
        r.rec.best_key = key;
        r.rec.best_id = id;
        r.rec.best_s = s;
    }
}

/* Noise for tokens (id0, id0 + 1) of both rows, scores (a0, a1) of r0 and
 * (b0, b1) of r1.  Called by all 32 lanes together.  With the vocabulary
 * offset a multiple of 4, lanes gc and gc ^ 1 hold the two halves of one
 * Philox group for both rows, so the even lane draws row r0's group and the
 * odd lane row r1's, and they swap the halves the other needs: one Philox
 * call per 4 tokens.  Otherwise each lane draws its own. */
__device__ __forceinline__ void gumbel_pairs(RowState &r0, RowState &r1, float a0, float a1,
                                             float b0, float b1, int32_t id0, bool aligned,
                                             int gc)
{
    const bool na0 = wants_noise(r0, id0, a0), na1 = wants_noise(r0, id0 + 1, a1);
    const bool nb0 = wants_noise(r1, id0, b0), nb1 = wants_noise(r1, id0 + 1, b1);
    if (!__any_sync(0xffffffffu, na0 || na1 || nb0 || nb1))
        return;
    uint32_t ua0, ua1, ub0, ub1; /* words of r0's and r1's tokens id0, id0 + 1 */
    if (aligned) {
        const bool odd = gc & 1;
        const fs_row_desc &d = odd ? r1.d : r0.d;
        const fs_u32x4 w =
            fs_philox_tokens(d.seed, d.offset, d.position, FS_PURPOSE_GUMBEL, (uint32_t)id0 >> 2);
        /* even lane: tokens at words 0, 1; odd lane: words 2, 3 */
        const uint32_t x = __shfl_xor_sync(0xffffffffu, odd ? w.v[0] : w.v[2], 1);
        const uint32_t y = __shfl_xor_sync(0xffffffffu, odd ? w.v[1] : w.v[3], 1);
        ua0 = odd ? x : w.v[0];
        ua1 = odd ? y : w.v[1];
        ub0 = odd ? w.v[2] : x;
        ub1 = odd ? w.v[3] : y;
    } else {
        const uint32_t grp = (uint32_t)id0 >> 2;
        const int lo = id0 & 3;
        fs_u32x4 wa = fs_philox_tokens(r0.d.seed, r0.d.offset, r0.d.position, FS_PURPOSE_GUMBEL, grp);
        fs_u32x4 wb = fs_philox_tokens(r1.d.seed, r1.d.offset, r1.d.position, FS_PURPOSE_GUMBEL, grp);
        ua0 = fs_pick_word(wa, lo);
        ub0 = fs_pick_word(wb, lo);
        if (lo == 3) { /* the pair straddles two groups */
            wa = fs_philox_tokens(r0.d.seed, r0.d.offset, r0.d.position, FS_PURPOSE_GUMBEL, grp + 1);
            wb = fs_philox_tokens(r1.d.seed, r1.d.offset, r1.d.position, FS_PURPOSE_GUMBEL, grp + 1);
            ua1 = wa.v[0];
            ub1 = wb.v[0];
        } else {
            ua1 = fs_pick_word(wa, lo + 1);
            ub1 = fs_pick_word(wb, lo + 1);
        }
    }
    /* the exact logarithms only where the uniform clears the floor: after the
       first tiles that is a few tokens per warp, so skip them warp-wide */
    const bool ha0 = na0 && !(fs_uniform(ua0) < fs_noise_u_floor(a0, r0.rec.best_key));
    const bool ha1 = na1 && !(fs_uniform(ua1) < fs_noise_u_floor(a1, r0.rec.best_key));
    const bool hb0 = nb0 && !(fs_uniform(ub0) < fs_noise_u_floor(b0, r1.rec.best_key));
    const bool hb1 = nb1 && !(fs_uniform(ub1) < fs_noise_u_floor(b1, r1.rec.best_key));
    if (!__any_sync(0xffffffffu, ha0 || ha1 || hb0 || hb1))
        return;
    /* (a floor computed before an offer raised the best key is only lower:
       still exact) */
    if (ha0)
        offer(r0, id0, a0, fs_gumbel(ua0));
    if (ha1)
        offer(r0, id0 + 1, a1, fs_gumbel(ua1));
    if (hb0)
        offer(r1, id0, b0, fs_gumbel(ub0));
    if (hb1)
        offer(r1, id0 + 1, b1, fs_gumbel(ub1));
}

/* Push this thread's 64 tokens of row HALF (accumulators 4j + 2 HALF + e:
 * local token v0 + 8j + e) into the row's carried record, all but the noise
 * (epi_noise).  The scores overwrite the logits in acc (-inf: skipped). */
template <int HALF>
__device__ __forceinline__ void epi_row(RowState &r, float (&acc)[128], int64_t v0, const Args &a)
{
    if (!r.scan)
        return;
    const int64_t g0 = a.vocab_offset + v0;
    const bool plain = !a.allowed && !a.bias;
    float m = -INFINITY, sel = -INFINITY;
    int32_t mid = -1;
    bool nonfinite = false;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            float &x = acc[4 * j + 2 * HALF + e];
            const int32_t id = (int32_t)(g0 + 8 * j + e);
            float s = -INFINITY;
            if (v0 + 8 * j + e < a.V) {
                if (plain) {
                    s = fs_score(x, 0.0f, r.d.inv_temp);
                } else {
                    bool ok = true;
                    float b = 0.0f;
                    if (a.allowed)
                        ok = (__ldg(&a.allowed[r.row * a.words + (id >> 5)]) >> (id & 31)) & 1u;
                    if (ok) {
                        if (a.bias)
                            b = __ldg(&a.bias[r.row * a.global_vocab + id]);
                        s = fs_score(x, b, r.d.inv_temp);
                    }
                }
            }
            if (!(s > -INFINITY && s < INFINITY)) {
                nonfinite = nonfinite || s != -INFINITY;
                s = -INFINITY; /* skipped, as fs_record_push skips it */
            } else if (s > m) { /* ids ascend: strict > keeps the lowest id of a tie */
                m = s;
                mid = id;
            }
            sel = id == r.d.selected ? s : sel;
            x = s;
        }
    }
    if (nonfinite)
        r.rec.flags |= FS_REC_NONFINITE;
    if (sel > r.rec.sel_s)
        r.rec.sel_s = sel;
    if (mid < 0)
        return; /* nothing finite and allowed: no noise either */
    if (r.rec.max_id < 0) {
        r.rec.max_s = m;
        r.rec.max_id = mid;
        r.rec.sum_exp = 0.0f;
    } else if (fs_beats(m, mid, r.rec.max_s, r.rec.max_id)) {
        r.rec.sum_exp *= expf(r.rec.max_s - m);
        r.rec.max_s = m;
        r.rec.max_id = mid;
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
            sum += __expf(acc[4 * j + 2 * HALF + e] - r.rec.max_s); /* expf's range
                reduction, unrolled 64 times, costs ~70 registers */
    r.rec.sum_exp += sum;

}

/* The noise pass over both rows: the scores go through this thread's private
 * slots in shared memory, 4 pairs of both rows at a time, so that the noise
 * runs in a rolled loop (unrolled over all 32 pairs, the scheduler overlaps
 * so many Philox chains that the 128 accumulators spill). */
__device__ __forceinline__ void epi_noise(RowState &r0, RowState &r1, const float (&acc)[128],
                                          int64_t g0, bool aligned, int gc, float4 *slots)
{
    if (!__any_sync(0xffffffffu, (r0.scan && !(r0.d.flags & FS_ROWF_GREEDY)) ||
                                     (r1.scan && !(r1.d.flags & FS_ROWF_GREEDY))))
        return;
#pragma unroll
    for (int q = 0; q < 8; ++q) {
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            const int j = 4 * q + p;
            slots[p * THREADS] = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
        }
#pragma unroll 1
        for (int p = 0; p < 4; ++p) {
            const float4 v = slots[p * THREADS];
            gumbel_pairs(r0, r1, v.x, v.y, v.z, v.w, (int32_t)(g0 + 8 * (4 * q + p)), aligned, gc);
        }
    }
}

__device__ __forceinline__ void row_init(RowState &r, int64_t row, const Args &a)
{
    fs_record_init(&r.rec);
    r.row = row;
    r.scan = 0;
    r.d.flags = 0;
    if (row < a.rows) {
        r.d = a.descs[row];
        r.scan = (r.d.flags & FS_ROWF_VALID) ? 1 : 0;
    }
}

/* Merge the quad's four records of the row (all 32 lanes take part) and
 * write it from lane gc == 0. */
__device__ __forceinline__ void row_finish(RowState &r, int gc, int slot, const Args &a)
{
#pragma unroll
    for (int m = 1; m < 4; m <<= 1) {
        const fs_record o = fs_record_shfl_xor(r.rec, m);
        fs_record_merge(&r.rec, &o);
    }
    if (gc == 0 && r.row < a.rows)
        a.recs[slot * a.rec_slot_stride + r.row * a.rec_row_stride] = r.rec;
}

/* Producer side of the pipeline, run by one thread: k-block step j of this
 * CTA's sequence (tile j / KB, k-block j % KB) into stage j % STAGES. */
__device__ __forceinline__ void issue_step(int j, const CUtensorMap *tmw, const CUtensorMap *tmh,
                                           uint32_t sW, uint32_t sH, uint32_t full, int rb,
                                           int slot, const Args &a, uint64_t pol_w, uint64_t pol_h)
{
    const int t = j / a.kblocks, kb = j - t * a.kblocks;
    const int vt = slot + t * a.slots;
    if (vt >= a.n_vt)
        return;
    const int st = j % STAGES;
    mbar_expect_tx(full, (uint32_t)STAGE_BYTES);
    tma_load_2d(sW + st * W_BYTES, tmw, kb * BK, vt * BV, full, pol_w);
    tma_load_2d(sH + st * H_BYTES, tmh, kb * BK, rb * BR, full, pol_h);
}

template <bool BF16>
__global__ void __launch_bounds__(THREADS, 1)
    fshr_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                     const Args a)
{
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem =
        reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~(uintptr_t)1023);
    const uint32_t sbase = smem_u32(smem);
    const uint32_t sW = sbase;
    const uint32_t sH = sbase + STAGES * W_BYTES;
    float4 *slots = reinterpret_cast<float4 *>(smem + STAGES * STAGE_BYTES) + threadIdx.x;
    const uint32_t sBar = sbase + STAGES * STAGE_BYTES + SLOT_BYTES;
#define FSHR_FULL(s) (sBar + 8u * (uint32_t)(s))
#define FSHR_EMPTY(s) (sBar + 8u * (uint32_t)(STAGES + (s)))

    const int KB = a.kblocks;
    const int rb = blockIdx.x % a.n_rb, slot = blockIdx.x / a.n_rb;
    const int n_tiles = (a.n_vt - slot + a.slots - 1) / a.slots;
    const int steps = n_tiles * KB;
    const bool producer = threadIdx.x == 0;
    uint64_t pol_w = 0, pol_h = 0;
    if (producer) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(FSHR_FULL(s), 1);
            mbar_init(FSHR_EMPTY(s), NCW);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmw)) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmh)) : "memory");
        pol_w = a.w_evict_first ? policy_evict_first() : policy_evict_normal();
        pol_h = policy_evict_last();
        /* W and H do not depend on the prep kernel: start streaming now */
        for (int j = 0; j < STAGES && j < steps; ++j)
            issue_step(j, &tmw, &tmh, sW, sH, FSHR_FULL(j), rb, slot, a, pol_w, pol_h);
    }
    __syncthreads();
    /* the row descriptors come from the prep kernel, which may still be
       running (programmatic launch) */
    fs_pdl_wait();
    fs_pdl_launch_dependents();

    const int ct = threadIdx.x;
    const int cw = ct >> 7, wi = (ct >> 5) & 3, lane = ct & 31;
    const int ga = lane >> 2, gc = lane & 3;
    const int64_t wg_row = (int64_t)rb * BR + cw * 64;
    RowState r0, r1;
    row_init(r0, wg_row + 16 * wi + ga, a);
    row_init(r1, wg_row + 16 * wi + ga + 8, a);

    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i)
        acc[i] = 0.0f;
    int j = 0; /* k-block step */
    for (int t = 0; t < n_tiles; ++t) {
        for (int kb = 0; kb < KB; ++kb, ++j) {
            const int s = j % STAGES;
            mbar_wait(FSHR_FULL(s), (uint32_t)(j / STAGES) & 1u);
            __syncwarp();
            fence_acc(acc);
            wg_fence();
            mma_kblock<BF16>(acc, sH + s * H_BYTES + cw * (64 * BK * 2), sW + s * W_BYTES, kb == 0);
            wg_commit();
            fence_acc(acc);
            wg_wait<1>();
            fence_acc(acc);
            if (kb > 0) {
                /* step j - 1's stage is free once all 8 warps are past it;
                   refill it with step j - 1 + STAGES */
                const int ps = (j - 1) % STAGES;
                if (lane == 0)
                    mbar_arrive(FSHR_EMPTY(ps));
                if (producer && j - 1 + STAGES < steps) {
                    mbar_wait(FSHR_EMPTY(ps), (uint32_t)((j - 1) / STAGES) & 1u);
                    issue_step(j - 1 + STAGES, &tmw, &tmh, sW, sH, FSHR_FULL(ps), rb, slot, a,
                               pol_w, pol_h);
                }
                __syncwarp();
            }
        }
        wg_wait<0>();
        fence_acc(acc);
        {
            /* free the tile's last stage before the epilogue, so the next
               tile's loads run under it */
            const int ps = (j - 1) % STAGES;
            if (lane == 0)
                mbar_arrive(FSHR_EMPTY(ps));
            if (producer && j - 1 + STAGES < steps) {
                mbar_wait(FSHR_EMPTY(ps), (uint32_t)((j - 1) / STAGES) & 1u);
                issue_step(j - 1 + STAGES, &tmw, &tmh, sW, sH, FSHR_FULL(ps), rb, slot, a, pol_w,
                           pol_h);
            }
            __syncwarp();
        }
        const int64_t v0 = (int64_t)(slot + t * a.slots) * BV + 2 * gc;
        epi_row<0>(r0, acc, v0, a);
        epi_row<1>(r1, acc, v0, a);
        epi_noise(r0, r1, acc, a.vocab_offset + v0, (a.vocab_offset & 3) == 0, gc, slots);
    }
    row_finish(r0, gc, slot, a);
    row_finish(r1, gc, slot, a);
#undef FSHR_FULL
#undef FSHR_EMPTY
}

#else /* not sm_90a: the kernel exists (for the host stub) but is empty */

template <bool BF16>
__global__ void __launch_bounds__(THREADS, 1)
    fshr_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                     const Args a)
{
}

#endif /* FSH_SM90A */

template <bool BF16> cudaError_t configure(int device)
{
    static unsigned long long done = 0;
    return set_smem_once(reinterpret_cast<const void *>(fshr_scan_kernel<BF16>), SMEM, &done,
                         device);
}

int64_t row_blocks(int64_t rows)
{
    return (rows + BR - 1) / BR;
}

} // namespace fshr

extern "C" int64_t fs_hopper_rows_slots(int64_t V_local, int64_t rows, int sm_count)
{
    if (V_local <= 0 || rows <= 0)
        return 0;
    const int64_t n_vt = (V_local + fshr::BV - 1) / fshr::BV;
    int64_t slots = sm_count / fshr::row_blocks(rows);
    if (slots < 1)
        slots = 1;
    return slots < n_vt ? slots : n_vt;
}

extern "C" int fs_hopper_rows_launch(const void *W, const void *H, int is_bf16, int64_t V_local,
                                     int64_t D, int64_t rows, int64_t vocab_offset,
                                     int64_t global_vocab, const fs_row_desc *descs,
                                     const float *logit_bias, const uint32_t *allowed,
                                     fs_record *recs, int64_t rec_slot_stride,
                                     int64_t rec_row_stride, int64_t slots, int device,
                                     cudaStream_t stream)
{
    using namespace fshr;
    const int64_t n_rb = row_blocks(rows);
    const int64_t n_vt = (V_local + BV - 1) / BV;
    const int64_t grid = slots * n_rb;
    if (slots < 1 || slots > n_vt || grid > INT32_MAX || rows > INT32_MAX)
        return (int)cudaErrorInvalidValue;
    Args a;
    a.descs = descs;
    a.bias = logit_bias;
    a.allowed = allowed;
    a.recs = recs;
    a.rec_slot_stride = rec_slot_stride;
    a.rec_row_stride = rec_row_stride;
    a.rows = rows;
    a.V = V_local;
    a.vocab_offset = vocab_offset;
    a.global_vocab = global_vocab;
    a.words = (global_vocab + 31) / 32;
    a.n_rb = (int)n_rb;
    a.slots = (int)slots;
    a.n_vt = (int)n_vt;
    a.kblocks = (int)((D + BK - 1) / BK);
    /* a W tile read by one row block only is dead after use; with several row
     * blocks the neighbours read it from L2 */
    a.w_evict_first = n_rb == 1 ? 1 : 0;

    CUtensorMap tw, th;
    cudaError_t e = make_map(&tw, W, is_bf16, D, V_local, BV);
    if (e == cudaSuccess)
        e = make_map(&th, H, is_bf16, D, rows, BR);
    if (e != cudaSuccess)
        return (int)e;
    /* programmatic launch: overlaps the prep kernel (see fs_pdl_wait above) */
    fs_pdl_config pc(dim3((unsigned)grid), dim3(THREADS), SMEM, stream, true);
    if (is_bf16) {
        if ((e = configure<true>(device)) != cudaSuccess)
            return (int)e;
        e = cudaLaunchKernelEx(&pc.cfg, fshr_scan_kernel<true>, tw, th, a);
    } else {
        if ((e = configure<false>(device)) != cudaSuccess)
            return (int)e;
        e = cudaLaunchKernelEx(&pc.cfg, fshr_scan_kernel<false>, tw, th, a);
    }
    return (int)(e != cudaSuccess ? e : cudaGetLastError());
}
