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
 *   work       job = (row block of 128 or 192 rows, slot), one a CTA or, where
 *              the row blocks do not divide the SMs, several (rows_plan).
 *              The vocabulary is cut into 128-token units (32-token ones
 *              in the one-job kernels of clustered row blocks: FINE_GRAN),
 *              and slot s owns a contiguous range of them (the slots'
 *              ranges differ by at most one unit; by at most one tile with
 *              several jobs), taken as
 *              256-token tiles plus a last half tile (its MMAs at N = 128)
 *              when the count is odd: the W bytes (and MMAs) per CTA are
 *              balanced to one unit, where 256-token tiles alone leave the
 *              last wave half empty at 128 rows.  The row
 *              blocks of one slot run side by side and share W through L2;
 *              with an even count, pairs of them form clusters and each CTA
 *              of a pair loads one 128-token W box of a step for both (TMA
 *              multicast: W read from L2 once per pair), releasing a stage
 *              to both producers; an odd count of 3+ pairs all but its last
 *              block (cta_job), and a single 192-row block runs as pairs of
 *              neighbouring slots whose rank 0 loads H for both.
 *   pipeline   4 stages of { W 256 x 64 (two 128-row TMA boxes; one for a half
 *              tile), H 128 x 64 } (192-row shape: 5 of { W 128 x 64, H 192 x
 *              64 }), 128-byte swizzle, full/empty mbarriers.  A short last
 *              row block is loaded as its exact rows (one job a CTA) or
 *              as 64-row slices (several; one_box).
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
 *   lists      filtered sample and verify (FILT kernels, 128-row blocks):
 *              each lane's candidate lists of its rows, 8 per (row, slot),
 *              in shared memory where a fourth stage would be (3 stages).
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
#include "rows_plan.h"
#include "scan_hopper.cuh"
#include "wgmma.cuh"

#include <type_traits>
#include <vector>

#ifndef FSHR_STAGES3 /* stages of the 192-row shape (A/B builds) */
#define FSHR_STAGES3 5
#endif
#ifndef FSHR_PROBE_NO_EPI
#define FSHR_PROBE_NO_EPI 0
#endif

