/* A kernel timeline of an unmodified CUDA program, as it runs: loaded by the
 * CUDA driver through CUDA_INJECTION64_PATH, it turns on CUPTI's activity
 * records for kernels, memsets and memcopies and writes one line per
 * activity when the program exits:
 *
 *   K|S|C start_ns end_ns stream name
 *
 * (K kernel, S memset, C memcopy; GPU timestamps).  Unlike ncu, which
 * replays and serialises every kernel with gaps of milliseconds between
 * them, the activity records leave the launches as the program issues
 * them, so a call's kernels keep their overlap (programmatic launches) and
 * the chip its power state: the timeline prices each kernel of a call at
 * the clocks the benchmark itself sees (at 256+ rows the H100 sits at its
 * 700 W cap, where a lone ncu launch does not).
 *
 *   cmake --build build --target fs_kernel_trace  # build/bench/libfs_kernel_trace.so
 *   FS_TRACE_OUT=trace.txt CUDA_INJECTION64_PATH=$PWD/build/bench/libfs_kernel_trace.so \
 *      flashspec_bench --shapes 151936x4096 --rows 1024 ...
 *   bench/tools/kernel_trace_table.py trace.txt
 *
 * FS_TRACE_OUT: the output file (default: stderr). */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_BUFFER_BYTES (8u << 20)

static FILE *trace_out;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    /* CUPTI wants 8-byte aligned buffers */
    *buffer = (uint8_t *)aligned_alloc(8, TRACE_BUFFER_BYTES);
    *size = *buffer ? TRACE_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)size;
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            fprintf(trace_out, "K %llu %llu %u %s\n", (unsigned long long)k->start,
                    (unsigned long long)k->end, k->streamId, k->name ? k->name : "?");
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
            fprintf(trace_out, "S %llu %llu %u memset_%llu\n", (unsigned long long)m->start,
                    (unsigned long long)m->end, m->streamId, (unsigned long long)m->bytes);
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
            fprintf(trace_out, "C %llu %llu %u memcpy_%llu\n", (unsigned long long)m->start,
                    (unsigned long long)m->end, m->streamId, (unsigned long long)m->bytes);
        }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped)
        fprintf(stderr, "kernel_trace: %zu records dropped\n", dropped);
    free(buffer);
}

static void trace_flush(void)
{
    cuptiActivityFlushAll(1);
    if (trace_out && trace_out != stderr)
        fclose(trace_out);
}

/* Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH). */
int InitializeInjection(void)
{
    const char *path = getenv("FS_TRACE_OUT");
    trace_out = path && *path ? fopen(path, "w") : stderr;
    if (!trace_out) {
        fprintf(stderr, "kernel_trace: cannot write %s\n", path);
        return 0;
    }
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        fprintf(stderr, "kernel_trace: CUPTI activity tracing unavailable\n");
        return 0;
    }
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    atexit(trace_flush);
    return 1;
}
