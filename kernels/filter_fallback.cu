/* The filters' exact second pass on the GPU, for the rows the one pass
 * handed over (filter_resolve.cu): radix selects of the top-k and top-p
 * thresholds over the row's whole vocabulary (filter_select.h, the same
 * digits and steps as the CPU backend), then the draw of the kept record.
 *
 * On one GPU it runs in the filtered merge's own cooperative launch
 * (fs_filter_merge_kernel), after the rows' merge and resolve: every block
 * of the grid walks the vocabulary in 128-token tiles (tile j of block b:
 * j = b, b + grid, ...), recomputing the handed-over rows' scores -- from
 * the LM head and the hidden states for the fused ops, from the logits for
 * the *_logits ops -- and grid-wide barriers separate the histogram passes,
 * the select steps and the draw.  With no row handed over, every block
 * returns at once: the op pays no launch for a pass it rarely needs.
 *
 * Scores are recomputed by the same code in every pass -- tensor cores
 * (mma.sync) for 16-bit LM heads, an fp32 dot product in a fixed order
 * otherwise -- so every histogram pass and the draw see the same scores; for
 * fused ops they are not the scan's bit for bit, so the row's
 * kept set, noise and log-sum-exp all come from this pass's scores (its own
 * max for min-p; the first pass's max only scales the masses, places the
 * score buckets and guesses min-p's threshold, which is checked).  Masses are
 * fixed point (FS_FB_MASS_ONE) so the atomics that sum them are
 * order-independent. */
/* fs_hd.h: the merge and the resolve that open fs_filter_merge_kernel run
 * once per row per call, from cold code.  The second pass after them gets
 * the block push's loops rolled too, and its kernel, which holds both, more
 * spills (232 bytes against the second pass's own 48): calls with rows
 * handed over take 5-13% longer (DESIGN "Sampling filters", "On the GPU"). */
#define FS_COLD_CODE 1
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include "filter_gpu.cuh"
#include "merge_row.cuh"
#include "mma_sync.cuh"
#include "op_tail.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int THREADS = 256;
constexpr int TILE = 128;            /* tokens per tile: whole noise blocks */
constexpr int GROUP = 32;            /* handed-over rows scored together */
constexpr int KC = 32;               /* D per staged chunk */
constexpr int WP = KC + 1;           /* staged W row pitch: conflict-free column reads */
constexpr int SP = TILE + 1;         /* score row pitch */
static_assert(TILE % 32 == 0 && THREADS % TILE == 0, "hist_pass: a warp's tokens share a row");
/* k per staged chunk of H (mma path): a chunk's W loads are a warp's loads
 * in flight, HK / 32 steps of 1 KB.  128 against 64 took 2.5-4.8% off the
 * calls whose second pass takes 9 or more rows on an H200
 * (bench/results/2026-12-01-h200-second-pass/, call 6). */
constexpr int HK = 128;
constexpr int HP = HK + 32;         /* its slot pitch in halves: 320 bytes, conflict-free 16-byte reads */
constexpr int HCOPIES = GROUP * (HK / 8) / THREADS; /* 16-byte copies of H a thread a chunk */
static_assert(GROUP * (HK / 8) % THREADS == 0 && THREADS % (HK / 8) == 0,
              "mma_tile_staged: whole copies, one part of the slots' rows a thread");
constexpr int LAST_BUCKETS = 1024; /* fs_select_digits(FS_SELECT_LEVELS - 1): the last level's */
constexpr int BAND_SHIFT = 10;     /* fs_select_shift(FS_SELECT_LEVELS - 2): its band's key bits */
static_assert(FS_FB_DEFER_CAP <= THREADS, "defer_finish: a thread per deferred block");
/* The first pass's score buckets (FS_FB_LIN): bucket b < LIN_UNDER holds the
 * scores in (m1 - (b + 1) / LIN_SCALE, m1 - b / LIN_SCALE] (and bucket 0
 * also anything above m1: this pass's scores are not the scan's), bucket
 * LIN_UNDER everything below.  1/128 of a score unit: an N(0, 1) row of
 * 151936 tokens has at most ~480 tokens in a bucket, ~100 where top-p 0.9
 * crosses. */
constexpr float LIN_SCALE = 128.0f;
constexpr float GUESS_REL = 1.0f / 4096.0f; /* guess_band's half-width, relative */
constexpr int LIN_UNDER = FS_SELECT_BUCKETS - 1;

struct Smem {
    union {
        struct {
            float w[TILE][WP]; /* W chunk as fp32 */
            float h[GROUP][KC];
        } mm;
        uint16_t h[2][GROUP][HP]; /* mma path: H chunks, double-buffered */
        struct {
            uint32_t count[FS_SELECT_BUCKETS];
            unsigned long long mass[FS_SELECT_BUCKETS];
        } step;
        struct { /* a deferring row: its last level or band, deferred blocks */
            uint32_t count[LAST_BUCKETS];
            unsigned long long mass[LAST_BUCKETS];
            float bs[FS_FB_DEFER_CAP]; /* FS_FB_LIN: the band's scores, then sorted */
            unsigned long long bm[FS_FB_DEFER_CAP];
            float ss[FS_FB_DEFER_CAP];
            unsigned long long sms[FS_FB_DEFER_CAP];
            unsigned int nb;
            int32_t v[FS_FB_DEFER_CAP];
            fs_record recs[FS_FB_DEFER_CAP];
            fs_filter_cut cut;
        } fin;
    } u;
    float sc[GROUP][SP]; /* the tile's scores of the group's rows */
    int rows[GROUP];     /* fb index of each group slot, -1: none */
};

/* A handed-over row takes part in this histogram pass. */
__device__ __forceinline__ bool selecting(const fs_fallback_row &r)
{
    return r.phase == FS_FB_K || r.phase == FS_FB_P;
}

/* A handed-over row whose last select level runs beside the draw. */
__device__ __forceinline__ bool deferring(const fs_fallback_row &r)
{
    return r.phase == FS_FB_DEFER_K || r.phase == FS_FB_DEFER_P || r.phase == FS_FB_LIN;
}

/* The first pass's score bucket of finite score x (m1 finite). */
__device__ __forceinline__ int lin_bucket(float m1, float x)
{
    const float d = (m1 - x) * LIN_SCALE;
    return d < 1.0f ? 0 : d < (float)LIN_UNDER ? (int)d : LIN_UNDER;
}

/* Min-p rows drawn before their max is known (guess_finish): the band
 * [lo, hi] of scores around the threshold the first pass's max m1 gives,
 * wide enough for this pass's max to lie within half of it of m1 (the two
 * passes' scores differ by rounding, ~1e-6 relative; the band is 2^-12 of
 * max(1, |m1|) each way: ~40 tokens of an N(0, 1) row of 151936). */
__device__ __forceinline__ void guess_band(float m1, float log_min_p, float *lo, float *hi)
{
    const float t = m1 + log_min_p;
    const float dl = fmaxf(1.0f, fabsf(m1)) * GUESS_REL;
    *lo = t - dl;
    *hi = t + dl;
}

/* The top-p target: top_p of the fixed-point mass z.  Every path of the
 * second pass compares fixed-point sums with this value, so the threshold
 * does not depend on how the mass was bucketed. */
__device__ __forceinline__ unsigned long long p_target(float top_p, unsigned long long z)
{
    return (unsigned long long)((double)top_p * (double)z);
}

/* fs_select_step (filter_select.h) on fixed-point masses: r.need_m and
 * r.above_m stand for the select's need_mass and above_mass. */
__device__ void fb_select_step(fs_fallback_row &r, const uint32_t *count,
                               const unsigned long long *mass)
{
    fs_select &q = r.q;
    const int nb = (int)fs_select_digits(q.level);
    int32_t c = 0, c_before = 0;
    unsigned long long m = 0ull, m_before = 0ull;
    int pick = -1;
    for (int b = nb - 1; b >= 0; --b) {
        if (count[b] == 0u)
            continue;
        c_before = c;
        m_before = m;
        c += (int32_t)count[b];
        m += mass[b];
        pick = b;
        if (q.need_count > 0 ? q.above_count + c >= q.need_count : r.above_m + m >= r.need_m)
            break;
    }
    if (pick < 0) {
        q.level = FS_SELECT_LEVELS;
        q.threshold = -INFINITY;
        return;
    }
    q.above_count += c_before;
    r.above_m += m_before;
    q.prefix |= (uint32_t)pick << fs_select_shift(q.level);
    if (++q.level == FS_SELECT_LEVELS)
        q.threshold = fs_select_score(q.prefix);
}

