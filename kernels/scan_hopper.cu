/* Hopper (sm_90a) fused LM-head scan.
 *
 *   logits^T = W . H^T, vocabulary = wgmma M, rows = wgmma N, K = D.
 *
 *   CTA        1 producer warp (TMA) + 2 consumer warpgroups (wgmma), 288
 *              threads, one CTA per SM, persistent over work items
 *              (vocabulary tile of 128 tokens, row block of BN rows) taken in
 *              vocabulary-major order, so the CTAs that share a W tile (several
 *              row blocks) run at the same time and read it once from HBM.
 *   pipeline   STAGES x { W tile 128 x 64, H tile BN x 64 } in shared memory,
 *              loaded by cp.async.bulk.tensor with the 128-byte swizzle (one
 *              64-element bf16 row = 128 bytes), full/empty mbarriers.
 *   MMA        each consumer warpgroup: wgmma m64nBNk16, A = its 64 W rows
 *              (K-major), B = the H tile (K-major), fp32 accumulators in
 *              registers (BN / 2 per thread).
 *   epilogue   at the end of a tile the accumulators go to a [BN][128] fp32
 *              buffer in shared memory (16-byte groups XOR-swizzled by row, no
 *              bank conflicts either way); that tile's records are then
 *              computed while the NEXT tile's wgmmas run: after issuing each
 *              k-block's wgmmas a consumer thread pushes a few groups of 4
 *              consecutive tokens of its row, so the epilogue hides under the
 *              tensor-core and TMA work.  Each epilogue thread owns one row
 *              and groups of 4 consecutive ids (one Philox call serves 4
 *              tokens); TPR threads share a row and merge with shuffles.
 *   noise      Gumbel noise is computed only where it could matter
 *              (gumbel_prune.cuh): not for a token with s + 17 < bar, and
 *              without its logarithms when its uniform is below the floor for
 *              bar, where bar = the larger of the tile record's best key and
 *              the best key of the row's earlier tiles in this CTA.  Either
 *              way the token cannot win the row, so the merged row record is
 *              the one full noise would give (a tile record may lack a best
 *              that could never win).
 *
 *   choice     rows <= 160: one row block of 16/32/64/128/160 rows; more rows:
 *              128-row blocks (pick_bn).  From FS_HOPPER_ROWS_MIN_DEFAULT rows
 *              the launcher takes the rows-as-M kernel (scan_hopper_rows.cu).
 *              Measurements, and the cluster / TMA-multicast variant that was
 *              tried and measured slower (commit ee48dff), are in
 *              bench/hopper_dev/NOTES.md and bench/NOTES.md.
 *
 * Records: per (row, 128-token tile), pushes in token order by fs_record_push
 * within a thread, fs_record_merge across the TPR threads of a row (the same
 * functions as every other backend).  Pushing and merging only: which token
 * wins is order-independent, sum_exp carries the usual merge rounding. */
#include "scan_hopper.cuh"
#include "scan_hopper_rows.cuh"

#include <math.h>
#include <stdint.h>

#include "philox.h"
#include "record.h"
#include "gumbel_prune.cuh"
#include "record_shfl.cuh"
#include "hopper_ptx.cuh"
#include "pdl.cuh"

