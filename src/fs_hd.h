/* One spelling for functions compiled both as C11 host code and as CUDA
 * device code, so the CPU backend and the GPU kernels share the exact same
 * arithmetic (and therefore the same tokens, up to logit rounding). */
#ifndef FS_HD_H
#define FS_HD_H

#ifdef __CUDACC__
#define FS_HD static __host__ __device__ __forceinline__
#else
#define FS_HD static inline
#endif

/* FS_UNROLL_HOT goes before loops that the compiler should unroll where they
 * run hot -- in the scans, once per noise block -- but not in a translation
 * unit of kernels that run once per row after the scan (merge_finalize.cu:
 * the merge, the filters' resolve, the finalizers), which defines
 * FS_COLD_CODE before its includes.  Their code comes cold from DRAM on
 * every call (a model's layers evict it from L2 between decode steps): on an
 * H100 each phase of the filters' resolve ran 2-4x its warm time, and the
 * kept record's block push (~2300 instructions unrolled, ~630 rolled) 1.6x
 * faster rolled, though rolled it is slower warm.  The operations and their
 * order are the same either way, so are the results, bit for bit. */
#if defined(__CUDA_ARCH__) && defined(FS_COLD_CODE)
#define FS_UNROLL_HOT _Pragma("unroll 1")
#else
#define FS_UNROLL_HOT
#endif

/* FS_ROLLED goes before a short loop of data-dependent trip count that device
 * code should keep as a loop (its body is large; unrolled, every exit would
 * be a copy of it). */
#ifdef __CUDA_ARCH__
#define FS_ROLLED _Pragma("unroll 1")
#else
#define FS_ROLLED
#endif

#endif
