/* wgmma.mma_async m64nNk16 with fp32 accumulators in registers, both operands
 * K-major in shared memory (descriptors from fshp::make_desc), for the widths
 * the Hopper scans use.  Wgmma<N, BF16>::mma(d, da, db, scale_d): d has N / 2
 * floats per thread; scale_d = 0 overwrites d, 1 accumulates.
 *
 * The PTX operand list must name every accumulator register, so the asm
 * text is assembled from 8-register pieces: FSW_S<k> is the operand text of
 * registers 8k .. 8k + 7, FSW_C(k) their constraints. */
#ifndef FS_WGMMA_CUH
#define FS_WGMMA_CUH

#include <stdint.h>

#include "hopper_ptx.cuh"

#if FSH_SM90A

namespace fshp {

#define FSW_S0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define FSW_S1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define FSW_S2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define FSW_S3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define FSW_S4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define FSW_S5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define FSW_S6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define FSW_S7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define FSW_S8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define FSW_S9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define FSW_S10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define FSW_S11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define FSW_S12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define FSW_S13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define FSW_S14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define FSW_S15 "%120, %121, %122, %123, %124, %125, %126, %127"
/* half pieces (4 registers) for widths of 8 mod 16 past 96 */
#define FSW_H6 "%48, %49, %50, %51"
#define FSW_H7 "%56, %57, %58, %59"
#define FSW_H8 "%64, %65, %66, %67"
#define FSW_H9 "%72, %73, %74, %75"

#define FSW_C(k)                                                                                  \
    "+f"(d[8 * (k)]), "+f"(d[8 * (k) + 1]), "+f"(d[8 * (k) + 2]), "+f"(d[8 * (k) + 3]),           \
        "+f"(d[8 * (k) + 4]), "+f"(d[8 * (k) + 5]), "+f"(d[8 * (k) + 6]), "+f"(d[8 * (k) + 7])

#define FSW_CH(k)                                                                                 \
    "+f"(d[8 * (k)]), "+f"(d[8 * (k) + 1]), "+f"(d[8 * (k) + 2]), "+f"(d[8 * (k) + 3])

/* REGS: the accumulator operand text; TAIL: the operand numbers of the two
 * descriptors and the scale flag, which follow the accumulators. */
#define FSW_ASM(SHAPE, DT, REGS, DA, DB, SC, ...)                                                 \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SC ", 0;\n"                                  \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32." DT "." DT " {" REGS "}, " DA ", " DB \
                 ", p, 1, 1, 0, 0;\n}\n"                                                          \
                 : __VA_ARGS__                                                                    \
                 : "l"(da), "l"(db), "r"(scale_d))

#define FSW_SPEC(N, IS_BF16, DT, SHAPE, REGS, DA, DB, SC, ...)                                   \
    template <> struct Wgmma<N, IS_BF16> {                                                       \
        static __device__ __forceinline__ void mma(float (&d)[N / 2], uint64_t da, uint64_t db,   \
                                                   int scale_d)                                   \
        {                                                                                         \
            FSW_ASM(SHAPE, DT, REGS, DA, DB, SC, __VA_ARGS__);                                    \
        }                                                                                         \
    };

#define FSW_DEFINE(N, SHAPE, REGS, DA, DB, SC, ...)                                               \
    FSW_SPEC(N, true, "bf16", SHAPE, REGS, DA, DB, SC, __VA_ARGS__)                               \
    FSW_SPEC(N, false, "f16", SHAPE, REGS, DA, DB, SC, __VA_ARGS__)

template <int N, bool BF16> struct Wgmma;

FSW_DEFINE(16, "m64n16k16", FSW_S0, "%8", "%9", "%10", FSW_C(0))
FSW_DEFINE(32, "m64n32k16", FSW_S0 ", " FSW_S1, "%16", "%17", "%18", FSW_C(0), FSW_C(1))
FSW_DEFINE(64, "m64n64k16", FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3, "%32", "%33", "%34",
           FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3))
FSW_DEFINE(48, "m64n48k16", FSW_S0 ", " FSW_S1 ", " FSW_S2, "%24", "%25", "%26", FSW_C(0),
           FSW_C(1), FSW_C(2))