/* The fixed-point mass of score x of row r in the histograms. */
__device__ __forceinline__ unsigned long long fb_mass(const fs_fallback_row &r, float x)
{
    float e = fs_exp(x - r.m1);
    e = e < 8388608.0f ? e : 8388608.0f; /* 2^23: no 64-bit overflow */
    return (unsigned long long)((double)e * FS_FB_MASS_ONE);
}

/* One staged chunk's FMAs for rows rsub, rsub + 2, ... (R of them per
 * thread).  score_tile takes the fewest R that cover the group's rows: with
 * RPT predicated FMAs and their shared loads per k, a call whose second
 * pass had one row ran 19.5 ms with the SMs 55% busy issuing instructions
 * that were mostly predicated off (ncu, H100, 151936 x 4096).  Every score
 * is still summed over k in ascending order, whatever R. */
template <int R>
__device__ __forceinline__ void fma_chunk(float (&acc)[GROUP / (THREADS / TILE)], const Smem &sm,
                                          int tok, int rsub)
{
    for (int k = 0; k < KC; ++k) {
        const float wv = sm.u.mm.w[tok][k];
#pragma unroll
        for (int j = 0; j < R; ++j)
            acc[j] = fmaf(wv, sm.u.mm.h[rsub + 2 * j][k], acc[j]);
    }
}

/* 16 bytes of the LM head, asking L2 to fetch the 256-byte segment around
 * them: a warp's next steps along the same rows then hit L2 (a one-row
 * top-p call on 151936 x 4096, four passes: 2.61 -> 2.53 ms, H100). */
__device__ __forceinline__ uint4 ldg_w(const uint16_t *p)
{
    uint4 r;
    asm("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
    return r;
}

/* A warp's two W rows (tokens v0 + 16 w + g and + 8) for the MMA's A
 * fragments, lane (g, q) at k offset 8q; rows past V load zeros. */
struct WRows {
    const uint16_t *lo, *hi;
    bool lo_ok, hi_ok;
};

__device__ __forceinline__ WRows w_rows(const fs_fallback_src &src, int64_t V, int64_t v0)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint16_t *W = static_cast<const uint16_t *>(src.weight);
    const int64_t t_lo = v0 + warp * 16 + (lane >> 2), t_hi = t_lo + 8;
    WRows r;
    r.lo_ok = t_lo < V;
    r.hi_ok = t_hi < V;
    r.lo = W + (r.lo_ok ? t_lo : 0) * src.D + 8 * (lane & 3);
    r.hi = W + (r.hi_ok ? t_hi : 0) * src.D + 8 * (lane & 3);
    return r;
}

/* The 32-wide k step at k of both rows (D % 8 == 0: a lane's 8 halves are
 * all in or all out). */
__device__ __forceinline__ void load_w_step(uint4 (&a)[2], const WRows &wr, int64_t k, int64_t D)
{
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    const bool kin = k + 8 * (threadIdx.x & 3) < D;
    a[0] = kin && wr.lo_ok ? ldg_w(wr.lo + k) : zero;
    a[1] = kin && wr.hi_ok ? ldg_w(wr.hi + k) : zero;
}

/* One 32-wide k step of one n-tile: the lane's 8 halves of W (a) and of H
 * (b) as the two MMAs' k slots 2q, 2q + 1, 2q + 8, 2q + 9 -- the same
 * permutation on both sides. */
template <bool BF16>
__device__ __forceinline__ void mma_step(float (&acc)[4], const uint4 (&a)[2], const uint4 &b)
{
    const uint32_t a0[4] = {a[0].x, a[1].x, a[0].y, a[1].y};
    const uint32_t a1[4] = {a[0].z, a[1].z, a[0].w, a[1].w};
    fs_mma16816<BF16>(acc, a0, b.x, b.y);
    fs_mma16816<BF16>(acc, a1, b.z, b.w);
}

/* The warp's accumulators (its 16 tokens x 8 NT slots) into sm.sc. */
template <int NT>
__device__ __forceinline__ void store_acc(Smem &sm, const float (&acc)[NT][4])
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tok = warp * 16 + (lane >> 2), q = lane & 3;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
        const int s0 = 8 * j + 2 * q;
        sm.sc[s0][tok] = acc[j][0];
        sm.sc[s0 + 1][tok] = acc[j][1];
        sm.sc[s0][tok + 8] = acc[j][2];
        sm.sc[s0 + 1][tok + 8] = acc[j][3];
    }
}

/* Raw logits of the tile's tokens for the group's first 8 * NT slots into
 * sm.sc, on tensor cores.  Warp w takes tokens v0 + 16 w .. + 15 (the MMA's
 * M) against the slots' hidden states (N), K in steps of 32: lane (g, q)
 * holds 16 bytes -- k 8q .. 8q + 7 of the step -- of tokens g and g + 8,
 * loaded from global memory straight into the fragments (whole 64-byte row
 * segments a warp, no shared memory), and of slot g of every n-tile, read
 * from H staged per block, HK of k at a time, double-buffered with cp.async
 * (a chunk's W loads, HK / 32 steps of 1 KB a warp in flight, are issued
 * before the wait for its H).  The MMAs' k slots are thus a permutation of
 * the step's k (the same for W and H, so the dot product is unchanged), and
 * a slot's dot product is the same MMA sequence whatever the group and its
 * size, so a row's scores do not depend on them.  Read by every warp from
 * global memory, H was 2x the weight stream in L2 traffic at 32 slots and
 * its fragments held registers: top-p 0.9 on 64 flat rows of 151936 x 4096
 * went 4.33 -> 2.99 ms a call (H100).  One n-tile (up to 8 slots) had its
 * own path, H's fragments loaded by every warp too and six steps of W's
 * loads in flight: 1.6% faster than staging on an H100 with 64-k chunks,
 * 0.3-1.1% slower on an H200 against 128-k chunks
 * (bench/results/2026-12-01-h200-second-pass/, call 7), so every slot
 * count takes this one.  Empty slots are zero-filled. */
template <bool BF16, int NT>
__device__ __forceinline__ void mma_tile_staged(Smem &sm, const fs_fallback_src &src,
                                         const fs_fallback_row *fb, int64_t V, int64_t v0)
{
    constexpr int STEPS = HK / 32;
    const int tid = threadIdx.x, lane = tid & 31;
    const int g = lane >> 2, q = lane & 3;
    const int64_t D = src.D;
    const uint16_t *H = static_cast<const uint16_t *>(src.hidden);
    const WRows wr = w_rows(src, V, v0);
    /* H staging: thread tid copies 16 bytes (8 halves, part hp) of slots
       hs0 + i SLOTS_A (i < HCOPIES) */
    constexpr int SLOTS_A = THREADS / (HK / 8);
    const int hs0 = tid / (HK / 8), hp = tid % (HK / 8);
    const uint16_t *h_src[HCOPIES];
    bool h_ok[HCOPIES];
#pragma unroll
    for (int i = 0; i < HCOPIES; ++i) {
        const int hs = hs0 + i * SLOTS_A;
        const int hfi = hs < 8 * NT ? sm.rows[hs] : -1;
        h_ok[i] = hfi >= 0;
        h_src[i] = H + (hfi >= 0 ? fb[hfi].row : 0) * D + 8 * hp;
    }
    const int64_t chunks = (D + HK - 1) / HK;
    auto stage_h = [&](int64_t c) {
        const int64_t k = c * HK + 8 * hp; /* D % 8 == 0: 8 halves all in or all out */
#pragma unroll
        for (int i = 0; i < HCOPIES; ++i) {
            const bool in = h_ok[i] && k < D;
            fs_cp_async16(fs_smem_addr(&sm.u.h[c & 1][hs0 + i * SLOTS_A][8 * hp]),
                          in ? h_src[i] + c * HK : H, in ? 16 : 0);
        }
        fs_cp_async_commit();
    };
    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j)
        acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    uint4 a[STEPS][2];
    stage_h(0);
    for (int64_t c = 0; c < chunks; ++c) {
#pragma unroll
        for (int u = 0; u < STEPS; ++u)
            load_w_step(a[u], wr, c * HK + 32 * u, D);
        if (c + 1 < chunks) {
            stage_h(c + 1);
            fs_cp_async_wait<1>();
        } else {
            fs_cp_async_wait<0>();
        }
        __syncthreads(); /* chunk c of H is in for every thread */
#pragma unroll
        for (int u = 0; u < STEPS; ++u)
#pragma unroll
            for (int j = 0; j < NT; ++j)
                mma_step<BF16>(acc[j], a[u],
                               *reinterpret_cast<const uint4 *>(&sm.u.h[c & 1][8 * j + g][32 * u + 8 * q]));
        __syncthreads(); /* buffer c & 1 is free for chunk c + 2 */
    }
    store_acc<NT>(sm, acc);
}

