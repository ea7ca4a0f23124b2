/* Programmatic dependent launch (sm_90+): a kernel launched with
 * cudaLaunchAttributeProgrammaticStreamSerialization may start while the
 * kernel before it still runs, once that kernel has issued
 * fs_pdl_launch_dependents (or finished); fs_pdl_wait then blocks until the
 * previous kernel has completed and its writes are visible.  Both are no-ops
 * before sm_90 and when the launch did not ask for it.  The point is to hide
 * the launch and prologue of the next kernel of an op (TMA descriptor
 * prefetch, barrier setup, the first weight loads) behind the previous one. */
#ifndef FS_PDL_CUH
#define FS_PDL_CUH

#include <cuda_runtime.h>

static __device__ __forceinline__ void fs_pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

static __device__ __forceinline__ void fs_pdl_launch_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* A launch configuration that allows the kernel to overlap its predecessor
 * (when `overlap`, i.e. on sm_90+), in clusters of `cluster` CTAs along x
 * when cluster > 1. */
struct fs_pdl_config {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr[2];
    fs_pdl_config(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool overlap,
                  unsigned cluster = 1)
    {
        cfg = cudaLaunchConfig_t{};
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.dynamicSmemBytes = smem;
        cfg.stream = stream;
        unsigned n = 0;
        if (overlap) {
            attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr[n].val.programmaticStreamSerializationAllowed = 1;
            ++n;
        }
        if (cluster > 1) {
            attr[n].id = cudaLaunchAttributeClusterDimension;
            attr[n].val.clusterDim.x = cluster;
            attr[n].val.clusterDim.y = 1;
            attr[n].val.clusterDim.z = 1;
            ++n;
        }
        cfg.attrs = attr;
        cfg.numAttrs = n;
    }
};

#endif
