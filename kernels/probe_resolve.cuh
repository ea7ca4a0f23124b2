/* Timing probe of the filters' resolve, compiled out unless the build
 * defines FS_PROBE_RESOLVE=1 (e.g. -DCMAKE_CUDA_FLAGS=-DFS_PROBE_RESOLVE=1).
 * Thread 0 of the merge kernel's block FS_PROBE_RESOLVE_BLOCK (default 3:
 * row 0 when blocks 0-2 are the warm-up slots, as by default on one GPU;
 * row 3 without them -- merge_row.cuh) stamps clock64() when its row starts and
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

#include "cuda_common.cuh" /* fs_globaltimer */

#ifndef FS_PROBE_RESOLVE
#define FS_PROBE_RESOLVE 0
#endif
/* Not the grid's last block: the filtered merge kernel's grid is its
   co-resident blocks, more than the rows' slots. */
#ifndef FS_PROBE_RESOLVE_BLOCK
#define FS_PROBE_RESOLVE_BLOCK 3
#endif

#if FS_PROBE_RESOLVE
#include <cstdio>

enum { FS_PROBE_STAMPS = 9 };
__device__ long long fs_probe_resolve_t[FS_PROBE_STAMPS];
__device__ int fs_probe_resolve_g;
#endif

/* Which block of the filtered merge kernel ends its part last: thread 0 of
 * every block stamps %globaltimer (ns) when the block starts and when it
 * reaches the grid barrier; after the barrier the probed block prints
 *   FS_PROBE_ARRIVE slots=S warm_start=.. warm_arrive=.. row0_start=..
 *       row0_arrive=.. rows_arrive=.. idle_arrive=.. last=B
 * in ns after the earliest start: the warm-up slots (block 0's start, the
 * last of their arrivals; -1 when the grid has none), row 0's block, the
 * latest of the row blocks and of the blocks without a slot, and the last
 * block to arrive; then, for blocks 0 .. FS_FILTER_WARM_SLOTS and the last
 * row block to arrive,
 *   FS_PROBE_STEPS block=B t=t0,..,t8
 * its resolve stamps (fs_probe_resolve_stamp's steps; a step the block
 * skips keeps an earlier launch's time).  The resolve's own printf delays
 * its block's arrival: build with FS_PROBE_RESOLVE_BLOCK past the grid
 * (e.g. 100000) to time arrivals alone. */
#if FS_PROBE_RESOLVE
enum { FS_PROBE_BLOCKS = 1024 };
__device__ unsigned long long fs_probe_start[FS_PROBE_BLOCKS], fs_probe_arrive[FS_PROBE_BLOCKS];
/* every block's resolve stamps (fs_probe_resolve_stamp) in ns */
__device__ unsigned long long fs_probe_steps[FS_PROBE_BLOCKS][FS_PROBE_STAMPS];
#endif

__device__ __forceinline__ void fs_probe_block_start()
{
#if FS_PROBE_RESOLVE
    if (threadIdx.x == 0 && blockIdx.x < FS_PROBE_BLOCKS)
        fs_probe_start[blockIdx.x] = fs_globaltimer();
#endif
}

__device__ __forceinline__ void fs_probe_block_arrive()
{
#if FS_PROBE_RESOLVE
    if (threadIdx.x == 0 && blockIdx.x < FS_PROBE_BLOCKS)
        fs_probe_arrive[blockIdx.x] = fs_globaltimer();
#endif
}

/* After the grid barrier, by the grid's last block (a block without a
 * slot: its printf delays no row); warm: the grid has warm-up slots. */
__device__ __forceinline__ void fs_probe_arrivals_print(long long slots, bool warm)
{
#if FS_PROBE_RESOLVE
    if (blockIdx.x != gridDim.x - 1 || threadIdx.x != 0 || slots >= gridDim.x)
        return;
    const int n = gridDim.x < FS_PROBE_BLOCKS ? (int)gridDim.x : FS_PROBE_BLOCKS;
    unsigned long long t0 = ~0ull, rows = 0, idle = 0, last_t = 0, wmax = 0;
    int last = -1;
    for (int b = 0; b < n; ++b) {
        t0 = fs_probe_start[b] < t0 ? fs_probe_start[b] : t0;
        const unsigned long long a = fs_probe_arrive[b];
        if (a > last_t) {
            last_t = a;
            last = b;
        }
        if (warm && b < FS_FILTER_WARM_SLOTS)
            wmax = a > wmax ? a : wmax;
        else if (b < slots)
            rows = a > rows ? a : rows;
        else
            idle = a > idle ? a : idle;
    }
    const int r0 = warm ? FS_FILTER_WARM_SLOTS : 0;
    printf("FS_PROBE_ARRIVE slots=%lld warm_start=%lld warm_arrive=%lld row0_start=%lld "
           "row0_arrive=%lld rows_arrive=%lld idle_arrive=%lld last=%d\n",
           slots, warm ? (long long)(fs_probe_start[0] - t0) : -1ll,
           warm ? (long long)(wmax - t0) : -1ll,
           (long long)(fs_probe_start[r0] - t0), (long long)(fs_probe_arrive[r0] - t0),
           (long long)(rows - t0), idle ? (long long)(idle - t0) : -1ll, last);
    int last_row = -1;
    for (int b = warm ? FS_FILTER_WARM_SLOTS : 0; b < slots && b < n; ++b)
        if (fs_probe_arrive[b] == rows)
            last_row = b;
    for (int b = 0; b < n; ++b) {
        if (!(b <= FS_FILTER_WARM_SLOTS || b == last_row))
            continue;
        const unsigned long long *t = fs_probe_steps[b];
        printf("FS_PROBE_STEPS block=%d t=%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", b,
               (long long)(t[0] - t0), (long long)(t[1] - t0), (long long)(t[2] - t0),
               (long long)(t[3] - t0), (long long)(t[4] - t0), (long long)(t[5] - t0),
               (long long)(t[6] - t0), (long long)(t[7] - t0), (long long)(t[8] - t0));
    }
#else
    (void)slots;
    (void)warm;
#endif
}

/* Stamp i (0 .. 8) in thread 0 of the probed block. */
__device__ __forceinline__ void fs_probe_resolve_stamp(int i)
{
#if FS_PROBE_RESOLVE
    if (blockIdx.x == FS_PROBE_RESOLVE_BLOCK && threadIdx.x == 0)
        fs_probe_resolve_t[i] = clock64();
    if (blockIdx.x < FS_PROBE_BLOCKS && threadIdx.x == 0)
        fs_probe_steps[blockIdx.x][i] = fs_globaltimer();
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