/* The group's raw logits for its first `active` slots, on tensor cores. */
template <bool BF16>
__device__ __forceinline__ void mma_tile_slots(Smem &sm, const fs_fallback_src &src,
                                               const fs_fallback_row *fb, int64_t V, int64_t v0,
                                               int active)
{
    if (active <= 8)
        mma_tile_staged<BF16, 1>(sm, src, fb, V, v0);
    else if (active <= 16)
        mma_tile_staged<BF16, 2>(sm, src, fb, V, v0);
    else
        mma_tile_staged<BF16, 4>(sm, src, fb, V, v0);
}

/* Scores of the tile's tokens v0 .. v0 + TILE for the rows in sm.rows (the
 * first `active` slots) into sm.sc (-inf where masked, out of range or the
 * slot is empty).  vec: 16-bit W and H with D % 8 == 0, 16-byte aligned:
 * the logits come from mma_tile_slots; otherwise from the fp32 loop below. */
__device__ void score_tile(Smem &sm, const fs_op_args &a, const fs_scan_args &s,
                           const fs_fallback_src &src, const fs_fallback_row *fb,
                           const fs_row_desc *descs, int64_t v0, int active, bool vec)
{
    const int tid = threadIdx.x;
    const int tok = tid % TILE, rsub = tid / TILE; /* rows rsub, rsub + 2, ... */
    constexpr int RPT = GROUP / (THREADS / TILE);
    float acc[RPT];
#pragma unroll
    for (int j = 0; j < RPT; ++j)
        acc[j] = 0.0f;
    const int64_t V = a.vocab_size;
    const bool mma = src.weight && vec;
    /* the previous tile's readers of sm.sc (the draw reads other threads'
       scores) are done before any path below writes it */
    __syncthreads();
    if (mma) {
        if (src.wdtype == FS_DTYPE_BF16)
            mma_tile_slots<true>(sm, src, fb, V, v0, active);
        else
            mma_tile_slots<false>(sm, src, fb, V, v0, active);
        __syncthreads();
    } else if (src.weight) {
        for (int64_t k0 = 0; k0 < src.D; k0 += KC) {
            if (k0 > 0)
                __syncthreads(); /* the previous chunk's FMAs are done */
            for (int i = tid; i < TILE * KC; i += THREADS) {
                const int t = i / KC, k = i % KC;
                const int64_t v = v0 + t, kk = k0 + k;
                sm.u.mm.w[t][k] = v < V && kk < src.D
                                      ? fs_load_elem(src.weight, v * src.D + kk, src.wdtype)
                                      : 0.0f;
            }
            for (int i = tid; i < active * KC; i += THREADS) {
                const int g = i / KC, k = i % KC;
                const int64_t kk = k0 + k;
                const int fi = sm.rows[g];
                sm.u.mm.h[g][k] = fi >= 0 && kk < src.D
                                      ? fs_load_elem(src.hidden, (int64_t)fb[fi].row * src.D + kk,
                                                  src.wdtype)
                                      : 0.0f;
            }
            __syncthreads();
            /* rows past `active` get garbage from stale h rows: their slots
               are empty, so their scores are never written */
            const int need = (active + 1) / 2;
            if (need <= 1)
                fma_chunk<1>(acc, sm, tok, rsub);
            else if (need <= 2)
                fma_chunk<2>(acc, sm, tok, rsub);
            else if (need <= 4)
                fma_chunk<4>(acc, sm, tok, rsub);
            else if (need <= 8)
                fma_chunk<8>(acc, sm, tok, rsub);
            else
                fma_chunk<RPT>(acc, sm, tok, rsub);
        }
    }
    const int64_t gid = a.vocab_offset + v0 + tok;
#pragma unroll
    for (int j = 0; j < RPT; ++j) {
        const int g = rsub + 2 * j;
        const int fi = sm.rows[g];
        float out = -INFINITY;
        if (fi >= 0 && v0 + tok < V) {
            const int64_t row = fb[fi].row;
            const fs_row_desc &d = descs[row];
            const float l = mma ? sm.sc[g][tok]
                            : src.weight ? acc[j]
                                         : fs_load_elem(src.logits, row * V + v0 + tok, src.ldtype);
            bool ok = true;
            if (s.allowed)
                ok = (s.allowed[row * s.words + (gid >> 5)] >> (gid & 31)) & 1u;
            if (ok) {
                out = s.bias ? fs_score(l, s.bias[row * s.global_vocab + gid], d.inv_temp)
                             : fs_score_nobias(l, d.inv_temp);
            }
        }
        sm.sc[g][tok] = out;
    }
    __syncthreads();
}

/* Whether any of the n handed-over rows still selects (every thread reads
 * the same). */
__device__ __forceinline__ bool any_selecting(const fs_fallback_row *fb, unsigned int n)
{
    bool any = false;
    for (unsigned int i = 0; i < n; ++i)
        any |= selecting(fb[i]);
    return any;
}

/* This block's share of histogram pass `pass` over the n handed-over rows
 * (tiles blockIdx.x, + gridDim.x, ...): counts and fixed-point masses into
 * the rows' histograms -- radix digits, or with lin (pass 0) the score
 * buckets of lin_bucket; pass 0 also raises each row's max key, in
 * fb[fi].max_key, or max_keys[fi] when given (sharded: all-reduced after). */
__device__ __forceinline__ void hist_pass(Smem &sm, const fs_op_args &a, const fs_filter_ws &w,
                                          const fs_scan_args &s, const fs_fallback_src &src,
                                          unsigned int n, int pass, bool vec,
                                          uint32_t *max_keys, bool lin)
{
    const int tid = threadIdx.x, lane = tid & 31;
    const fs_row_desc *descs = s.descs;
    fs_fallback_row *fb = w.fb;
    const int64_t tiles = (a.vocab_size + TILE - 1) / TILE;
    for (unsigned int g0 = 0; g0 < n; g0 += GROUP) {
        __syncthreads();
        if (tid < GROUP) {
            const unsigned int fi = g0 + tid;
            sm.rows[tid] = fi < n && (pass == 0 || selecting(fb[fi])) ? (int)fi : -1;
        }
        __syncthreads();
        for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int act = n - g0 < GROUP ? (int)(n - g0) : GROUP;
            score_tile(sm, a, s, src, fb, descs, t * TILE, act, vec);
            /* A warp takes 32 consecutive tokens of one row (TILE % 32 ==
               0, and the trip count act * TILE is a multiple of 32): it
               adds once per bucket its lanes fall into, and raises the max
               once.  A flat row puts most of its tokens into a few dozen
               level-0 buckets, and every token into its max. */
            for (int i = tid; i < act * TILE; i += THREADS) {
                const int fi = sm.rows[i / TILE];
                if (fi < 0)
                    continue; /* warp-uniform */
                const float x = sm.sc[i / TILE][i % TILE];
                const bool fin = x > -INFINITY && x < INFINITY;
                const uint32_t key = fin ? fs_select_key(x) : 0u; /* 0: no finite key */
                fs_fallback_row &r = fb[fi];
                if (pass == 0) {
                    const uint32_t mk = __reduce_max_sync(0xffffffffu, key);
                    if (lane == 0 && mk != 0u)
                        atomicMax(max_keys ? &max_keys[fi] : &r.max_key, mk);
                }
                if (!selecting(r))
                    continue; /* warp-uniform */
                const float floor = r.phase == FS_FB_P ? r.t_k : -INFINITY;
                const int b = !fin ? -1
                              : lin ? lin_bucket(r.m1, x)
                              : x >= floor ? fs_select_bucket(&r.q, key)
                                           : -1;
                const unsigned long long m = b >= 0 ? fb_mass(r, x) : 0ull;
                const unsigned peers = __match_any_sync(0xffffffffu, b);
                unsigned long long sum = 0ull; /* integers: any order gives the same sum */
                for (int k = 0; k < 32; ++k) {
                    const unsigned long long v = __shfl_sync(0xffffffffu, m, k);
                    sum += (peers >> k) & 1u ? v : 0ull;
                }
                if (b >= 0 && lane == __ffs(peers) - 1) {
                    atomicAdd(&w.hist_count[(int64_t)fi * FS_SELECT_BUCKETS + b],
                              (unsigned)__popc(peers));
                    atomicAdd(&w.hist_mass[(int64_t)fi * FS_SELECT_BUCKETS + b], sum);
                }
            }
        }
    }
}

