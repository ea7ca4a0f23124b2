/* Hopper (sm_90a) fused LM-head scan for up to 160 rows, 320 in pairs, 960
 * in row groups of pairs.
 *
 *   logits^T = W . H^T, vocabulary = wgmma M, rows = wgmma N, K = D.
 *
 *   CTA        1 producer warp (TMA) + 2 consumer warpgroups (wgmma), 288
 *              threads, one CTA per SM, persistent over the vocabulary tiles
 *              (128 tokens each) of the one row block of BN >= rows rows.
 *   pipeline   STAGES x KS x { W tile 128 x 64, H tile BN x 64 } in shared
 *              memory (KS = 2 k-boxes per stage up to 64 rows, else 1), loaded
 *              by cp.async.bulk.tensor with the 128-byte swizzle (one 64-element
 *              bf16 row = 128 bytes), full/empty mbarriers.  The H box holds
 *              min(rows, BN) rows: none reaches past H's last row.  W's L2
 *              promotion and eviction by chip (enum fs_w_stream).
 *   MMA        each consumer warpgroup: wgmma m64nBNk16, A = its 64 W rows
 *              (K-major), B = the H tile (K-major), fp32 accumulators in
 *              registers (BN / 2 per thread).
 *   epilogue   at the end of a tile the accumulators go to a [BN][128] fp32
 *              buffer in shared memory (16-byte groups XOR-swizzled by row, no
 *              bank conflicts on the stores); that tile's noise blocks
 *              (record.h) are then pushed while the NEXT tile's wgmmas run: after
 *              issuing a k-block's wgmmas a consumer thread pushes one block of
 *              16 tokens of its row, so the epilogue hides under the
 *              tensor-core and TMA work.  TPB threads share a row, each owning
 *              whole blocks; a thread's record is carried across all the tiles
 *              of its CTA (its running best key prunes hopeless blocks), and
 *              the TPB records of a row merge once, at the end: one record per
 *              (row, CTA).
 *   epilogue warps  128- to 160-row blocks of unfiltered ops, and
 *              48- to 96-row ones where fs_hopper_opts::ew_min_bn says (the
 *              EW kernels, 416 / 512 threads): the pushes above held up the
 *              MMA warpgroups' wgmma issue there, so four (48-128 rows) or
 *              seven more warps push the staged tile while they run the next
 *              (ew_mma, ew_epilogue; 19-22% fewer SM cycles at 160 rows on
 *              an H200 with four).
 *   tail       the last CTA to finish merges the records and finalizes the op
 *              (op_tail.cuh), unless the caller runs the merge itself.
 *   single     unfiltered sample, draft argmax and verify run as this one
 *              launch (fs_tail_args.single): no prep kernel, so the
 *              consumers build their rows' descriptors from the per-request
 *              arrays (scan_prep.cuh), CTA 0 stores them for the op's end,
 *              and the CTAs meet at a grid barrier (cooperative launch),
 *              after which CTA 0 ends the op (up to tail_rows_max rows) or
 *              every CTA merges rows as the merge kernel would.
 *
 *   pairs      161-320 rows of unfiltered ops (where use_pairs takes them;
 *              241-256 only with pairs_128): the EW kernel in 2-CTA
 *              clusters, each CTA half the rows (rank 0 the first BN: 104
 *              to 160 rows), both on the same vocabulary tiles; each loads
 *              half of every W box for both (TMA multicast) and its own H,
 *              and a stage is refilled once both CTAs' MMA warps released
 *              it.  One record per (row, cluster).  No single launch.
 *   row groups past 320 rows (up to fs_hopper_opts::tile_groups_max, where
 *              they multiply fewer rows than the rows kernel): G groups of
 *              up to 320 rows, cluster c taking group c % G on slot c / G,
 *              so the G clusters of a slot run the same tiles side by side
 *              and share W through the L2.  One record per (row, slot).
 *
 *   Other rows go to the rows-as-M kernel (scan_hopper_rows.cu).  The
 *   measured alternatives (cluster / TMA-multicast variants of this kernel
 *   that split the vocabulary, slower) are in docs/DESIGN.md.
 *
 * Records: pushes and merges by the shared record.h functions (the same as
 * every other backend).  Which token wins is order-independent; sum_exp
 * carries the usual merge rounding. */
#include "scan_hopper.cuh"
#include "scan_hopper_rows.cuh"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cooperative_groups.h>
#include <type_traits>

#include "hopper_ptx.cuh"
#include "op_tail.cuh"
#include "pdl.cuh"
#include "probe_tail.cuh"
#include "philox.h"
#include "record.h"
#include "record_shfl.cuh"
#include "scan_prep.cuh"
#include "wgmma.cuh"

/* Timing probe (docs/TUNING.md): FSH_PROBE_NO_LISTS=1 leaves the filtered
   rows' candidate lists empty -- their blocks push the record alone -- to
   price the lists' share of the filtered scan (wrong filtered results). */
#ifndef FSH_PROBE_NO_LISTS
#define FSH_PROBE_NO_LISTS 0
#endif

