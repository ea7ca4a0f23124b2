/* Hopper (sm_90a) fused LM-head scan for large row batches: rows as the
 * wgmma M dimension, ping-pong consumers.
 *
 *   logits = H . W^T, rows = wgmma M (two m64 blocks per tile), vocabulary =
 *   wgmma N (128 per tile), K = D.
 *
 * Why a second kernel: the vocabulary-as-M kernel (scan_hopper.cu) keeps a
 * tile's logits in an fp32 shared-memory buffer for its epilogue, which caps
 * its rows at 160 and its pipeline depth.  With rows as M a thread's
 * accumulators hold 4 rows x 32 tokens, the four lanes of a quad hold all 128
 * tokens of those rows, and the epilogue works from registers
 * (rows_epilogue.cuh).
 *
 *   CTA        3 warpgroups, one CTA per SM: a producer (one thread issues
 *              the TMA; setmaxnreg gives its registers away) and two
 *              consumers with 232 registers each.
 *   ping-pong  consumer c takes the CTA's tiles c, c + 2, ...: each owns a
 *              whole 128-row x 128-token tile (128 accumulators), so one's
 *              epilogue runs while the other's wgmmas keep the tensor cores
 *              busy.  (Session 5: the previous design, both warpgroups on one
 *              128 x 256 tile, idled the tensor cores through a serial
 *              epilogue -- 16-60 us per tile at 128-256 rows.)  A consumer
 *              starts a mainloop only after the other has finished its
 *              previous one (named barriers): the mbarriers tell phases
 *              apart by parity only, and the tensor cores serve one
 *              mainloop at a time anyway.
 *   work       CTA = (row block of 128 rows, slot).  The vocabulary is cut into
 *              128-token units (one tile each); slot s owns a contiguous range
 *              of them (the slots' ranges differ by at most one unit).  The
 *              row blocks of one slot run side by side and share W through
 *              L2.
 *   pipeline   6 stages of { W 128 x 64, H 128 x 64 }, 128-byte swizzle,
 *              full/empty mbarriers; a stage is released once its consumer's
 *              wgmmas have read it.
 *   records    one per (row, slot): the two consumers' records of the row,
 *              merged.
 *   tail       the last CTA merges and finalizes the op (op_tail.cuh). */
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

