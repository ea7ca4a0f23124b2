/* GPU timing for the benchmark: CUDA events around each call, the L2 cache
 * flushed before every call outside the timed region, medians. */
#ifndef FS_BENCH_TIMING_H
#define FS_BENCH_TIMING_H

#include <stddef.h>

#include <cuda_runtime_api.h>

/* Abort the benchmark on a failed CUDA runtime call. */
#define CUDA_CHECK(call) bench_cuda_check((call), #call, __FILE__, __LINE__)
void bench_cuda_check(cudaError_t err, const char *what, const char *file, int line);
/* What is being measured, named in the message of a failed CUDA call. */
extern char bench_activity[256];

/* Enqueue one call of the measured op on the timer's stream; 0 on success. */
typedef int (*bench_op_fn)(void *arg);

typedef struct bench_timer {
    cudaStream_t stream;
    void *flush;          /* written between reps to evict the L2 */
    size_t flush_bytes;   /* 2 x the L2 size */
    int clean;            /* 0: the L2 left full of the flush's dirty lines (the default:
                             a decode step finds the previous layers' there); 1: read
                             back after the memset, so the call writes nothing back */
    cudaEvent_t *events;  /* 2 per rep */
    int max_reps;
} bench_timer;

void bench_timer_init(bench_timer *t, cudaStream_t stream, size_t l2_bytes, int max_reps);
void bench_timer_destroy(bench_timer *t);

/* warmup + reps calls, each after an L2 flush (a memset of 2 x L2 bytes,
 * then with t->clean a read of them, outside the events).  Events of every
 * rep are recorded without waiting and read after one final synchronize, so
 * the host stays ahead of the GPU and launch latency is not timed.  out_ms[reps]
 * comes back sorted ascending.
 * Returns 0, or -1 if the op failed (the stream is synchronized first). */
int bench_time(bench_timer *t, bench_op_fn op, void *arg, int warmup, int reps, double *out_ms);

/* Read `bytes` of buf on the stream (l2_read.cu). */
void bench_l2_read(const void *buf, size_t bytes, cudaStream_t stream);

/* Sorts n times (ms) ascending, for bench_quantile. */
void bench_sort_ms(double *v, int n);

/* q-quantile (0..1) of sorted values, linear interpolation; median = 0.5. */
double bench_quantile(const double *sorted, int n, double q);

/* Device-to-device copy bandwidth in GB/s counting read + write bytes
 * (2 x bytes per copy): the median of `reps` cudaMemcpyAsync of `bytes`. */
double bench_copy_bandwidth(cudaStream_t stream, size_t bytes, int reps);

#endif
