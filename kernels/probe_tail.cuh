/* Timing probe of the single launch's end (the tile kernel with prep, merge
 * and finalize inside: scan_hopper.cu), compiled out unless the build
 * defines FS_PROBE_TAIL=1 (e.g. -DCMAKE_CUDA_FLAGS=-DFS_PROBE_TAIL=1).
 * Consumer thread 0 of every CTA stamps %globaltimer (ns) when its records
 * are written; CTA 0's also when its consumers start, after the grid
 * barrier and after the merge and finalize (fs_op_tail_run), and prints one
 * line a launch:
 *   FS_PROBE_TAIL rows=R op=O first=.. cta0=.. last=.. sync=.. tail=..
 * in ns after CTA 0's start: the first and the last CTA to write its
 * records, CTA 0's own, the grid barrier's release in CTA 0 and the end of
 * its merge and finalize.  bench/tools/tail_probe_table.py turns a
 * benchmark's output into medians.  The printf makes every call slower:
 * time calls with a build without it. */
#ifndef FS_PROBE_TAIL_CUH
#define FS_PROBE_TAIL_CUH

#include "cuda_common.cuh" /* fs_globaltimer */

#ifndef FS_PROBE_TAIL
#define FS_PROBE_TAIL 0
#endif

#if FS_PROBE_TAIL
#include <cstdio>

__device__ unsigned long long fs_probe_tail_first = ~0ull, fs_probe_tail_last = 0ull;
#endif

/* Per-thread stamps: only consumer thread 0 (ct == 0) of a CTA records. */
struct fs_probe_tail {
#if FS_PROBE_TAIL
    unsigned long long start, done;
#endif
    __device__ __forceinline__ void at_start(int ct)
    {
#if FS_PROBE_TAIL
        if (ct == 0)
            start = fs_globaltimer();
#endif
    }
    /* this CTA's records are written */
    __device__ __forceinline__ void at_done(int ct)
    {
#if FS_PROBE_TAIL
        if (ct == 0) {
            done = fs_globaltimer();
            atomicMin(&fs_probe_tail_first, done);
            atomicMax(&fs_probe_tail_last, done);
        }
#endif
    }
    /* CTA 0 after the grid barrier (sync) and after its tail (end) */
    __device__ __forceinline__ void at_end(int ct, unsigned long long sync, long long rows, int op)
    {
#if FS_PROBE_TAIL
        if (ct == 0 && blockIdx.x == 0) {
            const unsigned long long end = fs_globaltimer();
            const unsigned long long first = fs_probe_tail_first, last = fs_probe_tail_last;
            fs_probe_tail_first = ~0ull; /* for the next launch */
            fs_probe_tail_last = 0ull;
            printf("FS_PROBE_TAIL rows=%lld op=%d first=%llu cta0=%llu last=%llu sync=%llu "
                   "tail=%llu\n",
                   rows, op, first - start, done - start, last - start, sync - start,
                   end - start);
        }
#else
        (void)ct;
        (void)sync;
        (void)rows;
        (void)op;
#endif
    }
    __device__ __forceinline__ unsigned long long now() const
    {
#if FS_PROBE_TAIL
        return fs_globaltimer();
#else
        return 0ull;
#endif
    }
};

#endif
