/* Hopper (sm_90a) fused LM-head scan for large row batches: rows as the
 * wgmma M dimension.
 *
 *   logits = H . W^T, rows = wgmma M (64 per consumer warpgroup), vocabulary
 *   = wgmma N (256 per tile; 128 in the 192-row shape), K = D.
 *
 * Why a second kernel: the vocabulary-as-M kernel (scan_hopper.cu) keeps a
 * tile's logits in an fp32 shared-memory buffer for its epilogue, which caps
 * its tile at 128 tokens and re-reads H from L2 for every 128 tokens; from
 * ~128 rows up that traffic binds (L2 serves ~7 TB/s, and the W stream
 * itself costs twice its size there: fill + read).  With rows as M a
 * thread's accumulators hold 2 rows x 64 tokens, the four lanes of a quad
 * hold all 256 tokens of those rows, and the epilogue works from registers.
 *
 *   CTA        3 warpgroups, one CTA per SM: a producer (one thread issues
 *              the TMA, its other 3 warps draw the sampling noise;
 *              setmaxnreg hands its spare registers to the others) and 2
 *              consumers with 232-240 registers a thread (the 192-row
 *              shape: 3 consumers with 152-160, see Shape).  The producer refills
 *              a stage the moment it is free, whatever the consumers are
 *              doing.  With thread 0 of a consumer as the producer a refill
 *              waited for that warp to come back from its wgmma wait, and in
 *              a cluster for the peer CTA too: W multicast lost 5% at 256
 *              rows; with this producer it gains 5-20% at 200 - 256 rows.
 *   work       CTA = (row block of 128 or 192 rows, slot).  The vocabulary is cut into
 *              128-token units, and slot s owns a contiguous range of them
 *              (the slots' ranges differ by at most one unit), taken as
 *              256-token tiles plus a last half tile when the count is odd: the
 *              W bytes per CTA are balanced to one unit, where 256-token tiles
 *              alone leave the last wave half empty at 128 rows.  The row
 *              blocks of one slot run side by side and share W through L2;
 *              with an even count, pairs of them form clusters and each CTA
 *              of a pair loads one 128-token W box of a step for both (TMA
 *              multicast: W read from L2 once per pair), releasing a stage
 *              to both producers.
 *   pipeline   4 stages of { W 256 x 64 (two 128-row TMA boxes; one for a half
 *              tile), H 128 x 64 } (192-row shape: 5 of { W 128 x 64, H 192 x
 *              64 }), 128-byte swizzle, full/empty mbarriers.  No H box
 *              reaches past the last row (slice_base).
 *              A stage is refilled as soon as all consumer warps (of the
 *              cluster) are past it; the last stage of a tile is released
 *              before the epilogue, so 4 k-blocks of the next tile stream in
 *              under it.
 *   noise      the Gumbel noise and inverse-CDF uniform of each (row, noise
 *              block) of tile t, drawn into shared memory (16 KB; 12 KB
 *              in the 192-row shape) by the
 *              producer's warps 1-3 under tile t's MMA, once the consumers
 *              are done with tile t - 1's (sample 256-320 rows -1 to -4%
 *              against drawing it in the epilogue, where Philox sat on the
 *              critical path).
 *   epilogue   per row and tile, from registers (rows_epilogue.cuh): 2 rows
 *              x 64 tokens per thread, 16 noise blocks per row and tile (192-
 *              row shape: 2 rows x 32 tokens, 8 blocks).
 *   records    one per (row, slot): the merge of its lanes' records.
 *   tail       the last CTA merges and finalizes the op (op_tail.cuh).
 *
 * The tensor cores idle during the epilogue; the TMA keeps streaming. */
#include "scan_hopper_rows.cuh"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hopper_ptx.cuh"
#include "op_tail.cuh"
#include "pdl.cuh"
#include "record.h"
#include "rows_epilogue.cuh"
#include "wgmma.cuh"

