/* See bench_util.h. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, strdup */

#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

void *bu_dmalloc(size_t n)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, n ? n : 1));
    return p;
}

void *bu_dup(const void *host, size_t n)
{
    void *d = bu_dmalloc(n);
    CUDA_CHECK(cudaMemcpy(d, host, n, cudaMemcpyHostToDevice));
    return d;
}

void bu_parse_list(const char *s, int64_t *out, int *n, int max)
{
    *n = 0;
    while (*s && *n < max) {
        char *end = NULL;
        out[(*n)++] = strtoll(s, &end, 10);
        if (end == s)
            break;
        s = end;
        if (*s == ',' || *s == 'x')
            ++s;
    }
}

void bu_parse_args(int argc, char **argv, const bu_list_opt *lists, int nlists, int *rounds,
                   int *reps, int max_samples)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rounds"))
            *rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            *reps = atoi(argv[i + 1]);
        else
            for (int k = 0; k < nlists; ++k)
                if (!strcmp(argv[i] + 2, lists[k].name) && !strncmp(argv[i], "--", 2))
                    bu_parse_list(argv[i + 1], lists[k].vals, lists[k].n, lists[k].max);
    }
    if (*reps < 1)
        *reps = 1;
    if (*rounds < 1)
        *rounds = 1;
    if (*rounds * *reps > max_samples)
        *rounds = max_samples / *reps > 0 ? max_samples / *reps : 1;
}

int bu_time_rounds(bench_timer *t, int nmethods, const char *const *names, int *method,
                   bench_op_fn run, void *arg, int rounds, int reps, double *samples,
                   double *med)
{
    const int per = rounds * reps;
    for (int round = 0; round < rounds; ++round)
        for (int j = 0; j < nmethods; ++j) {
            /* round r starts at method r * n / rounds, as flashspec_bench's
               --order rotate: in a fixed order, the same kernel measured
               2-7% faster as the last method than as the second at
               1320-1584 rows on an H200 (tree_bench's tree@alt,
               bench/results/2026-11-30-h200-tree-tile-bits/) */
            const int m = (j + round * nmethods / rounds) % nmethods;
            *method = m;
            snprintf(bench_activity, sizeof bench_activity, "%s", names[m]);
            if (bench_time(t, run, arg, round == 0 ? 3 : 1, reps,
                           samples + (size_t)m * per + (size_t)round * reps))
                return -1;
        }
    for (int m = 0; m < nmethods; ++m) {
        bench_sort_ms(samples + (size_t)m * per, per);
        med[m] = bench_quantile(samples + (size_t)m * per, per, 0.5);
    }
    return 0;
}

const char *bu_spread(const double *sorted, int n, char *buf, size_t size)
{
    snprintf(buf, size, "%.3f-%.3f", bench_quantile(sorted, n, 0.1),
             bench_quantile(sorted, n, 0.9));
    return buf;
}

fs_context *bu_context_with_env(const char *assignment, int device, cudaStream_t stream)
{
    char var[128];
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof var) {
        fprintf(stderr, "%s: expected VAR=VALUE\n", assignment);
        return NULL;
    }
    memcpy(var, assignment, (size_t)(eq - assignment));
    var[eq - assignment] = '\0';
    const char *old = getenv(var);
    char *saved = old ? strdup(old) : NULL;
    setenv(var, eq + 1, 1);
    fs_context *ctx = NULL;
    fs_status st = fs_context_create(&ctx, FS_DEVICE_CUDA, device);
    if (saved)
        setenv(var, saved, 1);
    else
        unsetenv(var);
    free(saved);
    if (st == FS_OK && (st = fs_context_set_stream(ctx, stream)) != FS_OK)
        fs_context_destroy(ctx);
    if (st != FS_OK) {
        fprintf(stderr, "%s: no CUDA context: %s\n", assignment, fs_status_string(st));
        return NULL;
    }
    return ctx;
}