/* Row fi's histogram (counts, fixed-point masses) into sm.u.step, visible
 * to every thread of the block on return. */
__device__ __forceinline__ void stage_hist(Smem &sm, const fs_filter_ws &w, unsigned int fi)
{
    const uint32_t *hc = w.hist_count + (int64_t)fi * FS_SELECT_BUCKETS;
    const unsigned long long *hm = w.hist_mass + (int64_t)fi * FS_SELECT_BUCKETS;
    __syncthreads(); /* sm's previous use is over */
    for (int b = threadIdx.x; b < FS_SELECT_BUCKETS; b += THREADS) {
        sm.u.step.count[b] = hc[b];
        sm.u.step.mass[b] = hm[b];
    }
    __syncthreads();
}

/* One select step of handed-over row fi from its (complete) histogram.
 * Every thread of the block calls it for a selecting row.  allow_defer: a
 * last select with one level left and at most FS_FB_DEFER_CAP tokens in its
 * band moves to FS_FB_DEFER_* (the draw then runs beside that level: one
 * pass over the vocabulary fewer). */
__device__ __forceinline__ void select_row(Smem &sm, const fs_filter_ws &w, unsigned int fi,
                                           bool allow_defer)
{
    const int tid = threadIdx.x;
    fs_fallback_row &r = w.fb[fi];
    stage_hist(sm, w, fi);
    if (tid == 0) {
        if (r.q.level == 0) {
            r.above_m = 0ull;
            if (r.phase == FS_FB_P) {
                /* the nucleus target: top_p of the mass left by top-k
                   (every token >= the floor is in this first histogram) */
                unsigned long long total = 0ull;
                for (int b = 0; b < FS_SELECT_BUCKETS; ++b)
                    total += sm.u.step.mass[b];
                r.need_m = p_target(w.fdescs[r.row].top_p, total);
            }
        }
        fb_select_step(r, sm.u.step.count, sm.u.step.mass);
        if (fs_select_done(&r.q)) {
            const fs_filter_desc fd = w.fdescs[r.row];
            if (r.phase == FS_FB_K) {
                r.t_k = r.q.threshold;
                if (fd.top_p < 1.0f) {
                    r.phase = FS_FB_P;
                    fs_select_init(&r.q, 0, 0.0f);
                } else {
                    r.phase = FS_FB_DRAW;
                }
            } else {
                r.t_p = r.q.threshold;
                r.phase = FS_FB_DRAW;
            }
        } else if (allow_defer && r.q.level == FS_SELECT_LEVELS - 1) {
            const fs_filter_desc fd = w.fdescs[r.row];
            const bool last = r.phase == FS_FB_P || !(fd.top_p < 1.0f);
            const int sh = fs_select_shift(FS_SELECT_LEVELS - 2);
            const uint32_t pick = (r.q.prefix >> sh) & (fs_select_digits(FS_SELECT_LEVELS - 2) - 1u);
            if (last && sm.u.step.count[pick] <= FS_FB_DEFER_CAP) {
                r.phase = r.phase == FS_FB_P ? FS_FB_DEFER_P : FS_FB_DEFER_K;
                r.n_defer = 0u;
            }
        }
    }
}

/* Row r's cut from its thresholds so far (-inf where open) and this pass's
 * max. */
__device__ __forceinline__ fs_filter_cut row_cut(const fs_filter_ws &w, const fs_fallback_row &r)
{
    fs_filter_cut c;
    c.threshold = r.t_k > r.t_p ? r.t_k : r.t_p;
    c.max_s = fs_select_score(r.max_key);
    c.log_min_p = w.fdescs[r.row].log_min_p;
    return c;
}

/* A handed-over row's kept record to its end: finalized (fin_op >= 0) or
 * stored for the caller (row_recs). */
__device__ __forceinline__ void store_row(const fs_op_args &a, const fs_scan_args &s,
                                          int64_t row, const fs_record &kept, fs_record *row_recs,
                                          int fin_op, const int32_t *pre_status)
{
    if (fin_op >= 0)
        fs_finalize_row(fin_op, kept, s.descs[row], pre_status[row], row, a.out_tokens,
                        a.out_values, a.out_row_status);
    else
        row_recs[row] = kept;
}

/* The draw: every token of each handed-over row under its cut, in noise
 * blocks; one record per (row, block of the grid) in fb_recs, merged
 * afterwards in block order.  Tree verify (s.tree_rows): each block goes
 * through the tree push first, as in the scan (tree_scan.cuh), so the
 * row's excluded children count in the log-sum-exp alone and its kept
 * children's scores -- from this pass's scores -- land in s.tree_child_s,
 * which the resolve set to -inf when it handed the row over. */
__device__ __forceinline__ void draw_pass(Smem &sm, const fs_op_args &a, const fs_filter_ws &w,
                                          const fs_scan_args &s, const fs_fallback_src &src,
                                          unsigned int n, bool vec, bool guess)
{
    const int tid = threadIdx.x;
    const fs_row_desc *descs = s.descs;
    const fs_fallback_row *fb = w.fb;
    const int64_t tiles = (a.vocab_size + TILE - 1) / TILE;
    for (unsigned int g0 = 0; g0 < n; g0 += GROUP) {
        __syncthreads();
        if (tid < GROUP)
            sm.rows[tid] = g0 + tid < n && fb[g0 + tid].phase != FS_FB_DONE ? (int)(g0 + tid) : -1;
        __syncthreads();
        /* thread: group row tid / 8, noise block tid % 8 of each tile */
        const int g = tid / (TILE / FS_NOISE_BLOCK), nb = tid % (TILE / FS_NOISE_BLOCK);
        const int fi = sm.rows[g];
        fs_record rec;
        fs_record_init(&rec);
        fs_filter_cut cut;
        fs_row_desc d = fs_row_desc_skip();
        int64_t row = 0;
        /* the band of deferred tokens; three words, whose meaning depends
           on the mode (registers: the draw is the kernel's tightest code)
             1 (the last select level open): ra = the key prefix (key >> BAND_SHIFT)
             2 (FS_FB_LIN): ra = m1's bits, rb, rc = the score buckets
             3 (guess): ra, rb = the scores' bounds' bits, rc = this thread's max key */
        int defer = 0;
        uint32_t ra = 0u, rb = 0u, rc = 0u;
        if (fi >= 0) {
            const fs_fallback_row &r = fb[fi];
            row = r.row;
            const fs_filter_desc fd = w.fdescs[r.row];
            d = descs[r.row];
            /* deferring: the threshold still open is -inf, so this is the
               floor of the select (t_k under top-p) */
            cut = row_cut(w, r);
            defer = r.phase == FS_FB_LIN ? 2 : deferring(r) ? 1 : 0;
            if (defer == 1) {
                ra = r.q.prefix >> BAND_SHIFT;
            } else if (defer == 2) {
                ra = __float_as_uint(r.m1);
                rb = (uint32_t)r.lin_a;
                rc = (uint32_t)r.lin_b;
            }
            if (guess) {
                /* the max is being found: the cut keeps every finite
                   token, the band decides (guess_finish checks the max) */
                defer = 3;
                cut.threshold = -INFINITY;
                cut.max_s = 0.0f;
                cut.log_min_p = -INFINITY;
                float lo, hi;
                guess_band(r.m1, fd.log_min_p, &lo, &hi);
                ra = __float_as_uint(lo);
                rb = __float_as_uint(hi);
            }
        }
        for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
            score_tile(sm, a, s, src, fb, descs, t * TILE, n - g0 < GROUP ? n - g0 : GROUP, vec);
            const int64_t v = t * TILE + nb * FS_NOISE_BLOCK;
            if (fi >= 0 && v < a.vocab_size) {
                float x[FS_NOISE_BLOCK];
                uint32_t in_band = 0u, kept = 0u;
#pragma unroll
                for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
                    const float y = sm.sc[g][nb * FS_NOISE_BLOCK + i];
                    bool keep = fs_filter_keeps(&cut, y);
                    if (defer && y >= cut.threshold && y > -INFINITY && y < INFINITY) {
                        /* what the last level histograms (min-p aside):
                           above the band kept, in it open, below cut */
                        int pos; /* < 0 above, 0 in, > 0 below */
                        if (defer == 1) {
                            const uint32_t kb = fs_select_key(y) >> BAND_SHIFT;
                            pos = kb > ra ? -1 : kb == ra ? 0 : 1;
                        } else if (defer == 2) {
                            const int b = lin_bucket(__uint_as_float(ra), y);
                            pos = b < (int)rb ? -1 : b <= (int)rc ? 0 : 1;
                        } else {
                            const uint32_t ky = fs_select_key(y);
                            rc = ky > rc ? ky : rc;
                            pos = y > __uint_as_float(rb) ? -1 : y >= __uint_as_float(ra) ? 0 : 1;
                        }
                        in_band |= (uint32_t)(pos == 0) << i;
                        keep = keep && pos < 0;
                    }
                    kept |= (uint32_t)keep << i;
                    x[i] = keep || ((in_band >> i) & 1u) ? y : -INFINITY;
                }
                if (in_band) {
                    /* fewer than FS_FB_DEFER_CAP: a band token a block at most */
                    const unsigned slot = atomicAdd(&w.fb[fi].n_defer, 1u);
                    if (slot < FS_FB_DEFER_CAP) {
                        fs_fb_defer &e = w.defer[(int64_t)fi * FS_FB_DEFER_CAP + slot];
                        e.v = (int32_t)v;
                        e.band = in_band;
                        e.kept = kept;
#pragma unroll
                        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
                            e.x[i] = x[i];
                    }
                    continue;
                }
                const int64_t left = a.vocab_size - v;
                const int cnt = left < FS_NOISE_BLOCK ? (int)left : FS_NOISE_BLOCK;
                if (s.tree_rows)
                    fs_tree_scan_block(&rec, d, s.tree_rows + row,
                                       s.tree_child_s + row * FS_TREE_MAX_CHILDREN,
                                       (int32_t)(a.vocab_offset + v), cnt, x);
                fs_record_push_block(&rec, &d, (int32_t)(a.vocab_offset + v), cnt, x);
            }
        }
        /* the 8 threads of a row, in a fixed butterfly */
        for (int m = 1; m < TILE / FS_NOISE_BLOCK; m <<= 1) {
            const fs_record o = fs_record_shfl_xor(rec, m);
            fs_record_merge(&rec, &o);
        }
        if (fi >= 0 && nb == 0)
            w.fb_recs[(int64_t)fi * gridDim.x + blockIdx.x] = rec;
        if (defer == 3 && rc != 0u)
            atomicMax(&w.fb[fi].max_key, rc);
    }
}