#ifndef FSHR_STAGES3 /* stages of the 192-row shape (A/B builds) */
#define FSHR_STAGES3 5
#endif
#ifndef FSHR_PROBE_NO_EPI
#define FSHR_PROBE_NO_EPI 0
#endif

namespace fshr {

using namespace fshp;

constexpr int UNIT = 128; /* tokens per unit of work (one W TMA box) */
constexpr int WG = 128;   /* threads per warpgroup */

/* The CTA's shape, by its number of consumer warpgroups NWG (64 rows each):
 *   2: 128 rows x 256-token tiles (any row count; 24 KB of W + H per 2^20
 *      MAC);
 *   3: 192 rows x 128-token tiles, for 129-192 rows: one row block where
 *      two of 128 rows pay for 256 (with 128-row CTAs verify's 160 rows =
 *      32 requests cost as much as 256 rows).  A third warpgroup leaves (64K - the
 *      producer's) / 384 registers a consumer thread, room for 64
 *      accumulators (128-token tiles) but not 128.  Its 40 KB stages
 *      leave room for 5: a k-block here is 3/4 of the 2-warpgroup shape's
 *      MMA work, so 5 stages hold about the time 4 hold there. */
template <int NWG> struct Shape {
    static_assert(NWG == 2 || NWG == 3, "2 or 3 consumer warpgroups");
    static constexpr int BR = 64 * NWG;             /* rows per CTA */
    static constexpr int BV = NWG == 2 ? 256 : 128; /* tokens per tile (wgmma N) */
    static constexpr int UPT = BV / UNIT;           /* units per tile */
    static constexpr int NA = BV / 2;               /* accumulators a thread */
    static constexpr int NCW = 4 * NWG;             /* consumer warps */
    static constexpr int NCT = NCW * 32;            /* consumer threads */
    static constexpr int THREADS = WG + NCT;        /* producer warpgroup first */
    static constexpr int W_BYTES = BV * BK * 2;
    static constexpr int H_BYTES = BR * BK * 2;
    static constexpr int STAGE_BYTES = W_BYTES + H_BYTES;
    static constexpr int STAGES = NWG == 2 ? 4 : FSHR_STAGES3;
    /* full / empty per stage, the tail flag, noise full / empty */
    static constexpr int BAR_BYTES = 2 * STAGES * 8 + 16 + 16;
    static constexpr int DESC_BYTES = BR * (int)sizeof(fs_row_desc);
    static constexpr int NBT = BV / FS_NOISE_BLOCK;       /* noise blocks a row in a tile */
    static constexpr int NOISE_BYTES = BR * NBT * 2 * 4; /* {Gumbel, uniform} per block */
    static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + BAR_BYTES + DESC_BYTES + NOISE_BYTES;
    static_assert(SMEM <= SMEM_MAX, "smem");
    /* Registers per thread after setmaxnreg.  The CTA's pool is what the
     * launch gave it, LAUNCH_REGS x THREADS (__launch_bounds__), so a
     * consumer's setmaxnreg.inc past it waits forever (a larger split hung
     * the kernel).  LAUNCH_REGS: ptxas's count for the kernel (-Xptxas -v): 168 with
     * 384 threads, the 128 cap with 512.  Sampling: the producer's spare
     * warps draw the noise in 40 (two Philox calls kept apart: noise_fill),
     * the consumers fit with the row state slimmed (flags read from the
     * descriptor, row offsets not hoisted out of the tile loop).  Draft
     * argmax: no noise, the producer needs 24.  ptxas models the split:
     * -Xptxas -warn-spills shows a region that does not fit. */
    static constexpr int LAUNCH_REGS = NWG == 2 ? 168 : 128;
};
template <int NWG, bool LSE> struct Regs {
    using S = Shape<NWG>;
    static constexpr int producer = LSE ? 40 : 24;
    static constexpr int consumer = NWG == 2 ? (LSE ? 232 : 240) : (LSE ? 152 : 160);
    static_assert(WG * producer + S::NCT * consumer <= S::THREADS * S::LAUNCH_REGS,
                  "register pool");
};

struct Args {
    const fs_row_desc *descs;
    const float *bias;
    const uint32_t *allowed;
    fs_record *recs; /* record (row, slot) at row * slots + slot */
    int64_t rows, V, vocab_offset, global_vocab, words;
    int n_rb, slots, units, kblocks, tail_on;
    fs_tail_args tail;
    /* tree verify only (the TREE kernels; tree_scan.cuh): the rows' children
       and the children's scores [rows][FS_TREE_MAX_CHILDREN] */
    const fs_tree_row *tree_rows;
    float *tree_child_s;
};

/* Units [u0, u1) of slot `slot`. */
__host__ __device__ __forceinline__ void slot_range(int slot, int slots, int units, int *u0,
                                                    int *u1)
{
    *u0 = (int)((int64_t)slot * units / slots);
    *u1 = (int)((int64_t)(slot + 1) * units / slots);
}

/* H of a row block is one TMA box when at most 32 of its rows lie past the
 * last row.  Past that the box is slow (the TMA's zero fill; measured with
 * the 192-row shape on 151936 x 4096: 160 and 176 rows as fast as 192, 152 rows
 * 1.5% slower, 144 8%, 136 14%).  Such a row block is loaded as one 64-row
 * box per consumer warpgroup ("slice"), the last slices moved back to end
 * at the last row (their first rows then repeat the previous slice's, and
 * only that slice's warpgroup records them), a slice wholly past the last
 * row not loaded at all: 136 rows 13% faster, but 160 rows 2% slower than
 * one box, and a full 192-row block 2-5% (three boxes a stage instead of
 * one).  First row of slice w of row block rb as loaded: */
__host__ __device__ __forceinline__ bool one_box(int rb, int br, int64_t rows)
{
    return (int64_t)(rb + 1) * br - 32 <= rows;
}

__host__ __device__ __forceinline__ int64_t slice_base(int rb, int w, int br, int64_t rows)
{
    const int64_t nominal = (int64_t)rb * br + 64 * w, last = rows - 64;
    return one_box(rb, br, rows) || nominal < last ? nominal : last > 0 ? last : 0;
}

/* Row held by local row lr (slice lr / 64) of row block rb, or -1 when
 * that row is out of range or another slice's. */
__host__ __device__ __forceinline__ int64_t slot_row(int rb, int lr, int br, int64_t rows)
{
    const int w = lr >> 6;
    const int64_t row = slice_base(rb, w, br, rows) + (lr & 63);
    return row >= (int64_t)rb * br + 64 * w && row < rows ? row : -1;
}

/* Slices of row block rb with rows in range (the first ones). */
__host__ __device__ __forceinline__ int live_slices(int rb, int nwg, int br, int64_t rows)
{
    const int64_t left = rows - (int64_t)rb * br;
    const int64_t n = (left + 63) / 64;
    return n < nwg ? (int)n : nwg;
}

#if FSH_SM90A

constexpr int WU_BYTES = UNIT * BK * 2; /* one W TMA box */
constexpr int HS_BYTES = 64 * BK * 2;   /* one H slice (TMA box) */
constexpr int NOISE_THREADS = WG - 32; /* producer warps 1-3 */
/* named barriers (0 is __syncthreads) */
constexpr int BAR_CONSUMERS = 1;
constexpr int BAR_TAIL = 2;

/* Producer side of the pipeline, run by thread 0: step j of this CTA's
 * sequence (tile j / KB, k-block j % KB) into stage j % STAGES.  In a
 * cluster of CL > 1 row blocks (CTA rank = row block % CL) rank i < nu loads
 * W box i for every CTA of the cluster. */
template <int NWG, int CL>
__device__ __forceinline__ void issue_step(int j, const CUtensorMap *tmw, const CUtensorMap *tmh,
                                           const CUtensorMap *tms, uint32_t sW, uint32_t sH,
                                           uint32_t full, int rb, int u0, int u1, int live,
                                           const Args &a)
{
    /* a W unit is read by the n_rb CTAs of its slot, about together; even
       with one row block evict_normal beats evict_first (see scan_hopper.cu);
       the policies are made per step (one instruction each): the producer
       runs on 24 registers */
    const uint64_t pol_w = policy_evict_normal();
    const uint64_t pol_h = policy_evict_last();
    using S = Shape<NWG>;
    const int t = j / a.kblocks, kb = j - t * a.kblocks;
    const int u = u0 + S::UPT * t, nu = u1 - u >= S::UPT ? S::UPT : 1;
    const int st = j % S::STAGES;
    /* live < 0: one box for the block (one_box) */
    mbar_expect_tx(full, (uint32_t)(nu * WU_BYTES + (live < 0 ? S::H_BYTES : live * HS_BYTES)));
    if (CL == 1) {
        for (int i = 0; i < nu; ++i)
            tma_load_2d(sW + st * S::W_BYTES + i * WU_BYTES, tmw, kb * BK, (u + i) * UNIT, full,
                        pol_w);
    } else if (const int rank = rb % CL; rank < nu) {
        tma_load_2d_multicast(sW + st * S::W_BYTES + rank * WU_BYTES, tmw, kb * BK,
                              (u + rank) * UNIT, full, (uint16_t)((1u << CL) - 1u), pol_w);
    }
    if (live < 0)
        tma_load_2d(sH + st * S::H_BYTES, tmh, kb * BK, rb * S::BR, full, pol_h);
    for (int w = 0; w < live; ++w)
        tma_load_2d(sH + st * S::H_BYTES + w * HS_BYTES, tms, kb * BK,
                    (int)slice_base(rb, w, S::BR, a.rows), full, pol_h);
}

template <int NWG, bool BF16, int CL, bool LSE, bool TREE>
__global__ void __launch_bounds__(Shape<NWG>::THREADS, 1)
    fshr_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                     const __grid_constant__ CUtensorMap tms, const Args a)
{
    using S = Shape<NWG>;
    constexpr int STAGE_BYTES = S::STAGE_BYTES, W_BYTES = S::W_BYTES, H_BYTES = S::H_BYTES;
    constexpr int BR = S::BR, BV = S::BV, NA = S::NA, NBT = S::NBT, NCW = S::NCW, NCT = S::NCT;
    constexpr int BAR_BYTES = S::BAR_BYTES, DESC_BYTES = S::DESC_BYTES, STAGES = S::STAGES;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem = smem_align_1024(smem_raw);
    const uint32_t sbase = smem_u32(smem);
    const uint32_t sW = sbase;
    const uint32_t sH = sbase + STAGES * W_BYTES;
    const uint32_t sBar = sbase + STAGES * STAGE_BYTES;
    unsigned int *tail_flag =
        reinterpret_cast<unsigned int *>(smem + STAGES * STAGE_BYTES + 2 * STAGES * 8);
    fs_row_desc *s_desc = reinterpret_cast<fs_row_desc *>(smem + STAGES * STAGE_BYTES + BAR_BYTES);
    float4 *s_noise =
        reinterpret_cast<float4 *>(smem + STAGES * STAGE_BYTES + BAR_BYTES + DESC_BYTES);
#define FSHR_FULL(s) (sBar + 8u * (uint32_t)(s))
#define FSHR_EMPTY(s) (sBar + 8u * (uint32_t)(STAGES + (s)))
#define FSHR_NOISE_FULL (sBar + 8u * (uint32_t)(2 * STAGES + 2))
#define FSHR_NOISE_EMPTY (sBar + 8u * (uint32_t)(2 * STAGES + 3))

    const int KB = a.kblocks;
    const int rb = blockIdx.x % a.n_rb, slot = blockIdx.x / a.n_rb;
    int u0, u1;
    slot_range(slot, a.slots, a.units, &u0, &u1);
    const int n_tiles = (u1 - u0 + S::UPT - 1) / S::UPT;
    const int live = live_slices(rb, NWG, BR, a.rows);
    const bool whole = one_box(rb, BR, a.rows);
    const int steps = n_tiles * KB;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(FSHR_FULL(s), 1);
            mbar_init(FSHR_EMPTY(s), NCW * CL); /* every warp of the cluster */
        }
        mbar_init(FSHR_NOISE_FULL, NOISE_THREADS);
        /* every reader arrives: an arrive releases only its own thread's
           reads (one lane per warp after __syncwarp is a WAR hazard under
           compute-sanitizer racecheck) */
        mbar_init(FSHR_NOISE_EMPTY, NCT);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmw)) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmh)) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tms)) : "memory");
    }
    /* the peers' barriers must exist before a multicast or an arrive reaches them */
    if (CL > 1)
        cluster_sync();
    else
        __syncthreads();
    if (threadIdx.x < WG) {
        /* producer: W and H do not depend on the prep kernel, so it streams
           without waiting for it */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs<NWG, LSE>::producer));
        if (threadIdx.x == 0) {
            for (int j = 0; j < steps; ++j) {
                const int s = j % STAGES;
                if (j >= STAGES) /* step j - STAGES released by every warp of the cluster */
                    mbar_wait(FSHR_EMPTY(s), (uint32_t)(j / STAGES - 1) & 1u);
                issue_step<NWG, CL>(j, &tmw, &tmh, &tms, sW, sH, FSHR_FULL(s), rb, u0, u1,
                                    whole ? -1 : live, a);
            }
        } else if (LSE && !FSHR_PROBE_NO_EPI && threadIdx.x >= 32) {
            /* the noise of tile t, drawn under its MMA once the consumers
               are done with tile t - 1's: Philox and the logs leave the
               epilogue, which the tensor cores wait for */
            fs_pdl_wait(); /* the row descriptors */
            for (int t = 0; t < n_tiles; ++t) {
                if (t > 0)
                    mbar_wait(FSHR_NOISE_EMPTY, (uint32_t)(t - 1) & 1u);
                noise_fill<BR, NBT>(
                    s_noise, a.vocab_offset + (int64_t)(u0 + S::UPT * t) * UNIT, threadIdx.x - 32,
                    NOISE_THREADS, a, [&](int lr) { return slot_row(rb, lr, BR, a.rows); });
                mbar_arrive(FSHR_NOISE_FULL);
            }
        }
        __syncwarp();
        fs_pdl_launch_dependents();
        /* no CTA leaves while a peer may still arrive on its barriers */
        if (CL > 1)
            cluster_sync();
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs<NWG, LSE>::consumer));
    /* the row descriptors come from the prep kernel, which may still be
       running (programmatic launch) */
    fs_pdl_wait();
    fs_pdl_launch_dependents();

    const int ct = threadIdx.x - WG, lane = ct & 31;
    const int cw = ct >> 7, wi = (ct >> 5) & 3;
    const int ga = lane >> 2, gc = lane & 3;
    if (ct < BR) {
        const int64_t row = slot_row(rb, ct, BR, a.rows);
        if (row >= 0) {
            s_desc[ct] = a.descs[row];
#if FSHR_PROBE_NO_EXCL /* timing probe: rows without an excluded / selected token (verify: wrong results) */
            s_desc[ct].excluded = -1;
            s_desc[ct].selected = -1;
#endif
        } else {
            s_desc[ct] = fs_row_desc_skip(); /* flags 0: scan() and noisy() false */
        }
    }
    fs_named_bar(BAR_CONSUMERS, NCT);
    const int lr = cw * 64 + 16 * wi + ga; /* local row of r0; r1 is lr + 8 */
    RowState r0, r1;
    {
        /* a row that is not this slot's has flags 0: its row number is
           never used */
        const int64_t q0 = slot_row(rb, lr, BR, a.rows), q1 = slot_row(rb, lr + 8, BR, a.rows);
        row_init(r0, q0 >= 0 ? (int)q0 : 0, s_desc + lr);
        row_init(r1, q1 >= 0 ? (int)q1 : 0, s_desc + lr + 8);
    }

    float acc[NA];
