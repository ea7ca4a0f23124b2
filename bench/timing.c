#include "timing.h"

#include <stdio.h>
#include <stdlib.h>

char bench_activity[256];

void bench_cuda_check(cudaError_t err, const char *what, const char *file, int line)
{
    if (err == cudaSuccess)
        return;
    fprintf(stderr, "%s:%d: %s failed: %s (%s)%s%s\n", file, line, what,
            cudaGetErrorString(err), cudaGetErrorName(err),
            bench_activity[0] ? " while measuring " : "", bench_activity);
    exit(1);
}

void bench_timer_init(bench_timer *t, cudaStream_t stream, size_t l2_bytes, int max_reps)
{
    t->stream = stream;
    t->flush_bytes = 2 * (l2_bytes ? l2_bytes : ((size_t)64 << 20));
    t->clean = 0;
    CUDA_CHECK(cudaMalloc(&t->flush, t->flush_bytes));
    t->max_reps = max_reps;
    t->events = (cudaEvent_t *)calloc(2 * (size_t)max_reps, sizeof(cudaEvent_t));
    if (!t->events) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    for (int i = 0; i < 2 * max_reps; ++i)
        CUDA_CHECK(cudaEventCreate(&t->events[i]));
}

void bench_timer_destroy(bench_timer *t)
{
    for (int i = 0; i < 2 * t->max_reps; ++i)
        CUDA_CHECK(cudaEventDestroy(t->events[i]));
    free(t->events);
    CUDA_CHECK(cudaFree(t->flush));
    t->events = NULL;
    t->flush = NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort_ms(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
}

static void flush_l2(bench_timer *t, int i)
{
    CUDA_CHECK(cudaMemsetAsync(t->flush, i & 0xff, t->flush_bytes, t->stream));
    if (t->clean)
        bench_l2_read(t->flush, t->flush_bytes, t->stream);
}

int bench_time(bench_timer *t, bench_op_fn op, void *arg, int warmup, int reps, double *out_ms)
{
    if (reps > t->max_reps) {
        fprintf(stderr, "bench_time: %d reps > %d\n", reps, t->max_reps);
        exit(1);
    }
    for (int i = 0; i < warmup; ++i) {
        flush_l2(t, i);
        if (op(arg) != 0) {
            CUDA_CHECK(cudaStreamSynchronize(t->stream));
            return -1;
        }
    }
    for (int i = 0; i < reps; ++i) {
        flush_l2(t, i);
        CUDA_CHECK(cudaEventRecord(t->events[2 * i], t->stream));
        if (op(arg) != 0) {
            CUDA_CHECK(cudaStreamSynchronize(t->stream));
            return -1;
        }
        CUDA_CHECK(cudaEventRecord(t->events[2 * i + 1], t->stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(t->stream));
    for (int i = 0; i < reps; ++i) {
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, t->events[2 * i], t->events[2 * i + 1]));
        out_ms[i] = ms;
    }
    bench_sort_ms(out_ms, reps);
    return 0;
}

double bench_quantile(const double *sorted, int n, double q)
{
    if (n <= 0)
        return 0.0;
    double pos = q * (n - 1);
    int i = (int)pos;
    if (i >= n - 1)
        return sorted[n - 1];
    double f = pos - i;
    return sorted[i] * (1.0 - f) + sorted[i + 1] * f;
}

double bench_copy_bandwidth(cudaStream_t stream, size_t bytes, int reps)
{
    void *src, *dst;
    cudaEvent_t e0, e1;
    double *ms = (double *)calloc((size_t)reps, sizeof *ms);
    if (!ms) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    CUDA_CHECK(cudaMalloc(&src, bytes));
    CUDA_CHECK(cudaMalloc(&dst, bytes));
    CUDA_CHECK(cudaMemsetAsync(src, 1, bytes, stream));
    CUDA_CHECK(cudaMemsetAsync(dst, 2, bytes, stream));
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; ++i)
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    for (int i = 0; i < reps; ++i) {
        float t = 0.0f;
        CUDA_CHECK(cudaEventRecord(e0, stream));
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
        CUDA_CHECK(cudaEventRecord(e1, stream));
        CUDA_CHECK(cudaEventSynchronize(e1));
        CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
        ms[i] = t;
    }
    bench_sort_ms(ms, reps);
    double med = bench_quantile(ms, reps, 0.5);
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    CUDA_CHECK(cudaFree(src));
    CUDA_CHECK(cudaFree(dst));
    free(ms);
    return 2.0 * (double)bytes / (med * 1e-3) / 1e9;
}