namespace fshr {

using namespace fshp;

constexpr int BR = 128;            /* rows per CTA and tile: two m64 blocks */
constexpr int BV = 128;            /* tokens per tile (wgmma N) = one unit of work */
constexpr int UNIT = BV;
constexpr int WG = 128;            /* threads per warpgroup */
constexpr int THREADS = 3 * WG;    /* producer, consumer 0, consumer 1 */
constexpr int W_BYTES = BV * BK * 2;
constexpr int H_BYTES = BR * BK * 2;
constexpr int STAGE_BYTES = W_BYTES + H_BYTES;
constexpr int STAGES = 6;
constexpr int BAR_BYTES = 2 * STAGES * 8 + 16;
constexpr int DESC_BYTES = BR * (int)sizeof(fs_row_desc);
constexpr int XREC_BYTES = BR * (int)sizeof(fs_record);
constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + BAR_BYTES + DESC_BYTES + XREC_BYTES;
static_assert(SMEM <= SMEM_MAX, "smem");

struct Args {
    const fs_row_desc *descs;
    const float *bias;
    const uint32_t *allowed;
    fs_record *recs; /* record (row, slot) at row * slots + slot */
    int64_t rows, V, vocab_offset, global_vocab, words;
    int n_rb, slots, units, kblocks, tail_on;
    fs_tail_args tail;
};

/* Units [u0, u1) of slot `slot`. */
__host__ __device__ __forceinline__ void slot_range(int slot, int slots, int units, int *u0,
                                                    int *u1)
{
    *u0 = (int)((int64_t)slot * units / slots);
    *u1 = (int)((int64_t)(slot + 1) * units / slots);
}

#if FSH_SM90A

constexpr int NCT = 2 * WG; /* consumer threads */
/* registers per thread after setmaxnreg: 128 x 40 + 256 x 232 <= 64K */
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;
/* named barriers (0 is __syncthreads) */
constexpr int BAR_CONSUMERS = 1;
constexpr int BAR_TAIL = 2;
constexpr int BAR_ORDER = 3; /* + c: "consumer c may start its next mainloop" */

/* Step j of this CTA's sequence (tile j / KB, k-block j % KB) into stage
 * j % STAGES. */
__device__ __forceinline__ void issue_step(int j, const CUtensorMap *tmw, const CUtensorMap *tmh,
                                           uint32_t sW, uint32_t sH, uint32_t full, int rb, int u0,
                                           const Args &a, uint64_t pol_w, uint64_t pol_h)
{
    const int t = j / a.kblocks, kb = j - t * a.kblocks;
    const int st = j % STAGES;
    mbar_expect_tx(full, (uint32_t)STAGE_BYTES);
    tma_load_2d(sW + st * W_BYTES, tmw, kb * BK, (u0 + t) * UNIT, full, pol_w);
    tma_load_2d(sH + st * H_BYTES, tmh, kb * BK, rb * BR, full, pol_h);
}

/* A consumer's mainloop for tile t (steps t KB .. t KB + KB - 1): rows 0-63
 * and 64-127 against the same 128 tokens; TWO = false skips the second m64
 * block (a row block of at most 64 rows).  A template, not a branch between
 * the wgmmas: ptxas would fence the accumulators around one. */
template <bool BF16, bool TWO>
__device__ __forceinline__ void mainloop(float (&acc0)[BV / 2], float (&acc1)[BV / 2], int t,
                                         int KB, uint32_t sW, uint32_t sH, uint32_t sBar, int lane)
{
    int j = t * KB;
    for (int kb = 0; kb < KB; ++kb, ++j) {
        const int s = j % STAGES;
        mbar_wait(sBar + 8u * (uint32_t)s, (uint32_t)(j / STAGES) & 1u);
        __syncwarp();
        wg_fence();
        const uint32_t h = sH + s * H_BYTES, w = sW + s * W_BYTES;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            const int sc = (kb == 0 && kk == 0) ? 0 : 1;
            Wgmma<BV, BF16>::mma(acc0, make_desc(h + kk * 32), make_desc(w + kk * 32), sc);
            if (TWO)
                Wgmma<BV, BF16>::mma(acc1, make_desc(h + 64 * BK * 2 + kk * 32),
                                     make_desc(w + kk * 32), sc);
        }
        wg_commit();
        wg_wait<1>();
        fence_acc(acc0);
        if (TWO)
            fence_acc(acc1);
        /* step j - 1's wgmmas are done: its stage can be refilled */
        if (kb > 0 && lane == 0)
            mbar_arrive(sBar + 8u * (uint32_t)(STAGES + (j - 1) % STAGES));
    }
    wg_wait<0>();
    fence_acc(acc0);
    if (TWO)
        fence_acc(acc1);
    if (lane == 0)
        mbar_arrive(sBar + 8u * (uint32_t)(STAGES + (j - 1) % STAGES));
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
    const uint32_t sBar = sbase + STAGES * STAGE_BYTES;
    unsigned char *after_bars = smem + STAGES * STAGE_BYTES + BAR_BYTES;
    unsigned int *tail_flag =
        reinterpret_cast<unsigned int *>(smem + STAGES * STAGE_BYTES + 2 * STAGES * 8);
    fs_row_desc *s_desc = reinterpret_cast<fs_row_desc *>(after_bars);
    fs_record *s_xrec = reinterpret_cast<fs_record *>(after_bars + DESC_BYTES);
#define FSHR_FULL(s) (sBar + 8u * (uint32_t)(s))
#define FSHR_EMPTY(s) (sBar + 8u * (uint32_t)(STAGES + (s)))

    const int KB = a.kblocks;
    const int rb = blockIdx.x % a.n_rb, slot = blockIdx.x / a.n_rb;
    int u0, u1;
    slot_range(slot, a.slots, a.units, &u0, &u1);
    const int n_tiles = u1 - u0;
    const int steps = n_tiles * KB;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(FSHR_FULL(s), 1);
            mbar_init(FSHR_EMPTY(s), 4); /* the consumer's 4 warps */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmw)) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmh)) : "memory");
    }
    __syncthreads();

    if (threadIdx.x < WG) {
        /* producer: W and H do not depend on the prep kernel, so it streams
           without waiting for it */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            /* a W unit is read by the n_rb CTAs of its slot, about together;
               even with one row block evict_normal beats evict_first (see
               scan_hopper.cu) */
            const uint64_t pol_w = policy_evict_normal();
            const uint64_t pol_h = policy_evict_last();
            for (int j = 0; j < steps; ++j) {
                const int s = j % STAGES;
                if (j >= STAGES)
                    mbar_wait(FSHR_EMPTY(s), (uint32_t)(j / STAGES - 1) & 1u);
                issue_step(j, &tmw, &tmh, sW, sH, FSHR_FULL(s), rb, u0, a, pol_w, pol_h);
            }
        }
        fs_pdl_launch_dependents();
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
    /* the row descriptors come from the prep kernel, which may still be
       running (programmatic launch) */
    fs_pdl_wait();
    fs_pdl_launch_dependents();

    const int ct = threadIdx.x - WG, lane = ct & 31;
    const int c = ct >> 7, wi = (ct >> 5) & 3;
    const int ga = lane >> 2, gc = lane & 3;
    if (ct < BR) {
        const int row = rb * BR + ct;
        if (row < a.rows) {
            s_desc[ct] = a.descs[row];
        } else {
            s_desc[ct].flags = 0;
            s_desc[ct].inv_temp = 1.0f;
            s_desc[ct].excluded = -1;
            s_desc[ct].selected = -1;
        }
    }
    fs_named_bar(BAR_CONSUMERS, NCT);
    /* local rows of this thread: lr, lr + 8 (first m64 block), lr + 64,
       lr + 72 (second) */
    const int lr = 16 * wi + ga;
    const bool two = a.rows - (int64_t)rb * BR > 64;
    RowState r00, r01, r10, r11;
    row_init(r00, rb * BR + lr, s_desc + lr, a.rows);
    row_init(r01, rb * BR + lr + 8, s_desc + lr + 8, a.rows);
    row_init(r10, rb * BR + lr + 64, s_desc + lr + 64, a.rows);
    row_init(r11, rb * BR + lr + 72, s_desc + lr + 72, a.rows);

    float acc0[BV / 2], acc1[BV / 2];