namespace fshr {

using namespace fshp;

constexpr int WG = 128; /* threads per warpgroup; UNIT: rows_epilogue.cuh */

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
template <int NWG, bool FILT = false> struct Shape {
    static_assert(NWG == 2 || NWG == 3, "2 or 3 consumer warpgroups");
    static_assert(!FILT || NWG == 2, "candidate lists: the 128-row shape");
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
    /* FILT (filtered sample and verify): 3 stages, the fourth's 48 KB holding
       the consumers' candidate lists (LIST_BYTES) */
    static constexpr int STAGES = FILT ? 3 : NWG == 2 ? 4 : FSHR_STAGES3;
    /* full / empty per stage, the tail flag, noise full / empty */
    static constexpr int BAR_BYTES = 2 * STAGES * 8 + 16 + 16;
    static constexpr int DESC_BYTES = BR * (int)sizeof(RowSlot);
    static constexpr int NBT = BV / FS_NOISE_BLOCK;       /* noise blocks a row in a tile */
    static constexpr int NOISE_BYTES = BR * NBT * 2 * 4; /* {Gumbel, uniform} per block */
    /* two lists per consumer thread and row (rows_epilogue.cuh, cand_tile) */
    static constexpr int LIST_BYTES = FILT ? NCT * 4 * (int)sizeof(fs_cand_list) : 0;
    static constexpr int SMEM =
        1024 + STAGES * STAGE_BYTES + BAR_BYTES + DESC_BYTES + NOISE_BYTES + LIST_BYTES;
    static_assert(SMEM <= SMEM_MAX, "smem");
    /* Registers per thread after setmaxnreg.  The CTA's pool is what the
     * launch gave it, LAUNCH_REGS x THREADS (__launch_bounds__), so a
     * consumer's setmaxnreg.inc past it waits forever (a larger split hung
     * the kernel).  LAUNCH_REGS: ptxas's count for the kernel (-Xptxas -v): 168 with
     * 384 threads, the 128 cap with 512.  Sampling: the producer's spare
     * warps draw the noise in 40 (two Philox calls kept apart: noise_fill),
     * the consumers fit with the row state slimmed (flags read from the
     * descriptor, row offsets not hoisted out of the tile loop).  Draft
     * argmax: no noise, but its producer thread keeps a tile's W boxes and
     * the stage counters across the tile's steps (the one-job loop, below)
     * in 40 too: in 24 it spilled 96-116 bytes, and the argmax consumers
     * fit in 232 / 152 as the sampling ones do.  ptxas models the split:
     * -Xptxas -warn-spills shows a region that does not fit. */
    static constexpr int LAUNCH_REGS = NWG == 2 ? 168 : 128;
};
/* Fine ranges.  One job a CTA balances the slots' W bytes to one unit,
 * and where the units do not divide the slots the longest slot has a whole
 * unit more than the shortest: 128256 x 8192 has 1002 units, 15.18 a slot
 * over 66 slots (two 128-row blocks in clusters), and its longest slot holds
 * 16 -- 5.4% more MMAs than the average (262144 x 3072: 3.1%).  So the
 * one-job sampling and argmax kernels of clusters of row blocks (FINE: not
 * the list kernels, whose lists take whole tiles, nor tree verify's, whose
 * tile masks count units, nor several jobs a CTA, balanced in tiles) cut the
 * vocabulary into FINE_GRAN-token units instead: the longest slot 15.25
 * units there (1.004x the average; 262144 x 3072 1.007x).  A slot's range
 * then ends in a tile narrower than the others (a multiple of FINE_GRAN
 * tokens), whose MMAs run at its width and whose W comes in FINE_GRAN-token
 * boxes (the narrow tensor map); its epilogue is the half tile's or the
 * whole tile's on accumulators of its own, with the columns past its width
 * -INFINITY from the start.  On an H200 draft argmax of 256 rows went from
 * 0.891-0.917 to 0.854-0.866 ms on 128256 x 8192, sample 0.99-1.02 to
 * 0.92-0.96 (bench/results/2026-11-30-h200-fine-ranges/).  A single row
 * block (97-128 rows, the 192-row block's lone pairs: 132 slots, 7.59
 * units a slot on 128256 x 8192, 7.75 in fine units) gained nothing there
 * measurable: 97-128 rows run at the W stream's pace, where a CTA that
 * ends early leaves its bandwidth to the others, and the 192-row pairs came
 * out even with and without (same folder), so their kernels keep whole
 * units and carry no narrow-tile code. */
constexpr int FINE_GRAN = 32;
/* The FINE kernels, as above: one job a CTA (not MULTI) in 2-CTA clusters
 * of row blocks (CL 2) that share no H (not SH), sampling or draft argmax
 * (not FILT, not TREE).  The kernel's template and the host's Args::gran
 * both ask this. */
__host__ __device__ constexpr bool fine_kernel(int cl, bool sh, bool multi, bool filt, bool tree)
{
    return cl == 2 && !sh && !multi && !filt && !tree;
}

template <int NWG, bool LSE, bool MULTI> struct Regs {
    using S = Shape<NWG>;
    static constexpr int producer = 40;
    static constexpr int consumer = NWG == 2 ? 232 : 152;
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
    /* tokens a unit: UNIT, or FINE_GRAN in the FINE kernels */
    int gran;
    int tile_slots; /* slot_range's split: 0 balanced in units, 1 in tiles (jobs) */
    int exact_h_bytes; /* H bytes a step of the last row block's exact box (tms) */
    int odd_pairs;     /* an odd n_rb in 2-CTA clusters (cta_job): the last row block unshared */
    int w_hint;        /* W's L2 hint (enum fs_w_hint, resolved: fs_hopper_rows_launch) */
    fs_tail_args tail;
    /* the filters' candidate lists (the FILT kernels): list (row, slot, q) at
       (row * slots + slot) * FS_HOPPER_TILE_LISTS + q, q = 2 gc + p for lane
       gc's list p of the row (rows_epilogue.cuh, cand_tile) */
    fs_cand_list *cands;
    /* tree verify only (the TREE kernels; tree_scan.cuh): the rows' children
       and the children's scores [rows][FS_TREE_MAX_CHILDREN] */
    const fs_tree_row *tree_rows;
    float *tree_child_s;
};

/* Units [u0, u1) of slot `slot`.  by_tile = 0: the slots' unit counts differ
 * by at most one (a CTA's W bytes balanced, for one job a CTA); by_tile = 1:
 * their counts of upt-unit tiles differ by at most one, the larger slots
 * first (several jobs a CTA: in the compute-bound regime a CTA's time is
 * its tiles' MMAs, and a CTA's first, larger job pairs with a later,
 * smaller one). */
__host__ __device__ __forceinline__ void slot_range(int slot, int slots, int units, int by_tile,
                                                    int upt, int *u0, int *u1)
{
    if (!by_tile) {
        *u0 = (int)((int64_t)slot * units / slots);
        *u1 = (int)((int64_t)(slot + 1) * units / slots);
        return;
    }
    const int tiles = (units + upt - 1) / upt, q = tiles / slots, r = tiles % slots;
    const int t0 = slot * q + (slot < r ? slot : r), t1 = t0 + q + (slot < r ? 1 : 0);
    *u0 = t0 * upt < units ? t0 * upt : units;
    *u1 = t1 * upt < units ? t1 * upt : units;
}

/* Jobs: (row block, slot) pairs, job = slot * n_rb + rb, so that the row
 * blocks of a slot are consecutive jobs and run side by side; CTA c runs
 * jobs c, c + grid, c + 2 grid, ...  With grid = n_rb * slots (the usual
 * case) that is one job a CTA. */
struct Job {
    int rb, slot, u0, u1, n_tiles;
};
__host__ __device__ __forceinline__ Job job_of(int job, int n_rb, int slots, int units,
                                               int by_tile, int upt)
{
    Job j;
    j.rb = job % n_rb;
    j.slot = job / n_rb;
    slot_range(j.slot, slots, units, by_tile, upt, &j.u0, &j.u1);
    j.n_tiles = (j.u1 - j.u0 + upt - 1) / upt;
    return j;
}

/* The job of CTA c when the launch runs one job a CTA.  odd = false: job c.
 * odd = true, an odd count of row blocks in 2-CTA clusters (a launch has
 * one cluster shape): CTAs [0, P), P = slots (n_rb - 1), run the pairs of
 * row blocks 0 .. n_rb - 2 of slot c / (n_rb - 1), which share W as the
 * pairs of an even count do; CTA P + s runs the last row block of slot s,
 * in a cluster with slot s +- 1's (slots is even), a "lone pair": each
 * loads its own W; a single row block of the 192-row shape (P = 0) shares
 * H (the kernel), a last block of 3+ shares nothing. */
__host__ __device__ __forceinline__ Job cta_job(int c, int n_rb, int slots, int units, int upt,
                                                bool odd)
{
    if (!odd)
        return job_of(c, n_rb, slots, units, 0, upt);
    const int pr = n_rb - 1, P = slots * pr;
    Job j;
    j.rb = c < P ? c % pr : pr;
    j.slot = c < P ? c / pr : c - P;
    slot_range(j.slot, slots, units, 0, upt, &j.u0, &j.u1);
    j.n_tiles = (j.u1 - j.u0 + upt - 1) / upt;
    return j;
}

/* H of a row block reaching past the last row: a box past the end of H is
 * slow (the TMA's zero fill; measured with the 192-row shape on 151936 x
 * 4096: 160 and 176 rows as fast as 192, 152 rows 1.5% slower, 144 8%, 136
 * 14%).  The one-job kernels load a short last row block as one box of
 * exactly its rows in range (tms sized to them; the rows past the end keep
 * whatever the stage held and are never recorded), however few rows it
 * lacks: even 32 rows of zero fill a stage cost the 160-row kernel 1.5% of
 * its time on 128256 x 8192 (ncu, clocks free: 748-756 against 737-742 us;
 * 0.2-1.1% of its cycles at base clocks).  The
 * several-jobs kernels, whose jobs change row blocks and so cannot size a
 * tensor map to one, keep one box when at most 32 rows lie past the last
 * row (one_box), else load one 64-row box per consumer warpgroup
 * ("slice"), the last slices moved back to end at the last row (their
 * first rows then repeat the previous slice's, and only that slice's
 * warpgroup records them), a slice wholly past the last row not loaded at
 * all: 136 rows 13% faster, but 160 rows 2% slower than one box, and a full
 * 192-row block 2-5% (three boxes a stage instead of one).  First row of
 * slice w of row block rb as loaded: */
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
 * that row is out of range or another slice's.  sliced = false: the block's
 * rows as they are (one box, or one exact box for a short last block). */
__host__ __device__ __forceinline__ int64_t slot_row(int rb, int lr, int br, int64_t rows,
                                                     bool sliced = true)
{
    if (!sliced) {
        const int row = rb * br + lr;
        return row < (int)rows ? row : -1;
    }
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
constexpr int WN_BYTES = FINE_GRAN * BK * 2; /* one narrow W box (FINE_GRAN) */
constexpr int HS_BYTES = 64 * BK * 2;   /* one H slice (TMA box) */
constexpr int NOISE_THREADS = WG - 32; /* producer warps 1-3 */
/* named barriers (0 is __syncthreads) */
constexpr int BAR_CONSUMERS = 1;
constexpr int BAR_TAIL = 2;

/* The W boxes of tile t of a job (units [u0, u1) of gran tokens: UNIT, or
 * FINE_GRAN in the FINE kernels; tiles of S::BV tokens from the job's first,
 * so tile t starts at token u0 gran + S::BV t wherever it is worked out):
 * the first token, the boxes' count, and whether they are narrow
 * (FINE_GRAN tokens, the narrow map: a FINE job's last tile when its width
 * is not a multiple of UNIT) or UNIT tokens wide -- worked out once a tile,
 * not at each of its KB steps: the producer thread issues a stage's loads
 * on its own, and at 192 rows a stage's MMAs take ~800 cycles. */
struct WTile {
    int row0, nb;
    bool narrow;
};
template <int NWG, bool FINE>
__device__ __forceinline__ WTile w_tile(int t, int u0, int u1, const Args &a)
{
    using S = Shape<NWG>;
    /* read here, not held by the producer across its loop (a register more:
       the 192-row sampling kernels spilled) */
    const int gran = FINE ? a.gran : UNIT;
    WTile w;
    w.row0 = u0 * gran + S::BV * t;
    if (FINE) {
        const int wt = min(S::BV, u1 * gran - w.row0);
        w.narrow = wt % UNIT != 0;
        w.nb = w.narrow ? wt / FINE_GRAN : wt / UNIT;
    } else {
        const int u = u0 + S::UPT * t;
        w.nb = u1 - u >= S::UPT ? S::UPT : 1;
        w.narrow = false;
    }
    return w;
}

/* Producer side of the pipeline, run by thread 0: k-block kb of tile w
 * into stage st.  In a cluster of CL > 1 row blocks that share W (CTA rank
 * = row block % CL) rank r loads W boxes r, r + CL, .. for every CTA of
 * the cluster; a CTA that shares nothing (cta_job) loads its own. */
template <int NWG, int CL, bool MULTI, bool FINE>
__device__ __forceinline__ void issue_step(int kb, int st, const WTile &w, const CUtensorMap *tmw,
                                           const CUtensorMap *tmn, const CUtensorMap *tmh,
                                           const CUtensorMap *tms, uint32_t sW, uint32_t sH,
                                           uint32_t full, int rb, int live, bool shared,
                                           int hmode, const Args &a)
{
    /* a W unit is read by the n_rb CTAs of its slot, about together; even
       with one row block evict_normal beats evict_first with the 256-byte
       promotion on an H100 (see scan_hopper.cu); without promotion (one row
       block) no hint: a.w_hint.  Only the kernel that takes the plain
       stream (one 128-row block: unclustered, one job) compiles the
       unhinted load, so the others' code is as it was.  The policies are
       made per step (one instruction each): the producer runs on 24
       registers */
    constexpr bool can_plain = NWG == 2 && CL == 1 && !MULTI;
    const int w_hint = can_plain || a.w_hint == FS_W_HINT_EVICT_FIRST ? a.w_hint
                                                                      : FS_W_HINT_EVICT_NORMAL;
    const uint64_t pol_w = policy_of_w_hint(w_hint);
    const uint64_t pol_h = policy_evict_last();
    using S = Shape<NWG>;
    /* live < 0: one box for the block (a full block, or one_box); 0: one
       box of the block's rows in range (tms sized to them: the one-job
       kernels); > 0: that many 64-row slices (tms of 64 rows: several jobs
       a CTA) */
    const int h_bytes = live < 0 ? S::H_BYTES
                        : live == 0 ? a.exact_h_bytes
                                    : live * HS_BYTES;
    /* a narrow last tile takes its own tokens in FINE_GRAN-token boxes (a
       UNIT-token box would read the next slot's tokens again from DRAM,
       long after that slot took them) */
    const bool nar = FINE && w.narrow;
    const CUtensorMap *map = nar ? tmn : tmw;
    const int box_rows = nar ? FINE_GRAN : UNIT, box_bytes = nar ? WN_BYTES : WU_BYTES;
    mbar_expect_tx(full, (uint32_t)(w.nb * box_bytes + h_bytes));
    if (CL == 1 || !shared) {
        for (int b = 0; b < w.nb; ++b)
            tma_load_w(sW + st * S::W_BYTES + b * box_bytes, map, kb * BK, w.row0 + b * box_rows,
                       full, w_hint, pol_w);
    } else if (nar) {
        for (int b = rb % CL; b < w.nb; b += CL)
            tma_load_2d_multicast(sW + st * S::W_BYTES + b * WN_BYTES, tmn, kb * BK,
                                  w.row0 + b * FINE_GRAN, full, (uint16_t)((1u << CL) - 1u), pol_w);
    } else if (const int rank = rb % CL; rank < w.nb) { /* w.nb <= S::UPT <= CL */
        tma_load_2d_multicast(sW + st * S::W_BYTES + rank * WU_BYTES, tmw, kb * BK,
                              w.row0 + rank * UNIT, full, (uint16_t)((1u << CL) - 1u), pol_w);
    }
    /* hmode (a lone pair, cta_job): 1 this CTA loads the step's H for both,
       2 its peer does, 0 it loads its own */
    if (hmode == 1)
        tma_load_2d_multicast(sH + st * S::H_BYTES, live < 0 ? tmh : tms, kb * BK, rb * S::BR,
                              full, (uint16_t)3u, pol_h);
    else if (live <= 0 && hmode == 0)
        tma_load_2d(sH + st * S::H_BYTES, live < 0 ? tmh : tms, kb * BK, rb * S::BR, full, pol_h);
    for (int w2 = 0; w2 < live; ++w2)
        tma_load_2d(sH + st * S::H_BYTES + w2 * HS_BYTES, tms, kb * BK,
                    (int)slice_base(rb, w2, S::BR, a.rows), full, pol_h);
}

/* MULTI: the CTA may run several jobs (Plan::by_tile).  Without it the job
 * loops run once and compile to the one-job kernel: one-job launches of the
 * loops compiled for several jobs took 1-3% more cycles (ncu, 512-2112
 * rows, both shapes). */
template <int NWG, bool BF16, int CL, bool LSE, bool TREE, bool MULTI, bool SH, bool FILT>
__global__ void __launch_bounds__(Shape<NWG>::THREADS, 1)
    fshr_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmn,
                     const __grid_constant__ CUtensorMap tmh, const __grid_constant__ CUtensorMap tms,
                     const Args a)
{
    /* FILT: filtered sample and verify (launch_epi) */
    static_assert(!FILT || (NWG == 2 && LSE && !TREE && !SH), "FILT kernels");
    using S = Shape<NWG, FILT>;
    /* units of FINE_GRAN tokens (a.gran) and a narrow last tile: FINE_GRAN */
    constexpr bool FINE = fine_kernel(CL, SH, MULTI, FILT, TREE);
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
    RowSlot *s_desc = reinterpret_cast<RowSlot *>(smem + STAGES * STAGE_BYTES + BAR_BYTES);
    float4 *s_noise =
        reinterpret_cast<float4 *>(smem + STAGES * STAGE_BYTES + BAR_BYTES + DESC_BYTES);
    /* FILT: consumer thread ct's lists at s_lists + 4 ct (row r0: 0, 1; r1: 2, 3) */
    fs_cand_list *s_lists = reinterpret_cast<fs_cand_list *>(
        smem + STAGES * STAGE_BYTES + BAR_BYTES + DESC_BYTES + S::NOISE_BYTES);
#define FSHR_FULL(s) (sBar + 8u * (uint32_t)(s))
#define FSHR_EMPTY(s) (sBar + 8u * (uint32_t)(STAGES + (s)))
#define FSHR_NOISE_FULL (sBar + 8u * (uint32_t)(2 * STAGES + 2))
#define FSHR_NOISE_EMPTY (sBar + 8u * (uint32_t)(2 * STAGES + 3))

    const int KB = a.kblocks;
    /* this CTA's jobs: blockIdx.x, + gridDim.x, ... below n_jobs; the two
       CTAs of a cluster (consecutive, even grid, even n_rb) run the same
       slots with row blocks 2 c and 2 c + 1, step for step */
    const int n_jobs = a.n_rb * a.slots;
    /* tokens a unit, units a tile */
    const int gran = FINE ? a.gran : UNIT, upt = FINE ? BV / gran : S::UPT;
    auto job = [&](int jb) {
        return job_of(jb, a.n_rb, a.slots, a.units, MULTI ? a.tile_slots : 0, upt);
    };
    /* after job jb: another one for this CTA? */
    auto more = [&](int jb) { return MULTI && jb + (int)gridDim.x < n_jobs; };
    /* H boxes of a job's row block (issue_step's live: < 0 one box; 0 the
       exact box, the one-job kernels' short last block; > 0 slices) */
    auto live_of = [&](int rb) {
        if (!MULTI)
            return (int64_t)(rb + 1) * BR <= a.rows ? -1 : 0;
        return one_box(rb, BR, a.rows) ? -1 : live_slices(rb, NWG, BR, a.rows);
    };
    /* one job a CTA: the job, worked out before the producer drops to its
       few registers (there its 64-bit arithmetic spilled); several: each
       worked out where it starts (kept across the loops, they spilled in
       the consumers) */
    const Job first = MULTI ? job(blockIdx.x)
                            : cta_job(blockIdx.x, a.n_rb, a.slots, a.units, upt,
                                      CL > 1 && a.odd_pairs);
    const int first_live = live_of(first.rb);
    /* the cluster shares W (multicast, stages released by every CTA): all
       but the last row block of an odd count (cta_job; one job a CTA) */
    const bool shared = CL > 1 && !SH && (MULTI || !(a.odd_pairs && first.rb == a.n_rb - 1));
    /* A lone pair (cta_job: the last row blocks of an odd count, every CTA
       of a single row block) scans the same rows in neighbouring slots.
       In the SH kernels, launched only for one row block of the 192-row
       shape (launch_jobs) so that every CTA is in a lone pair, its rank 0
       loads each step's H box for both (multicast) while both run steps,
       later steps load their own (issue_step): otherwise every CTA reads H
       again for each tile, 0.68 of the 5.94 GB the 160-row kernel moves
       through L2 on 128256 x 8192 (ncu), and sharing it made 144-192-row
       calls 0.5-2% faster on an H100.  Kernels of their own: with
       this code in the clustered kernel that 3+ row blocks run, 528 rows
       (3 x 192) ran 3-5% slower even where it shared nothing; sharing in
       the two-warpgroup shape (97-128 rows) gained nothing.
       Rank 0's stages are refilled once its own warps and its peer's are
       past them: rank 1's warps release every step to rank 0 (those past
       rank 0's last step arrive on barriers nobody waits on; the exit's
       cluster_sync keeps rank 0's memory), and past rank 1's last step
       rank 0's producer arrives for the peer. */
    static_assert(!SH || (NWG == 3 && CL == 2 && !MULTI), "lone pairs: 192-row one-job pairs");
    const bool lone0 = SH && !(blockIdx.x & 1u);
    int h_steps = 0; /* the steps whose H rank 0 multicasts: both CTAs run them */
    if (SH) {
        const Job peer = cta_job((int)(blockIdx.x ^ 1u), a.n_rb, a.slots, a.units, upt, true);
        h_steps = (first.n_tiles < peer.n_tiles ? first.n_tiles : peer.n_tiles) * KB;
    }
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(FSHR_FULL(s), 1);
            /* every warp of the cluster; a lone pair's rank 0 counts its
               peer's too (it refills the peer's H) */
            mbar_init(FSHR_EMPTY(s), NCW * (shared || lone0 ? CL : 1));
        }
        mbar_init(FSHR_NOISE_FULL, NOISE_THREADS);
        /* every reader arrives: an arrive releases only its own thread's
           reads (one lane per warp after __syncwarp is a WAR hazard under
           compute-sanitizer racecheck) */
        mbar_init(FSHR_NOISE_EMPTY, NCT);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmw)) : "memory");
        if (FINE)
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmn)) : "memory");
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
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs<NWG, LSE, MULTI>::producer));
        if (threadIdx.x == 0) {
            if constexpr (MULTI) {
                /* several jobs: a step's tile worked out at the step (the
                   loops over jobs, tiles and k-blocks spilled 68-84 bytes of
                   the producer's 40 registers) */
                int j0 = 0; /* steps of the CTA's earlier jobs */
                for (int jb = blockIdx.x;; jb += gridDim.x) {
                    const Job q = job(jb);
                    const int live = live_of(q.rb);
                    const int steps = q.n_tiles * KB;
                    for (int i = 0; i < steps; ++i) {
                        const int j = j0 + i; /* the CTA's step: stage j % STAGES */
                        const int s = j % STAGES, t = i / KB;
                        if (j >= STAGES) /* step j - STAGES released by every warp of the cluster */
                            mbar_wait(FSHR_EMPTY(s), (uint32_t)(j / STAGES - 1) & 1u);
                        issue_step<NWG, CL, MULTI, FINE>(i - t * KB, s, w_tile<NWG, FINE>(t, q.u0, q.u1, a),
                                                         &tmw, &tmn, &tmh, &tms, sW, sH, FSHR_FULL(s),
                                                         q.rb, live, shared, 0, a);
                    }
                    if (!more(jb))
                        break;
                    j0 += steps;
                }
            } else {
                /* one job: its tiles' W boxes worked out once a tile, and
                   the stage and its parity counted, not divided out at each
                   step -- at 192 rows a stage's MMAs take ~800 cycles, and
                   with that arithmetic at each step the producer thread
                   held the consumers up (ncu, draft argmax of 192 rows:
                   tensor pipe 82 -> 90% busy, 362 -> 342-350 us on 151936
                   x 4096, 637 -> 606-614 on 128256 x 8192).  st: the next
                   stage; ph: the parity of the phase of its empty barrier
                   that the step STAGES before completes -- 1 in the first
                   round, which a fresh barrier (phase 0 under way) passes
                   at once. */
                int st = 0, ph = 1, i = 0; /* i: the step */
                for (int t = 0; t < first.n_tiles; ++t) {
                    const WTile w = w_tile<NWG, FINE>(t, first.u0, first.u1, a);
                    for (int kb = 0; kb < KB; ++kb, ++i) {
                        /* the step STAGES before released by every warp of the cluster */
                        mbar_wait(FSHR_EMPTY(st), (uint32_t)ph);
                        const int hmode = SH && i < h_steps ? (lone0 ? 1 : 2) : 0; /* issue_step */
                        issue_step<NWG, CL, MULTI, FINE>(kb, st, w, &tmw, &tmn, &tmh, &tms, sW, sH,
                                                         FSHR_FULL(st), first.rb, first_live, shared,
                                                         hmode, a);
                        if (SH && lone0 && i >= h_steps) /* for the peer, past its last step */
                            mbar_arrive_count(FSHR_EMPTY(st), NCW);
                        if (++st == STAGES) {
                            st = 0;
                            ph ^= 1;
                        }
                    }
                }
            }
        } else if (LSE && !FSHR_PROBE_NO_EPI && threadIdx.x >= 32) {
            /* the noise of tile t, drawn under its MMA once the consumers
               are done with tile t - 1's: Philox and the logs leave the
               epilogue, which the tensor cores wait for */
            fs_pdl_wait(); /* the row descriptors */
            int t0 = 0; /* tiles of the CTA's earlier jobs */
            for (int jb = blockIdx.x;; jb += gridDim.x) {
                const Job q = MULTI ? job(jb) : first;
                for (int t = 0; t < q.n_tiles; ++t) {
                    const int tt = MULTI ? t0 + t : t; /* the CTA's tile */
                    if (tt > 0)
                        mbar_wait(FSHR_NOISE_EMPTY, (uint32_t)(tt - 1) & 1u);
                    noise_fill<BR, NBT>(s_noise,
                                        a.vocab_offset + (int64_t)q.u0 * gran + BV * t,
                                        threadIdx.x - 32, NOISE_THREADS, a,
                                        [&](int lr) { return slot_row(q.rb, lr, BR, a.rows, MULTI); });
                    mbar_arrive(FSHR_NOISE_FULL);
                }
                if (!more(jb))
                    break;
                t0 += q.n_tiles;
            }
        }
        __syncwarp();
        fs_pdl_launch_dependents();
        /* no CTA leaves while a peer may still arrive on its barriers */
        if (CL > 1)
            cluster_sync();
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs<NWG, LSE, MULTI>::consumer));
    /* the row descriptors come from the prep kernel, which may still be
       running (programmatic launch) */
    fs_pdl_wait();
    fs_pdl_launch_dependents();

    const int ct = threadIdx.x - WG, lane = ct & 31;
    const int cw = ct >> 7, wi = (ct >> 5) & 3;
    const int ga = lane >> 2, gc = lane & 3;
    const int lr = cw * 64 + 16 * wi + ga; /* local row of r0; r1 is lr + 8 */
    /* step i's stage is free once all consumer warps of every CTA of the
       cluster are past it (a multicast refills it everywhere); the CTA's
       rank is blockIdx.x % CL, = its row block's % CL in every job (the one
       job's row block: 4 bytes fewer spilled than blockIdx.x) */
    auto release = [&](int i) {
        const int ps = i % STAGES;
        if (lane == 0) {
            mbar_arrive(FSHR_EMPTY(ps));
            if (shared) {
#pragma unroll
                for (int r = 1; r < CL; ++r)
                    mbar_arrive_cluster(FSHR_EMPTY(ps),
                                        (uint32_t)(((MULTI ? (int)blockIdx.x : first.rb) + r) % CL));
            } else if (SH && !lone0) { /* rank 1 of a lone pair */
                mbar_arrive_cluster(FSHR_EMPTY(ps), 0u);
            }
        }
        __syncwarp();
    };
    int j = 0, t0 = 0; /* the CTA's next step; tiles of its earlier jobs */
    for (int jb = blockIdx.x;; jb += gridDim.x) {
        const Job q = MULTI ? job(jb) : first;
        if (MULTI && jb != (int)blockIdx.x) /* every consumer is past the last job's descriptors */
            fs_named_bar(BAR_CONSUMERS, NCT);
        if (ct < BR) {
            const int64_t row = slot_row(q.rb, ct, BR, a.rows, MULTI);
            if (row >= 0) {
                s_desc[ct].d = a.descs[row];
#if FSHR_PROBE_NO_EXCL /* timing probe: rows without an excluded / selected token (verify: wrong results) */
                s_desc[ct].d.excluded = -1;
                s_desc[ct].d.selected = -1;
#endif
            } else {
                s_desc[ct].d = fs_row_desc_skip(); /* flags 0: scan() and noisy() false */
            }
            if (TREE)
                s_desc[ct].tile_mask =
                    row >= 0 ? tree_tile_mask(a.tree_rows + row, a.vocab_offset, q.u0, q.u1, a.V,
                                              S::UPT)
                             : 0;
        }
        fs_named_bar(BAR_CONSUMERS, NCT);
        RowState r0, r1;
        bool own0, own1;
        {
            /* a row that is not this job's has flags 0: its row number is
               never used */
            const int64_t q0 = slot_row(q.rb, lr, BR, a.rows, MULTI);
            const int64_t q1 = slot_row(q.rb, lr + 8, BR, a.rows, MULTI);
            row_init(r0, q0 >= 0 ? (int)q0 : 0, &s_desc[lr].d);
            own0 = q0 >= 0;
            own1 = q1 >= 0;
            row_init(r1, q1 >= 0 ? (int)q1 : 0, &s_desc[lr + 8].d);
        }
        fs_cand_list *const lists = s_lists + 4 * ct;
        if (FILT)
#pragma unroll
            for (int k = 0; k < 4; ++k)
                fs_cand_init(&lists[k]);
        /* zeroed after the descriptors' 64-bit row arithmetic: zeroed first,
           the 128 live accumulators made that spill */
        float acc[NA];
#pragma unroll
        for (int i = 0; i < NA; ++i)
            acc[i] = 0.0f;
        /* Tile t of the job, its MMAs N tokens wide and its epilogue NE: its
           k-blocks into the first N / 2 accumulators, then its epilogue on
           NE / 2 of them.  N = NE = BV but for a half tile (below, N = NE =
           BV / 2: the first half of acc) and a FINE job's narrow last tile
           (N < NE: accumulators of its own, the columns past N -INFINITY --
           the tile's whole epilogue on acc, with the columns no wgmma of the
           tile wrote masked, would serialise every wgmma: ptxas C7515). */
        auto tile = [&](auto width, auto ewidth, int t, auto own) {
            constexpr int N = decltype(width)::value, NE = decltype(ewidth)::value;
            constexpr int NM = N / 2, NT = NE / 2;
            constexpr bool OWN = decltype(own)::value;
            static_assert(N <= NE && NE <= BV && (OWN || N == NE), "tile widths");
            float nacc[OWN ? NT : 1];
            if constexpr (OWN) {
#pragma unroll
                for (int i = 0; i < NT; ++i)
                    nacc[i] = i < NM ? 0.0f : -INFINITY;
            }
            float(&an)[NT] = *reinterpret_cast<float(*)[NT]>(OWN ? nacc : acc);
            float(&am)[NM] = *reinterpret_cast<float(*)[NM]>(OWN ? nacc : acc);
            for (int kb = 0; kb < KB; ++kb, ++j) {
                const int s = j % STAGES;
                mbar_wait(FSHR_FULL(s), (uint32_t)(j / STAGES) & 1u);
                __syncwarp();
                /* a slice past the last row is not loaded (live_slices): its
                   warpgroup multiplies whatever its smem holds, into rows
                   that are never read (a branch around the wgmma serialises
                   it: ptxas C7518) */
                wg_fence();
                mma_kblock<N, BF16>(am, sH + s * H_BYTES + cw * HS_BYTES, sW + s * W_BYTES,
                                    kb == 0);
                wg_commit();
                wg_wait<1>();
                fence_acc(am);
                if (kb > 0)
                    release(j - 1);
            }
            wg_wait<0>();
            fence_acc(am);
            release(j - 1); /* before the epilogue: the next tile streams in under it */
            const int64_t v0 = (int64_t)q.u0 * gran + BV * t; /* as w_tile's */
            int64_t nc = (int64_t)q.u1 * gran - v0;
            nc = nc < N ? nc : N;
            nc = nc < a.V - v0 ? nc : a.V - v0;
#if FSHR_PROBE_NO_EPI /* timing probe: the mainloop alone (wrong results) */
            r0.rec.best_key = fmaxf(r0.rec.best_key, fmaxf(an[0], an[NT - 1]) + (float)nc);
#else
            if (LSE)
                mbar_wait(FSHR_NOISE_FULL, (uint32_t)(MULTI ? t0 + t : t) & 1u);
            const bool col = !LSE || greedy_rows<FILT>(r0, r1); /* row_tile */
            row_tile<0, NT, LSE, TREE, FILT>(r0, an, v0, (int)nc, gc, a,
                                             s_noise + lr * (NBT / 2), col, lists);
            row_tile<1, NT, LSE, TREE, FILT>(r1, an, v0, (int)nc, gc, a,
                                             s_noise + (lr + 8) * (NBT / 2), col, lists + 2);
            if (LSE) /* the noise buffer is free for the next tile */
                mbar_arrive(FSHR_NOISE_EMPTY);
#endif
        };
        /* a FINE job's tiles of BV tokens; its narrow last tile after the
           loop, where acc is dead (inside it, acc and the tile's own
           accumulators would be live together) */
        const int n_full = FINE ? (q.u1 - q.u0) * gran / BV : q.n_tiles;
        for (int t = 0; t < n_full; ++t) {
            /* A job's last tile is half a tile (one unit) when its unit
               count is odd.  Its MMAs at N = 128 take half the tensor time
               of N = 256, and from ~400 rows, where the tensor pipe binds,
               a CTA's time is its tiles' MMAs (128256 x 8192 at 512 rows:
               30-31 units a slot, the longest CTA 16 tiles' MMAs at N =
               256, 15.5 this way; under ncu at base clocks 1.5-4% fewer
               cycles at 448-640 rows there, 0-1% on 262144 x 3072, where
               the longest slot's half tile is 1/63 of it).  Its epilogue
               works on those 64 accumulators: with the 256-token epilogue
               the masking of tokens 128-255 (accumulators no wgmma of the
               tile had written) made ptxas serialise every wgmma (C7515),
               and a branch between the two widths inside the k-loop made
               it add warpgroup arrives (C7519).  The filters' list kernels
               keep whole tiles (cand_tile's lists take a 256-token tile),
               and so do tree verify's (a second epilogue there made ptxas
               spill 36-72 bytes where it spilled 16-24; trees of 144-4160
               rows took the 192-row shape in every tree_bench cell on an
               H200, and half tiles in the tree kernels too moved those
               calls' cycles within 1%). */
            using Full = std::integral_constant<int, BV>;
            using Acc = std::false_type; /* the tile's accumulators: acc */
            using Half = std::integral_constant<int, BV / 2>;
            if constexpr (S::UPT == 2 && !FILT && !TREE && !FINE) {
                if (q.u1 - (q.u0 + S::UPT * t) < S::UPT)
                    tile(Half(), Half(), t, Acc());
                else
                    tile(Full(), Full(), t, Acc());
            } else {
                tile(Full(), Full(), t, Acc());
            }
        }
        if constexpr (FINE) {
            /* the narrow last tile: its MMAs at its width, its epilogue the
               half tile's (up to UNIT tokens) or the whole tile's */
            using E = std::integral_constant<int, UNIT>;
            using F = std::integral_constant<int, BV>;
            using Own = std::true_type; /* accumulators of its own: acc is dead */
            constexpr int G = FINE_GRAN;
            static_assert(UNIT == 4 * G && (BV == UNIT || BV == 2 * UNIT), "narrow widths");
            switch ((q.u1 - q.u0) * gran - n_full * BV) {
            case G: tile(std::integral_constant<int, G>(), E(), n_full, Own()); break;
            case 2 * G: tile(std::integral_constant<int, 2 * G>(), E(), n_full, Own()); break;
            case 3 * G: tile(std::integral_constant<int, 3 * G>(), E(), n_full, Own()); break;
            case 4 * G:
                if constexpr (BV == 2 * UNIT)
                    tile(E(), E(), n_full, Own());
                break;
            case 5 * G:
                if constexpr (BV == 2 * UNIT)
                    tile(std::integral_constant<int, 5 * G>(), F(), n_full, Own());
                break;
            case 6 * G:
                if constexpr (BV == 2 * UNIT)
                    tile(std::integral_constant<int, 6 * G>(), F(), n_full, Own());
                break;
            case 7 * G:
                if constexpr (BV == 2 * UNIT)
                    tile(std::integral_constant<int, 7 * G>(), F(), n_full, Own());
                break;
            default: break;
            }
        }
        const fs_record p0 = quad_record(r0), p1 = quad_record(r1);
        if (gc == 0 && own0)
            a.recs[(int64_t)r0.row * a.slots + q.slot] = p0;
        if (gc == 0 && own1)
            a.recs[(int64_t)r1.row * a.slots + q.slot] = p1;
        if (FILT) {
            /* every lane's lists unmerged (the more lists, the longer the
               exact prefix: src/cand_list.h), the warp's 16 rows copied by
               the warp: a row's 8 lists are 40 contiguous 8-byte words in
               global memory and its quad's lanes' two each in shared memory,
               so lane l takes words l, l + 32, ... of the rows in turn and a
               store's 32 words lie in one or two rows' runs, where each lane
               storing its own lists, 80 bytes a row, left gaps between the
               quad's lanes (as the tile kernel's did: copy_lists in
               scan_hopper.cu).  All three filters' sample of 256 / 512
               rows 0.5-3% faster and verify of 1280-2560 rows 1-2.5% on an
               H200 (bench/results/2026-12-01-h200-filter-list-copy/, call 4) */
            static_assert(4 * 2 == FS_HOPPER_TILE_LISTS, "a quad's lists per (row, slot)");
            constexpr int LW = (int)(sizeof(fs_cand_list) / sizeof(uint2));
            static_assert(LW * sizeof(uint2) == sizeof(fs_cand_list), "lists of 8-byte words");
            static_assert((STAGES * STAGE_BYTES + S::BAR_BYTES + S::DESC_BYTES + S::NOISE_BYTES) %
                                  8 == 0,
                          "s_lists at an 8-byte boundary");
            constexpr int RW = FS_HOPPER_TILE_LISTS * LW; /* words a row */
            __syncwarp(); /* every lane's lists are in shared memory */
            const fs_cand_list *wl = s_lists + 4 * (ct & ~31);
            for (int w = lane; w < 16 * RW; w += 32) {
                const int jr = w / RW, k = w - jr * RW, l = k / LW;
                const int64_t row = slot_row(q.rb, cw * 64 + 16 * wi + jr, BR, a.rows, MULTI);
                if (row < 0)
                    continue;
                /* the row's list l: list l % 2 of the row's lane 4 (jr % 8) + l / 2,
                   2 and 3 for its second row (jr >= 8) */
                const fs_cand_list *src =
                    wl + 4 * (4 * (jr & 7) + (l >> 1)) + (jr >= 8 ? 2 : 0) + (l & 1);
                uint2 *dst = reinterpret_cast<uint2 *>(
                    a.cands + (row * a.slots + q.slot) * FS_HOPPER_TILE_LISTS);
                dst[k] = reinterpret_cast<const uint2 *>(src)[k - l * LW];
            }
            __syncwarp(); /* read before the next job's lists are reset */
        }
        if (!more(jb))
            break;
        t0 += q.n_tiles;
    }
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