namespace fsh {

using namespace fshp;

constexpr int BM = FS_HOPPER_TILE_V; /* vocabulary per tile (= per record) */
constexpr int NCW = 8;               /* consumer warps (2 warpgroups) */
constexpr int NCT = NCW * 32;        /* consumer threads */
constexpr int THREADS = NCT + 32;    /* + the producer warp */
/* The epilogue warps (EW kernels: 48- to 160-row blocks, no filters):
 * ewt(BN) more threads push the staged tile's noise blocks while the two
 * MMA warpgroups run the next tile's wgmmas.  Four warps up to 128 rows (at
 * 128 a row a thread), seven past them: 512 threads in all leave ptxas the 128
 * registers a thread that the 160-row wgmma's kernel takes (127), where an
 * eighth would cap it at 120.  Seven against four (one warpgroup, the rows
 * past 128 shared by four or eight threads): sample and verify of 140-320
 * rows 3-9% faster on 262144 x 3072, within the spread on three other
 * shapes (bench/results/2026-11-29-h200-ew-seven-warps/).  Named barriers,
 * each a barrier.sync (ew_bar) of all NCT + ewt(BN) threads: BAR_FREE (the
 * epilogue is done with the staged tile), BAR_FULL (the MMA warpgroups
 * staged the next); BAR_EPI the epilogue warps alone. */
constexpr int ewt(int bn)
{
    return bn > 128 ? 7 * 32 : 4 * 32;
}
constexpr int threads_ew(int bn)
{
    return NCT + ewt(bn) + 32; /* MMA, epilogue, the producer warp */
}
/* The row blocks that have EW kernels: 48-96 rows (where
 * fs_hopper_opts::ew_min_bn takes them) and 128-160. */
constexpr bool ew_bn(int bn)
{
    return bn >= 48;
}
constexpr int BAR_FREE = 2, BAR_FULL = 3, BAR_EPI = 4;
constexpr int LDS = BM;              /* epilogue buffer pitch (floats), XOR-swizzled */
constexpr int MAX_STAGES = 12;

/* A set of row blocks, spelled once: membership, the list in order, the
 * smallest member that holds some rows, and a call of
 * f(std::integral_constant<int, b>) for the member b == bn (the last member
 * when none is: the launches' default) -- the templates a runtime row block
 * selects. */
template <int... B> struct BnSet {
    static constexpr int list[sizeof...(B)] = {B...};
    static constexpr int count = (int)sizeof...(B);
    static constexpr int last = list[count - 1];
    static constexpr bool has(int bn) { return ((bn == B) || ...); }
    /* the smallest member of at least `rows` rows that ok(member) accepts,
       else the last */
    template <class Ok> static int holding(int64_t rows, Ok &&ok)
    {
        for (int bn : list)
            if (bn >= rows && ok(bn))
                return bn;
        return last;
    }
    template <class F> static auto with(int bn, F &&f)
    {
        decltype(f(std::integral_constant<int, last>{})) r{};
        if (!((bn == B ? (r = f(std::integral_constant<int, B>{}), true) : false) || ...))
            r = f(std::integral_constant<int, last>{});
        return r;
    }
};

/* Row blocks of the tile kernel's single CTAs (pick_bn): a padded row costs
 * its share of the MMA and of H's L2 traffic (verify at 80 rows, H100:
 * 1.116 x the bound with a 128-row block, 1.075 x with an 80-row one on
 * 151936 x 4096; 1.082 -> 1.030 on 128256 x 8192), so the list is dense
 * where the tile kernel runs.  Past 128 rows it steps by 8 as the pairs'
 * halves do: on an H200, 136 and 152 against 144 and 160 made 130-152-row
 * calls 0.6% faster on average in one process both ways round (sample on
 * 262144 x 3072 1.5-3%), trees of 132 / 148 rows 1%
 * (bench/results/2026-12-01-h200-tile-136-152/). */
using TileBns = BnSet<16, 32, 48, 64, 80, 96, 128, 136, 144, 152, 160>;
/* The pairs' halves (pair_bn): 104-120 for 193-240 rows, which the 128-row
 * halves would pad by up to a third, and 128-160 in steps of 8, so that a
 * half pads at most 7 rows, as a single CTA's EW block does past 128. */
using PairBns = BnSet<104, 112, 120, 128, 136, 144, 152, 160>;

/* Row blocks that only the pairs take. */
constexpr bool pair_only_bn(int bn)
{
    return PairBns::has(bn) && !TileBns::has(bn);
}
constexpr bool pair_kernel_bn(int bn)
{
    return PairBns::has(bn);
}
/* Whether the plain kernels (filters, FLASHSPEC_TILE_EPI_WG=0) have row
 * block bn: the blocks up to 128 rows, and 160 for 129-160 rows (the
 * blocks between were measured with the EW kernels only,
 * bench/results/2026-11-29-h200-tile-ew-choice/ and
 * bench/results/2026-12-01-h200-tile-136-152/). */
constexpr bool plain_bn(int bn)
{
    return !pair_only_bn(bn) && (bn <= 128 || bn == 160);
}
/* The EW blocks past 128 rows that step by 8 rows (136, 152), which
 * fs_hopper_opts::bn_step16 leaves out. */
constexpr bool step8_bn(int bn)
{
    return bn > 128 && bn % 16 != 0;
}

template <int BN> struct Cfg {
    /* k-boxes (64 wide) per stage: two for narrow row blocks, so that each W
       row is read 256 contiguous bytes at a time (DRAM streams better than
       with 128-byte pieces); one for wide ones, which need the room for
       stages */
    static constexpr int KS = BN <= 64 ? 2 : 1;
    static constexpr int WBOX = BM * BK * 2;
    static constexpr int HBOX = BN * BK * 2;
    static constexpr int W_BYTES = KS * WBOX;
    static constexpr int H_BYTES = KS * HBOX;
    static constexpr int STAGE_BYTES = W_BYTES + H_BYTES;
    static constexpr int EPI_BYTES = BN * LDS * 4;
    static constexpr int BAR_BYTES = 2 * MAX_STAGES * 8 + 16;
    /* tree verify: a word a row (tree_tile_bits), in room the stages leave
       at every BN (1840 bytes or more) */
    static constexpr int TREE_BYTES = 4 * BN;
    static constexpr int FIT =
        (SMEM_MAX - 1024 - EPI_BYTES - BAR_BYTES - TREE_BYTES) / STAGE_BYTES;
    static constexpr int STAGES = FIT > MAX_STAGES ? MAX_STAGES : FIT;
    static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + EPI_BYTES + BAR_BYTES + TREE_BYTES;
    static_assert(FIT >= MAX_STAGES ||
                      FIT == (SMEM_MAX - 1024 - EPI_BYTES - BAR_BYTES) / STAGE_BYTES,
                  "the tree words cost no stage");
    /* epilogue: TPB threads per row (a power of two), each owning UNITS of the
     * tile's 8 noise blocks (blocks q, q + TPB, ...) */
    static constexpr int NBLK = BM / FS_NOISE_BLOCK;
    static constexpr int TPB0 = NCT / BN;
    static constexpr int TPB = TPB0 >= NBLK ? NBLK : TPB0 >= 4 ? 4 : TPB0 >= 2 ? 2 : 1;
    static constexpr int ACTIVE = BN * TPB;
    static constexpr int UNITS = NBLK / TPB;
    static_assert(BN % 8 == 0 && BN >= 16 && BN <= 256, "BN");
    static_assert(STAGES >= 2, "stages");
    static_assert(SMEM <= SMEM_MAX, "smem");
    static_assert(!plain_bn(BN) || (ACTIVE <= NCT && ACTIVE % 32 == 0), "epilogue threads");
};

/* The epilogue warps' share of a tile: tasks (g, f) = noise block f of the
 * 32 rows of group g (lane l: row 32 g + l), in the order g * NBLK + f, T
 * consecutive ones a warp (6 at 80-96 and 144-160 rows; 8, one group, at
 * 128).  Every
 * lane of a warp runs the same block of its row at once (the buffer's
 * swizzle keeps those reads conflict-free, and no lane waits on another's
 * loop), a warp's tasks lie in at most two groups, and a row's blocks in at
 * most three consecutive warps, whose records merge at the end.  Units
 * dealt a thread at a time instead (lanes of a warp on other rows, loops
 * of other counts) were up to 20% slower. */
template <int BN> struct EwCfg {
    static constexpr int EWT = ewt(BN);
    static constexpr int G = (BN + 31) / 32;
    static constexpr int TASKS = G * Cfg<BN>::NBLK;
    static constexpr int T = (TASKS + EWT / 32 - 1) / (EWT / 32);
    static_assert(T <= Cfg<BN>::NBLK, "a warp's tasks in two groups at most");
    /* a warp a group, a thread a row (128 rows): one record a thread, its
       blocks in a loop of fixed count, nothing to merge -- the general form
       measured 2-10% slower there (bench/results/2026-11-29-h200-ew-seven-warps/,
       call 5) */
    static constexpr bool ROW = T == Cfg<BN>::NBLK && G == EWT / 32;
    /* rows a thread: two where a warp's tasks can straddle groups (80-96
       and 136-160 rows); one at 48-64 rows (T = 4 divides NBLK), where a
       second row's record, never used there, made ptxas spill 12-28 bytes
       under the 128 registers a thread that 13 warps leave (four of them
       on one scheduler) */
    static constexpr int NS = ROW || Cfg<BN>::NBLK % T == 0 ? 1 : 2;
};

struct Args {
    const fs_row_desc *descs;
    const float *bias;
    const uint32_t *allowed;
    fs_record *recs; /* [rows][n_recs]: record (row, CTA) at row * n_recs + blockIdx.x */
    int64_t n_recs;
    /* filters: candidate lists [rows][n_recs * FS_HOPPER_TILE_LISTS], list
       (row, CTA, q) for the row's q-th epilogue thread (q < TPB; the other
       slots empty); NULL when the op has no filters */
    fs_cand_list *cands;
    int64_t rows, V, vocab_offset, global_vocab, words;
    int n_items, kblocks, tail_on;
    int w_hint; /* W's L2 hint (enum fs_w_hint, resolved) */
    int argmax; /* the rows are draft argmax's (argmax_block) */
    int stage_tx; /* bytes a stage's TMA loads deliver (the H boxes hold only the live rows) */
    int groups;   /* pairs: row groups of 2 BN rows, each on every slot (tile_slot); else 1 */
    int slots;    /* pairs: slots (clusters a row group) */
    fs_tail_args tail;
    const fs_tree_row *tree_rows; /* tree verify only, else NULL (tree_scan.cuh) */
    float *tree_child_s;
};

#if FSH_SM90A

/* The CTA's first vocabulary tile and the stride of its tiles: a pair
 * (2-CTA cluster, blockIdx.x 2 c and 2 c + 1) scans the tiles of slot c /
 * groups together, one half of the rows of its row group c % groups each
 * (Args::groups; adjacent clusters, on the same tiles at the same time,
 * share W through the L2); its records are (row, slot). */
template <bool PAIR> __device__ __forceinline__ int tile_slot(int groups)
{
    return PAIR ? (int)(blockIdx.x >> 1) / groups : (int)blockIdx.x;
}
template <bool PAIR> __device__ __forceinline__ int tile_slots(int slots)
{
    /* a kernel parameter, not gridDim.x / 2 / groups: read again where it
       is used, it holds no register through the tile loops.  (The 144- and
       160-row pair kernels spill 4 bytes all the same: the row group's
       index, stored once before the epilogue warps' tile loop and loaded
       once after it.) */
    return PAIR ? slots : (int)gridDim.x;
}
/* The CTA's first row: in a pair, its half of its cluster's row group. */
template <bool PAIR, int BN> __device__ __forceinline__ int row0(int groups)
{
    return PAIR ? ((int)(blockIdx.x >> 1) % groups * 2 + (int)(blockIdx.x & 1u)) * BN : 0;
}

/* barrier.sync without .aligned: BAR_FREE and BAR_FULL are reached at
 * different instructions by the MMA warpgroups and the epilogue warps, which
 * bar.sync (barrier.sync.aligned) does not allow -- compute-sanitizer's
 * synccheck reports it as divergent threads. */
template <int BN> __device__ __forceinline__ void ew_bar(int id)
{
    asm volatile("barrier.sync %0, %1;\n" ::"r"(id), "n"(NCT + ewt(BN)) : "memory");
}

__device__ __forceinline__ void consumer_bar()
{
    asm volatile("bar.sync 1, %0;\n" ::"n"(NCT) : "memory");
}


/* The epilogue buffer holds the tile's logits as [BN rows][128 tokens] fp32,
 * the 16-byte group index XOR (row & 7): the accumulator stores (8 rows x 4
 * lanes, 8 consecutive tokens) and the 16-byte reads of the epilogue threads
 * (group_of() spreads a quarter-warp over 8 distinct groups mod 8) are both
 * free of bank conflicts. */
__device__ __forceinline__ int epi_idx(int row, int tok)
{
    return row * LDS + (tok ^ ((row & 7) << 2));
}

/* Epilogue state of one thread: its row and the record it carries over the
 * CTA's tiles. */
struct Epi {
    fs_record rec;
    fs_cand_list cl; /* the filters' candidates, when filt */
    fs_row_desc d;
    int64_t row; /* global row */
    int64_t v0;  /* local id of the pending tile's first token */
    int scan;    /* row in range and FS_ROWF_VALID */
    int write;   /* row in range and this thread writes the record */
    int filt;    /* scan and the row filters (FS_ROWF_FILTER) */
};

/* Tree verify: which of the CTA's tiles (first, first + stride, ...) hold
 * one of row e's children, tile vt in bit vt mod 32; 0 for other rows.  The
 * kernels keep a word a row in shared memory (Cfg::TREE_BYTES), written
 * once by one of the row's threads before the first tile, and a block asks
 * fs_tree_block_has_child -- a loop whose loads of the row's child count
 * and children from global memory wait on each other, and whose answer the
 * block's branch waits for -- only where its tile's bit is set
 * (tree_tile_may_hold).  A row has at most FS_TREE_MAX_CHILDREN children
 * among ~1000 tiles, so the bits are almost all clear; a bit set for a tile
 * without a child (another of the CTA's tiles with the same number mod 32:
 * with 132 CTAs, every eighth) only costs that tile the exact test.  A word
 * in shared memory, read beside the block's logits, and not a register:
 * one more word held through the tile loop made the pair kernels spill 32
 * bytes instead of 8. */
__device__ __forceinline__ uint32_t tree_tile_bits(const Args &a, const Epi &e, int first,
                                                   int stride)
{
    if (!a.tree_rows || !e.scan)
        return 0u;
    const fs_tree_row *t = a.tree_rows + e.row;
    const int nc = t->num_children;
    uint32_t bits = 0;
    for (int k = 0; k < nc; ++k) {
        const int64_t v = (int64_t)t->children[k] - a.vocab_offset; /* local id */
        if (v < 0 || v >= a.V)
            continue; /* another shard's */
        const int vt = (int)(v / BM); /* 32-bit: a 64-bit % is a call, and its frame */
        if (vt >= first && (vt - first) % stride == 0)
            bits |= 1u << (vt & 31);
    }
    return bits;
}

/* The rows' words: TREE_BYTES after the barriers, which follow the
 * epilogue buffer -- addressed from epi by a constant, so that the pushes
 * hold no pointer of their own.  (The EW warps see epi as const: they only
 * read the staged tiles; the words they write once, before the first.) */
template <int BN> __device__ __forceinline__ uint32_t *tree_words(const float *epi)
{
    using C = Cfg<BN>;
    return reinterpret_cast<uint32_t *>(
        const_cast<unsigned char *>(reinterpret_cast<const unsigned char *>(epi)) + C::EPI_BYTES +
        C::BAR_BYTES);
}

/* Whether row rr's pending tile (local ids from v0) may hold one of the
 * row's children: its bit in the row's word. */
template <int BN>
__device__ __forceinline__ bool tree_tile_may_hold(const float *epi, int rr, int64_t v0)
{
    return (tree_words<BN>(epi)[rr] >> ((uint32_t)v0 / BM & 31u)) & 1u;
}

/* A draft argmax block (Args::argmax), logits x (-inf past the vocabulary):
 * only the max and its id are read (fs_finalize_argmax), so no
 * exponentials -- the record's sum_exp is 1, a positive stand-in for the
 * merges.  The scores are the logits: draft argmax rows are greedy
 * (inv_temp 1) and take no bias or mask.  A NaN or +inf logit flags the
 * record, as the full push does.  Ties keep the lowest id, whatever order
 * the blocks come in. */
__device__ __forceinline__ void argmax_block(fs_record &r, const float (&x)[FS_NOISE_BLOCK],
                                             int32_t id0)
{
    float mx[FS_NOISE_BLOCK / 2];
#pragma unroll
    for (int i = 0; i < FS_NOISE_BLOCK / 2; ++i)
        mx[i] = fs_fmax_nan(x[2 * i], x[2 * i + 1]);
#pragma unroll
    for (int w = FS_NOISE_BLOCK / 4; w > 0; w >>= 1)
#pragma unroll
        for (int i = 0; i < w; ++i)
            mx[i] = fs_fmax_nan(mx[2 * i], mx[2 * i + 1]);
    const float m = mx[0];
    if (!(m > -INFINITY && m < INFINITY)) {
        if (m != -INFINITY)
            r.flags |= FS_REC_NONFINITE;
        return;
    }
    if (r.max_id >= 0 && m < r.max_s)
        return;
    const int32_t id = id0 + fs_block_first_at(x, m);
    if (fs_beats(m, id, r.max_s, r.max_id)) {
        r.max_s = m;
        r.max_id = id;
        r.sum_exp = 1.0f;
    }
}

/* The noise words of the last Philox draw a thread made (index wi: blocks
 * 2 wi and 2 wi + 1, fs_block_words), kept while it pushes a row's blocks
 * in order: one draw serves two neighbouring blocks where it took one a
 * block (the EW kernels' threads push consecutive blocks of a row). */
struct NoiseCache {
    fs_u32x4 w;
    uint32_t wi = 0xffffffffu; /* none: no block's index is 2^32 - 1 (ids < 2^31) */
};

/* fs_record_push_block of a plain block -- 16 tokens in range, no mask,
 * bias or tree child, neither the row's excluded nor its selected token,
 * a row that is not greedy -- from its logits x: the same record, worked in
 * logit units as the rows kernel's epilogue does.  A weight is
 * ex2(x c - m_l c), c = it / ln 2 and m_l the logits' max: one FFMA and one
 * ex2 a token, where the scores' product (x it) and the difference (s - m)
 * were two more; the max score is m_l it (scores rise with logits) and the
 * picked token's score x it, the same bits as the scores'.  The weights
 * round otherwise than exp(s - m) (as the rows kernel's do, inside the
 * agreement tests' near-tie tolerance).  Scores that overflow, NaN and
 * infinities go through the general push on the scores (a row's status is
 * then FS_ROW_NONFINITE or its tokens are -inf: the general code decides). */
__device__ __forceinline__ void plain_block(fs_record &r, const fs_row_desc &d, int32_t id0,
                                            const float (&x)[FS_NOISE_BLOCK], NoiseCache &nc)
{
    const float it = d.inv_temp;
    const float ml = fs_block_max(x), m = fs_score_nobias(ml, it);
    /* |m| < 2^100: ml c cannot overflow either (c < 1.45 it) */
    if (!(fabsf(m) < 0x1p100f)) {
        float s[FS_NOISE_BLOCK];
#pragma unroll
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            s[i] = fs_score_nobias(x[i], it);
        fs_record_push_block(&r, &d, id0, FS_NOISE_BLOCK, s);
        return;
    }
    const float c = it * 1.4426950408889634f, nb = -ml * c;
    float w[FS_NOISE_BLOCK];
#pragma unroll
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        w[i] = fs_ex2(fmaf(x[i], c, nb));
    const float S = fs_block_sum(w);
    /* m finite: a weight is in [0, 1] unless its logit is NaN */
    if (!(S == S)) {
        r.flags |= FS_REC_NONFINITE;
        return;
    }
    fs_record_add_lse(&r, m, id0, S);
    if (fs_block_hopeless(m, r.best_key))
        return;
    const uint32_t b = (uint32_t)id0 / FS_NOISE_BLOCK;
    if (nc.wi != b >> 1) {
        nc.w = fs_philox_draw(d.seed, d.offset, d.position, FS_PURPOSE_GUMBEL, b >> 1);
        nc.wi = b >> 1;
    }
    const uint32_t wg = (b & 1u) ? nc.w.v[2] : nc.w.v[0], wu = (b & 1u) ? nc.w.v[3] : nc.w.v[1];
    fs_record_offer_words(&r, id0, x, w, m, S, wg, wu, it);
}

/* The score of the token at place p of a block's logits x (-inf past the
 * block), by a select chain: an index known only at run time would put x
 * in local memory. */
__device__ __forceinline__ float score_at(const float (&x)[FS_NOISE_BLOCK], uint32_t p, float it)
{
    float v = -INFINITY;
#pragma unroll
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        v = (uint32_t)i == p ? x[i] : v;
    return fs_score_nobias(v, it);
}

/* A block for plain_block but for the row's excluded or selected token
 * (verify's draft: xo, so its place, >= FS_NOISE_BLOCK when not here) or a
 * tree row's children (child), from its logits x: those tokens' scores
 * leave by select chains, as in the rows kernel's epilogue, and the rest is
 * a plain block.  The general push did the same work in code that only
 * such blocks ran -- a few of a call's blocks, so fetched cold each time,
 * behind the weight stream's loads: one block took 17-47 us (globaltimer,
 * 5-20-row verify on an H200), and the CTA that met it ended the scan 5-14
 * us after sampling's last CTA.  The pushes are the general path's: the
 * excluded token's score into the record alone (its log-sum-exp, and sel_s
 * when it is the selected one), the selected one's kept (sel_s), a tree
 * row's children's scores into child_s and its excluded children pushed in
 * token order; scores as the general path computes them. */
__device__ __forceinline__ void plain_block_except(Epi &e, const Args &a, int32_t id0,
                                                   uint32_t xo, uint32_t so, bool child,
                                                   float (&x)[FS_NOISE_BLOCK], NoiseCache &nc)
{
    const float it = e.d.inv_temp;
    uint32_t ex = xo < FS_NOISE_BLOCK ? 1u << xo : 0u;
    if (so < FS_NOISE_BLOCK && so != xo) {
        const float sv = score_at(x, so, it);
        if (sv > -INFINITY && sv < INFINITY)
            e.rec.sel_s = sv;
    }
    if (child) {
        const fs_tree_row *t = a.tree_rows + e.row;
        float *child_s = a.tree_child_s + e.row * FS_TREE_MAX_CHILDREN;
        const int nc_ = t->num_children;
        for (int k = 0; k < nc_; ++k) {
            const uint32_t at = (uint32_t)(t->children[k] - id0);
            if (at >= (uint32_t)FS_NOISE_BLOCK)
                continue;
            const float sv = score_at(x, at, it);
            if (sv > -INFINITY && sv < INFINITY)
                child_s[k] = sv;
        }
        ex |= fs_tree_block_excluded(t, id0);
    }
    /* one push in a loop over the tokens, not one inlined a position */
    while (ex) {
        const int i0 = __ffs(ex) - 1;
        ex &= ex - 1u;
        float v = -INFINITY;
#pragma unroll
        for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
            v = i == i0 ? x[i] : v;
            x[i] = i == i0 ? -INFINITY : x[i];
        }
        fs_record_push(&e.rec, &e.d, id0 + i0, fs_score_nobias(v, it));
    }
    /* nothing left to exclude: the fallback of plain_block (scores past
       2^100) must not push the tokens again */
    fs_row_desc d = e.d;
    d.excluded = -1;
    d.selected = -1;
    plain_block(e.rec, d, id0, x, nc);
}

