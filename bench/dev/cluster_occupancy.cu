// Session 6: how many clusters of 1-4 CTAs of the rows kernel's shape (256
// threads, 207 KB of dynamic shared memory: one CTA per SM) an H100 holds at
// once.  nvcc -arch=sm_90a -o /tmp/occ bench/dev/cluster_occupancy.cu
#include <cstdio>
#include <cuda_runtime.h>

__global__ void k(int *p)
{
    extern __shared__ int s[];
    if (p)
        p[0] = s[0];
}

int main()
{
    const int smem = 207 * 1024;
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    for (int threads : {256, 384})
        for (int cl = 1; cl <= 8; ++cl) {
            cudaLaunchConfig_t cfg = {};
            cudaLaunchAttribute at;
            at.id = cudaLaunchAttributeClusterDimension;
            at.val.clusterDim.x = cl;
            at.val.clusterDim.y = 1;
            at.val.clusterDim.z = 1;
            cfg.gridDim = dim3(132 / cl * cl);
            cfg.blockDim = dim3(threads);
            cfg.dynamicSmemBytes = smem;
            cfg.attrs = &at;
            cfg.numAttrs = 1;
            int n = -1;
            cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k, &cfg);
            printf("threads %d cluster %d: max active clusters %d (%d CTAs) %s\n", threads, cl, n,
                   n * cl, cudaGetErrorString(e));
        }
    return 0;
}
