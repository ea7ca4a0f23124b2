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

#endif