/* Push noise block f (local ids v0 + 16 f ..) of buffer row rr.  FILT: the
 * op has filters (a separate instantiation, so that the kernels of the ops
 * without carry no candidate list; its blocks keep the general push, whose
 * rounding the filters' resolve repeats: kept_block_draw).  nc: the
 * thread's last noise draw (plain_block). */
template <bool FILT, int BN>
__device__ __forceinline__ void epi_block(Epi &e, const float *epi, int rr, int f, const Args &a,
                                          NoiseCache &nc)
{
    const int64_t v = e.v0 + FS_NOISE_BLOCK * f;
    const int64_t left = a.V - v;
    if (left <= 0)
        return;
    const int n = left < FS_NOISE_BLOCK ? (int)left : FS_NOISE_BLOCK;
    const int64_t g0 = a.vocab_offset + v;
    float s[FS_NOISE_BLOCK];
#pragma unroll
    for (int j = 0; j < FS_NOISE_BLOCK / 4; ++j) {
        const float4 l4 = *reinterpret_cast<const float4 *>(epi + epi_idx(rr, FS_NOISE_BLOCK * f + 4 * j));
        s[4 * j + 0] = l4.x;
        s[4 * j + 1] = l4.y;
        s[4 * j + 2] = l4.z;
        s[4 * j + 3] = l4.w;
    }
    /* the vocabulary's last block: its places past the end as masked tokens
       (a branch, not 16 selects a block) */
    if (n < FS_NOISE_BLOCK)
#pragma unroll
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            s[i] = i < n ? s[i] : -INFINITY;
    if (a.argmax) {
        argmax_block(e.rec, s, (int32_t)g0);
        return;
    }
    if (!a.allowed && !a.bias && !FILT && !(e.d.flags & FS_ROWF_GREEDY)) {
        /* a block holding verify's draft or a tree row's children is plain
           once they are out (plain_block_except): a chain given as a tree
           then pushes every block as verify does (test_gpu_tree's
           bit-for-bit equality).  The vocabulary's last block too (masked
           past the end above): in the general push it was the one block of
           the call to run that code, cold */
        const uint32_t xo = (uint32_t)((int64_t)e.d.excluded - g0);
        const uint32_t so = (uint32_t)((int64_t)e.d.selected - g0);
        const bool child = a.tree_rows && tree_tile_may_hold<BN>(epi, rr, e.v0) &&
                           fs_tree_block_has_child(a.tree_rows + e.row, (int32_t)g0);
        if (xo >= FS_NOISE_BLOCK && so >= FS_NOISE_BLOCK && !child)
            plain_block(e.rec, e.d, (int32_t)g0, s, nc);
        else
            plain_block_except(e, a, (int32_t)g0, xo, so, child, s, nc);
        return;
    }
    if (n == FS_NOISE_BLOCK && !a.allowed && !a.bias) {
        /* every block but a row's last, without mask or bias, in a loop of
           its own: the general one below, which the compiler does not
           unswitch, runs a branch per token */
#pragma unroll
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            s[i] = fs_score_nobias(s[i], e.d.inv_temp);
    } else {
#pragma unroll
        for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
            float b = 0.0f;
            bool ok = i < n;
            if (ok && (a.allowed || a.bias)) {
                const int64_t gid = g0 + i;
                if (a.allowed)
                    ok = (__ldg(&a.allowed[e.row * a.words + (gid >> 5)]) >> (gid & 31)) & 1u;
                if (a.bias && ok)
                    b = __ldg(&a.bias[e.row * a.global_vocab + gid]);
            }
            s[i] = !ok ? -INFINITY
                 : a.bias ? fs_score(s[i], b, e.d.inv_temp)
                          : fs_score_nobias(s[i], e.d.inv_temp);
        }
    }
    /* s is -inf past n, so the pushes take all FS_NOISE_BLOCK places: the
       same results, and no i < n test of their own, which the compiler kept
       as 16 bits of a register, rebuilt every block and unpacked by each
       push */
    if (FILT && e.filt && !FSH_PROBE_NO_LISTS)
        fs_cand_push_block(&e.cl, (int32_t)g0, s);
    /* a tile without the row's children has nothing to do here; the FILT
       kernels ask every block, as their 128- and 160-row forms spilled
       16-40 more bytes with the words */
    if (a.tree_rows && (FILT || tree_tile_may_hold<BN>(epi, rr, e.v0)))
        fs_tree_scan_block(&e.rec, e.d, a.tree_rows + e.row,
                           a.tree_child_s + e.row * FS_TREE_MAX_CHILDREN, (int32_t)g0,
                           FS_NOISE_BLOCK, s);
    /* a filtered row draws from its kept set alone (the resolve's kept
       record -- a tree row's pushes its kept blocks again, children's
       scores and all -- or the second pass): its blocks need no draw here */
    fs_record_push_block_draw(&e.rec, &e.d, (int32_t)g0, FS_NOISE_BLOCK, s,
                              !(FILT && e.filt));
}

template <int BN, bool FILT>
__device__ __forceinline__ void epi_blocks(Epi &e, const float *epi, int rr, int q, int from, int to,
                                           const Args &a)
{
    using C = Cfg<BN>;
    if (!e.scan)
        return;
    for (int j = from; j < to; ++j) {
        /* a draw a block: the blocks are TPB apart, or (TPB 1, the plain
           144-160-row kernels) spread over the k-blocks */
        NoiseCache nc;
        epi_block<FILT, BN>(e, epi, rr, q + C::TPB * j, a, nc);
    }
}

/* One vocabulary tile's MMA by the two MMA warpgroups: each k-block's stage
 * waited for, its wgmmas issued, and the stage before it released once they
 * retire (one wgmma group stays in flight).  between(kb) runs after k-block
 * kb's issue: the plain kernel pushes the previous tile's blocks there.  On
 * return acc holds the tile and the tile's stages are all released; s and
 * ph (the next stage and its phase) carry over to the next tile.  The two
 * releases are written out where they happen: as a helper function (or a
 * lambda) they made ptxas spill 24 bytes instead of 16 in the filtered
 * 160-row kernel. */
