/* CUDA context hooks: device discovery and per-device kernel setup.  Safe to
 * call on a machine without a GPU or driver (it then reports no device). */
#include <stdlib.h>

#include "cuda_common.cuh"
#include "filter_gpu.cuh"
#include "hopper_policy.h"
#include "scan_hopper.cuh"

#define FS_MAX_DEVICES 64

/* Per-device flag: the kernels' dynamic shared-memory limits are raised.
 * Setting them twice is harmless, so the flag needs no lock. */
static volatile int g_configured[FS_MAX_DEVICES];

extern "C" int fs_cuda_device_count(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* no driver / no device: not an error for the caller */
        return 0;
    }
    return n;
}

cudaError_t fs_cuda_configure_current(int device)
{
    if (device >= 0 && device < FS_MAX_DEVICES && g_configured[device])
        return cudaSuccess;
    cudaError_t e = fs_scan_mma_configure();
    if (e == cudaSuccess)
        e = fs_filter_merge_configure();
    if (e == cudaSuccess && device >= 0 && device < FS_MAX_DEVICES)
        g_configured[device] = 1;
    return e;
}

fs_status fs_cuda_enter(fs_context *ctx, int *prev_device)
{
    *prev_device = -1;
    int cur = -1;
    cudaError_t e = cudaGetDevice(&cur);
    if (e == cudaSuccess && cur != ctx->device) {
        e = cudaSetDevice(ctx->device);
        if (e == cudaSuccess)
            *prev_device = cur;
    }
    if (e == cudaSuccess)
        e = fs_cuda_configure_current(ctx->device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (*prev_device >= 0)
            (void)cudaSetDevice(*prev_device);
        *prev_device = -1;
        return fs_fail(ctx, FS_ERR_CUDA, "selecting CUDA device %d: %s", ctx->device,
                       cudaGetErrorString(e));
    }
    return FS_OK;
}

void fs_cuda_leave(int prev_device)
{
    if (prev_device >= 0)
        (void)cudaSetDevice(prev_device);
}

/* An environment switch: set, non-empty and not "0". */
static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && *v != '0';
}

/* A non-negative count from the environment; dflt when unset, empty or
 * negative. */
static int64_t env_count(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    const long long n = v && *v ? strtoll(v, NULL, 10) : dflt;
    return n < 0 ? dflt : (int64_t)n;
}

/* The knobs, by the chip's class: everything below is a default measured on
 * an H100 (fast_hbm 0) or an H200 (1), or a FLASHSPEC_* switch for A/B runs
 * and tests.  tests/test_hopper_policy.c walks the kernel choices they
 * make. */
