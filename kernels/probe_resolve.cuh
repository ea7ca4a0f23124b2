/* Timing probe of the filters' resolve, compiled out unless the build
 * defines FS_PROBE_RESOLVE=1 (e.g. -DCMAKE_CUDA_FLAGS=-DFS_PROBE_RESOLVE=1).
 * Thread 0 of the merge kernel's block FS_PROBE_RESOLVE_BLOCK (default 1:
 * row 0 when block 0 is the warm-up slot, as by default on one GPU; row 1
 * without it -- merge_row.cuh) stamps clock64() when its row starts and
 * after each step of the resolve (filter_resolve.cuh's header numbers them)
 * and prints one line a launch at its end, R the launch's grid size:
 *   FS_PROBE_RESOLVE rows=R G=G merge=.. bounds=.. stage=.. radix=.. rank=..
 *       decide=.. kept=.. (SM cycles: the record merge, steps 1, 2, 3's
 *       radix rounds, 3's gather and rank, 4 with its barrier, 5)
 * bench/tools/resolve_probe_table.py turns filter_bench's output into
 * medians.  The printf makes every filtered call ~0.1 ms slower: time calls
 * with a build without it.  This is how the resolve's steps were found to
 * run 2-4x their warm time on cold code (DESIGN.md, "Sampling filters"). */
#ifndef FS_PROBE_RESOLVE_CUH
#define FS_PROBE_RESOLVE_CUH

#ifndef FS_PROBE_RESOLVE
#define FS_PROBE_RESOLVE 0
#endif
/* Not the grid's last block: the filtered merge kernel's grid is its
   co-resident blocks, more than the rows' slots. */
#ifndef FS_PROBE_RESOLVE_BLOCK
#define FS_PROBE_RESOLVE_BLOCK 1
#endif

#if FS_PROBE_RESOLVE
#include <cstdio>

enum { FS_PROBE_STAMPS = 9 };
__device__ long long fs_probe_resolve_t[FS_PROBE_STAMPS];
__device__ int fs_probe_resolve_g;
#endif

/* Stamp i (0 .. 8) in thread 0 of the probed block. */
__device__ __forceinline__ void fs_probe_resolve_stamp(int i)
{
#if FS_PROBE_RESOLVE
    if (blockIdx.x == FS_PROBE_RESOLVE_BLOCK && threadIdx.x == 0)
        fs_probe_resolve_t[i] = clock64();
#else
    (void)i;
#endif
}

/* The row's prefix length G, for the printed line. */
__device__ __forceinline__ void fs_probe_resolve_g_is(int g)
{
#if FS_PROBE_RESOLVE
    if (blockIdx.x == FS_PROBE_RESOLVE_BLOCK && threadIdx.x == 0)
        fs_probe_resolve_g = g;
#else
    (void)g;
#endif
}

/* Thread 0 of the probed block, at the end of a filtered row's merge block. */
__device__ __forceinline__ void fs_probe_resolve_print()
{
#if FS_PROBE_RESOLVE
    if (blockIdx.x != FS_PROBE_RESOLVE_BLOCK || threadIdx.x != 0)
        return;
    const long long *t = fs_probe_resolve_t;
    printf("FS_PROBE_RESOLVE rows=%d G=%d merge=%lld bounds=%lld stage=%lld radix=%lld "
           "rank=%lld decide=%lld kept=%lld\n",
           (int)gridDim.x, fs_probe_resolve_g, t[1] - t[0], t[3] - t[2], t[4] - t[3],
           t[5] - t[4], t[6] - t[5], t[7] - t[6], t[8] - t[7]);
#endif
}

#endif