FSW_DEFINE(80, "m64n80k16", FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4, "%40", "%41",
           "%42", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4))
FSW_DEFINE(96, "m64n96k16", FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5,
           "%48", "%49", "%50", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5))
FSW_DEFINE(104, "m64n104k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_H6, "%52",
           "%53", "%54", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5), FSW_CH(6))
FSW_DEFINE(112, "m64n112k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6, "%56",
           "%57", "%58", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5), FSW_C(6))
FSW_DEFINE(120, "m64n120k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6
                  ", " FSW_H7,
           "%60", "%61", "%62", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5),
           FSW_C(6), FSW_CH(7))
FSW_DEFINE(128, "m64n128k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6
                  ", " FSW_S7,
           "%64", "%65", "%66", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5),
           FSW_C(6), FSW_C(7))
FSW_DEFINE(136, "m64n136k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6
                  ", " FSW_S7 ", " FSW_H8,
           "%68", "%69", "%70", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5),
           FSW_C(6), FSW_C(7), FSW_CH(8))
FSW_DEFINE(144, "m64n144k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6
                  ", " FSW_S7 ", " FSW_S8,
           "%72", "%73", "%74", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5),
           FSW_C(6), FSW_C(7), FSW_C(8))
FSW_DEFINE(152, "m64n152k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6
                  ", " FSW_S7 ", " FSW_S8 ", " FSW_H9,
           "%76", "%77", "%78", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5),
           FSW_C(6), FSW_C(7), FSW_C(8), FSW_CH(9))
FSW_DEFINE(160, "m64n160k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6
                  ", " FSW_S7 ", " FSW_S8 ", " FSW_S9,
           "%80", "%81", "%82", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5),
           FSW_C(6), FSW_C(7), FSW_C(8), FSW_C(9))
FSW_DEFINE(192, "m64n192k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6
                  ", " FSW_S7 ", " FSW_S8 ", " FSW_S9 ", " FSW_S10 ", " FSW_S11,
           "%96", "%97", "%98", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5),
           FSW_C(6), FSW_C(7), FSW_C(8), FSW_C(9), FSW_C(10), FSW_C(11))
FSW_DEFINE(224, "m64n224k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6
                  ", " FSW_S7 ", " FSW_S8 ", " FSW_S9 ", " FSW_S10 ", " FSW_S11 ", " FSW_S12
                  ", " FSW_S13,
           "%112", "%113", "%114", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5),
           FSW_C(6), FSW_C(7), FSW_C(8), FSW_C(9), FSW_C(10), FSW_C(11), FSW_C(12), FSW_C(13))
FSW_DEFINE(256, "m64n256k16",
           FSW_S0 ", " FSW_S1 ", " FSW_S2 ", " FSW_S3 ", " FSW_S4 ", " FSW_S5 ", " FSW_S6
                  ", " FSW_S7 ", " FSW_S8 ", " FSW_S9 ", " FSW_S10 ", " FSW_S11 ", " FSW_S12
                  ", " FSW_S13 ", " FSW_S14 ", " FSW_S15,
           "%128", "%129", "%130", FSW_C(0), FSW_C(1), FSW_C(2), FSW_C(3), FSW_C(4), FSW_C(5),
           FSW_C(6), FSW_C(7), FSW_C(8), FSW_C(9), FSW_C(10), FSW_C(11), FSW_C(12), FSW_C(13),
           FSW_C(14), FSW_C(15))

/* The 4 k16 steps of one 64-wide k-block (BK = 64 halves = one 128-byte
 * swizzled row): A and B start addresses advance 32 bytes per step. */
template <int N, bool BF16>
__device__ __forceinline__ void mma_kblock(float (&acc)[N / 2], uint32_t a, uint32_t b, int first)
{
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
        Wgmma<N, BF16>::mma(acc, make_desc(a + kk * 32), make_desc(b + kk * 32),
                            (first && kk == 0) ? 0 : 1);
}

} // namespace fshp

#endif /* FSH_SM90A */

#endif