template <int BN, bool BF16, bool PAIR = false, class Between>
__device__ __forceinline__ void mma_tile(float (&acc)[BN / 2], uint32_t sW, uint32_t sH,
                                         uint32_t sBar, int KB, int wg, int lane, int &s,
                                         uint32_t &ph, Between &&between)
{
    using C = Cfg<BN>;
    int prev_s = 0;
    for (int kb = 0; kb < KB; ++kb) {
        mbar_wait(sBar + 8u * (uint32_t)s, ph); /* full */
        __syncwarp();
        const uint32_t aw = sW + s * C::W_BYTES + wg * (64 * BK * 2);
        const uint32_t ah = sH + s * C::H_BYTES;
        fence_acc(acc);
        wg_fence();
#pragma unroll
        for (int h = 0; h < C::KS; ++h)
            mma_kblock<BN, BF16>(acc, aw + h * C::WBOX, ah + h * C::HBOX, kb == 0 && h == 0);
        wg_commit();
        fence_acc(acc);
        between(kb);
        __syncwarp();
        wg_wait<1>();
        fence_acc(acc);
        if (kb > 0 && lane == 0) {
            mbar_arrive(sBar + 8u * (uint32_t)(C::STAGES + prev_s)); /* empty */
            /* a pair's stage is refilled (multicast) once both CTAs' warps
               are past it: each warp releases it in its peer too */
            if (PAIR)
                mbar_arrive_cluster(sBar + 8u * (uint32_t)(C::STAGES + prev_s),
                                    (blockIdx.x & 1u) ^ 1u);
        }
        prev_s = s;
        if (++s == C::STAGES) {
            s = 0;
            ph ^= 1u;
        }
    }
    wg_wait<0>();
    fence_acc(acc);
    if (lane == 0) {
        mbar_arrive(sBar + 8u * (uint32_t)(C::STAGES + prev_s));
        if (PAIR)
            mbar_arrive_cluster(sBar + 8u * (uint32_t)(C::STAGES + prev_s), (blockIdx.x & 1u) ^ 1u);
    }
}

/* The accumulators of consumer thread ct (0 .. NCT - 1) to the epilogue
 * buffer: wgmma's fragment layout, row = token of the tile. */
template <int BN>
__device__ __forceinline__ void stage_tile(float *epi, const float (&acc)[BN / 2], int ct)
{
    const int lane = ct & 31, wg = ct >> 7, wi = (ct >> 5) & 3;
    const int ga = lane >> 2, gc = lane & 3;
#pragma unroll
    for (int n = 0; n < BN / 8; ++n) {
        const int r0 = 8 * n + 2 * gc;
        const int v = 64 * wg + 16 * wi + ga;
        epi[epi_idx(r0, v)] = acc[4 * n + 0];
        epi[epi_idx(r0 + 1, v)] = acc[4 * n + 1];
        epi[epi_idx(r0, v + 8)] = acc[4 * n + 2];
        epi[epi_idx(r0 + 1, v + 8)] = acc[4 * n + 3];
    }
}

/* The op's end in a single launch, once a thread's records (and CTA 0's
 * descriptors) are written: a grid barrier, then CTA 0 ends the op (single
 * 1) or every CTA merges rows as the merge and finalize kernels would (2).
 * `threads` threads (tid 0 .. threads - 1, bar 1) run it; the block's other
 * threads call single_launch_wait.  probe: the plain kernel's timing probe
 * of CTA 0's end (FS_PROBE_TAIL builds), or NULL.  Both kernels pass their
 * NCT consumer threads, the merge kernel's count and so its order. */
static_assert(NCT == FS_MERGE_THREADS, "the merge kernel's order");
__device__ __forceinline__ void single_launch_end(const Args &a, unsigned char *smem,
                                                  int stage_bytes, int tid, int threads,
                                                  fs_probe_tail *probe)
{
    __threadfence();
    cooperative_groups::this_grid().sync();
    const unsigned long long t_sync = probe ? probe->now() : 0ull;
    fs_record *scratch = reinterpret_cast<fs_record *>(smem); /* the stages: all consumed */
    if (a.tail.single == 1) {
        if (blockIdx.x == 0)
            fs_op_tail_run(a.tail, a.recs, a.n_recs, a.rows, a.descs, tid, threads, 1, scratch,
                           stage_bytes / (int)sizeof(fs_record));
        if (probe)
            probe->at_end(tid, t_sync, (long long)a.rows, (int)a.tail.op);
    } else {
        fs_op_tail_grid(a.tail, a.recs, a.n_recs, a.rows, a.descs, tid, threads, 1, scratch);
    }
}

/* The grid barrier of single_launch_end for the threads that do not run
 * it. */
__device__ __forceinline__ void single_launch_wait()
{
    cooperative_groups::this_grid().sync();
}

/* EW: the MMA warpgroups (threads 0 .. NCT - 1).  A tile's accumulators wait
 * for the epilogue to be done with the buffer (BAR_FREE), are staged, and
 * announced (BAR_FULL), where the epilogue warps already wait: they
 * go there straight from BAR_FREE, so neither barrier holds the MMA
 * warpgroups longer than the pushes of the tile before.  (A bar.arrive at
 * BAR_FULL orders the stores as well, by PTX, but compute-sanitizer's
 * racecheck reports every staged value as a race then.)  In a single
 * launch they end the op, as the plain kernel's consumers do. */
template <int BN, bool BF16, bool PAIR>
__device__ __forceinline__ void ew_mma(const Args &a, uint32_t sW, uint32_t sH, uint32_t sBar,
                                       float *epi, unsigned char *smem)
{
    using C = Cfg<BN>;
    const int ct = threadIdx.x;
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i)
        acc[i] = 0.0f;
    int s = 0;
    uint32_t ph = 0;
    for (int vt = tile_slot<PAIR>(a.groups); vt < a.n_items; vt += tile_slots<PAIR>(a.slots)) {
        mma_tile<BN, BF16, PAIR>(acc, sW, sH, sBar, a.kblocks, ct >> 7, ct & 31, s, ph,
                                 [](int) {});
        ew_bar<BN>(BAR_FREE);
        stage_tile<BN>(epi, acc, ct);
        ew_bar<BN>(BAR_FULL);
    }
    if (!PAIR && a.tail.single) /* as ew_epilogue's `single` */
        single_launch_end(a, smem, C::STAGES * C::STAGE_BYTES, ct, NCT, nullptr);
}

/* EW: the epilogue warps (threads NCT .. NCT + ewt(BN) - 1), blocks by EwCfg
 * (in a pair, of its CTA's half: rows rank * BN ..).  They build the
 * descriptors in a single launch (CTA 0 stores them), push every staged
 * tile, merge each row's records across its threads, and write the (row,
 * slot) records. */
template <int BN, bool PAIR>
__device__ __forceinline__ void ew_epilogue(const Args &a, const float *epi, unsigned char *smem,
                                            unsigned int *tail_flag)
{
    using C = Cfg<BN>;
    using X = EwCfg<BN>;
    constexpr int EWT = X::EWT;
    const int ct = threadIdx.x - NCT;
    /* pairs never run as one launch (fs_hopper_scan_launch_ex): their
       kernels leave its code out */
    const bool single = !PAIR && a.tail.single;
    fs_pdl_wait(); /* the row descriptors (prep kernel) */
    fs_pdl_launch_dependents();
    /* every thread checks the whole layout (at most 160 requests, under
       the first tile's MMA): racecheck reported the staged tile's reads as
       racing with the next tile's stores in every verify run whose
       epilogue warpgroup had taken the OR with a bar.red, and in none
       without */
    const int32_t layout =
        single ? fs_scan_prep_layout(a.tail, a.rows, 0, 1, 0, nullptr) : FS_ROW_OK;
    const int w = ct >> 5, lane = ct & 31;
    const int t0 = w * X::T, t1 = t0 + X::T < X::TASKS ? t0 + X::T : X::TASKS;
    const int64_t r0 = row0<PAIR, BN>(a.groups);
    Epi es[X::NS];
    int lr[X::NS], fb[X::NS], fe[X::NS]; /* row in the buffer, its blocks fb .. fe - 1 here */
#pragma unroll
    for (int k = 0; k < X::NS; ++k) {
        Epi &e = es[k];
        fs_record_init(&e.rec);
        fs_cand_init(&e.cl);
        const int g = t0 / C::NBLK + k, b0 = g * C::NBLK;
        lr[k] = 32 * g + lane;
        fb[k] = (t0 > b0 ? t0 : b0) - b0;
        fe[k] = (t1 < b0 + C::NBLK ? t1 : b0 + C::NBLK) - b0;
        e.row = r0 + lr[k];
        e.v0 = 0;
        e.d.flags = 0;
        const bool row_ok = fb[k] < fe[k] && lr[k] < BN && e.row < a.rows;
        if (row_ok)
            e.d = single ? fs_scan_prep_row(a.tail, layout, e.row, a.global_vocab, nullptr)
                         : a.descs[e.row];
        e.scan = row_ok && (e.d.flags & FS_ROWF_VALID) ? 1 : 0;
        e.write = row_ok && fb[k] == 0 ? 1 : 0; /* the row's first blocks: it merges */
        e.filt = 0;
        if (e.write)
            tree_words<BN>(epi)[lr[k]] =
                tree_tile_bits(a, e, tile_slot<PAIR>(a.groups), tile_slots<PAIR>(a.slots));
    }
    if (single && blockIdx.x == 0)
        fs_scan_prep_store(a.tail, layout, a.rows, a.global_vocab, ct, EWT, nullptr);
    for (int vt = tile_slot<PAIR>(a.groups); vt < a.n_items; vt += tile_slots<PAIR>(a.slots)) {
        ew_bar<BN>(BAR_FREE); /* done with the tile before */
        ew_bar<BN>(BAR_FULL);
        if constexpr (X::ROW) {
            es[0].v0 = (int64_t)vt * BM;
            NoiseCache nc; /* the row's blocks in order: a draw serves two */
            if (es[0].scan)
                for (int f = 0; f < C::NBLK; ++f)
                    epi_block<false, BN>(es[0], epi, lr[0], f, a, nc);
        } else {
#pragma unroll
            for (int k = 0; k < X::NS; ++k) {
                es[k].v0 = (int64_t)vt * BM;
                if (es[k].scan)
                    for (int f = fb[k]; f < fe[k]; ++f) {
                        /* a draw a block: a draw carried over the loop
                           spilled 36-172 bytes in these kernels (two rows
                           a thread) where they spilled 0-20 */
                        NoiseCache nc;
                        epi_block<false, BN>(es[k], epi, lr[k], f, a, nc);
                    }
            }
        }
    }
    /* a row's records: its first warp's lane merges those of the same lane
       in the next warps (each holds it as its first row), through the
       stages, all consumed */
    if constexpr (!X::ROW) {
        fs_record *part = reinterpret_cast<fs_record *>(smem);
        static_assert(2 * EWT * sizeof(fs_record) <= 2 * C::STAGE_BYTES, "records in the stages");
#pragma unroll
        for (int k = 0; k < X::NS; ++k)
            part[2 * ct + k] = es[k].rec;
        fs_named_bar(BAR_EPI, EWT);
#pragma unroll
        for (int k = 0; k < X::NS; ++k) {
            if (!es[k].write)
                continue;
            const int last = ((t0 / C::NBLK + k + 1) * C::NBLK - 1) / X::T; /* the row's last warp */
            for (int v = w + 1; v <= last && v < EWT / 32; ++v)
                fs_record_merge(&es[k].rec, &part[2 * (32 * v + lane)]);
        }
    }
#pragma unroll
    for (int k = 0; k < X::NS; ++k)
        if (es[k].write)
            a.recs[es[k].row * a.n_recs + tile_slot<PAIR>(a.groups)] = es[k].rec;
    if (single) {
        __threadfence(); /* the records, CTA 0's descriptors */
        single_launch_wait();
    } else if (a.tail_on)
        fs_op_tail(a.tail, a.recs, a.n_recs, a.rows, a.descs, ct, EWT, BAR_EPI, tail_flag,
                   reinterpret_cast<fs_record *>(smem), /* the stages: all consumed */
                   (C::STAGES * C::STAGE_BYTES) / (int)sizeof(fs_record));
}

