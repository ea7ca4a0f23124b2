/* NVML sampler of the SM clock and board power (power.h). */
#define _GNU_SOURCE
#include "power.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The slice of NVML's C ABI this file calls (nvml.h is not part of every
 * CUDA toolkit install; the driver's library always carries these). */
typedef int nvml_ret;
typedef struct nvml_device_st *nvml_device;
enum { NVML_OK = 0, NVML_CLOCK_SM_ID = 1, NVML_FIELD_POWER_INSTANT = 186 };
/* nvmlClocksEventReasonSwPowerCap, nvmlClocksEventReasonHwPowerBrakeSlowdown */
#define NVML_REASON_POWER (0x4ull | 0x80ull)
typedef union nvml_value {
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    signed long long sll;
    int si;
    unsigned short us;
} nvml_value;
typedef struct nvml_field_value {
    unsigned int field_id, scope_id;
    long long timestamp, latency_usec;
    int value_type; /* 0 double, 1 uint, 2 ulong, 3 ulonglong, 4 slonglong, 5 sint, 6 ushort */
    nvml_ret ret;
    nvml_value value;
} nvml_field_value;

typedef struct nvml_api {
    void *lib;
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    nvml_ret (*by_bus_id)(const char *, nvml_device *);
    nvml_ret (*clock)(nvml_device, int, unsigned int *);
    nvml_ret (*power)(nvml_device, unsigned int *);
    nvml_ret (*fields)(nvml_device, int, nvml_field_value *);
    nvml_ret (*reasons)(nvml_device, unsigned long long *);
} nvml_api;

struct bench_power {
    nvml_api api;
    nvml_device dev;
    int instant; /* the instantaneous power field answers */
    pthread_t thread;
    pthread_mutex_t lock;
    int running, active;
    /* the window's sums, under lock */
    long n, n_power, n_capped;
    double sum_mhz, sum_w;
};

/* Half a millisecond between readings: a method's round of 20 calls at
 * 256-1024 rows lasts 10-50 ms, so it gets 20-100 of them, and the three
 * NVML reads take a few microseconds of a host core. */
#define SAMPLE_NS 500000L

static double field_number(const nvml_field_value *f)
{
    switch (f->value_type) {
    case 0: return f->value.d;
    case 1: return (double)f->value.ui;
    case 2: return (double)f->value.ul;
    case 3: return (double)f->value.ull;
    case 4: return (double)f->value.sll;
    case 5: return (double)f->value.si;
    case 6: return (double)f->value.us;
    default: return -1.0;
    }
}

/* Board power in W (< 0: none). */
static double read_watts(bench_power *p)
{
    if (p->instant) {
        nvml_field_value f;
        memset(&f, 0, sizeof f);
        f.field_id = NVML_FIELD_POWER_INSTANT;
        if (p->api.fields(p->dev, 1, &f) == NVML_OK && f.ret == NVML_OK)
            return field_number(&f) / 1000.0;
    }
    unsigned int mw = 0;
    return p->api.power && p->api.power(p->dev, &mw) == NVML_OK ? mw / 1000.0 : -1.0;
}

static void *sampler(void *arg)
{
    bench_power *p = (bench_power *)arg;
    const struct timespec gap = {0, SAMPLE_NS};
    for (;;) {
        pthread_mutex_lock(&p->lock);
        const int running = p->running, active = p->active;
        pthread_mutex_unlock(&p->lock);
        if (!running)
            break;
        if (active) {
            unsigned int mhz = 0;
            unsigned long long why = 0;
            const int have_clock = p->api.clock(p->dev, NVML_CLOCK_SM_ID, &mhz) == NVML_OK;
            const double w = read_watts(p);
            const int capped =
                p->api.reasons && p->api.reasons(p->dev, &why) == NVML_OK && (why & NVML_REASON_POWER);
            pthread_mutex_lock(&p->lock);
            if (p->active && have_clock) {
                p->n += 1;
                p->sum_mhz += mhz;
                p->n_capped += capped;
                if (w >= 0.0) {
                    p->n_power += 1;
                    p->sum_w += w;
                }
            }
            pthread_mutex_unlock(&p->lock);
        }
        nanosleep(&gap, NULL);
    }
    return NULL;
}

static void *sym(void *lib, const char *a, const char *b)
{
    void *f = dlsym(lib, a);
    return f || !b ? f : dlsym(lib, b);
}