#pragma unroll
    for (int i = 0; i < NA; ++i)
        acc[i] = 0.0f;
    /* step i's stage is free once all consumer warps of every CTA of the
       cluster are past it (a multicast refills it everywhere) */
    auto release = [&](int i) {
        const int ps = i % STAGES;
        if (lane == 0) {
            mbar_arrive(FSHR_EMPTY(ps));
#pragma unroll
            for (int r = 1; r < CL; ++r)
                mbar_arrive_cluster(FSHR_EMPTY(ps), (uint32_t)((rb + r) % CL));
        }
        __syncwarp();
    };
    int j = 0; /* next step */
    for (int t = 0; t < n_tiles; ++t) {
        for (int kb = 0; kb < KB; ++kb, ++j) {
            const int s = j % STAGES;
            mbar_wait(FSHR_FULL(s), (uint32_t)(j / STAGES) & 1u);
            __syncwarp();
            /* a slice past the last row is not loaded (live_slices): its
               warpgroup multiplies whatever its smem holds, into rows that
               are never read (a branch around the wgmma serialises it:
               ptxas C7518) */
            wg_fence();
            mma_kblock<BV, BF16>(acc, sH + s * H_BYTES + cw * HS_BYTES, sW + s * W_BYTES,
                                  kb == 0);
            wg_commit();
            wg_wait<1>();
            fence_acc(acc);
            if (kb > 0)
                release(j - 1);
        }
        wg_wait<0>();
        fence_acc(acc);
        release(j - 1); /* before the epilogue: the next tile streams in under it */
        const int u = u0 + S::UPT * t;
        const int64_t v0 = (int64_t)u * UNIT;
        int64_t nc = (int64_t)(u1 - u) * UNIT;
        nc = nc < BV ? nc : BV;
        nc = nc < a.V - v0 ? nc : a.V - v0;
#if FSHR_PROBE_NO_EPI /* timing probe: the mainloop alone (wrong results) */
        r0.rec.best_key = fmaxf(r0.rec.best_key, fmaxf(acc[0], acc[NA - 1]) + (float)nc);
#else
        if (LSE)
            mbar_wait(FSHR_NOISE_FULL, (uint32_t)t & 1u);
        row_tile<0, NA, LSE, TREE>(r0, acc, v0, (int)nc, gc, a, s_noise + lr * (NBT / 2));
        row_tile<1, NA, LSE, TREE>(r1, acc, v0, (int)nc, gc, a, s_noise + (lr + 8) * (NBT / 2));
        if (LSE) /* the noise buffer is free for tile t + 1 */
            mbar_arrive(FSHR_NOISE_EMPTY);
#endif
    }
    const fs_record q0 = quad_record(r0), q1 = quad_record(r1);
    if (gc == 0 && slot_row(rb, lr, BR, a.rows) >= 0)
        a.recs[(int64_t)r0.row * a.slots + slot] = q0;
    if (gc == 0 && slot_row(rb, lr + 8, BR, a.rows) >= 0)
        a.recs[(int64_t)r1.row * a.slots + slot] = q1;
    if (CL > 1)
        cluster_sync();
    if (a.tail_on)
        fs_op_tail(a.tail, a.recs, a.slots, a.rows, a.descs, ct, NCT, BAR_TAIL, tail_flag,
                   reinterpret_cast<fs_record *>(smem), /* the stages: all consumed */
                   (STAGES * STAGE_BYTES) / (int)sizeof(fs_record));