/* The filtered kernels' candidate lists at the end of a CTA: staged in the
 * stages, which every tile has consumed by then, [row][FS_HOPPER_TILE_LISTS]
 * as in global memory. */
template <int BN> __device__ __forceinline__ fs_cand_list *stage_lists_at(unsigned char *smem)
{
    static_assert(Cfg<BN>::STAGES * Cfg<BN>::STAGE_BYTES >=
                      BN * FS_HOPPER_TILE_LISTS * (int)sizeof(fs_cand_list),
                  "a CTA's lists fit the stages");
    return reinterpret_cast<fs_cand_list *>(smem);
}

/* Copy the staged lists out, a row's FS_HOPPER_TILE_LISTS (320 contiguous
 * bytes at a 16-byte boundary: launch checks the array) in 16-byte units by
 * every consumer.  Each thread storing its own 40-byte list, and a row's
 * first thread the row's empty ones (up to 7), queued their stores at every
 * CTA's end ('lg throttle' at the empty lists' stores: 1.7% of the 64-row
 * kernel's warp samples under ncu), and the merge kernel waits for the last
 * CTA: with the copy, all three filters on 151936 x 4096 cost 1.042 /
 * 1.048 / 1.071 x the unfiltered sample at 48 / 64 / 128 rows, against
 * 1.060 / 1.074 / 1.114 (H200, bench/results/2026-12-01-h200-filter-list-copy/).
 * The barrier after it frees the stages for fs_op_tail's scratch. */
template <int BN>
__device__ __forceinline__ void copy_lists(const Args &a, unsigned char *smem, int ct)
{
    constexpr int U = FS_HOPPER_TILE_LISTS * (int)sizeof(fs_cand_list) / 16;
    static_assert(U * 16 == FS_HOPPER_TILE_LISTS * (int)sizeof(fs_cand_list), "16-byte units");
    consumer_bar(); /* every row's lists staged */
    const int nrows = a.rows < BN ? (int)a.rows : BN;
    const float4 *src = reinterpret_cast<const float4 *>(stage_lists_at<BN>(smem));
    for (int i = ct; i < nrows * U; i += NCT) {
        const int r = i / U;
        float4 *dst = reinterpret_cast<float4 *>(a.cands + ((int64_t)r * a.n_recs + blockIdx.x) *
                                                                FS_HOPPER_TILE_LISTS);
        dst[i - r * U] = src[i];
    }
    consumer_bar();
}

template <int BN, bool BF16, bool FILT, bool EW, bool PAIR>
__global__ void __launch_bounds__(EW ? threads_ew(BN) : THREADS, 1)
    fsh_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                    const Args a)
{
    using C = Cfg<BN>;
    static_assert(!EW || (ew_bn(BN) && !FILT), "EW: 48-160-row blocks, no filters");
    static_assert(!PAIR || EW, "pairs: the EW kernels");
    constexpr int PW = EW ? (NCT + ewt(BN)) / 32 : NCW; /* the producer warp */
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem = smem_align_1024(smem_raw);
    const uint32_t sbase = smem_u32(smem);
    const uint32_t sW = sbase;
    const uint32_t sH = sbase + C::STAGES * C::W_BYTES;
    float *epi = reinterpret_cast<float *>(smem + C::STAGES * C::STAGE_BYTES);
    const uint32_t sBar = sbase + C::STAGES * C::STAGE_BYTES + C::EPI_BYTES;
    unsigned int *tail_flag = reinterpret_cast<unsigned int *>(
        smem + C::STAGES * C::STAGE_BYTES + C::EPI_BYTES + 2 * MAX_STAGES * 8);
#define FSH_FULL(s) (sBar + 8u * (uint32_t)(s))
#define FSH_EMPTY(s) (sBar + 8u * (uint32_t)(C::STAGES + (s)))

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == PW * 32) {
        for (int s = 0; s < C::STAGES; ++s) {
            mbar_init(FSH_FULL(s), 1);
            mbar_init(FSH_EMPTY(s), NCW * (PAIR ? 2 : 1)); /* a pair: both CTAs' warps */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    /* a pair: the peer's barriers exist before a multicast or an arrive reaches them */
    if (PAIR)
        cluster_sync();
    else
        __syncthreads();
    const int KB = a.kblocks;
    const int rank = PAIR ? (int)(blockIdx.x & 1u) : 0;
    const int hrow0 = row0<PAIR, BN>(a.groups); /* the first row of the CTA's H boxes */

    if (warp == PW) {
        /* ---------------- producer: one thread issues every TMA ---------- */
        if (lane == 0) {
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmw))
                         : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmh))
                         : "memory");
            /* W evict_normal with its 256-byte promotion although a tile
               is dead after its only use: there evict_first costs 1.5-4% a
               call on an H100 once the L2 is full of dirty lines, as it is
               after the previous layers (and after the benchmark's flush)
               -- in the rows kernel it raised DRAM reads ~4% past W's size
               (ncu), likely the promotion's other half dropped before its
               load.  Without promotion (fs_w_stream) W has no hint
               (a.w_hint, fs_w_hint_for). */
            const uint64_t pol_w = policy_of_w_hint(a.w_hint);
            const uint64_t pol_h = policy_evict_last();
            int s = 0;
            uint32_t ph = 0;
            for (int vt = tile_slot<PAIR>(a.groups); vt < a.n_items; vt += tile_slots<PAIR>(a.slots)) {
                for (int kb = 0; kb < KB; ++kb) {
                    mbar_wait(FSH_EMPTY(s), ph ^ 1u);
                    mbar_expect_tx(FSH_FULL(s), (uint32_t)a.stage_tx);
#pragma unroll
                    for (int h = 0; h < C::KS; ++h) {
                        const int k = (kb * C::KS + h) * BK; /* past D: zero fill */
                        if (PAIR) {
                            /* each CTA loads half the W tile for both (tmw's
                               boxes are BM / 2 tokens), and its own rows' H */
                            constexpr int HALF = C::WBOX / 2;
                            tma_load_w_multicast(sW + s * C::W_BYTES + h * C::WBOX + rank * HALF,
                                                 &tmw, k, vt * BM + rank * (BM / 2), FSH_FULL(s),
                                                 (uint16_t)3u, a.w_hint, pol_w);
                        } else {
                            tma_load_w(sW + s * C::W_BYTES + h * C::WBOX, &tmw, k, vt * BM,
                                       FSH_FULL(s), a.w_hint, pol_w);
                        }
                        tma_load_2d(sH + s * C::H_BYTES + h * C::HBOX, &tmh, k, hrow0,
                                    FSH_FULL(s), pol_h);
                    }
                    if (++s == C::STAGES) {
                        s = 0;
                        ph ^= 1u;
                    }
                }
            }
        }
        if (!FILT && !PAIR && a.tail.single) { /* pairs: never one launch */
            /* the consumers' grid barrier (__syncthreads inside) counts this
               warp too */
            __syncwarp();
            single_launch_wait();
        }
        if (PAIR) { /* no CTA leaves while its peer may still arrive on its barriers */
            __syncwarp();
            cluster_sync();
        }
        return;
    }

    if constexpr (EW) {
        if (warp < NCW)
            ew_mma<BN, BF16, PAIR>(a, sW, sH, sBar, epi, smem);
        else
            ew_epilogue<BN, PAIR>(a, epi, smem, tail_flag);
        if (PAIR)
            cluster_sync();
        return;
    }

    /* ---------------- consumers: 2 warpgroups ---------------------------- */
    /* the producer streams W and H regardless; the row descriptors come from
       the prep kernel, which may still be running (programmatic launch) */
    fs_pdl_wait();
    fs_pdl_launch_dependents(); /* a merge kernel (tensor parallel) may launch now */
    const int ct = threadIdx.x;          /* 0 .. 255 */
    const int wg = ct >> 7;              /* vocabulary half of the tile */
    const int rr = ct / C::TPB, q = ct % C::TPB; /* epilogue: row in block, first block */
    const bool e_active = ct < C::ACTIVE;
    /* blocks of the previous tile to push after each k-block */
    const int per_kb = (C::UNITS + KB - 1) / KB;

    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i)
        acc[i] = 0.0f;
    fs_probe_tail probe; /* FS_PROBE_TAIL builds only */
    probe.at_start(ct);

    Epi e;
    fs_record_init(&e.rec);
    e.row = rr;
    e.v0 = 0;
    e.d.flags = 0;
    const bool row_ok = e_active && e.row < a.rows;
    if (!FILT && a.tail.single) {
        /* one launch: no prep kernel ran (scan_prep.cuh); CTA 0 stores what
           the op's end reads.  The offsets go through the staging buffer,
           which the first tile's stage_tile fills only after every
           consumer has passed consumer_bar (a verify call has at most
           rows <= BN requests). */
        int32_t *s_off = reinterpret_cast<int32_t *>(epi);
        static_assert(C::EPI_BYTES >= (BN + 1) * (int)sizeof(int32_t), "offsets in epi");
        const int32_t layout = fs_scan_prep_layout(a.tail, a.rows, ct, NCT, 1, s_off);
        if (row_ok)
            e.d = fs_scan_prep_row(a.tail, layout, e.row, a.global_vocab, s_off);
        if (blockIdx.x == 0)
            fs_scan_prep_store(a.tail, layout, a.rows, a.global_vocab, ct, NCT, s_off);
    } else if (row_ok) {
        e.d = a.descs[e.row];
    }
    e.scan = row_ok && (e.d.flags & FS_ROWF_VALID) ? 1 : 0;
    e.write = row_ok && q == 0 ? 1 : 0;
    e.filt = FILT && e.scan && (e.d.flags & FS_ROWF_FILTER) ? 1 : 0;
    if (!FILT && e_active && q == 0) /* read after the first tile's consumer_bar */
        tree_words<BN>(epi)[rr] =
            tree_tile_bits(a, e, blockIdx.x, gridDim.x);
    fs_cand_init(&e.cl);
    bool pending = false;
    int s = 0;
    uint32_t ph = 0;

    for (int vt = blockIdx.x; vt < a.n_items; vt += gridDim.x) {
        int done = 0;
        mma_tile<BN, BF16>(acc, sW, sH, sBar, KB, wg, lane, s, ph, [&](int kb) {
            /* the pending tile's blocks, spread evenly over this tile's
               k-blocks so that no k-block waits long for its consumer */
            if (pending && done < C::UNITS && kb * C::UNITS >= done * KB) {
                const int to = done + per_kb < C::UNITS ? done + per_kb : C::UNITS;
                epi_blocks<BN, FILT>(e, epi, rr, q, done, to, a);
                done = to;
            }
        });
        if (pending)
            epi_blocks<BN, FILT>(e, epi, rr, q, done, C::UNITS, a);
        consumer_bar(); /* every thread is done reading the buffer */
        stage_tile<BN>(epi, acc, ct);
        consumer_bar(); /* the buffer holds this tile */
        pending = true;
        e.v0 = (int64_t)vt * BM;
    }
    if (pending)
        epi_blocks<BN, FILT>(e, epi, rr, q, 0, C::UNITS, a);
    /* merge the TPB threads of each row (whole warps take part) and write
       the (row, CTA) record */
    if (e_active) {
#pragma unroll
        for (int m = 1; m < C::TPB; m <<= 1) {
            const fs_record o = fs_record_shfl_xor(e.rec, m);
            fs_record_merge(&e.rec, &o);
        }
        if (e.write)
            a.recs[e.row * a.n_recs + blockIdx.x] = e.rec;
        if (FILT && row_ok) {
            /* every thread's list unmerged (the more lists, the longer the
               exact prefix they give: src/cand_list.h), and the row's empty
               ones past its TPB threads, staged for the copy below */
            fs_cand_list *sl = stage_lists_at<BN>(smem) + e.row * FS_HOPPER_TILE_LISTS;
            if (!e.filt)
                fs_cand_init(&e.cl);
            sl[q] = e.cl;
            for (int k = q + C::TPB; k < FS_HOPPER_TILE_LISTS; k += C::TPB) {
                fs_cand_list none;
                fs_cand_init(&none);
                sl[k] = none;
            }
        }
    }
    if (FILT)
        copy_lists<BN>(a, smem, ct);
    probe.at_done(ct);
    if (!FILT && a.tail.single) {
        /* every CTA's records (and CTA 0's descriptors) written; the op
           ends as the last-CTA tail (single 1) or as the merge and
           finalize kernels (2) would end it */
        single_launch_end(a, smem, C::STAGES * C::STAGE_BYTES, ct, NCT, &probe);
    } else if (a.tail_on) {
        fs_op_tail(a.tail, a.recs, a.n_recs, a.rows, a.descs, ct, NCT, 1, tail_flag,
                   reinterpret_cast<fs_record *>(smem), /* the stages: all consumed */
                   (C::STAGES * C::STAGE_BYTES) / (int)sizeof(fs_record));
    }