template <int NWG, bool BF16, int CL, bool LSE, bool TREE, bool MULTI, bool SH, bool FILT>
__global__ void __launch_bounds__(Shape<NWG>::THREADS, 1)
    fshr_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmn,
                     const __grid_constant__ CUtensorMap tmh, const __grid_constant__ CUtensorMap tms,
                     const Args a)
{
}

#endif /* FSH_SM90A */

template <int NWG, bool BF16, int CL, bool LSE, bool TREE, bool MULTI, bool SH, bool FILT = false>
cudaError_t configure(int device)
{
    static unsigned long long done = 0;
    return set_smem_once(
        reinterpret_cast<const void *>(fshr_scan_kernel<NWG, BF16, CL, LSE, TREE, MULTI, SH, FILT>),
        Shape<NWG, FILT>::SMEM, &done, device);
}

/* The kernel's tensor maps: W (128-token boxes), W in FINE_GRAN-token
 * boxes (a FINE job's narrow last tile), H in one box of the CTA's rows, H
 * in 64-row slices. */
struct Maps {
    CUtensorMap w, n, h, s;
};

template <int NWG, bool BF16, int CL, bool LSE, bool TREE, bool MULTI, bool SH, bool FILT = false>
cudaError_t launch(fs_pdl_config &pc, const Maps &m, const Args &a, int device)
{
    cudaError_t e = configure<NWG, BF16, CL, LSE, TREE, MULTI, SH, FILT>(device);
    if (e != cudaSuccess)
        return e;
    pc.cluster_x(CL);
    pc.cfg.dynamicSmemBytes = Shape<NWG, FILT>::SMEM;
    return cudaLaunchKernelEx(&pc.cfg, fshr_scan_kernel<NWG, BF16, CL, LSE, TREE, MULTI, SH, FILT>,
                              m.w, m.n, m.h, m.s, a);
}