#undef FSHR_FULL
#undef FSHR_EMPTY
#undef FSHR_NOISE_FULL
#undef FSHR_NOISE_EMPTY
}

#else /* not sm_90a: the kernel exists (for the host stub) but is empty */

template <int NWG, bool BF16, int CL, bool LSE, bool TREE>
__global__ void __launch_bounds__(Shape<NWG>::THREADS, 1)
    fshr_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                     const __grid_constant__ CUtensorMap tms, const Args a)
{
}

#endif /* FSH_SM90A */

template <int NWG, bool BF16, int CL, bool LSE, bool TREE> cudaError_t configure(int device)
{
    static unsigned long long done = 0;
    return set_smem_once(reinterpret_cast<const void *>(fshr_scan_kernel<NWG, BF16, CL, LSE, TREE>),
                         Shape<NWG>::SMEM, &done, device);
}

/* The kernel's tensor maps: W (128-token boxes), H in one box of the CTA's
 * rows, H in 64-row slices. */
struct Maps {
    CUtensorMap w, h, s;
};

template <int NWG, bool BF16, int CL, bool LSE, bool TREE>
cudaError_t launch(fs_pdl_config &pc, const Maps &m, const Args &a, int device)
{
    cudaError_t e = configure<NWG, BF16, CL, LSE, TREE>(device);
    if (e != cudaSuccess)
        return e;
    pc.cluster_x(CL);
    return cudaLaunchKernelEx(&pc.cfg, fshr_scan_kernel<NWG, BF16, CL, LSE, TREE>, m.w, m.h, m.s,
                              a);
}