#undef FSH_FULL
#undef FSH_EMPTY
}

#else /* not sm_90a: the kernel exists (for the host stub) but is empty */

template <int BN, bool BF16, bool FILT, bool EW, bool PAIR>
__global__ void __launch_bounds__(EW ? threads_ew(BN) : THREADS, 1)
    fsh_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                    const Args a)
{
}

#endif /* FSH_SM90A */

/* ---------------------------------------------------------------- host -- */

template <int BN, bool BF16, bool FILT, bool EW, bool PAIR> cudaError_t configure(int device)
{
    static unsigned long long done = 0;
    return set_smem_once(reinterpret_cast<const void *>(fsh_scan_kernel<BN, BF16, FILT, EW, PAIR>),
                         Cfg<BN>::SMEM, &done, device);
}

template <int BN, bool BF16, bool FILT, bool EW = false, bool PAIR = false>
cudaError_t launch_one(const CUtensorMap &tw, const CUtensorMap &th, const Args &a,
                       const fs_pdl_config &pc, int device)
{
    cudaError_t e = configure<BN, BF16, FILT, EW, PAIR>(device);
    if (e == cudaSuccess)
        e = cudaLaunchKernelEx(&pc.cfg, fsh_scan_kernel<BN, BF16, FILT, EW, PAIR>, tw, th, a);
    return e;
}

/* 2-CTA clusters of the pairs' kernel for row block BN the current device
 * holds at once (0: unknown), asked once per device and block. */
template <int BN> int pair_clusters()
{
    static int known[64];
    return fs_max_clusters_2(known, fsh_scan_kernel<BN, true, false, true, true>, threads_ew(BN),
                             Cfg<BN>::SMEM,
                             [](int device) { return configure<BN, true, false, true, true>(device); });
}

/* tw: W in boxes of BM tokens, or BM / 2 for pairs (slots: the grid's
 * clusters).  ew, pair: the EW kernel, in pairs or not, as
 * fs_hopper_kernel_plan chose for this block. */
template <int BN>
cudaError_t launch(const CUtensorMap &tw, const void *H, int is_bf16, int64_t D, int64_t rows,
                   const Args &a0, int grid, bool ew, bool pair, int device,
                   cudaStream_t stream)
{
    CUtensorMap th;
    /* an H box of the live rows only: a box reaching past H's last row (15
       of 16 rows at 1 row) made 1-4-row calls 3-5 us slower than 16-row
       ones; the rows past it keep whatever the stage held, and their
       accumulators are never read (their rows are not scanned).  A pair's
       second half may reach past it: the TMA fills zeros there */
    const int hb = rows < BN ? (int)rows : BN;
    cudaError_t e = make_map(&th, H, is_bf16, D, rows, hb);
    if (e != cudaSuccess)
        return e;
    Args a = a0;
    a.kblocks = (a0.kblocks + Cfg<BN>::KS - 1) / Cfg<BN>::KS; /* stages per tile */
    a.stage_tx = Cfg<BN>::KS * (Cfg<BN>::WBOX + hb * BK * 2);
    /* programmatic launch: overlaps the prep kernel (see fs_pdl_wait above);
       a single-launch op has no prep kernel and must not overlap the
       caller's kernel before it (which may still be writing H): a plain
       launch, cooperative for its grid barrier (the grid is at most one CTA
       an SM, fs_hopper_records_per_row) */
    const bool filt = a.cands != nullptr;
    if (reinterpret_cast<uintptr_t>(a.cands) % 16 != 0)
        return cudaErrorMisalignedAddress; /* copy_lists' 16-byte stores */
    if ((ew && !ew_bn(BN)) || (pair && (!ew || !pair_kernel_bn(BN) || a0.tail.single)) ||
        (pair_only_bn(BN) && !pair))
        return cudaErrorInvalidValue; /* pairs: pair_bn's EW kernels, no single launch */
    fs_pdl_config pc(dim3((unsigned)(pair ? 2 * grid : grid)), dim3(ew ? threads_ew(BN) : THREADS),
                     Cfg<BN>::SMEM, stream, !a0.tail.single);
    if (a0.tail.single)
        pc.cooperative();
    if constexpr (pair_kernel_bn(BN)) {
        if (pair) {
            pc.cluster_x(2);
            e = is_bf16 ? launch_one<BN, true, false, true, true>(tw, th, a, pc, device)
                        : launch_one<BN, false, false, true, true>(tw, th, a, pc, device);
            return e != cudaSuccess ? e : cudaGetLastError();
        }
    }
    if constexpr (ew_bn(BN) && !pair_only_bn(BN)) {
        if (ew) {
            e = is_bf16 ? launch_one<BN, true, false, true>(tw, th, a, pc, device)
                        : launch_one<BN, false, false, true>(tw, th, a, pc, device);
            return e != cudaSuccess ? e : cudaGetLastError();
        }
    }
    if constexpr (!plain_bn(BN)) {
        return cudaErrorInvalidValue; /* pick_bn gives it to the EW kernels only */
    } else {
        if (is_bf16)
            e = filt ? launch_one<BN, true, true>(tw, th, a, pc, device)
                     : launch_one<BN, true, false>(tw, th, a, pc, device);
        else
            e = filt ? launch_one<BN, false, true>(tw, th, a, pc, device)
                     : launch_one<BN, false, false>(tw, th, a, pc, device);
        return e != cudaSuccess ? e : cudaGetLastError();
    }
}

/* The smallest row block that holds `rows` (<= FS_HOPPER_TILE_MAX_ROWS)
 * and that the launch has a kernel for: ew, the EW kernels take it;
 * step16, not the 136- or 152-row one. */
int pick_bn(int64_t rows, bool ew, bool step16)
{
    return TileBns::holding(rows, [ew, step16](int bn) {
        return ew ? !(step16 && step8_bn(bn)) : plain_bn(bn);
    });
}

int64_t num_tiles(int64_t V_local)
{
    return (V_local + BM - 1) / BM;
}

/* Row groups of pairs for `rows` rows: one up to 2 FS_HOPPER_TILE_MAX_ROWS,
 * then as many as hold them in halves of at most FS_HOPPER_TILE_MAX_ROWS. */
int pair_groups(int64_t rows)
{
    return (int)((rows + 2 * FS_HOPPER_TILE_MAX_ROWS - 1) / (2 * FS_HOPPER_TILE_MAX_ROWS));
}

/* A pair's half: the smallest of PairBns that holds half the rows of a
 * group.  96-row halves (161-192 rows) were measured too: 3-12% slower
 * than the rows kernel's 192-row CTA for sample and verify on three shapes,
 * draft argmax even (bench/results/2026-11-29-h200-epilogue-instructions/);
 * 104-row ones at 176 rows 15-30% slower
 * (bench/results/2026-11-30-h200-pair-halves/). */
int pair_bn(int64_t rows)
{
    const int64_t g = 2 * pair_groups(rows);
    return PairBns::holding((rows + g - 1) / g, [](int) { return true; });
}

/* The rows the rows kernel multiplies for `rows` rows: whole 128- or
 * 192-row blocks, whichever pads fewer (fs_hopper_rows_block weighs more,
 * but pads no fewer). */
int64_t rows_kernel_padded(int64_t rows)
{
    const int64_t a = (rows + 127) / 128 * 128, b = (rows + 191) / 192 * 192;
    return a < b ? a : b;
}

int pair_slots(int bn)
{
    return PairBns::with(bn, [](auto b) { return pair_clusters<decltype(b)::value>(); });
}

/* The rows whose halves are 128 rows (241-256), which the pairs take only
 * where the options say (pairs_128, fs_hopper_pairs_128): there the rows
 * kernel's two clustered 128-row blocks pad no more rows, with 256-token
 * tiles that read H half as often. */
bool pairs_gap(int64_t rows, const fs_hopper_opts *opts)
{
    return pair_bn(rows) == 128 && !(opts && opts->pairs_128);
}

/* Pairs: FS_HOPPER_TILE_MAX_ROWS + 1 up to twice that many rows, in two
 * halves of the smallest EW block that holds half of them (rank 0 the
 * first BN rows), where the options want them (wants_pairs) and the device
 * holds their clusters. */
bool wants_pairs(int64_t rows, const fs_hopper_opts *opts)
{
    if (rows <= FS_HOPPER_TILE_MAX_ROWS || !opts || opts->no_epi_wg || opts->cands ||
        opts->kernel == FS_HOPPER_ROWS)
        return false;
    if (rows <= 2 * FS_HOPPER_TILE_MAX_ROWS)
        return !pairs_gap(rows, opts) && opts->tile_pairs_min > 0 && rows >= opts->tile_pairs_min;
    /* several row groups: where they multiply fewer rows than the rows kernel */
    return opts->tile_groups_max > 0 && rows <= opts->tile_groups_max &&
           2 * pair_groups(rows) * pair_bn(rows) < rows_kernel_padded(rows);
}
/* Pairs a row group (the slots of the launch): as many as the device holds
 * at once, in equal shares of the groups. */
int pair_slots_per_group(int64_t rows)
{
    return pair_slots(pair_bn(rows)) / pair_groups(rows);
}
bool use_pairs(int64_t rows, const fs_hopper_opts *opts)
{
    return wants_pairs(rows, opts) && pair_slots_per_group(rows) > 0;
}

/* The smallest row block the EW kernels take under opts (INT_MAX: none). */
int ew_min_of(const fs_hopper_opts *opts)
{
    return opts && (opts->no_epi_wg || opts->cands)         ? INT_MAX
           : opts && fs_hopper_ew_min_valid(opts->ew_min_bn) ? opts->ew_min_bn
                                                             : 128;
}

} // namespace fsh

extern "C" int fs_hopper_supported(int64_t D, int is_16bit)
{
    return is_16bit && D > 0 && D % 8 == 0 && D <= ((int64_t)1 << 31) ? 1 : 0;
}

extern "C" int fs_hopper_aligned(const void *W, const void *H)
{
    return ((uintptr_t)W % 16u) == 0 && ((uintptr_t)H % 16u) == 0 ? 1 : 0;
}

/* H200 (4.8 TB/s, the H100's SMs), A/B of both kernels at 64-96 rows on
 * three shapes, the rule then checked on six
 * (bench/results/2026-11-28-h200-rows-kernel-early/): an op turns
 * compute-bound at fewer rows than on an H100, and the tile kernel's 80- and
 * 96-row blocks give each epilogue thread 4 noise blocks a tile (2 at 64
 * rows), which the next tile's MMA hides less the shorter D makes a tile.
 * Sample and verify at 81-96 rows: the rows kernel 1-16% faster on five
 * shapes (verify of 95 rows on 262144 x 3072 0.69 -> 0.49 ms), within the
 * spread on 152064 x 5120; at 65-80 rows 4-16% faster with D = 3072, 1-10% slower
 * with D = 4096.  Tree verify likewise: 0.5-17% faster where it changes
 * the kernel (262144 x 3072 at 65-80 rows 1.10-1.15 -> 1.03 x the matmul).
 * Draft argmax, whose epilogue is a max: 4-5% faster at 88-96 rows with
 * D = 3072, even or 1-5% slower elsewhere. */
