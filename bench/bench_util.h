/* Small helpers shared by the benchmarks (filter_bench.c, tree_bench.c;
 * flashspec_bench.c for its --alt context): device buffers, list arguments,
 * timing several methods alternated in rounds, a context made with a knob. */
#ifndef FS_BENCH_UTIL_H
#define FS_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "flashspec.h"
#include "timing.h"

/* cudaMalloc (at least 1 byte) / a device copy of a host array; abort on failure. */
void *bu_dmalloc(size_t n);
void *bu_dup(const void *host, size_t n);

/* "1,4,16" or "151936x4096,128256x8192" into out[] (up to max numbers). */
void bu_parse_list(const char *s, int64_t *out, int *n, int max);

/* A list option: --name LIST into vals (n of them, up to max). */
typedef struct bu_list_opt {
    const char *name;
    int64_t *vals;
    int *n;
    int max;
} bu_list_opt;

/* The command line of a focused benchmark: the list options, --rounds N and
 * --reps N; rounds is then capped so that rounds x reps <= max_samples. */
void bu_parse_args(int argc, char **argv, const bu_list_opt *lists, int nlists, int *rounds,
                   int *reps, int max_samples);

/* Time methods 0 .. nmethods-1 alternated in `rounds` rounds of `reps`
 * calls each, round r starting at method r * nmethods / rounds: *method = m
 * (names[m] as bench_activity), then run(arg), which reads *method; warm-up
 * calls before each method's calls of a round (three in the first).  samples holds nmethods x
 * rounds x reps values (ms), sorted per method on return; med[m] is the
 * median.  Returns 0, or -1 when a call failed. */
int bu_time_rounds(bench_timer *t, int nmethods, const char *const *names, int *method,
                   bench_op_fn run, void *arg, int rounds, int reps, double *samples,
                   double *med);

/* A CUDA context on `device` created with `assignment` ("VAR=VALUE") in the
 * environment -- the library reads its knobs (docs/TUNING.md) at creation --
 * which is then put back as it was, its stream set to `stream`: a knob's
 * other side beside the default context in one process (flashspec_bench
 * --alt, tree_bench's TREE_BENCH_ALT).  NULL, with a message on stderr,
 * when the assignment is not VAR=VALUE or the context cannot be made. */
fs_context *bu_context_with_env(const char *assignment, int device, cudaStream_t stream);

/* "p10-p90" of a method's sorted samples, into buf. */
const char *bu_spread(const double *sorted, int n, char *buf, size_t size);

#endif