namespace fsh {

using namespace fshp;

constexpr int BM = FS_HOPPER_TILE_V; /* vocabulary per tile (= per record) */
constexpr int NCW = 8;               /* consumer warps (2 warpgroups) */
constexpr int NCT = NCW * 32;        /* consumer threads */
constexpr int THREADS = NCT + 32;    /* + the producer warp */
constexpr int LDS = BM;              /* epilogue buffer pitch (floats), XOR-swizzled */
constexpr int MAX_STAGES = 12;

template <int BN> struct Cfg {
    static constexpr int W_BYTES = BM * BK * 2;
    static constexpr int H_BYTES = BN * BK * 2;
    static constexpr int STAGE_BYTES = W_BYTES + H_BYTES;
    static constexpr int EPI_BYTES = BN * LDS * 4;
    static constexpr int BAR_BYTES = 2 * MAX_STAGES * 8;
    static constexpr int FIT = (SMEM_MAX - 1024 - EPI_BYTES - BAR_BYTES) / STAGE_BYTES;
    static constexpr int STAGES = FIT > MAX_STAGES ? MAX_STAGES : FIT;
    static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + EPI_BYTES + BAR_BYTES;
    /* epilogue: TPR threads per row (a power of two), each owning UNITS of the
     * tile's 32 groups of 4 tokens (group_of() below) */
    static constexpr int TPR0 = NCT / BN;
    static constexpr int TPR = TPR0 >= 16 ? 16 : TPR0 >= 8 ? 8 : TPR0 >= 4 ? 4 : TPR0 >= 2 ? 2 : 1;
    static constexpr int ACTIVE = BN * TPR;
    static constexpr int UNITS = (BM / 4) / TPR;
    /* rows that one quarter-warp (8 threads) covers */
    static constexpr int RPQ = TPR >= 8 ? 1 : 8 / TPR;
    static_assert(BN % 8 == 0 && BN >= 16 && BN <= 256, "BN");
    static_assert(STAGES >= 2, "stages");
    static_assert(SMEM <= SMEM_MAX, "smem");
    static_assert(ACTIVE <= NCT, "epilogue threads");
};

struct Args {
    const fs_row_desc *descs;
    const float *bias;
    const uint32_t *allowed;
    fs_record *recs;
    int64_t rec_tile_stride, rec_row_stride;
    int64_t rows, V, vocab_offset, global_vocab, words;
    int n_rb, n_items, kblocks, is_bf16, w_evict_first;
};

#if FSH_SM90A

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

template <int N, bool BF16> struct Wgmma;

template <> struct Wgmma<16, true> {
    static __device__ __forceinline__ void mma(float (&d)[8], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7"
                     "}, %8, %9, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct Wgmma<16, false> {
    static __device__ __forceinline__ void mma(float (&d)[8], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7"
                     "}, %8, %9, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct Wgmma<32, true> {
    static __device__ __forceinline__ void mma(float (&d)[16], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
                     "}, %16, %17, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct Wgmma<32, false> {
    static __device__ __forceinline__ void mma(float (&d)[16], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
                     "}, %16, %17, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct Wgmma<64, true> {
    static __device__ __forceinline__ void mma(float (&d)[32], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                     "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct Wgmma<64, false> {
    static __device__ __forceinline__ void mma(float (&d)[32], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                     "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct Wgmma<128, true> {
    static __device__ __forceinline__ void mma(float (&d)[64], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                     "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                       "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                       "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                       "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                       "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct Wgmma<128, false> {
    static __device__ __forceinline__ void mma(float (&d)[64], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                     "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                       "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                       "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                       "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                       "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct Wgmma<160, true> {
    static __device__ __forceinline__ void mma(float (&d)[80], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
                     "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
                     "}, %80, %81, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                       "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                       "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                       "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                       "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                       "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                       "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct Wgmma<160, false> {
    static __device__ __forceinline__ void mma(float (&d)[80], uint64_t da, uint64_t db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n160k16.f32.f16.f16 "
                     "{"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
                     "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
                     "}, %80, %81, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                       "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                       "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                       "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                       "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                       "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                       "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};

/* The 4 k16 steps of one 64-wide k-block. */
template <int BN, bool BF16>
__device__ __forceinline__ void mma_kblock(float (&acc)[BN / 2], uint32_t aw, uint32_t ah, int first)
{
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
        Wgmma<BN, BF16>::mma(acc, make_desc(aw + kk * 32), make_desc(ah + kk * 32),
                             (first && kk == 0) ? 0 : 1);
}

/* Epilogue state of one thread for one (row, tile). */
struct Epi {
    fs_record rec;
    fs_row_desc d;
    int64_t row;   /* global row */
    int64_t v0;    /* local id of the tile's first token */
    int64_t tile;
    int scan;      /* row in range and FS_ROWF_VALID */
    int write;     /* row in range and this thread writes the record */
    float floor;   /* best key of the row's earlier tiles in this CTA (a real
                      candidate of the merged row, so a lower bound on its
                      best: noise below it is pruned, which may leave a tile
                      record without the best that could never win the row) */
};

/* Group (of 4 consecutive tokens) that slot q of a row takes at step j. */
template <int BN> __device__ __forceinline__ int group_of(int q, int j)
{
    using C = Cfg<BN>;
    if (C::TPR >= 8)
        return q + C::TPR * j;
    return (j % C::RPQ) | (q * C::RPQ) | ((j / C::RPQ) * 8);
}

/* Push the 4 tokens of group f (local ids v0 + 4f .. v0 + 4f + 3) of buffer
 * row rr. */
__device__ __forceinline__ void epi_group(Epi &e, const float *epi, int rr, int f, const Args &a)
{
    const float4 l4 = *reinterpret_cast<const float4 *>(epi + epi_idx(rr, 4 * f));
    const int64_t v = e.v0 + 4 * f;
    const int64_t left = a.V - v;
    if (left <= 0)
        return;
    const int nvalid = left < 4 ? (int)left : 4;
    const int64_t g0 = a.vocab_offset + v;
    const float l[4] = {l4.x, l4.y, l4.z, l4.w};
    float s[4];
    bool ok[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        ok[i] = i < nvalid;
        float b = 0.0f;
        if (ok[i]) {
            const int64_t gid = g0 + i;
            if (a.allowed)
                ok[i] = (__ldg(&a.allowed[e.row * a.words + (gid >> 5)]) >> (gid & 31)) & 1u;
            if (a.bias && ok[i])
                b = __ldg(&a.bias[e.row * a.global_vocab + gid]);
        }
        s[i] = fs_score(l[i], b, e.d.inv_temp);
    }
    float g[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (!(e.d.flags & FS_ROWF_GREEDY)) {
        /* a key below the best this thread has seen for the row, in this
           tile or an earlier one, cannot win the row */
        const float bar = fmaxf(e.rec.best_key, e.floor);
        bool need[4];
        bool any = false;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            /* g only matters for a finite, allowed, non-excluded token that can
             * still reach best_key (fs_record_push ignores it otherwise) */
            need[i] = ok[i] && (g0 + i) != (int64_t)e.d.excluded && s[i] > -INFINITY &&
                      s[i] < INFINITY && !fs_noise_hopeless(s[i], bar);
            any = any || need[i];
            g[i] = -INFINITY;
        }
        if (any) {
            if ((g0 & 3) == 0) {
                const fs_u32x4 w = fs_philox_tokens(e.d.seed, e.d.offset, e.d.position,
                                                    FS_PURPOSE_GUMBEL, (uint32_t)(g0 >> 2));
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    if (need[i])
                        g[i] = fs_gumbel_pruned(w.v[i], s[i], bar);
            } else {
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    if (need[i]) {
                        const int64_t gid = g0 + i;
                        const fs_u32x4 w = fs_philox_tokens(e.d.seed, e.d.offset, e.d.position,
                                                            FS_PURPOSE_GUMBEL,
                                                            (uint32_t)(gid >> 2));
                        g[i] = fs_gumbel_pruned(fs_pick_word(w, (int)(gid & 3)), s[i], bar);
                    }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
        if (ok[i])
            fs_record_push(&e.rec, &e.d, (int32_t)(g0 + i), s[i], g[i]);
}

template <int BN>
__device__ __forceinline__ void epi_groups(Epi &e, const float *epi, int rr, int q, int from,
                                           int to, const Args &a)
{
    if (!e.scan)
        return;
    for (int j = from; j < to; ++j)
        epi_group(e, epi, rr, group_of<BN>(q, j), a);
}

/* Merge the TPR threads of each row (all 32 lanes of the warp take part) and
 * write the record. */
template <int BN> __device__ __forceinline__ void epi_finish(Epi &e, const Args &a)
{
    using C = Cfg<BN>;
#pragma unroll
    for (int m = 1; m < C::TPR; m <<= 1) {
        const fs_record o = fs_record_shfl_xor(e.rec, m);
        fs_record_merge(&e.rec, &o);
    }
    if (e.write) {
        fs_record *dst = a.recs + e.tile * a.rec_tile_stride + e.row * a.rec_row_stride;
        *dst = e.rec;
    }
}

template <int BN, bool BF16>
__global__ void __launch_bounds__(THREADS, 1)
    fsh_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                    const Args a)
{
    using C = Cfg<BN>;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem =
        reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~(uintptr_t)1023);
    const uint32_t sbase = smem_u32(smem);
    const uint32_t sW = sbase;
    const uint32_t sH = sbase + C::STAGES * C::W_BYTES;
    float *epi = reinterpret_cast<float *>(smem + C::STAGES * C::STAGE_BYTES);
    const uint32_t sBar = sbase + C::STAGES * C::STAGE_BYTES + C::EPI_BYTES;
#define FSH_FULL(s) (sBar + 8u * (uint32_t)(s))
#define FSH_EMPTY(s) (sBar + 8u * (uint32_t)(C::STAGES + (s)))

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == NCT) {
        for (int s = 0; s < C::STAGES; ++s) {
            mbar_init(FSH_FULL(s), 1);
            mbar_init(FSH_EMPTY(s), NCW);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int KB = a.kblocks;

    if (warp == NCW) {
        /* ---------------- producer: one thread issues every TMA ---------- */
        if (lane == 0) {
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmw))
                         : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmh))
                         : "memory");
            const uint64_t pol_w = a.w_evict_first ? policy_evict_first() : policy_evict_normal();
            const uint64_t pol_h = policy_evict_last();
            int s = 0;
            uint32_t ph = 0;
            for (int it = blockIdx.x; it < a.n_items; it += gridDim.x) {
                const int vt = it / a.n_rb, rb = it - vt * a.n_rb;
                for (int kb = 0; kb < KB; ++kb) {
                    mbar_wait(FSH_EMPTY(s), ph ^ 1u);
                    mbar_expect_tx(FSH_FULL(s), (uint32_t)C::STAGE_BYTES);
                    tma_load_2d(sW + s * C::W_BYTES, &tmw, kb * BK, vt * BM, FSH_FULL(s), pol_w);
                    tma_load_2d(sH + s * C::H_BYTES, &tmh, kb * BK, rb * BN, FSH_FULL(s), pol_h);
                    if (++s == C::STAGES) {
                        s = 0;
                        ph ^= 1u;
                    }
                }
            }
        }
        return;
    }

    /* ---------------- consumers: 2 warpgroups ---------------------------- */
    /* the producer streams W and H regardless; the row descriptors come from
       the prep kernel, which may still be running (programmatic launch) */
    fs_pdl_wait();
    fs_pdl_launch_dependents(); /* let the merge launch while we compute */
    const int ct = threadIdx.x;          /* 0 .. 255 */
    const int wg = ct >> 7;              /* vocabulary half of the tile */
    const int wi = (ct >> 5) & 3;        /* warp in the warpgroup */
    const int ga = lane >> 2, gc = lane & 3;
    const int rr = ct / C::TPR, q = ct % C::TPR; /* epilogue: row in block, slot */
    const bool e_active = ct < C::ACTIVE;
    /* groups of the previous tile to push after each k-block */
    const int per_kb = (C::UNITS + KB - 1) / KB;

    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i)
        acc[i] = 0.0f;

    Epi e;
    fs_record_init(&e.rec);
    e.floor = -INFINITY;
    e.scan = 0;
    e.write = 0;
    e.row = 0;
    e.v0 = 0;
    e.tile = 0;
    bool pending = false;
    int s = 0, prev_s = 0;
    uint32_t ph = 0;

    for (int it = blockIdx.x; it < a.n_items; it += gridDim.x) {
        const int vt = it / a.n_rb, rb = it - vt * a.n_rb;
        /* the descriptor of this tile's epilogue row, fetched early */
        const int64_t nrow = (int64_t)rb * BN + rr;
        const bool nrow_ok = e_active && nrow < a.rows;
        fs_row_desc nd;
        if (nrow_ok)
            nd = a.descs[nrow];
        else
            nd.flags = 0;

        int done = 0;
        for (int kb = 0; kb < KB; ++kb) {
            mbar_wait(FSH_FULL(s), ph);
            __syncwarp();
            const uint32_t aw = sW + s * C::W_BYTES + wg * (64 * BK * 2);
            const uint32_t ah = sH + s * C::H_BYTES;
            fence_acc(acc);
            wg_fence();
            mma_kblock<BN, BF16>(acc, aw, ah, kb == 0);
            wg_commit();
            fence_acc(acc);
            if (pending && done < C::UNITS) {
                const int to = done + per_kb < C::UNITS ? done + per_kb : C::UNITS;
                epi_groups<BN>(e, epi, rr, q, done, to, a);
                done = to;
            }
            __syncwarp();
            wg_wait<1>();
            fence_acc(acc);
            if (kb > 0 && lane == 0)
                mbar_arrive(FSH_EMPTY(prev_s));
            prev_s = s;
            if (++s == C::STAGES) {
                s = 0;
                ph ^= 1u;
            }
        }
        wg_wait<0>();
        fence_acc(acc);
        if (lane == 0)
            mbar_arrive(FSH_EMPTY(prev_s));

        if (pending) {
            epi_groups<BN>(e, epi, rr, q, done, C::UNITS, a);
            epi_finish<BN>(e, a);
        }
        consumer_bar(); /* every thread is done reading the buffer */
#pragma unroll
        for (int n = 0; n < BN / 8; ++n) {
            const int r0 = 8 * n + 2 * gc;
            const int v = 64 * wg + 16 * wi + ga;
            epi[epi_idx(r0, v)] = acc[4 * n + 0];
            epi[epi_idx(r0 + 1, v)] = acc[4 * n + 1];
            epi[epi_idx(r0, v + 8)] = acc[4 * n + 2];
            epi[epi_idx(r0 + 1, v + 8)] = acc[4 * n + 3];
        }
        consumer_bar(); /* the buffer holds this tile */

        /* epi_finish left the merged tile record in every thread of the row */
        e.floor = pending && nrow == e.row ? fmaxf(e.floor, e.rec.best_key) : -INFINITY;
        pending = true;
        fs_record_init(&e.rec);
        e.d = nd;
        e.row = nrow;
        e.v0 = (int64_t)vt * BM;
        e.tile = vt;
        e.scan = nrow_ok && (nd.flags & FS_ROWF_VALID) ? 1 : 0;
        e.write = nrow_ok && q == 0 ? 1 : 0;
    }
    if (pending) {
        epi_groups<BN>(e, epi, rr, q, 0, C::UNITS, a);
        epi_finish<BN>(e, a);
    }
#undef FSH_FULL
#undef FSH_EMPTY
}

#else /* not sm_90a: the kernel exists (for the host stub) but is empty */

template <int BN, bool BF16>
__global__ void __launch_bounds__(THREADS, 1)
    fsh_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                    const Args a)
{
}

#endif /* FSH_SM90A */

/* ---------------------------------------------------------------- host -- */

static const int kBnList[] = {16, 32, 64, 128, 160};
constexpr int kNumBn = (int)(sizeof(kBnList) / sizeof(kBnList[0]));
constexpr int kMaxBn = 160;

template <int BN, bool BF16> cudaError_t configure(int device)
{
    static unsigned long long done = 0;
    return set_smem_once(reinterpret_cast<const void *>(fsh_scan_kernel<BN, BF16>), Cfg<BN>::SMEM,
                         &done, device);
}

template <int BN>
cudaError_t launch(const CUtensorMap &tw, const void *H, int is_bf16, int64_t D, int64_t rows,
                   const Args &a0, int sm_count, int device, cudaStream_t stream)
{
    CUtensorMap th;
    cudaError_t e = make_map(&th, H, is_bf16, D, rows, BN);
    if (e != cudaSuccess)
        return e;
    const int grid = a0.n_items < sm_count ? a0.n_items : sm_count;
    /* programmatic launch: overlaps the prep kernel (see fs_pdl_wait above) */
    fs_pdl_config pc(dim3((unsigned)grid), dim3(THREADS), Cfg<BN>::SMEM, stream, true);
    if (is_bf16) {
        if ((e = configure<BN, true>(device)) != cudaSuccess)
            return e;
        e = cudaLaunchKernelEx(&pc.cfg, fsh_scan_kernel<BN, true>, tw, th, a0);
    } else {
        if ((e = configure<BN, false>(device)) != cudaSuccess)
            return e;
        e = cudaLaunchKernelEx(&pc.cfg, fsh_scan_kernel<BN, false>, tw, th, a0);
    }
    return e != cudaSuccess ? e : cudaGetLastError();
}

/* Up to kMaxBn rows: one row block of the smallest width that holds them.
 * Beyond: 128-row blocks (measured on H100, 151936 x 4096, 320 rows: 3 x 128
 * 1.63 ms vs 2 x 160 1.72 ms -- the 160-wide epilogue runs on 5 of the 8
 * consumer warps; bench/hopper_dev/NOTES.md). */
int pick_bn(int64_t rows, int64_t *row_blocks)
{
    int bn = 128;
    if (rows <= kMaxBn)
        for (int i = 0; i < kNumBn; ++i)
            if (kBnList[i] >= rows) {
                bn = kBnList[i];
                break;
            }
    if (row_blocks)
        *row_blocks = (rows + bn - 1) / bn;
    return bn;
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

extern "C" int64_t fs_hopper_num_tiles(int64_t V_local, int64_t rows)
{
    (void)rows;
    return V_local > 0 ? (V_local + fsh::BM - 1) / fsh::BM : 0;
}

extern "C" int fs_hopper_bn_list(const int **list)
{
    if (list)
        *list = fsh::kBnList;
    return fsh::kNumBn;
}

extern "C" int fs_hopper_pick_bn(int64_t rows, int64_t *row_blocks)
{
    return fsh::pick_bn(rows, row_blocks);
}

extern "C" int fs_hopper_kernel_for(int64_t rows, const fs_hopper_opts *opts)
{
    if (opts && opts->kernel == FS_HOPPER_TILE)
        return FS_HOPPER_TILE;
    if (opts && opts->kernel == FS_HOPPER_ROWS)
        return FS_HOPPER_ROWS;
    const int64_t min = opts && opts->rows_min > 0 ? opts->rows_min : FS_HOPPER_ROWS_MIN_DEFAULT;
    return rows >= min ? FS_HOPPER_ROWS : FS_HOPPER_TILE;
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

extern "C" int64_t fs_hopper_records_per_row(int64_t V_local, int64_t rows, int sm_count,
                                             const fs_hopper_opts *opts)
{
    if (fs_hopper_kernel_for(rows, opts) == FS_HOPPER_TILE)
        return fs_hopper_num_tiles(V_local, rows);
    if (query_sms(&sm_count) != cudaSuccess)
        return 0;
    return fs_hopper_rows_slots(V_local, rows, sm_count);
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
    const bool row_major = opts && opts->records_row_major;
    const int64_t rec_k_stride = row_major ? 1 : rows;
    const int64_t rec_row_stride = row_major ? n_recs : 1;

    if (fs_hopper_kernel_for(rows, opts) == FS_HOPPER_ROWS)
        return fs_hopper_rows_launch(W, H, is_bf16, V_local, D, rows, vocab_offset, global_vocab,
                                     descs, logit_bias, allowed, recs, rec_k_stride,
                                     rec_row_stride, n_recs, device, stream);

    int64_t nrb = 0;
    int bn = pick_bn(rows, &nrb);
    if (opts && opts->force_bn) {
        bn = 0;
        for (int i = 0; i < kNumBn; ++i)
            if (kBnList[i] == opts->force_bn)
                bn = kBnList[i];
        if (!bn)
            return (int)cudaErrorInvalidValue;
        nrb = (rows + bn - 1) / bn;
    }
    const int64_t items = n_recs * nrb;
    if (items > INT32_MAX)
        return (int)cudaErrorInvalidValue;

    Args a;
    a.descs = descs;
    a.bias = logit_bias;
    a.allowed = allowed;
    a.recs = recs;
    a.rec_tile_stride = rec_k_stride;
    a.rec_row_stride = rec_row_stride;
    a.rows = rows;
    a.V = V_local;
    a.vocab_offset = vocab_offset;
    a.global_vocab = global_vocab;
    a.words = (global_vocab + 31) / 32;
    a.n_rb = (int)nrb;
    a.n_items = (int)items;
    a.kblocks = (int)((D + BK - 1) / BK);
    a.is_bf16 = is_bf16 ? 1 : 0;
    /* a W tile read by one row block only is dead after use; with several row
     * blocks the neighbours read it from L2 */
    a.w_evict_first = nrb == 1 ? 1 : 0;

    CUtensorMap tw;
    if ((e = make_map(&tw, W, is_bf16, D, V_local, BM)) != cudaSuccess)
        return (int)e;
    switch (bn) {
    case 16: e = launch<16>(tw, H, is_bf16, D, rows, a, sm_count, device, stream); break;
    case 32: e = launch<32>(tw, H, is_bf16, D, rows, a, sm_count, device, stream); break;
    case 64: e = launch<64>(tw, H, is_bf16, D, rows, a, sm_count, device, stream); break;
    case 128: e = launch<128>(tw, H, is_bf16, D, rows, a, sm_count, device, stream); break;
    default: e = launch<160>(tw, H, is_bf16, D, rows, a, sm_count, device, stream); break;
    }
    return (int)e;
}
