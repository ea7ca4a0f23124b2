/* The GPU's SM clock and power while a method runs (flashspec_bench --power).
 *
 * At 256+ rows the chip sits at its power cap, and a kernel's time there is
 * its energy: two kernels of equal cycles under ncu (a lone launch on an idle
 * chip) differ in calls by what each costs in power, through the clock the
 * cap leaves them.  A sampler thread reads NVML every half millisecond -- the
 * SM clock, the instantaneous board power where the driver reports it (else
 * its averaged power), and whether a power-cap reason is holding the clocks
 * -- and averages what it reads between bench_power_begin and
 * bench_power_end, so that each method's calls get their own clock and watts
 * and the cycles a call costs (clock x time) can be set beside ncu's.
 *
 * NVML is opened at run time (dlopen of the driver's libnvidia-ml.so.1): the
 * benchmark builds without its header and runs without it, reporting nothing. */
#ifndef FS_BENCH_POWER_H
#define FS_BENCH_POWER_H

typedef struct bench_power bench_power;

typedef struct bench_power_stats {
    int samples;       /* 0: nothing was read (no NVML, or too short a window) */
    double sm_mhz;     /* mean SM clock */
    double watts;      /* mean board power; < 0 when the driver reports none */
    int power_samples; /* the readings with a power value (watts' weight) */
    double capped;     /* fraction of the samples with a power-cap reason set */
    int instant;       /* watts are instantaneous readings (else NVML's average) */
} bench_power_stats;

/* The sampler for the CUDA device `device`; NULL (with the reason in `why`,
 * `why_len` bytes) when NVML or the device's handle is unavailable. */
bench_power *bench_power_start(int device, char *why, int why_len);
void bench_power_stop(bench_power *p);

/* Start a window: what the sampler reads from now on is averaged ... */
void bench_power_begin(bench_power *p);
/* ... until now; the window's readings.  NULL p: samples = 0. */
bench_power_stats bench_power_end(bench_power *p);
/* Fold window w into sum (one method's rounds): the means of all their
 * readings.  A sum starts as bench_power_end(NULL). */
void bench_power_add(bench_power_stats *sum, const bench_power_stats *w);

#endif