/* Row fi's kept record: its records of the draw's `grid` blocks merged in
 * block order. */
__device__ __forceinline__ fs_record merge_draw(const fs_filter_ws &w, unsigned int fi,
                                                unsigned int grid)
{
    fs_record kept;
    fs_record_init(&kept);
    for (unsigned int b = 0; b < grid; ++b)
        fs_record_merge(&kept, &w.fb_recs[(int64_t)fi * grid + b]);
    return kept;
}

/* The deferred blocks of row fi pushed under sm.u.fin.cut -- a record
 * each, merged after the draw's blocks in ascending token order (the
 * deferring order is the atomics') -- and the row finalized.  Expects
 * sm.u.fin.v[0 .. nd) = the blocks' first tokens, visible to every thread. */
__device__ void finish_deferred(Smem &sm, const fs_op_args &a, const fs_filter_ws &w,
                                const fs_scan_args &s, unsigned int fi, unsigned nd,
                                fs_record *row_recs, int fin_op, const int32_t *pre_status)
{
    const int tid = threadIdx.x;
    const fs_fb_defer *def = w.defer + (int64_t)fi * FS_FB_DEFER_CAP;
    const int64_t row = w.fb[fi].row;
    if (tid < (int)nd) {
        const fs_fb_defer &e = def[tid];
        const fs_filter_cut cut = sm.u.fin.cut;
        float x[FS_NOISE_BLOCK];
#pragma unroll
        for (int t = 0; t < FS_NOISE_BLOCK; ++t) {
            const bool keep = (e.band >> t) & 1u ? fs_filter_keeps(&cut, e.x[t])
                                                 : (bool)((e.kept >> t) & 1u);
            x[t] = keep ? e.x[t] : -INFINITY;
        }
        const int64_t left = a.vocab_size - e.v;
        const int cnt = left < FS_NOISE_BLOCK ? (int)left : FS_NOISE_BLOCK;
        const fs_row_desc d = s.descs[row];
        fs_record rec;
        fs_record_init(&rec);
        fs_record_push_block(&rec, &d, (int32_t)(a.vocab_offset + e.v), cnt, x);
        int rank = 0; /* blocks are distinct: ranks are too */
        for (unsigned j = 0; j < nd; ++j)
            rank += sm.u.fin.v[j] < e.v;
        sm.u.fin.recs[rank] = rec;
    }
    __syncthreads();
    if (tid == 0) {
        fs_record kept = merge_draw(w, fi, gridDim.x);
        for (unsigned j = 0; j < nd; ++j)
            fs_record_merge(&kept, &sm.u.fin.recs[j]);
        store_row(a, s, row, kept, row_recs, fin_op, pre_status);
    }
}

/* Row fi's deferred blocks after the draw: f(score) for each of their band
 * tokens (the block's threads share them out), and each block's first
 * token into sm.u.fin.v for finish_deferred; returns the blocks' count. */
template <typename F>
__device__ __forceinline__ unsigned for_band_tokens(Smem &sm, const fs_filter_ws &w,
                                                    unsigned int fi, F f)
{
    const fs_fb_defer *def = w.defer + (int64_t)fi * FS_FB_DEFER_CAP;
    const unsigned n = w.fb[fi].n_defer;
    const unsigned nd = n < FS_FB_DEFER_CAP ? n : FS_FB_DEFER_CAP;
    for (unsigned i = threadIdx.x; i < nd * FS_NOISE_BLOCK; i += THREADS) {
        const fs_fb_defer &e = def[i / FS_NOISE_BLOCK];
        const int t = (int)(i % FS_NOISE_BLOCK);
        if ((e.band >> t) & 1u)
            f(e.x[t]);
    }
    if (threadIdx.x < nd)
        sm.u.fin.v[threadIdx.x] = def[threadIdx.x].v;
    return nd;
}

/* Row fi deferred its last select level to the draw (FS_FB_DEFER_*): the
 * level's histogram from the deferred blocks' band tokens -- the same
 * tokens, counts and fixed-point masses a histogram pass would add -- its
 * select step, then finish_deferred.  Every thread of the block calls it. */
__device__ void defer_finish(Smem &sm, const fs_op_args &a, const fs_filter_ws &w,
                             const fs_scan_args &s, unsigned int fi, fs_record *row_recs,
                             int fin_op, const int32_t *pre_status)
{
    const int tid = threadIdx.x;
    fs_fallback_row &r = w.fb[fi];
    __syncthreads(); /* sm's previous use is over */
    for (int b = tid; b < LAST_BUCKETS; b += THREADS) {
        sm.u.fin.count[b] = 0u;
        sm.u.fin.mass[b] = 0ull;
    }
    __syncthreads();
    const unsigned nd = for_band_tokens(sm, w, fi, [&](float x) {
        const int b = fs_select_bucket(&r.q, fs_select_key(x));
        if (b < 0)
            return; /* cannot happen: the band is the prefix's range */
        atomicAdd(&sm.u.fin.count[b], 1u);
        atomicAdd(&sm.u.fin.mass[b], fb_mass(r, x));
    });
    __syncthreads();
    if (tid == 0) {
        fb_select_step(r, sm.u.fin.count, sm.u.fin.mass);
        if (r.phase == FS_FB_DEFER_K)
            r.t_k = r.q.threshold;
        else
            r.t_p = r.q.threshold;
        sm.u.fin.cut = row_cut(w, r);
    }
    __syncthreads();
    finish_deferred(sm, a, w, s, fi, nd, row_recs, fin_op, pre_status);
}