/* The epilogue variants: argmax only (no exponentials), sampling / verify,
 * tree verify (a separate kernel, so that the others carry no tree code),
 * sampling / verify with the filters' candidate lists (kernels of their
 * own: the 128-row shape). */
enum Epi { EPI_ARGMAX, EPI_LSE, EPI_TREE, EPI_FILT };

template <int NWG, bool BF16, int CL, bool MULTI, bool SH>
cudaError_t launch_epi(Epi epi, fs_pdl_config &pc, const Maps &m, const Args &a, int device)
{
    if (epi == EPI_FILT) {
        if constexpr (NWG == 2 && !SH)
            return launch<NWG, BF16, CL, true, false, MULTI, false, true>(pc, m, a, device);
        return cudaErrorInvalidValue;
    }
    return epi == EPI_ARGMAX ? launch<NWG, BF16, CL, false, false, MULTI, SH>(pc, m, a, device)
           : epi == EPI_LSE  ? launch<NWG, BF16, CL, true, false, MULTI, SH>(pc, m, a, device)
                             : launch<NWG, BF16, CL, true, true, MULTI, SH>(pc, m, a, device);
}

/* share_h: lone pairs sharing H (one 192-row block in clusters), kernels
 * of their own (the kernel's SH) */
template <int NWG, bool MULTI>
cudaError_t launch_jobs(bool bf16, int cl, bool share_h, Epi epi, fs_pdl_config &pc,
                        const Maps &m, const Args &a, int device)
{
    if constexpr (NWG == 3 && !MULTI) {
        if (cl == 2 && share_h)
            return bf16 ? launch_epi<NWG, true, 2, MULTI, true>(epi, pc, m, a, device)
                        : launch_epi<NWG, false, 2, MULTI, true>(epi, pc, m, a, device);
    }
    if (cl == 2)
        return bf16 ? launch_epi<NWG, true, 2, MULTI, false>(epi, pc, m, a, device)
                    : launch_epi<NWG, false, 2, MULTI, false>(epi, pc, m, a, device);
    return bf16 ? launch_epi<NWG, true, 1, MULTI, false>(epi, pc, m, a, device)
                : launch_epi<NWG, false, 1, MULTI, false>(epi, pc, m, a, device);
}