extern "C" void fs_cuda_context_knobs(fs_context *ctx, int fast_hbm)
{
    /* The Hopper kernels' W stream (enum fs_w_stream): promoted on an H100,
       plain on an H200, where each was measured best.  FLASHSPEC_W_STREAM=0|1
       sets it (A/B runs). */
    ctx->w_stream =
        env_count("FLASHSPEC_W_STREAM", fast_hbm) ? FS_W_STREAM_PLAIN : FS_W_STREAM_PROMOTED;
    /* FLASHSPEC_W_HINT=0|1|2 (none, evict_first, evict_normal) sets W's
       L2 hint for either stream (A/B runs); unset: fs_w_hint_for */
    ctx->w_hint = (int)env_count("FLASHSPEC_W_HINT", FS_W_HINT_AUTO);
    /* where the rows kernel takes over from the tile kernel, by the chip
       (fs_hopper_rows_min_fast_hbm); FLASHSPEC_HOPPER_ROWS_EARLY=0|1 sets it
       (A/B runs) */
    ctx->hopper_rows_early = env_count("FLASHSPEC_HOPPER_ROWS_EARLY", fast_hbm) != 0;
    /* the rows kernel's automatic row block where 128 and 192 rows pad
       as many (fs_hopper_rows_block's tie), by the chip;
       FLASHSPEC_HOPPER_ROWS_TIE128=0|1 sets it (A/B runs) */
    ctx->hopper_rows_ties_128 = env_count("FLASHSPEC_HOPPER_ROWS_TIE128", fast_hbm) != 0;
    /* FLASHSPEC_HOPPER_ROWS_MIN moves the switch to the rows-as-M Hopper kernel
       (tests force it to 1 to run every shape through that kernel; the
       benchmark compares the two kernels with it); 0: the kernel's default */
    ctx->hopper_rows_min = env_count("FLASHSPEC_HOPPER_ROWS_MIN", 0);
    /* FLASHSPEC_HOPPER_NO_MULTICAST=1: the rows kernel without its 2-CTA
       clusters (A/B runs of the W multicast) */
    ctx->hopper_no_multicast = env_flag("FLASHSPEC_HOPPER_NO_MULTICAST");
    /* FLASHSPEC_TILE_EPI_WG=0: the tile kernel's 128-160-row blocks
       push their noise blocks in the MMA warpgroups, without the epilogue
       warpgroup (A/B runs) */
    ctx->tile_no_epi_wg = env_count("FLASHSPEC_TILE_EPI_WG", 1) == 0;
    /* FLASHSPEC_TILE_EW_MIN_ROWS=48|64|80|96|128: the smallest of the tile kernel's
       row blocks that its epilogue warps take (A/B runs); unset or other: by
       the chip (cuda_ops.cu) */
    ctx->tile_ew_min_bn = (int)env_count("FLASHSPEC_TILE_EW_MIN_ROWS", 0);
    if (!fs_hopper_ew_min_valid(ctx->tile_ew_min_bn))
        ctx->tile_ew_min_bn = 0;
    /* FLASHSPEC_TILE_BN_STEP=16: the tile kernel's single CTAs of 129-160
       rows in 144- and 160-row blocks, as before its 136- and 152-row ones
       (A/B runs) */
    ctx->tile_bn_step16 = env_count("FLASHSPEC_TILE_BN_STEP", 8) == 16;
    /* FLASHSPEC_TILE_PAIRS_MIN=n: the tile kernel's pairs take n-320 rows
       (241-256 by the chip, fs_hopper_pairs_128; 0: none; tests and A/B
       runs); unset: by the chip (cuda_ops.cu) */
    ctx->tile_pairs_min = env_count("FLASHSPEC_TILE_PAIRS_MIN", -1);
    /* FLASHSPEC_TILE_PAIRS_128=0|1: whether the pairs take 241-256 rows (in
       128-row halves) for every op, where they take 193-320 (A/B runs);
       unset or other: by the chip and op (fs_hopper_pairs_128) */
    {
        const int64_t p = env_count("FLASHSPEC_TILE_PAIRS_128", -1);
        ctx->tile_pairs_128 = p == 0 || p == 1 ? (int)p : -1;
    }
    /* FLASHSPEC_TILE_GROUPS_MAX=n: the tile kernel's pairs in row groups
       take 321-n rows where they pad fewer rows than the rows kernel (0:
       none; tests and A/B runs); unset: by the chip (cuda_ops.cu) */
    ctx->tile_groups_max = env_count("FLASHSPEC_TILE_GROUPS_MAX", -1);
    /* FLASHSPEC_HOPPER_ODD_PAIRS=0: an odd count (3+) of the rows kernel's
       row blocks runs unclustered instead of pairing all but its last block,
       and a single 192-row block unclustered instead of in pairs that share
       H (A/B runs) */
    ctx->hopper_odd_pairs = env_count("FLASHSPEC_HOPPER_ODD_PAIRS", 1) != 0;
    /* FLASHSPEC_HOPPER_ROW_BLOCK=128|192: the rows kernel's rows per CTA for
       every row count (A/B runs, tests); other values: automatic */
    ctx->hopper_row_block = (int)env_count("FLASHSPEC_HOPPER_ROW_BLOCK", 0);
    /* FLASHSPEC_HOPPER_ROWS_JOBS=m (1-8): every CTA of the rows kernel runs
       m (row block, slot) jobs, whatever the row count (tests run the
       several-job path at every shape; A/B runs); other values: automatic */
    {
        const int64_t m = env_count("FLASHSPEC_HOPPER_ROWS_JOBS", 0);
        ctx->hopper_rows_jobs = m >= 1 && m <= 8 ? (int)m : 0;
    }
    /* FLASHSPEC_TAIL_ROWS_MAX=n: the scan's last CTA merges and finalizes
       ops of up to n rows (0: never), the merge kernel larger ones (A/B runs);
       unset: by the chip */
    ctx->tail_rows_max = env_count("FLASHSPEC_TAIL_ROWS_MAX", fast_hbm ? FS_TAIL_ROWS_MAX_FAST_HBM
                                                                       : FS_TAIL_ROWS_MAX_DEFAULT);
    /* FLASHSPEC_SINGLE_LAUNCH=0: those ops launch the prep kernel before the
       scan, as every other op does (A/B runs, tests of both paths) */
    ctx->single_launch = env_count("FLASHSPEC_SINGLE_LAUNCH", 1) != 0;
    /* FLASHSPEC_FILTER_SECOND_PASS=1: every filtered row takes the filters'
       exact second pass, as if its candidates could not decide it (tests run
       both passes on the same rows) */
    ctx->filter_force_second_pass = env_flag("FLASHSPEC_FILTER_SECOND_PASS");
    /* FLASHSPEC_FILTER_DEFER=0: the second pass's last select level gets a
       pass of its own instead of running beside the draw (tests compare
       the two) */
    ctx->filter_defer = env_count("FLASHSPEC_FILTER_DEFER", 1) != 0;
    /* FLASHSPEC_FILTER_WARM=0: the filtered merge kernel runs no block ahead
       of the rows to pull the resolve's code into L2 (A/B runs, tests) */
    ctx->filter_warm = env_count("FLASHSPEC_FILTER_WARM", 1) != 0;
    /* FLASHSPEC_FILTER_WIDE=0: a filtered row the best 64 candidates leave
       undecided goes to the second pass at once, without the wide resolve
       from more of its prefix (A/B runs, tests) */
    ctx->filter_wide = env_count("FLASHSPEC_FILTER_WIDE", 1) != 0;
    /* FLASHSPEC_FILTER_ROWS_MIN=n: filtered sample and verify of n rows or
       more take the rows kernel's list-keeping kernels (one pass over W),
       fewer the tile kernel; 0: the tile kernel in row chunks of 160, each
       re-reading W (A/B runs, tests) */
    ctx->filter_rows_min = env_count("FLASHSPEC_FILTER_ROWS_MIN", FS_HOPPER_TILE_MAX_ROWS + 1);
}