bench_power *bench_power_start(int device, char *why, int why_len)
{
    char bus[32];
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, device) != cudaSuccess) {
        snprintf(why, (size_t)why_len, "no PCI bus id for device %d", device);
        return NULL;
    }
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, (size_t)why_len, "libnvidia-ml.so.1: %s", dlerror());
        return NULL;
    }
    bench_power *p = (bench_power *)calloc(1, sizeof *p);
    if (!p) {
        dlclose(lib);
        snprintf(why, (size_t)why_len, "out of host memory");
        return NULL;
    }
    nvml_api *a = &p->api;
    a->lib = lib;
    *(void **)&a->init = sym(lib, "nvmlInit_v2", "nvmlInit");
    *(void **)&a->shutdown = sym(lib, "nvmlShutdown", NULL);
    *(void **)&a->by_bus_id =
        sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
    *(void **)&a->clock = sym(lib, "nvmlDeviceGetClockInfo", NULL);
    *(void **)&a->power = sym(lib, "nvmlDeviceGetPowerUsage", NULL);
    *(void **)&a->fields = sym(lib, "nvmlDeviceGetFieldValues", NULL);
    *(void **)&a->reasons =
        sym(lib, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!a->init || !a->shutdown || !a->by_bus_id || !a->clock) {
        snprintf(why, (size_t)why_len, "libnvidia-ml.so.1 lacks the clock API");
        dlclose(lib);
        free(p);
        return NULL;
    }
    nvml_ret r = a->init();
    if (r == NVML_OK && (r = a->by_bus_id(bus, &p->dev)) != NVML_OK)
        a->shutdown();
    if (r != NVML_OK) {
        snprintf(why, (size_t)why_len, "NVML error %d (init or device %s)", r, bus);
        dlclose(lib);
        free(p);
        return NULL;
    }
    if (a->fields) {
        nvml_field_value f;
        memset(&f, 0, sizeof f);
        f.field_id = NVML_FIELD_POWER_INSTANT;
        p->instant = a->fields(p->dev, 1, &f) == NVML_OK && f.ret == NVML_OK;
    }
    pthread_mutex_init(&p->lock, NULL);
    p->running = 1;
    if (pthread_create(&p->thread, NULL, sampler, p) != 0) {
        snprintf(why, (size_t)why_len, "no sampler thread");
        pthread_mutex_destroy(&p->lock);
        a->shutdown();
        dlclose(lib);
        free(p);
        return NULL;
    }
    return p;
}

void bench_power_stop(bench_power *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->running = 0;
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->lock);
    p->api.shutdown();
    dlclose(p->api.lib);
    free(p);
}

void bench_power_begin(bench_power *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->n = p->n_power = p->n_capped = 0;
    p->sum_mhz = p->sum_w = 0.0;
    p->active = 1;
    pthread_mutex_unlock(&p->lock);
}

bench_power_stats bench_power_end(bench_power *p)
{
    bench_power_stats s = {0, 0.0, -1.0, 0, 0.0, 0};
    if (!p)
        return s;
    pthread_mutex_lock(&p->lock);
    p->active = 0;
    s.samples = (int)p->n;
    if (p->n > 0) {
        s.sm_mhz = p->sum_mhz / (double)p->n;
        s.capped = (double)p->n_capped / (double)p->n;
    }
    s.power_samples = (int)p->n_power;
    if (p->n_power > 0)
        s.watts = p->sum_w / (double)p->n_power;
    s.instant = p->instant;
    pthread_mutex_unlock(&p->lock);
    return s;
}

void bench_power_add(bench_power_stats *sum, const bench_power_stats *w)
{
    const int n = sum->samples + w->samples, np = sum->power_samples + w->power_samples;
    if (n > 0) {
        sum->sm_mhz = (sum->sm_mhz * sum->samples + w->sm_mhz * w->samples) / n;
        sum->capped = (sum->capped * sum->samples + w->capped * w->samples) / n;
    }
    if (np > 0)
        sum->watts = ((sum->power_samples ? sum->watts * sum->power_samples : 0.0) +
                      (w->power_samples ? w->watts * w->power_samples : 0.0)) /
                     np;
    sum->samples = n;
    sum->power_samples = np;
    sum->instant |= w->instant;
}