/* Several jobs a CTA only in the 128-row shape (rows_plan): the 192-row one
 * serves a single row block. */
template <int NWG>
cudaError_t launch_shape(bool bf16, int cl, bool share_h, Epi epi, bool multi, fs_pdl_config &pc,
                         const Maps &m, const Args &a, int device)
{
    if constexpr (NWG == 2) {
        if (multi)
            return launch_jobs<NWG, true>(bf16, cl, false, epi, pc, m, a, device);
    }
    return launch_jobs<NWG, false>(bf16, cl, share_h, epi, pc, m, a, device);
}

/* Clusters of pairs of row blocks of a slot (blocks 2 c, 2 c + 1) when
 * their count is even: W is then read from L2 once per pair instead of once
 * per row block (200 - 256 rows: 5-20% faster).  Three row blocks (257 -
 * 384 rows) gained nothing in clusters of 3, of which only 39 fit at once
 * (117 SMs).  multicast 2: an odd count of 3 or more pairs all but its last
 * row block (cta_job), and a single row block of br = 192 rows runs in
 * pairs of neighbouring slots that share H (the kernel's lone pairs). */
int cluster_size(int64_t n_rb, int br, int multicast)
{
    return (multicast && n_rb % 2 == 0) ||
                   (multicast == 2 && (n_rb >= 3 || (n_rb == 1 && br == Shape<3>::BR)))
               ? 2
               : 1;
}