/* The epilogue variants: argmax only (no exponentials), sampling / verify,
 * tree verify (a separate kernel, so that the others carry no tree code). */
enum Epi { EPI_ARGMAX, EPI_LSE, EPI_TREE };

template <int NWG, bool BF16, int CL>
cudaError_t launch_epi(Epi epi, fs_pdl_config &pc, const Maps &m, const Args &a, int device)
{
    return epi == EPI_ARGMAX ? launch<NWG, BF16, CL, false, false>(pc, m, a, device)
           : epi == EPI_LSE  ? launch<NWG, BF16, CL, true, false>(pc, m, a, device)
                             : launch<NWG, BF16, CL, true, true>(pc, m, a, device);
}

template <int NWG>
cudaError_t launch_shape(bool bf16, int cl, Epi epi, fs_pdl_config &pc, const Maps &m,
                         const Args &a, int device)
{
    if (cl == 2)
        return bf16 ? launch_epi<NWG, true, 2>(epi, pc, m, a, device)
                    : launch_epi<NWG, false, 2>(epi, pc, m, a, device);
    return bf16 ? launch_epi<NWG, true, 1>(epi, pc, m, a, device)
                : launch_epi<NWG, false, 1>(epi, pc, m, a, device);
}

/* Clusters of pairs of row blocks of a slot (blocks 2 c, 2 c + 1) when
 * their count is even: W is then read from L2 once per pair instead of once
 * per row block (200 - 256 rows: 5-20% faster).  Three row blocks (257 -
 * 384 rows) gained nothing in clusters of 3, of which only 39 fit at once
 * (117 SMs). */