extern "C" fs_status fs_cuda_context_init(fs_context *ctx, int device_ordinal)
{
    int n = fs_cuda_device_count();
    if (n <= 0)
        return fs_fail(ctx, FS_ERR_NO_DEVICE, "no CUDA device is visible (driver or GPU missing)");
    if (device_ordinal < 0 || device_ordinal >= n)
        return fs_fail(ctx, FS_ERR_NO_DEVICE, "CUDA device ordinal %d outside [0, %d)",
                       device_ordinal, n);
    int sm = 0, major = 0, minor = 0;
    cudaError_t e = cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, device_ordinal);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_ordinal);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_ordinal);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return fs_fail(ctx, FS_ERR_NO_DEVICE, "querying CUDA device %d: %s", device_ordinal,
                       cudaGetErrorString(e));
    }
    if (major < 8)
        return fs_fail(ctx, FS_ERR_NO_DEVICE,
                       "CUDA device %d has compute capability %d.%d; flashspec needs 8.0 or newer",
                       device_ordinal, major, minor);
    ctx->device = device_ordinal;
    ctx->sm_count = sm;
    ctx->cc_major = major;
    ctx->cc_minor = minor;
    /* FLASHSPEC_DISABLE_HOPPER forces the generic path (tests cover both) */
    ctx->hopper = major == 9 && minor == 0 && !env_flag("FLASHSPEC_DISABLE_HOPPER");
    /* The chip's class by its peak memory bandwidth: the Hopper kernels'
       defaults differ between an H100's 3.35 TB/s and an H200's 4.9, where
       each was measured (fs_cuda_context_knobs) */
    int clock_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device_ordinal) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device_ordinal) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        clock_khz = bus_bits = 0;
    }
    const double peak = 2.0 * 1e3 * clock_khz * (bus_bits / 8.0); /* bytes / s */
    fs_cuda_context_knobs(ctx, peak > 4.4e12 /* an H200, not an H100 */);
    int prev;
    fs_status st = fs_cuda_enter(ctx, &prev);
    if (st != FS_OK)
        return st;
    fs_cuda_leave(prev);
    return FS_OK;
}