/* 2-CTA clusters of shape NWG the current device holds at once (0: unknown),
 * asked once per device. */
template <int NWG> int max_clusters_2()
{
    static int known[64];
    return fs_max_clusters_2(
        known, fshr_scan_kernel<NWG, true, 2, true, false, false, false, false>,
        Shape<NWG>::THREADS, Shape<NWG>::SMEM,
        [](int device) { return configure<NWG, true, 2, true, false, false, false>(device); });
}

int64_t row_blocks(int64_t rows, int br)
{
    return (rows + br - 1) / br;
}

/* The launch's shape: records per row (slots), CTAs (grid), the slots'
 * split (Args::tile_slots), and what they were worked out from: the row
 * block (br rows, upt units a tile), the row blocks, the 128-token units and
 * the cluster size. */
struct Plan {
    int64_t slots, grid;
    int by_tile;
    int br, upt, cl;
    int64_t n_rb, units;
    int odd; /* an odd n_rb in clusters: one job a CTA, laid out by cta_job */
};

/* A job's cost beside its tiles', in tiles: its descriptors, records and the
 * pipeline's turn from one slot to the next (~1-2 us against a tile's ~50 us
 * at 1024 rows). */
constexpr double JOB_COST = 0.1;

/* Tiles of the CTA that runs the most (+ JOB_COST a job): at 400+ rows the
 * tensor pipe binds and a CTA's time is its tiles' MMAs.  A half tile counts
 * whole: its MMAs are a whole tile's in the list and tree kernels, half of
 * one elsewhere (N = 128, the consumers' tile loop), and counted at half on
 * the three benchmark shapes at 512-2048 rows the plans come out the same
 * or worse (128256 x 8192 at 1024 rows, 262144 x 3072 at 640: the one-job
 * plan kept against a by-tile plan less than half a tile better). */
double plan_cost(int n_rb, int64_t slots, int64_t grid, int units, int by_tile, int upt)
{
    const int64_t n_jobs = n_rb * slots;
    double worst = 0.0;
    for (int64_t c = 0; c < grid; ++c) {
        double t = 0.0;
        for (int64_t jb = c; jb < n_jobs; jb += grid)
            t += job_of((int)jb, n_rb, (int)slots, units, by_tile, upt).n_tiles + JOB_COST;
        worst = t > worst ? t : worst;
    }
    return worst;
}