int cluster_size(int64_t n_rb, int multicast)
{
    return multicast && n_rb % 2 == 0 ? 2 : 1;
}

/* 2-CTA clusters of shape NWG the current device holds at once (0: unknown),
 * asked once per device: the GPCs' SM counts need not be even, and a cluster
 * that does not fit waits for a second wave. */
template <int NWG> int max_clusters_2()
{
    static int known[64]; /* count + 1 once asked */
    int device = 0, n = 0;
    if (cudaGetDevice(&device) != cudaSuccess)
        return 0;
    if (device < 64) {
        const int k = __atomic_load_n(&known[device], __ATOMIC_ACQUIRE);
        if (k > 0)
            return k - 1;
    }
    if (configure<NWG, true, 2, true, false>(device) != cudaSuccess)
        return 0;
    fs_pdl_config pc(dim3(2), dim3(Shape<NWG>::THREADS), Shape<NWG>::SMEM, nullptr, false);
    pc.cluster_x(2);
    if (cudaOccupancyMaxActiveClusters(&n, fshr_scan_kernel<NWG, true, 2, true, false>, &pc.cfg) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (device < 64)
        __atomic_store_n(&known[device], n + 1, __ATOMIC_RELEASE);
    return n;
}

int64_t row_blocks(int64_t rows, int br)
{
    return (rows + br - 1) / br;
}

} // namespace fshr

