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
 * (when `overlap`, i.e. on sm_90+), optionally in clusters of CTAs along x. */
struct fs_pdl_config {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr[2];
    fs_pdl_config(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool overlap)
    {
        cfg = cudaLaunchConfig_t{};
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.dynamicSmemBytes = smem;
        cfg.stream = stream;
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = overlap ? 1 : 0;
    }
    /* every CTA resident at once, for a grid barrier (cooperative_groups'
       this_grid().sync()) */
    void cooperative()
    {
        cudaLaunchAttribute &c = attr[cfg.numAttrs++];
        c.id = cudaLaunchAttributeCooperative;
        c.val.cooperative = 1;
    }
    /* gridDim.x must be a multiple of n */
    void cluster_x(unsigned n)
    {
        if (n <= 1)
            return;
        cudaLaunchAttribute &c = attr[cfg.numAttrs++];
        c.id = cudaLaunchAttributeClusterDimension;
        c.val.clusterDim.x = n;
        c.val.clusterDim.y = 1;
        c.val.clusterDim.z = 1;
    }
};

#endif