#pragma unroll
    for (int i = 0; i < BV / 2; ++i) {
        acc0[i] = 0.0f;
        acc1[i] = 0.0f;
    }
    for (int t = c; t < n_tiles; t += 2) {
        /* wait for the other consumer's mainloop of tile t - 1: a full barrier
           tells phases apart only by parity, so a consumer may wait on a
           stage only when its previous fill has been waited for */
        if (t > 0)
            fs_named_bar(BAR_ORDER + c, NCT);
        if (two)
            mainloop<BF16, true>(acc0, acc1, t, KB, sW, sH, sBar, lane);
        else
            mainloop<BF16, false>(acc0, acc1, t, KB, sW, sH, sBar, lane);
        if (t + 1 < n_tiles)
            asm volatile("bar.arrive %0, %1;\n" ::"r"(BAR_ORDER + (c ^ 1)), "r"(NCT) : "memory");
        const int64_t v0 = (int64_t)(u0 + t) * UNIT;
        const int nc = (int)(a.V - v0 < BV ? a.V - v0 : BV);
#if FSHR_PROBE_NO_EPI /* timing probe: the mainloop alone (wrong results) */
        r00.rec.best_key = fmaxf(r00.rec.best_key, fmaxf(acc0[0], acc1[63]) + (float)nc);
#else
        row_tile<0>(r00, acc0, v0, nc, gc, a);
        row_tile<1>(r01, acc0, v0, nc, gc, a);
        if (two) {
            row_tile<0>(r10, acc1, v0, nc, gc, a);
            row_tile<1>(r11, acc1, v0, nc, gc, a);
        }
#endif
    }
    /* one record per (row, slot): consumer 1 hands its rows to consumer 0 */
    const fs_record q00 = quad_record(r00), q01 = quad_record(r01);
    const fs_record q10 = quad_record(r10), q11 = quad_record(r11);
    if (c == 1 && gc == 0) {
        s_xrec[lr] = q00;
        s_xrec[lr + 8] = q01;
        s_xrec[lr + 64] = q10;
        s_xrec[lr + 72] = q11;
    }
    fs_named_bar(BAR_CONSUMERS, NCT);
    if (c == 0 && gc == 0) {
        auto put = [&](const fs_record &q, int local) {
            const int64_t row = (int64_t)rb * BR + local;
            if (row < a.rows) {
                fs_record rec = q;
                fs_record_merge(&rec, &s_xrec[local]);
                a.recs[row * a.slots + slot] = rec;
            }
        };
        put(q00, lr);
        put(q01, lr + 8);
        put(q10, lr + 64);
        put(q11, lr + 72);
    }
    if (a.tail_on)
        fs_op_tail(a.tail, a.recs, a.slots, a.rows, a.descs, ct, NCT, BAR_TAIL, tail_flag,
                   reinterpret_cast<fs_record *>(smem), /* the stages: all consumed */
                   (STAGES * STAGE_BYTES) / (int)sizeof(fs_record));
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
    const int64_t units = (V_local + fshr::UNIT - 1) / fshr::UNIT;
    int64_t slots = sm_count / fshr::row_blocks(rows);
    if (slots < 1)
        slots = 1;
    return slots < units ? slots : units;
}

extern "C" int fs_hopper_rows_launch(const void *W, const void *H, int is_bf16, int64_t V_local,
                                     int64_t D, int64_t rows, int64_t vocab_offset,
                                     int64_t global_vocab, const fs_row_desc *descs,
                                     const float *logit_bias, const uint32_t *allowed,
                                     fs_record *recs, int64_t slots, const fs_tail_args *tail,
                                     int device, cudaStream_t stream)
{
    using namespace fshr;
    const int64_t n_rb = row_blocks(rows);
    const int64_t units = (V_local + UNIT - 1) / UNIT;
    const int64_t grid = slots * n_rb;
    if (slots < 1 || slots > units || grid > INT32_MAX || rows > INT32_MAX || units > INT32_MAX)
        return (int)cudaErrorInvalidValue;
    Args a;
    fill_scan_args(a, descs, logit_bias, allowed, recs, rows, V_local, vocab_offset, global_vocab,
                   D, tail);
    a.n_rb = (int)n_rb;
    a.slots = (int)slots;
    a.units = (int)units;

    CUtensorMap tw, th;
    cudaError_t e = make_map(&tw, W, is_bf16, D, V_local, UNIT);
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