/* One job a CTA: as many slots as every row block's CTAs fit on the SMs (or
 * the 2-CTA clusters that fit), slots balanced in units -- the launch most
 * row counts get.  When the row blocks do not divide the CTAs evenly (8 row
 * blocks of 1024 rows on 132 SMs: 16 slots, 128 CTAs, 37-38 tiles each),
 * m > 1 jobs a CTA over m x CTAs / n_rb slots balanced in tiles can give the
 * longest CTA fewer tiles (33 slots on 132 CTAs: 36; 7-9% fewer at 17 row
 * blocks).  Only from 4 row blocks up, where the tensor pipe binds and tile
 * counts are the time: a slot split between two waves of jobs is read from
 * DRAM twice.  jobs > 0 forces m = jobs (tests, A/B runs). */
Plan rows_plan(int64_t V_local, int64_t rows, int sm_count, int multicast, int row_block,
               int jobs)
{
    /* row_block: resolved by the launch (rows_knobs); 0 (the plan tests)
       walks the sampling ops' automatic block by the H100's rule */
    const int br = fs_hopper_rows_block(rows, row_block, 0, nullptr);
    const int upt = br == Shape<3>::BR ? Shape<3>::UPT : Shape<2>::UPT;
    const int64_t units = (V_local + UNIT - 1) / UNIT;
    const int64_t n_rb = row_blocks(rows, br);
    /* an odd count pairs its blocks in the one-job layout only (cta_job) */
    const int cl = cluster_size(n_rb, br, jobs > 1 && n_rb % 2 ? 1 : multicast);
    const int odd = cl == 2 && n_rb % 2 != 0;
    int64_t ctas = sm_count;
    if (cl == 2) {
        const int mc = br == Shape<3>::BR ? max_clusters_2<3>() : max_clusters_2<2>();
        if (mc > 0 && 2 * (int64_t)mc < ctas)
            ctas = 2 * (int64_t)mc;
    }
    int64_t slots = ctas / n_rb;
    slots = slots < 1 ? 1 : slots < units ? slots : units;
    if (odd) { /* the last row blocks pair across slots */
        slots -= slots % 2;
        if (slots < 2)
            return rows_plan(V_local, rows, sm_count, 1, br, jobs);
    }
    Plan best = {slots, slots * n_rb, 0, br, upt, cl, n_rb, units, odd};
    if (odd || jobs == 1 || br == Shape<3>::BR || units > INT32_MAX || n_rb > INT32_MAX ||
        (jobs == 0 && n_rb < 4))
        return best; /* the 192-row shape: one job a CTA (launch_shape) */
    /* The candidates' costs walk every job (~5.5 us on the host at 4+ row
       blocks), and a call asks for its plan three times (the record count,
       the launch's check of it, the launch): the last plan of this thread
       is kept, keyed by everything the candidates depend on. */
    struct Key {
        int64_t units, n_rb, ctas;
        int br, cl, jobs;
    };
    thread_local Key last_key = {-1, -1, -1, 0, 0, 0};
    thread_local Plan last_plan;
    const Key key = {units, n_rb, ctas, br, cl, jobs};
    if (key.units == last_key.units && key.n_rb == last_key.n_rb && key.ctas == last_key.ctas &&
        key.br == last_key.br && key.cl == last_key.cl && key.jobs == last_key.jobs)
        return last_plan;
    double best_cost = jobs > 1 ? 0.0 : plan_cost((int)n_rb, slots, slots * n_rb, (int)units, 0, upt);
    const int64_t tiles = (units + upt - 1) / upt;
    for (int m = jobs > 1 ? jobs : 2; m <= (jobs > 1 ? jobs : 4); ++m) {
        int64_t s = m * ctas / n_rb;
        s = s < tiles ? s : tiles;
        int64_t grid = n_rb * s < ctas ? n_rb * s : ctas;
        grid -= grid % cl;
        if (s < 1 || grid < cl)
            continue;
        const double cost = plan_cost((int)n_rb, s, grid, (int)units, 1, upt);
        /* forced: the one candidate; automatic: half a tile better at least */
        if (jobs > 1 || cost < best_cost - 0.5) {
            best.slots = s;
            best.grid = grid;
            best.by_tile = 1;
            best_cost = cost;
        }
    }
    last_key = key;
    last_plan = best;
    return best;
}

} // namespace fshr

/* Past 256 rows the shapes differ in the rows they pad and in how their
 * row blocks pair in clusters (an even count pairs every block, an odd
 * count of 3+ all but its last: cluster_size, cta_job), and sampling costs
 * the 192-row CTA less over its argmax (4-9%) than the 128-row CTA
 * (12-28%): somewhat for its shorter epilogue a warp (12 consumer warps of
 * 32 tokens a row and tile against 8 of 64; 704 rows, both paired: 9%
 * against 13%), mostly because an unpaired row block drifts away from its
 * slot under the sampling epilogue and reads W from DRAM again (264 rows on
 * 128256 x 8192: 1.69 W in three unclustered 128-row blocks, 1.00 in the
 * 192-row pair; argmax does not drift).  Measured against 128-row blocks
 * (SM cycles, both default shapes): fewer rows padded, 528-576 rows (576 vs
 * 640), sample 6-9% and argmax 0-3% fewer (bench/results/2026-11-25-h100-
 * rows-192/); 960 rows (five blocks, four paired, against eight padded to
 * 1024) sample 4.6% fewer and argmax even (2026-11-25-h100-odd-pairs/
 * rows-block/; 3-7% more before odd counts paired).  As many rows, every
 * 192-row block paired and one 128-row block not: 1100-1152 rows 0-6%
 * fewer; 257-384 rows (two blocks against three) sample and verify 3-11%
 * fewer at 288-384 rows, draft argmax 3-8% more.  Both even (704 rows):
 * 128 (on an H200 too: at 704-768 rows the 192-row blocks within the
 * spread or up to 5% slower for every op,
 * bench/results/2026-11-30-h200-large-trace/).  Fewer
 * rows padded but an odd 192-row count against an even 128-row
 * count of 10+ (1665-1728 rows, ...): 128, whose several jobs a CTA fill
 * every SM where one 192-row job a CTA leaves some idle (1700 rows: 14 x 128
 * on 132 CTAs against 9 x 192 on 126; sample 0.4-2% and argmax 3.5-6.7%
 * fewer cycles).
 *
 * tie (an H200, whose HBM reads W again at 4.8 TB/s): where both pad as
 * many rows, the unpaired 128-row block's drift costs about what the
 * 192-row shape's L2 feed does (25 against 16 KB per 2^20 MAC paired), and
 * which is faster follows the slots' balance (calls alternated in one
 * process, bench/results/2026-11-29-h200-row-block-ties/).  At 264-384 rows
 * 128-row blocks were 2-6% faster for sample, verify and trees on
 * 128256 x 8192 and 262144 x 3072, whose longest 128-row CTA has 4% / 2%
 * fewer rows x units (23 x 128 against 16 x 192 on 1002 units), and 2-6%
 * slower on 151936 x 4096, where both have 3456; at 1100-1152 rows, where
 * the 192-row CTAs have 5% fewer, sampling was even (-2% to +2%).  Draft
 * argmax keeps the rule above at a tie (128 rows for 257-384, 192 past
 * 1024): measured in alternated processes it looked 3-9% faster in 128-row
 * blocks at 1100-1152 rows, but with both rules in one process
 * (flashspec_bench --alt, both ways round) it is 1-8% slower there in all
 * 12 cells of three shapes (bench/results/2026-11-30-h200-tree-tile-bits/
 * call9/).  Where 192 pads fewer rows (544: sample 6-12% slower with 128)
 * it stays 192. */
static int64_t longest_cta_rows_units(const fs_rows_tie *tie, int64_t rows, int br);

extern "C" int fs_hopper_rows_block(int64_t rows, int requested, int argmax_only,
                                    const fs_rows_tie *tie)
{
    using fshr::Shape;
    if (requested == Shape<2>::BR || requested == Shape<3>::BR)
        return requested;
    if (rows <= Shape<2>::BR)
        return Shape<2>::BR;
    if (rows <= Shape<3>::BR)
        return Shape<3>::BR;
    const int64_t n2 = (rows + Shape<2>::BR - 1) / Shape<2>::BR;
    const int64_t n3 = (rows + Shape<3>::BR - 1) / Shape<3>::BR;
    const int64_t pad2 = n2 * Shape<2>::BR, pad3 = n3 * Shape<3>::BR;
    const bool pairs2 = n2 % 2 == 0, pairs3 = n3 % 2 == 0;
    if (pad3 < pad2)
        return pairs2 && !pairs3 && n2 >= 10 ? Shape<2>::BR : Shape<3>::BR;
    if (pad3 != pad2 || !pairs3 || pairs2)
        return Shape<2>::BR;
    /* a tie that only 192-row blocks pair */
    if (tie && !argmax_only)
        return longest_cta_rows_units(tie, rows, Shape<2>::BR) <
                       longest_cta_rows_units(tie, rows, Shape<3>::BR)
                   ? Shape<2>::BR
                   : Shape<3>::BR;
    return !argmax_only || n2 > 3 ? Shape<3>::BR : Shape<2>::BR;
}