/* After pass 0's score buckets (lin_bucket), thread 0 locates row fi's open
 * thresholds: the top-k bucket (where the count from the top reaches k),
 * and the top-p buckets for the least and the most mass top-k can leave
 * (the part of the top-k bucket above t_k is unknown).  When they span
 * buckets [a, b] above LIN_UNDER with at most FS_FB_DEFER_CAP tokens in
 * all, the row moves to FS_FB_LIN; otherwise it stays in its select, whose
 * level 0 the next pass histograms.  Every thread of the block calls it. */
__device__ void lin_row(Smem &sm, const fs_filter_ws &w, unsigned int fi)
{
    const int tid = threadIdx.x;
    fs_fallback_row &r = w.fb[fi];
    stage_hist(sm, w, fi);
    if (tid != 0 || !(r.m1 > -INFINITY && r.m1 < INFINITY))
        return;
    const uint32_t *cnt = sm.u.step.count;
    const unsigned long long *ms = sm.u.step.mass;
    const fs_filter_desc fd = w.fdescs[r.row];
    const uint32_t k = r.phase == FS_FB_K ? (uint32_t)r.q.need_count : 0u;
    unsigned long long total = 0ull;
    for (int b = 0; b < FS_SELECT_BUCKETS; ++b)
        total += ms[b];
    int bk = -1;
    unsigned long long mk = 0ull; /* mass above bucket bk */
    if (k > 0) {
        uint32_t c = 0u;
        for (int b = 0; b < FS_SELECT_BUCKETS; ++b) {
            if (c + cnt[b] >= k) {
                bk = b;
                break;
            }
            c += cnt[b];
            mk += ms[b];
        }
        if (bk < 0)
            return;
    }
    int lo = bk, hi = bk;
    if (fd.top_p < 1.0f) {
        const unsigned long long need_lo = p_target(fd.top_p, k > 0 ? mk : total);
        const unsigned long long need_hi = p_target(fd.top_p, k > 0 ? mk + ms[bk] : total);
        const int last = k > 0 ? bk : LIN_UNDER;
        lo = hi = last;
        unsigned long long m = 0ull;
        bool got_lo = false;
        for (int b = 0; b <= last; ++b) {
            m += ms[b];
            if (!got_lo && m >= need_lo) {
                lo = b;
                got_lo = true;
            }
            if (m >= need_hi) {
                hi = b;
                break;
            }
        }
        if (k > 0)
            hi = bk;
    }
    if (hi >= LIN_UNDER)
        return;
    uint32_t c_above = 0u, c_in = 0u;
    unsigned long long m_above = 0ull;
    for (int b = 0; b < lo; ++b) {
        c_above += cnt[b];
        m_above += ms[b];
    }
    for (int b = lo; b <= hi; ++b)
        c_in += cnt[b];
    if (c_in > FS_FB_DEFER_CAP)
        return;
    r.lin_a = lo;
    r.lin_b = hi;
    r.lin_c_above = (int32_t)c_above;
    r.lin_m_above = m_above;
    r.lin_m_total = total;
    r.n_defer = 0u;
    r.phase = FS_FB_LIN;
}

/* Row fi in FS_FB_LIN after the draw: its band tokens (the deferred blocks'
 * tokens in buckets [lin_a, lin_b]) sorted by score, t_k the (k - above)-th
 * of them, then t_p where the fixed-point mass from the top reaches top_p
 * of the mass >= t_k -- the same integers, hence the same thresholds, as
 * the radix selects over the whole vocabulary -- then finish_deferred. */
__device__ void lin_finish(Smem &sm, const fs_op_args &a, const fs_filter_ws &w,
                           const fs_scan_args &s, unsigned int fi, fs_record *row_recs,
                           int fin_op, const int32_t *pre_status)
{
    const int tid = threadIdx.x;
    fs_fallback_row &r = w.fb[fi];
    __syncthreads(); /* sm's previous use is over */
    if (tid == 0)
        sm.u.fin.nb = 0u;
    __syncthreads();
    const unsigned nd = for_band_tokens(sm, w, fi, [&](float x) {
        const unsigned slot = atomicAdd(&sm.u.fin.nb, 1u);
        if (slot < FS_FB_DEFER_CAP) { /* the band holds at most that many */
            sm.u.fin.bs[slot] = x;
            sm.u.fin.bm[slot] = fb_mass(r, x);
        }
    });
    __syncthreads();
    const unsigned nb = sm.u.fin.nb < FS_FB_DEFER_CAP ? sm.u.fin.nb : FS_FB_DEFER_CAP;
    if (tid < (int)nb) { /* rank: descending score, ties by slot */
        const float x = sm.u.fin.bs[tid];
        int rank = 0;
        for (unsigned j = 0; j < nb; ++j) {
            const float y = sm.u.fin.bs[j];
            rank += y > x || (y == x && (int)j < tid);
        }
        sm.u.fin.ss[rank] = x;
        sm.u.fin.sms[rank] = sm.u.fin.bm[tid];
    }
    __syncthreads();
    if (tid == 0) {
        const fs_filter_desc fd = w.fdescs[r.row];
        const int32_t k = fd.top_k > 0 && fd.top_k < r.count ? fd.top_k : 0;
        const float *ss = sm.u.fin.ss;
        const unsigned long long *sms = sm.u.fin.sms;
        unsigned long long z = r.lin_m_total;
        if (k > 0 && nb > 0) {
            int i = k - r.lin_c_above - 1; /* in the band: bucket lin_b holds the k-th */
            i = i < 0 ? 0 : i >= (int)nb ? (int)nb - 1 : i;
            r.t_k = ss[i];
            z = r.lin_m_above;
            for (unsigned j = 0; j < nb && ss[j] >= r.t_k; ++j)
                z += sms[j];
        }
        if (fd.top_p < 1.0f) {
            const unsigned long long need = p_target(fd.top_p, z);
            unsigned long long m = r.lin_m_above;
            unsigned j = 0;
            while (j < nb && ss[j] >= r.t_k) {
                const float v = ss[j];
                while (j < nb && ss[j] == v)
                    m += sms[j++];
                if (m >= need) {
                    r.t_p = v;
                    break;
                }
            }
        }
        sm.u.fin.cut = row_cut(w, r);
    }
    __syncthreads();
    finish_deferred(sm, a, w, s, fi, nd, row_recs, fin_op, pre_status);
}

/* Row fi after a guessed draw (every handed-over row min-p alone, pass 0
 * skipped): the draw found the row's max m2 and kept the tokens above the
 * band guess_band gives, cut those below it and deferred the blocks with a
 * token in it.  When m2 lies within half the band's width of m1 and the
 * band overflowed no buffer, every token outside the band is at least that
 * far from the exact threshold: the band's tokens are decided by the exact
 * cut (finish_deferred) and the row is FS_FB_DONE.  Otherwise it stays in
 * FS_FB_DRAW for the draw that follows.  Every thread of the block calls it. */
__device__ void guess_finish(Smem &sm, const fs_op_args &a, const fs_filter_ws &w,
                             const fs_scan_args &s, unsigned int fi, fs_record *row_recs,
                             int fin_op, const int32_t *pre_status)
{
    const int tid = threadIdx.x;
    fs_fallback_row &r = w.fb[fi];
    const fs_filter_desc fd = w.fdescs[r.row];
    const float m2 = fs_select_score(r.max_key);
    float lo, hi;
    guess_band(r.m1, fd.log_min_p, &lo, &hi);
    const float t1 = r.m1 + fd.log_min_p, t2 = m2 + fd.log_min_p, half = 0.25f * (hi - lo);
    const bool ok = r.n_defer <= FS_FB_DEFER_CAP && r.max_key != 0u &&
                    (t2 == t1 || (t2 >= t1 - half && t2 <= t1 + half));
    if (!ok)
        return; /* uniform: every thread read the same */
    const fs_fb_defer *def = w.defer + (int64_t)fi * FS_FB_DEFER_CAP;
    const unsigned nd = r.n_defer;
    __syncthreads(); /* sm's previous use is over */
    if (tid < (int)nd)
        sm.u.fin.v[tid] = def[tid].v;
    if (tid == 0)
        sm.u.fin.cut = row_cut(w, r); /* min-p alone: thresholds -inf, max m2 */
    __syncthreads();
    finish_deferred(sm, a, w, s, fi, nd, row_recs, fin_op, pre_status);
    if (tid == 0)
        r.phase = FS_FB_DONE;
}

