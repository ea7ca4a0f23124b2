/* The warp-level tensor-core MMA and the cp.async copies that feed it,
 * shared by the generic scan (scan_mma.cu) and the filters' second pass
 * (filter_fallback.cu).
 *
 * mma.sync m16n8k16, bf16 or fp16 in, fp32 accumulate, c += a . b:
 *   a (16 x 16, row-major): a[0] = row g, k 2q..2q+1;  a[1] = row g + 8, same k;
 *                           a[2] = row g, k 2q+8..;     a[3] = row g + 8, k 2q+8..
 *   b (16 x 8, "col"):      b0 = k 2q..2q+1, column g;  b1 = k 2q+8.., column g
 *   c (16 x 8):             c[0..1] = row g, columns 2q, 2q+1; c[2..3] = row g + 8
 * with g = lane / 4, q = lane % 4; each 32-bit register holds two halves, the
 * lower k (or column) in its low 16 bits. */
#pragma once

#include <cstdint>

template <bool BF16>
__device__ __forceinline__ void fs_mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                            uint32_t b1)
{
    if (BF16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}

__device__ __forceinline__ uint32_t fs_smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, asynchronously; src_bytes 0 zero-fills. */
__device__ __forceinline__ void fs_cp_async16(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}

__device__ __forceinline__ void fs_cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait until at most N of this thread's committed groups are pending. */
template <int N> __device__ __forceinline__ void fs_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