extern "C" int64_t fs_hopper_rows_min_fast_hbm(int argmax, int64_t D)
{
    if (argmax)
        return D <= 3072 ? 81 : FS_HOPPER_ROWS_MIN_DEFAULT;
    return D <= 3072 ? 65 : 81;
}

/* H200, the tile kernel with its epilogue warpgroup (128-, 144- and 160-row
 * blocks) against the rows kernel, each forced, in one process, single
 * launch on (bench/results/2026-11-29-h200-tile-ew-choice/, x cuBLAS's
 * matmul of the same run).  129-160 rows: the tile kernel is faster for
 * sample, draft argmax and verify on 151936 x 4096, 128256 x 8192 and
 * 262144 x 3072 (160 rows: sample 1.25-1.26 -> 1.14 on the first, 1.26-1.32
 * -> 1.13-1.15 on the second; draft argmax 1.22 -> 1.07-1.09 and 1.24-1.25
 * -> 1.08-1.10), but for verify of 160 rows on the third (even).  97-128
 * rows: faster for every op with D <= 5120 (152064 x 5120: sample 1.10-1.17
 * -> 1.02-1.07, verify 1.14-1.18 -> 1.04-1.05) but for draft argmax on
 * 262144 x 3072 (even); with D = 8192 the rows kernel's 128-row block is
 * the faster (draft argmax 0.98-1.02 against 1.02-1.06, sample 1.02-1.04
 * against 1.04-1.08 at 112-128 rows).  Tree verify, whose children's
 * scores the one epilogue warpgroup also pushes: the tile kernel 7% faster
 * at 144-160 rows on 128256 x 8192, 4-15% slower at 108-160 rows on
 * 262144 x 3072 and at 144-160 on 151936 x 4096, 6% faster at 108-128 rows
 * there -- trees take it only where D > 5120.  D between 5120 and 8192 is
 * not measured: the rows kernel's side. */
extern "C" int64_t fs_hopper_rows_max_fast_hbm(int tree, int64_t D)
{
    if (D > 5120)
        return 128;
    return tree ? 0 : 96;
}

extern "C" int fs_hopper_ew_min_valid(int bn)
{
    /* a row block of the launch (TileBns) that has EW kernels, up to 128
       (past it every block takes them) */
    return fsh::TileBns::has(bn) && fsh::ew_bn(bn) && bn <= 128;
}

/* H200, the tile kernel's 48- and 64-row blocks with epilogue warps (EW)
 * against the plain ones, in one process (bench/results/2026-11-29-h200-
 * ew-48/, call 5): with D <= 4096 verify of 7-12 requests (35-60 rows)
 * 1-2.5% faster on 262144 x 3072 and 151936 x 4096, sample of 48-64 rows
 * 0.4-1.5%, trees of 48-64 rows 1.6-2.5%, draft argmax even; with D = 8192
 * verify and trees 0.3-1% faster but sample 0.4-1.5% and draft argmax
 * 0.5-1.5% slower, where a tile's MMA is twice as long for the same pushes
 * and the plain kernel's pushes between its k-blocks hide better.  D
 * between 4096 and 8192 is not measured: 5120 goes with the shorter. */
extern "C" int fs_hopper_ew_min_fast_hbm(int64_t D)
{
    return D <= 5120 ? 48 : 80;
}

/* H200 with the epilogue warps from 80 rows or fewer (fs_hopper_opts::ew_min_bn),
 * which replaces the two rules above: the tile kernel's 80- and 96-row EW
 * blocks against the rows kernel and the plain 80- and 96-row blocks, each
 * forced, in one process (bench/results/2026-11-29-h200-epilogue-
 * instructions/, calls 3-4).  72-96 rows: the EW blocks the fastest for
 * every op on 151936 x 4096, 128256 x 8192 and 262144 x 3072 (verify of 16
 * requests on the third 0.47-0.49 -> 0.42 ms, sample of 96 rows on the
 * second 0.57 -> 0.53-0.54), but for sample of 80 and draft argmax of 88
 * rows on the second (even).  Tree verify of 72-160 rows on the first and
 * third 1-7% faster (128 rows on the third even), on the second 1-3% faster
 * at 72-96 rows and 3.5% slower at 128.  With D = 8192 the rows kernel's
 * 128-row block stays the faster at 104-128 rows (sample of 128 rows 0.54
 * against 0.56 ms, draft argmax 0.53 against 0.56).  So the rows kernel
 * takes 97-128 rows where D > 5120 and no count up to 160 elsewhere.
 * Rechecked inside one process, both ways round (flashspec_bench --alt /
 * tree_bench's tree@alt FLASHSPEC_HOPPER_ROWS_MIN=161 on 128256 x 8192;
 * bench/results/2026-12-01-h200-alt-rechecks/, a cell's two directions'
 * geometric mean, EW tile / rows kernel): sample, draft argmax and verify
 * 1.00-1.04 at 104-128 rows, so they keep the rows kernel there; at 97-103
 * rows (bench/results/2026-12-01-h200-filter-list-copy/, calls 1 and 6,
 * with the alt-rechecks' 100 rows) sample 0.983-0.998, draft argmax
 * 0.987-1.016 and verify of 20 requests (100 rows) 0.966-0.978 in three
 * calls (21 requests, 105 rows: 0.989), so those take the EW tile kernel;
 * trees 0.96-0.98 at 104-128 rows (ten cells, four tree shapes, two calls),
 * so trees take the EW blocks up to 160 rows at every D. */
extern "C" void fs_hopper_rows_span_ew80(int tree, int64_t D, int64_t *rows_min,
                                         int64_t *rows_max)
{
    const bool rows_kernel = !tree && D > 5120;
    *rows_min = rows_kernel ? FS_HOPPER_ROWS_MIN_EW80_WIDE : FS_HOPPER_TILE_MAX_ROWS + 1;
    *rows_max = rows_kernel ? 128 : 0;
}

/* H200, the pairs against the rows kernel in one process.  257-320 rows
 * (bench/results/2026-11-29-h200-tile-pairs/), where the rows kernel runs
 * three 128-row blocks (or 192-row pairs): the pairs 5-22% faster for
 * sample, draft argmax and verify on four shapes (sample of 320 rows on
 * 151936 x 4096 0.85-0.94 -> 0.75 ms, verify of 52 requests there
 * 0.75-0.78 -> 0.62); tree verify of 320 rows 13% faster on 128256 x 8192,
 * 10-16% on 151936 x 4096 and 262144 x 3072 with the epilogue's block push
 * at half its instructions (bench/results/2026-11-29-h200-epilogue-
 * instructions/).  193-240 rows, which the rows kernel pads to 256, in
 * 104-, 112- and 120-row halves (bench/results/2026-11-30-h200-pair-halves/,
 * four alternated rounds): sample 4-12% faster on 151936 x 4096, 128256 x
 * 8192 and 262144 x 3072 (even at 232-240 rows on the second), verify of
 * 39-48 requests 1-13% (on the first 0.56-0.59 -> 0.50-0.52 ms), trees of
 * 200-240 rows 1-11%; draft argmax 2-7% faster at 200-232 rows on the first
 * and 193-224 on the third, even or faster at 193-216 rows on the second
 * and 1-4% slower at 224-240 there.  So from 193 rows (241-256 as
 * fs_hopper_pairs_128 says), and from 257 for draft argmax where D >
 * 5120 -- until draft argmax on 128256 x 8192 was rechecked inside one
 * process, both ways round (flashspec_bench --alt FLASHSPEC_TILE_PAIRS_MIN;
 * bench/results/2026-12-01-h200-alt-rechecks/, two calls, a cell's two
 * directions' geometric mean a row count): the pairs 0.96-0.98 x the rows
 * kernel's time at 196-216 and 224 rows, 0.99-1.02 at 193, 220 and
 * 228-240, 0.99 on average.  Now from 193 for every op and D.  An H100 is
 * not measured: the rows kernel keeps it. */
extern "C" int64_t fs_hopper_pairs_min(int fast_hbm)
{
    return fast_hbm ? 193 : 0;
}

/* H200, the pairs in row groups against the rows kernel, each forced, in
 * one process (bench/results/2026-11-30-h200-pair-groups/, two calls of two
 * alternated rounds), at row counts where the groups multiply fewer rows:
 * two and three groups (400-864 rows; verify of 80-160 requests) faster in
 * every cell on 151936 x 4096, 128256 x 8192 and 262144 x 3072 but two
 * (sample of 528 rows and verify of 106 requests on the second, even and
 * 1.5% slower): sample of 400 rows 1.00-1.03 -> 0.87 ms on the first,
 * 1.67-1.68 -> 1.40-1.46 on the second, verify of 160 requests 1.93-1.96
 * -> 1.70-1.72 on the first, draft argmax of 800 rows 2.94-2.95 -> 2.65-2.67
 * on the second; DRAM reads W once (ncu).  Four groups (1040-1088 rows, 64
 * of the 66 clusters) mixed: draft argmax 3-7% faster, sample of 1040-1088
 * rows 1-2% slower on the first.  Trees: 528 rows even (1% faster on the
 * first, 1-2% slower on the second), 1040 rows in four groups 10% slower on
 * the first.  A third call, the default against the build before at 400-900
 * rows: sample and verify 2-17% faster or even in every cell (verify of 176
 * requests on 151936 x 4096 2.01 -> 1.70 ms), draft argmax 3-12% faster at
 * 400, 600 and 900 rows but 2-17% slower at 464 rows and 4-6% at 700 on
 * 151936 x 4096; on another lease, three rounds of draft argmax alone at
 * 400-900 rows, the groups 1-13% faster in all 24 cells (464 rows on 128256
 * x 8192 1.61-1.68 -> 1.55-1.57 ms; under ncu 464 and 700 rows 3-5% fewer
 * cycles on two shapes).  Trees, once a block of the tile kernels looks up
 * the row's children only in tiles that hold one (tree_tile_bits), in one
 * process against the rows kernel (bench/results/2026-11-30-h200-tree-tile-
 * bits/, tree_bench's tree@alt): 408 rows 14-17% faster on all three
 * shapes, 680-816 rows 7-15%, 528 rows even (1-3% faster, within the 2-5%
 * that the same kernel moves by there).  So two and three groups (up to
 * 960 rows) for every op.  Four groups (1025-1088 rows, 136-row halves
 * against the rows kernel's 1152 rows) inside one process, both ways round
 * (flashspec_bench --alt FLASHSPEC_TILE_GROUPS_MAX;
 * bench/results/2026-12-01-h200-alt-rechecks/): the chain ops 1-3% faster
 * on 128256 x 8192 and 262144 x 3072 and even on 151936 x 4096 (the two
 * directions' geometric mean a cell, 0.967-1.009); trees' four groups
 * measured even there (0.955-1.036, tree_bench's tree@alt).  So four groups
 * for sample, draft argmax and verify, three for trees.  An H100 is not
 * measured. */
extern "C" int64_t fs_hopper_groups_max(int fast_hbm, int tree, int64_t D)
{
    (void)D;
    if (!fast_hbm)
        return 0;
    return tree ? 3 * 2 * FS_HOPPER_TILE_MAX_ROWS : 4 * 2 * 136; /* 136-row halves, as measured */
}