bool vec_weights(const fs_fallback_src &src)
{
    return src.weight && src.wdtype != FS_DTYPE_F32 && src.D % 8 == 0 &&
           (reinterpret_cast<uintptr_t>(src.weight) & 15u) == 0 &&
           (reinterpret_cast<uintptr_t>(src.hidden) & 15u) == 0;
}

/* The second pass over the rows handed over, by every block of a
 * cooperative grid; with none, every block returns at once. */
__device__ __forceinline__ void second_pass(Smem &sm, const fs_op_args &a, const fs_filter_ws &w,
                                            const fs_scan_args &s, const fs_fallback_src &src,
                                            fs_record *row_recs, int fin_op,
                                            const int32_t *pre_status, bool vec)
{
    const unsigned int n = *w.flag_n;
    if (n == 0)
        return; /* uniform: no barrier is reached */
    cg::grid_group grid = cg::this_grid();
    const int tid = threadIdx.x;

    /* histogram passes: pass 0 also finds each row's max, and histograms
       score buckets (lin) when the rows may defer; then at most 3 levels of
       a top-k select and 3 of a top-p select */
    const bool lin = w.defer_last && !s.tree_rows;
    /* no row selects (min-p alone): draw now, finding the max as it goes */
    const bool guess = lin && !any_selecting(w.fb, n);
    for (int pass = 0; pass < 2 * FS_SELECT_LEVELS + 1 && !guess; ++pass) {
        if (pass > 0 && !any_selecting(w.fb, n))
            break;
        for (int64_t i = (int64_t)blockIdx.x * THREADS + tid; i < (int64_t)n * FS_SELECT_BUCKETS;
             i += (int64_t)gridDim.x * THREADS) {
            w.hist_count[i] = 0u;
            w.hist_mass[i] = 0ull;
        }
        grid.sync();
        hist_pass(sm, a, w, s, src, n, pass, vec, nullptr, lin && pass == 0);
        grid.sync();
        /* the select steps: a block per row */
        for (unsigned int fi = blockIdx.x; fi < n; fi += gridDim.x)
            if (selecting(w.fb[fi])) {
                if (lin && pass == 0)
                    lin_row(sm, w, fi);
                else
                    select_row(sm, w, fi, lin);
            }
        grid.sync();
    }

    /* the draw; after a guessed one, again for the rows it could not finish
       (one call site: the draw's code is inlined once) */
    for (int round = guess ? 0 : 1; round < 2; ++round) {
        if (round == 1 && guess) {
            bool left = false;
            for (unsigned int fi = 0; fi < n; ++fi)
                left |= w.fb[fi].phase != FS_FB_DONE;
            if (!left)
                break; /* uniform */
        }
        draw_pass(sm, a, w, s, src, n, vec, round == 0);
        grid.sync();
        if (round == 0) {
            for (unsigned int fi = blockIdx.x; fi < n; fi += gridDim.x)
                guess_finish(sm, a, w, s, fi, row_recs, fin_op, pre_status);
            grid.sync();
        }
    }
    for (unsigned int fi = blockIdx.x; fi < n; fi += gridDim.x) {
        const int phase = w.fb[fi].phase;
        if (phase == FS_FB_LIN)
            lin_finish(sm, a, w, s, fi, row_recs, fin_op, pre_status);
        else if (phase == FS_FB_DEFER_K || phase == FS_FB_DEFER_P)
            defer_finish(sm, a, w, s, fi, row_recs, fin_op, pre_status);
    }
    for (unsigned int fi = blockIdx.x * THREADS + tid; fi < n; fi += gridDim.x * THREADS) {
        if (deferring(w.fb[fi]) || w.fb[fi].phase == FS_FB_DONE)
            continue;
        store_row(a, s, w.fb[fi].row, merge_draw(w, fi, gridDim.x), row_recs, fin_op, pre_status);
    }
}

/* The filtered merge on one GPU: block b merges and resolves row slot b
 * (merge_row.cuh) when b < slots, a grid-wide barrier follows, then the
 * second pass over the rows the resolve handed over, in the same launch.
 * As two launches, every filtered call paid for a second-pass grid that,
 * in the common case, found nothing to do: 9-13 us a call on an H100, 3.5-5
 * of them the launch itself.  More slots than blocks take
 * fs_filter_merge_rows_kernel first and this one with no slots: a loop over
 * slots here let ptxas keep more of the merge live (198 registers against
 * 128), which the bound of two blocks an SM turns into spills.  The second
 * pass's shared memory is the resolve's, dynamic (fsf::shared_state). */
template <bool TREE>
__global__ void __launch_bounds__(THREADS, 2)
    fs_filter_merge_kernel(fs_merge_io m, fs_op_args a, fs_filter_ws w, fs_scan_args s,
                           fs_fallback_src src, int64_t slots, bool vec)
{
    static_assert(THREADS == FS_MERGE_THREADS, "merge_row: FS_MERGE_THREADS a block");
    fs_probe_block_start();
    if (blockIdx.x < slots)
        fs_merge_row<true, TREE>(m, w, blockIdx.x);
    /* the blocks without a slot (and the warm-up slots) have not waited for the
       kernel before; the second pass reads what it wrote */
    fs_pdl_wait();
    fs_probe_block_arrive();
    cg::this_grid().sync(); /* every row resolved or handed over */
    fs_probe_arrivals_print(slots, !TREE && w.warm);
    /* the resolve's shared memory (fsf::shared_state), reused */
    extern __shared__ __align__(16) unsigned char fs_dyn_smem[];
    second_pass(*reinterpret_cast<Smem *>(fs_dyn_smem), a, w, s, src, m.row_recs, m.fin_op,
                m.pre_status, vec);
}

/* The filtered merge a block per row slot: on a sharded context (each
 * row's record stored and its candidates exported, merge_row.cuh), and on
 * one GPU for more slots than fs_filter_merge_kernel has blocks, which then
 * follows with no slots.  The bound of one block an SM lets ptxas give the
 * resolve the registers it needs (without it ptxas may hold it to 80 and
 * spill). */
template <bool TREE>
__global__ void __launch_bounds__(FS_MERGE_THREADS, 1)
    fs_filter_merge_rows_kernel(fs_merge_io m, fs_filter_ws w)
{
    fs_merge_row<true, TREE>(m, w, blockIdx.x);
}

/* ---- the second pass on a sharded context --------------------------------
 *
 * The same passes, each a launch of its own with NCCL between them (the
 * host driver is fs_tp_filter_second_pass, tp_exchange.cu): every rank
 * histograms its shard, the histograms are all-reduced (integer sums:
 * exact, so every rank -- and one GPU over the whole vocabulary -- gets the
 * same thresholds), pass 0's max keys all-reduced by max; the draw's records
 * of the shards are all-gathered and merged in rank order.  fb must list the
 * rows in the same order on every rank: tp_fb_begin compacts fb_stage
 * (indexed by row) in row order. */

__global__ void __launch_bounds__(THREADS)
    fs_tp_fb_begin_kernel(fs_filter_ws w, int64_t rows, int64_t n_host)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    for (int64_t i = (int64_t)blockIdx.x * THREADS + tid; i < n_host * FS_SELECT_BUCKETS;
         i += (int64_t)gridDim.x * THREADS) {
        w.hist_count[i] = 0u;
        w.hist_mass[i] = 0ull;
    }
    for (int64_t i = (int64_t)blockIdx.x * THREADS + tid; i < n_host;
         i += (int64_t)gridDim.x * THREADS)
        w.tp_max[i] = 0u;
    if (blockIdx.x != 0)
        return;
    __shared__ int warp_n[THREADS / 32];
    int64_t base = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += THREADS) {
        const int64_t r = r0 + tid;
        const bool on = r < rows && w.fb_stage[r].row >= 0;
        const unsigned m = __ballot_sync(0xffffffffu, on);
        if (lane == 0)
            warp_n[warp] = __popc(m);
        __syncthreads();
        int before = __popc(m & ((1u << lane) - 1u)), total = 0;
        for (int k = 0; k < THREADS / 32; ++k) {
            before += k < warp ? warp_n[k] : 0;
            total += warp_n[k];
        }
        if (on)
            w.fb[base + before] = w.fb_stage[r];
        base += total;
        __syncthreads();
    }
}

__global__ void __launch_bounds__(THREADS)
    fs_tp_fb_hist_kernel(fs_op_args a, fs_filter_ws w, fs_scan_args s, fs_fallback_src src,
                         int pass, bool vec)
{
    const unsigned int n = *w.flag_n;
    if (n == 0 || (pass > 0 && !any_selecting(w.fb, n)))
        return; /* uniform */
    __shared__ Smem sm;
    hist_pass(sm, a, w, s, src, n, pass, vec, w.tp_max, false);
}