extern "C" int fs_hopper_rows_block(int64_t rows, int requested)
{
    if (requested == 128 || requested == 192)
        return requested;
    return rows > fshr::Shape<2>::BR && rows <= fshr::Shape<3>::BR ? fshr::Shape<3>::BR
                                                                    : fshr::Shape<2>::BR;
}

extern "C" int64_t fs_hopper_rows_slots(int64_t V_local, int64_t rows, int sm_count,
                                        int multicast, int row_block)
{
    if (V_local <= 0 || rows <= 0)
        return 0;
    const int br = fs_hopper_rows_block(rows, row_block);
    const int64_t units = (V_local + fshr::UNIT - 1) / fshr::UNIT;
    const int64_t n_rb = fshr::row_blocks(rows, br);
    int64_t slots = sm_count / n_rb;
    if (fshr::cluster_size(n_rb, multicast) == 2) {
        const int mc = br == fshr::Shape<3>::BR ? fshr::max_clusters_2<3>()
                                                : fshr::max_clusters_2<2>();
        /* slots x n_rb / 2 clusters at once */
        if (mc > 0 && 2 * mc / n_rb < slots)
            slots = 2 * mc / n_rb;
    }
    if (slots < 1)
        slots = 1;
    return slots < units ? slots : units;
}

extern "C" int fs_hopper_rows_launch(const void *W, const void *H, int is_bf16, int64_t V_local,
                                     int64_t D, int64_t rows, int64_t vocab_offset,
                                     int64_t global_vocab, const fs_row_desc *descs,
                                     const float *logit_bias, const uint32_t *allowed,
                                     fs_record *recs, int64_t slots, const fs_tail_args *tail,
                                     int multicast, int row_block, int argmax_only,
                                     const fs_tree_row *tree_rows, float *tree_child_s, int device,
                                     cudaStream_t stream)
{
    using namespace fshr;
    const int br = fs_hopper_rows_block(rows, row_block);
    const int64_t n_rb = row_blocks(rows, br);
    const int64_t units = (V_local + UNIT - 1) / UNIT;
    const int64_t grid = slots * n_rb;
    if (slots < 1 || slots > units || grid > INT32_MAX || rows > INT32_MAX || units > INT32_MAX ||
        (tree_rows && (argmax_only || !tree_child_s)))
        return (int)cudaErrorInvalidValue;
    Args a;
    fill_scan_args(a, descs, logit_bias, allowed, recs, rows, V_local, vocab_offset, global_vocab,
                   D, tail);
    a.n_rb = (int)n_rb;
    a.slots = (int)slots;
    a.units = (int)units;
    a.tree_rows = tree_rows;
    a.tree_child_s = tree_rows ? tree_child_s : nullptr;

    Maps m;
    cudaError_t e = make_map(&m.w, W, is_bf16, D, V_local, UNIT);
    if (e == cudaSuccess)
        e = make_map(&m.h, H, is_bf16, D, rows, br);
    if (e == cudaSuccess)
        e = make_map(&m.s, H, is_bf16, D, rows, 64);
    if (e != cudaSuccess)
        return (int)e;
    const bool wide = br == Shape<3>::BR;
    /* programmatic launch: overlaps the prep kernel (see fs_pdl_wait above) */
    fs_pdl_config pc(dim3((unsigned)grid), dim3(wide ? Shape<3>::THREADS : Shape<2>::THREADS),
                     wide ? Shape<3>::SMEM : Shape<2>::SMEM, stream, true);
    const int cl = cluster_size(n_rb, multicast);
    const bool bf = is_bf16 != 0;
    const Epi epi = argmax_only ? EPI_ARGMAX : tree_rows ? EPI_TREE : EPI_LSE;
    e = wide ? launch_shape<3>(bf, cl, epi, pc, m, a, device)
             : launch_shape<2>(bf, cl, epi, pc, m, a, device);
    return (int)(e != cudaSuccess ? e : cudaGetLastError());
}