/* H200, 241-256 rows, the pairs' 128-row halves against the rows kernel's
 * two clustered 128-row blocks in one process
 * (bench/results/2026-11-30-h200-pair-halves/, calls 2 and 7, four
 * alternated rounds each): sample 2-5% faster on 151936 x 4096 and 262144 x
 * 3072 and 1-6% slower on 128256 x 8192, verify of 49-51 requests 4-6%
 * faster on the first two (even at 245 rows on the first) and 1-5% slower
 * on the third; draft argmax 3-12% slower on 151936 x 4096 and 128256 x
 * 8192; trees of 248-256 rows 1-3% faster in one call and up to 8% slower
 * in the other.  So sample and verify where D <= 5120 (D between 4096
 * and 8192 not measured: 5120 with the shorter).  Rechecked inside one
 * process, both ways round (flashspec_bench --alt / tree_bench's tree@alt,
 * FLASHSPEC_TILE_PAIRS_128; bench/results/2026-12-01-h200-alt-rechecks/,
 * a cell's two directions' geometric mean): sample and verify 0.924-1.005 x
 * the rows kernel's time in pairs where D <= 4096, 1.014-1.026 with D =
 * 8192; draft argmax 1.002-1.047 -- the rule holds.  Trees of 244-256 rows
 * (five tree shapes a head): 0.924-0.973 on 262144 x 3072, 0.957-1.025
 * (mean 0.995) on 151936 x 4096 and 0.978-1.022 (mean 0.994) on 128256 x
 * 8192.  So trees take them at every D. */
extern "C" int fs_hopper_pairs_128(int fast_hbm, int sample_verify, int tree, int64_t D)
{
    return fast_hbm && (tree || (sample_verify && D <= 5120));
}

/* Measured on H100 (A/B runs of each kernel forced, both shapes; the
 * commits that set these limits carry the figures): the tile kernel is
 * faster up to 96 rows; at 97-128 rows the rows kernel (one row block, half
 * the H traffic through L2) is as fast for draft argmax and 1-3% faster for
 * sampling and verify.  At 129-160 rows the rows kernel's two row blocks
 * shared W through a cluster multicast and beat the tile kernel's single
 * 160-row block (160 rows: sampling 1.27 vs 1.50 x the bound, verify 1.15 vs
 * 1.38 on 151936 x 4096); one 192-row CTA now takes 129-192 rows there
 * (verify at 160 rows 1.01-1.03).  Verify takes the rows kernel from 97
 * rows like sampling since its excluded-token path became select chains
 * (rows_epilogue.cuh; 100-160 rows 1-17% faster than the tile kernel).
 * Past 160 rows only the rows kernel applies. */
static int plan_kernel(int64_t rows, const fs_hopper_opts *opts, int pairs_fit)
{
    if (rows > FS_HOPPER_TILE_MAX_ROWS)
        return pairs_fit && fsh::wants_pairs(rows, opts) ? FS_HOPPER_TILE : FS_HOPPER_ROWS;
    if (opts && opts->kernel == FS_HOPPER_TILE)
        return FS_HOPPER_TILE;
    if (opts && opts->kernel == FS_HOPPER_ROWS)
        return FS_HOPPER_ROWS;
    if (opts && opts->rows_min > 0)
        return rows >= opts->rows_min && (opts->rows_max <= 0 || rows <= opts->rows_max)
                   ? FS_HOPPER_ROWS
                   : FS_HOPPER_TILE;
    return rows >= FS_HOPPER_ROWS_MIN_DEFAULT ? FS_HOPPER_ROWS : FS_HOPPER_TILE;
}

extern "C" int fs_hopper_kernel_for(int64_t rows, const fs_hopper_opts *opts)
{
    return fs_hopper_kernel_plan(rows, opts, rows > FS_HOPPER_TILE_MAX_ROWS &&
                                                 fsh::use_pairs(rows, opts),
                                 nullptr, nullptr, nullptr);
}

extern "C" int fs_hopper_kernel_plan(int64_t rows, const fs_hopper_opts *opts, int pairs_fit,
                                     int *bn, int *ew, int *pair)
{
    using namespace fsh;
    const int kernel = plan_kernel(rows, opts, pairs_fit);
    const bool pr = kernel == FS_HOPPER_TILE && rows > FS_HOPPER_TILE_MAX_ROWS;
    const int ew_min = ew_min_of(opts);
    const int b = kernel != FS_HOPPER_TILE ? 0
                  : pr                       ? pair_bn(rows)
                                             : pick_bn(rows, ew_min <= 128, opts && opts->bn_step16);
    if (bn)
        *bn = b;
    if (ew)
        *ew = kernel == FS_HOPPER_TILE && ew_bn(b) && (pr || b >= ew_min);
    if (pair)
        *pair = pr;
    return kernel;
}

static cudaError_t query_sms(int *sm_count)
{
    if (*sm_count > 0)
        return cudaSuccess;
    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(sm_count, cudaDevAttrMultiProcessorCount, device);
    return e;
}

/* The rows kernel's knobs from the caller's options: the record count and
 * the launch must see the same ones (the launch checks the count). */
struct RowsKnobs {
    int multicast, row_block, jobs;
};
static RowsKnobs rows_knobs(int64_t V_local, int64_t rows, int sm_count,
                            const fs_hopper_opts *opts)
{
    /* the row block resolved here: the automatic choice depends on the op
       and, on an H200, on the plan (ties_128) */
    const int multicast = opts && opts->no_multicast ? 0 : opts && opts->odd_pairs ? 2 : 1;
    const fs_rows_tie tie = {V_local, sm_count, multicast};
    /* the filters' lists (the FILT kernels): the 128-row shape, and as many
       jobs a CTA as give every row sm_count / 2 slots (an odd count of row
       blocks, which several jobs a CTA do not pair, sm_count / 4) -- 8 lists
       a slot: the more lists, the longer the exact prefix, and one row
       handed to the second pass costs a call two more passes over W.  One
       job a CTA leaves 16 slots (128 lists) at 8 row blocks */
    if (opts && opts->cands) {
        const int64_t n_rb = (rows + 127) / 128;
        const int64_t want = n_rb % 2 ? sm_count / 4 : sm_count / 2;
        const int jobs = sm_count / n_rb >= want ? 1 : (int)((want * n_rb + sm_count - 1) / sm_count);
        return {multicast, 128, jobs};
    }
    return {multicast,
            fs_hopper_rows_block(rows, opts ? opts->row_block : 0, opts && opts->argmax_only,
                                 opts && opts->ties_128 ? &tie : nullptr),
            opts ? opts->jobs : 0};
}

extern "C" int64_t fs_hopper_records_per_row(int64_t V_local, int64_t rows, int sm_count,
                                             const fs_hopper_opts *opts)
{
    if (V_local <= 0 || rows <= 0 || query_sms(&sm_count) != cudaSuccess)
        return 0;
    if (fs_hopper_kernel_for(rows, opts) == FS_HOPPER_TILE) {
        const int64_t nt = fsh::num_tiles(V_local);
        /* pairs: one record a slot (its row group's cluster) */
        const int64_t slots = fsh::use_pairs(rows, opts) ? fsh::pair_slots_per_group(rows)
                                                         : sm_count;
        return nt < slots ? nt : slots;
    }
    const RowsKnobs k = rows_knobs(V_local, rows, sm_count, opts);
    return fs_hopper_rows_slots(V_local, rows, sm_count, k.multicast, k.row_block, k.jobs);
}

extern "C" int fs_hopper_scan_launch_ex(const void *W, const void *H, int is_bf16, int64_t V_local,
                                        int64_t D, int64_t rows, int64_t vocab_offset,
                                        int64_t global_vocab, const fs_row_desc *descs,
                                        const float *logit_bias, const uint32_t *allowed,
                                        fs_record *recs, int64_t n_recs, int sm_count,
                                        const fs_hopper_opts *opts, cudaStream_t stream)
{
    using namespace fsh;
    if (rows <= 0 || V_local <= 0)
        return (int)cudaSuccess;
    if (!W || !H || !descs || !recs || !fs_hopper_supported(D, 1) || !fs_hopper_aligned(W, H) ||
        vocab_offset < 0 || vocab_offset + V_local > global_vocab || global_vocab > INT32_MAX ||
        rows > INT32_MAX || V_local > INT32_MAX)
        return (int)cudaErrorInvalidValue;
    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess)
        return (int)e;
    int major = 0, minor = 0;
    if ((e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)) != cudaSuccess)
        return (int)e;
    if (major != 9 || minor != 0)
        return (int)cudaErrorInvalidDeviceFunction;
    if ((e = query_sms(&sm_count)) != cudaSuccess)
        return (int)e;
    if (n_recs != fs_hopper_records_per_row(V_local, rows, sm_count, opts))
        return (int)cudaErrorInvalidValue;
    const fs_tail_args *tail = opts ? opts->tail : nullptr;
    const fs_tree_row *tree_rows = opts ? opts->tree_rows : nullptr;

    if (fs_hopper_kernel_for(rows, opts) == FS_HOPPER_ROWS) {
        if (tail && tail->single)
            return (int)cudaErrorInvalidValue; /* no single launch there */
        const RowsKnobs k = rows_knobs(V_local, rows, sm_count, opts);
        return fs_hopper_rows_launch(W, H, is_bf16, V_local, D, rows, vocab_offset, global_vocab,
                                     descs, logit_bias, allowed, recs, n_recs, tail, k.multicast,
                                     k.row_block, k.jobs, sm_count, opts && opts->argmax_only,
                                     tree_rows,
                                     tree_rows ? opts->tree_child_s : nullptr,
                                     opts ? opts->cands : nullptr, /* it checks their op */
                                     opts ? opts->w_stream : FS_W_STREAM_PROMOTED,
                                     opts ? opts->w_hint : FS_W_HINT_AUTO, device, stream);
    }

    if (tail && tail->single && opts->cands)
        return (int)cudaErrorInvalidValue; /* the filtered kernels have no single launch */
    const bool pair = use_pairs(rows, opts);
    if (pair && tail && tail->single)
        return (int)cudaErrorInvalidValue; /* no grid barrier across clusters */
    if (n_recs <= 0)
        return (int)cudaErrorInvalidValue; /* pairs: the device's cluster count unknown */
    int bn = 0, ew = 0; /* the tile kernel fs_hopper_kernel_for chose: its block, EW or not */
    (void)fs_hopper_kernel_plan(rows, opts, pair, &bn, &ew, nullptr);
    Args a;
    fill_scan_args(a, descs, logit_bias, allowed, recs, rows, V_local, vocab_offset, global_vocab,
                   D, tail); /* kblocks: per 64-wide box; launch() makes it per stage */
    a.n_recs = n_recs;
    a.n_items = (int)num_tiles(V_local);
    a.groups = pair ? pair_groups(rows) : 1;
    a.cands = opts ? opts->cands : nullptr;
    a.tree_rows = tree_rows;
    a.tree_child_s = tree_rows ? opts->tree_child_s : nullptr;
    /* argmax_block scores the logits themselves: draft argmax takes no bias
       or mask, and a launch that passes them keeps the full push */
    a.argmax = opts && opts->argmax_only && !logit_bias && !allowed;
    const bool plain = opts && opts->w_stream == FS_W_STREAM_PLAIN;
    a.w_hint = fs_w_hint_for(opts ? opts->w_hint : FS_W_HINT_AUTO, plain);

    CUtensorMap tw;
    if ((e = make_map(&tw, W, is_bf16, D, V_local, pair ? BM / 2 : BM, plain ? 0 : 256)) !=
        cudaSuccess)
        return (int)e;
    const int grid = (int)n_recs * a.groups; /* pairs: clusters */
    a.slots = (int)n_recs;
    /* the pairs' halves from PairBns, single CTAs' blocks from TileBns */
    const auto go = [&](auto b) {
        return launch<decltype(b)::value>(tw, H, is_bf16, D, rows, a, grid, ew, pair, device,
                                          stream);
    };
    e = pair ? PairBns::with(bn, go) : TileBns::with(bn, go);
    return (int)e;
}