__global__ void __launch_bounds__(THREADS) fs_tp_fb_step_kernel(fs_filter_ws w, int pass)
{
    const unsigned int n = *w.flag_n;
    __shared__ Smem sm;
    for (unsigned int fi = blockIdx.x; fi < n; fi += gridDim.x) {
        if (pass == 0 && threadIdx.x == 0)
            w.fb[fi].max_key = w.tp_max[fi];
        if (!selecting(w.fb[fi]))
            continue; /* uniform: thread 0's write above is to another field */
        select_row(sm, w, fi, false);
        __syncthreads(); /* thread 0's step read the masses */
        for (int b = threadIdx.x; b < FS_SELECT_BUCKETS; b += THREADS) {
            w.hist_count[(int64_t)fi * FS_SELECT_BUCKETS + b] = 0u;
            w.hist_mass[(int64_t)fi * FS_SELECT_BUCKETS + b] = 0ull;
        }
    }
}

__global__ void __launch_bounds__(THREADS)
    fs_tp_fb_draw_kernel(fs_op_args a, fs_filter_ws w, fs_scan_args s, fs_fallback_src src,
                         bool vec)
{
    const unsigned int n = *w.flag_n;
    if (n == 0)
        return;
    __shared__ Smem sm;
    draw_pass(sm, a, w, s, src, n, vec, false);
}

/* The shard's kept record of each row: the draw kernel's `grid` blocks'. */
__global__ void fs_tp_fb_part_kernel(fs_filter_ws w, unsigned int grid)
{
    const unsigned int n = *w.flag_n;
    for (unsigned int fi = blockIdx.x * blockDim.x + threadIdx.x; fi < n;
         fi += gridDim.x * blockDim.x)
        w.tp_part[fi] = merge_draw(w, fi, grid);
}

__global__ void fs_tp_fb_store_kernel(fs_filter_ws w, const fs_record *__restrict__ gather,
                                      int64_t n_host, int ranks, fs_record *row_recs)
{
    const unsigned int n = *w.flag_n;
    for (unsigned int fi = blockIdx.x * blockDim.x + threadIdx.x; fi < n;
         fi += gridDim.x * blockDim.x) {
        fs_record acc = gather[fi];
        for (int k = 1; k < ranks; ++k)
            fs_record_merge(&acc, &gather[(int64_t)k * n_host + fi]);
        row_recs[w.fb[fi].row] = acc;
    }
}

} // namespace

/* The filtered merge's dynamic shared memory: the resolve's, then the
 * second pass's. */
static size_t merge_smem_bytes()
{
    return sizeof(Smem) > sizeof(fsf::resolve_smem) ? sizeof(Smem) : sizeof(fsf::resolve_smem);
}

/* ... allowed past the default 48 KB a block on the current device, should
 * either grow. */
static cudaError_t filter_merge_smem(bool tree)
{
    const auto kernel = tree ? fs_filter_merge_kernel<true> : fs_filter_merge_kernel<false>;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)merge_smem_bytes());
}

cudaError_t fs_filter_merge_configure(void)
{
    cudaError_t e = filter_merge_smem(false);
    return e != cudaSuccess ? e : filter_merge_smem(true);
}

/* Every block must be resident at once (grid-wide barriers): as many as
 * fit, up to 4 an SM -- one block of 256 threads per SM left the
 * load / barrier / FMA loop latency-bound (H100). */
int fs_filter_fallback_grid(int sm_count)
{
    static int per_sm = 0;
    if (per_sm == 0) {
        int n = 4;
        for (int tree = 0; tree < 2; ++tree) {
            int k = 0;
            if (filter_merge_smem(tree) != cudaSuccess ||
                cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &k, tree ? fs_filter_merge_kernel<true> : fs_filter_merge_kernel<false>,
                    THREADS, merge_smem_bytes()) != cudaSuccess) {
                (void)cudaGetLastError();
                k = 1;
            }
            n = k < n ? k : n;
        }
        per_sm = n < 1 ? 1 : n;
    }
    return (sm_count > 0 ? sm_count : 1) * per_sm;
}

cudaError_t fs_launch_filter_merge(const fs_op_args *a, const fs_record *tile_recs,
                                   int64_t tiles_per_row, const fs_row_desc *descs,
                                   const int32_t *pre_status, fs_record *row_recs, int finalize,
                                   const fs_filter_ws *w, int force_second_pass,
                                   const fs_scan_args *s, bool overlap, cudaStream_t stream)
{
    const bool tree = w->tree_rows != nullptr;
    cudaError_t e = cudaSuccess;
    const fs_merge_io m = fs_merge_io_make(a, tile_recs, tiles_per_row, descs, pre_status,
                                           row_recs, finalize, w, force_second_pass);
    /* the chain ops' warm-up slots (merge_row.cuh; not on sharded contexts,
       whose resolve and second pass come after the exchange) */
    int64_t slots = a->rows + (!tree && w->warm ? FS_FILTER_WARM_SLOTS : 0);
    if (slots > w->fb_grid || w->sums) {
        /* more rows than co-resident blocks: a block per slot first (a
           sharded context: only that) */
        fs_pdl_config mc(dim3((unsigned)slots), dim3(FS_MERGE_THREADS),
                         sizeof(fsf::resolve_smem), stream, overlap);
        e = cudaLaunchKernelEx(&mc.cfg, tree ? fs_filter_merge_rows_kernel<true>
                                             : fs_filter_merge_rows_kernel<false>,
                               m, *w);
        if (e != cudaSuccess || w->sums)
            return e != cudaSuccess ? e : cudaGetLastError();
        slots = 0;
    }
    const fs_fallback_src src = fs_fallback_src_make(a);
    fs_pdl_config pc(dim3((unsigned)w->fb_grid), dim3(THREADS), merge_smem_bytes(), stream,
                     overlap);
    pc.cooperative();
    const auto kernel = tree ? fs_filter_merge_kernel<true> : fs_filter_merge_kernel<false>;
    e = cudaLaunchKernelEx(&pc.cfg, kernel, m, *a, *w, *s, src, slots, vec_weights(src));
    return e != cudaSuccess ? e : cudaGetLastError();
}

cudaError_t fs_launch_tp_fb_begin(const fs_filter_ws *w, int64_t rows, int64_t n_host,
                                  cudaStream_t stream)
{
    fs_tp_fb_begin_kernel<<<(unsigned)w->fb_grid, THREADS, 0, stream>>>(*w, rows, n_host);
    return cudaGetLastError();
}

cudaError_t fs_launch_tp_fb_hist(const fs_op_args *a, const fs_filter_ws *w,
                                 const fs_scan_args *s, const fs_fallback_src *src, int pass,
                                 cudaStream_t stream)
{
    fs_tp_fb_hist_kernel<<<(unsigned)w->fb_grid, THREADS, 0, stream>>>(*a, *w, *s, *src, pass,
                                                                       vec_weights(*src));
    return cudaGetLastError();
}

cudaError_t fs_launch_tp_fb_step(const fs_filter_ws *w, int pass, cudaStream_t stream)
{
    fs_tp_fb_step_kernel<<<(unsigned)w->fb_grid, THREADS, 0, stream>>>(*w, pass);
    return cudaGetLastError();
}

cudaError_t fs_launch_tp_fb_draw(const fs_op_args *a, const fs_filter_ws *w,
                                 const fs_scan_args *s, const fs_fallback_src *src,
                                 cudaStream_t stream)
{
    fs_tp_fb_draw_kernel<<<(unsigned)w->fb_grid, THREADS, 0, stream>>>(*a, *w, *s, *src,
                                                                       vec_weights(*src));
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    fs_tp_fb_part_kernel<<<(unsigned)((a->rows + 127) / 128), 128, 0, stream>>>(
        *w, (unsigned int)w->fb_grid);
    return cudaGetLastError();
}

cudaError_t fs_launch_tp_fb_store(const fs_filter_ws *w, const fs_record *gather, int64_t n_host,
                                  int ranks, fs_record *row_recs, cudaStream_t stream)
{
    fs_tp_fb_store_kernel<<<(unsigned)((n_host + 127) / 128), 128, 0, stream>>>(
        *w, gather, n_host, ranks, row_recs);
    return cudaGetLastError();
}