/* The rows x 128-token units of the CTA that runs the most, br-row blocks:
 * at a tie both shapes run one job a CTA (the 192-row shape always, 128
 * rows as an odd count of blocks), and a slot's units differ from the
 * others' by one at most. */
static int64_t longest_cta_rows_units(const fs_rows_tie *tie, int64_t rows, int br)
{
    const fshr::Plan p = fshr::rows_plan(tie->V_local, rows, tie->sm_count, tie->multicast, br, 0);
    return (p.units + p.slots - 1) / p.slots * p.br;
}

extern "C" int64_t fs_hopper_rows_slots(int64_t V_local, int64_t rows, int sm_count,
                                        int multicast, int row_block, int jobs)
{
    if (V_local <= 0 || rows <= 0 || sm_count < 1)
        return 0;
    return fshr::rows_plan(V_local, rows, sm_count, multicast, row_block, jobs).slots;
}

extern "C" int fs_hopper_rows_plan_check(int64_t V_local, int64_t rows, int sm_count,
                                         int multicast, int row_block, int jobs, int64_t *slots,
                                         int64_t *grid, int64_t *max_tiles)
{
    using namespace fshr;
    if (V_local <= 0 || rows <= 0 || sm_count < 1 || V_local > INT32_MAX || rows > INT32_MAX)
        return -1;
    const Plan p = rows_plan(V_local, rows, sm_count, multicast, row_block, jobs);
    const int upt = p.upt, units = (int)p.units, n_rb = (int)p.n_rb, cl = p.cl;
    *slots = p.slots;
    *grid = p.grid;
    *max_tiles = 0;
    if (p.slots < 1 || p.slots > units || p.grid < 1 || p.grid > n_rb * p.slots ||
        p.grid % cl != 0)
        return -1;
    const int64_t n_jobs = n_rb * p.slots;
    /* odd: one job a CTA, an even slot count (cta_job) */
    if (p.odd && (p.by_tile || p.grid != n_jobs || p.slots % 2))
        return -1;
    /* CTA c's job at step jb (its job jb, or with odd pairs its one job) */
    auto job_at = [&](int64_t c, int64_t jb) {
        return p.odd ? cta_job((int)c, n_rb, (int)p.slots, units, upt, true)
                     : job_of((int)jb, n_rb, (int)p.slots, units, p.by_tile, upt);
    };
    std::vector<int> seen((size_t)n_rb * (size_t)units, 0);
    for (int64_t c = 0; c < p.grid; ++c) {
        int64_t tiles = 0;
        for (int64_t jb = c; jb < n_jobs; jb += p.grid) {
            const Job q = job_at(c, jb);
            if (q.u0 < 0 || q.u1 > units || q.u0 > q.u1 || q.rb < 0 || q.rb >= n_rb ||
                q.slot < 0 || q.slot >= p.slots)
                return -1;
            for (int u = q.u0; u < q.u1; ++u)
                ++seen[(size_t)q.rb * (size_t)units + (size_t)u];
            tiles += q.n_tiles;
            if (cl == 2) {
                /* the cluster's peer, CTA c ^ 1 at the same step (grid is
                   even): row blocks 2k, 2k + 1 of one slot, or with odd
                   pairs both last row blocks */
                if ((jb ^ 1) >= n_jobs)
                    return -1;
                const Job o = job_at(c ^ 1, jb ^ 1);
                const bool lone = p.odd && q.rb == n_rb - 1;
                if (lone ? o.rb != q.rb
                         : o.slot != q.slot || q.rb % 2 != (int)(c % 2) || o.rb != (q.rb ^ 1))
                    return -1;
            }
        }
        *max_tiles = tiles > *max_tiles ? tiles : *max_tiles;
    }
    for (int v : seen)
        if (v != 1)
            return -1;
    return 0;
}

extern "C" int fs_hopper_rows_launch(const void *W, const void *H, int is_bf16, int64_t V_local,
                                     int64_t D, int64_t rows, int64_t vocab_offset,
                                     int64_t global_vocab, const fs_row_desc *descs,
                                     const float *logit_bias, const uint32_t *allowed,
                                     fs_record *recs, int64_t slots, const fs_tail_args *tail,
                                     int multicast, int row_block, int jobs, int sm_count,
                                     int argmax_only, const fs_tree_row *tree_rows,
                                     float *tree_child_s, fs_cand_list *cands, int w_stream,
                                     int w_hint, int device, cudaStream_t stream)
{
    using namespace fshr;
    const Plan p = rows_plan(V_local, rows, sm_count, multicast, row_block, jobs);
    const int br = p.br, cl = p.cl;
    const int64_t n_rb = p.n_rb, units = p.units, grid = p.grid;
    if (rows > INT32_MAX || units > INT32_MAX || sm_count < 1 ||
        (tree_rows && (argmax_only || !tree_child_s)))
        return (int)cudaErrorInvalidValue;
    /* the lists' kernels: sampling and verify, 128-row blocks */
    if (cands && (argmax_only || tree_rows || br != Shape<2>::BR || tail))
        return (int)cudaErrorInvalidValue;
    if (slots != p.slots || slots < 1 || slots > units || n_rb * slots > INT32_MAX)
        return (int)cudaErrorInvalidValue;
    Args a;
    fill_scan_args(a, descs, logit_bias, allowed, recs, rows, V_local, vocab_offset, global_vocab,
                   D, tail);
    a.n_rb = (int)n_rb;
    a.slots = (int)slots;
    /* a single row block in clusters: lone pairs sharing H (cluster_size) */
    const bool share_h = p.odd && n_rb == 1;
    const Epi epi = argmax_only ? EPI_ARGMAX : tree_rows ? EPI_TREE : cands ? EPI_FILT : EPI_LSE;
    /* the FINE kernels' units (FINE_GRAN) */
    const bool fine = fine_kernel(cl, share_h, p.by_tile != 0, epi == EPI_FILT, epi == EPI_TREE);
    a.gran = fine ? FINE_GRAN : UNIT;
    a.units = (int)((V_local + a.gran - 1) / a.gran); /* the plan's units where not fine */
    a.tile_slots = p.by_tile;
    a.odd_pairs = p.odd;
    const int last_rows = (int)(rows - (n_rb - 1) * br);
    a.exact_h_bytes = last_rows * BK * 2;
    a.tree_rows = tree_rows;
    a.tree_child_s = tree_rows ? tree_child_s : nullptr;
    a.cands = cands;

    /* The plain W stream (fs_w_stream) only where W is read once and the
       kernel is bound by it: up to 128 rows, one row block (br >= 128)
       (H200: 1.28 -> 1.15-1.20x the bound at 128 rows; at 160-256 rows
       within the spread, at 192 0-5% slower on two of three shapes). */
    const bool plain = w_stream == FS_W_STREAM_PLAIN && rows <= 128;
    a.w_hint = fs_w_hint_for(w_hint, plain);
    Maps m;
    cudaError_t e = make_map(&m.w, W, is_bf16, D, V_local, UNIT, plain ? 0 : 256);
    /* the narrow map: only the FINE kernels read it (the others get W's) */
    m.n = m.w;
    if (e == cudaSuccess && fine)
        e = make_map(&m.n, W, is_bf16, D, V_local, FINE_GRAN, plain ? 0 : 256);
    if (e == cudaSuccess)
        e = make_map(&m.h, H, is_bf16, D, rows, br);
    if (e == cudaSuccess)
        e = make_map(&m.s, H, is_bf16, D, rows, p.by_tile ? 64 : last_rows);
    if (e != cudaSuccess)
        return (int)e;
    const bool wide = br == Shape<3>::BR;
    /* programmatic launch: overlaps the prep kernel (see fs_pdl_wait above) */
    fs_pdl_config pc(dim3((unsigned)grid), dim3(wide ? Shape<3>::THREADS : Shape<2>::THREADS),
                     wide ? Shape<3>::SMEM : Shape<2>::SMEM, stream, true);
    const bool bf = is_bf16 != 0;
    e = wide ? launch_shape<3>(bf, cl, share_h, epi, p.by_tile != 0, pc, m, a, device)
             : launch_shape<2>(bf, cl, share_h, epi, p.by_tile != 0, pc, m, a, device);
    return (int)(e != cudaSuccess ? e : cudaGetLastError());
}
