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

/* 2-CTA clusters of `kernel` (blocks of `threads`, `smem` bytes of dynamic
 * shared memory) the current device holds at once, 0 if unknown: the GPCs'
 * SM counts need not be even, and a cluster that does not fit waits for a
 * second wave.  Asked once per device (known: count + 1 per device, zero
 * at first; 64 devices); setup(device) first sets the kernel's attributes. */
template <class Kernel, class Setup>
static int fs_max_clusters_2(int (&known)[64], Kernel kernel, int threads, size_t smem, Setup setup)
{
    int device = 0, n = 0;
    if (cudaGetDevice(&device) != cudaSuccess)
        return 0;
    if (device < 64) {
        const int k = __atomic_load_n(&known[device], __ATOMIC_ACQUIRE);
        if (k > 0)
            return k - 1;
    }
    if (setup(device) != cudaSuccess)
        return 0;
    fs_pdl_config pc(dim3(2), dim3((unsigned)threads), smem, nullptr, false);
    pc.cluster_x(2);
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &pc.cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (device < 64)
        __atomic_store_n(&known[device], n + 1, __ATOMIC_RELEASE);
    return n;
}

#endif
