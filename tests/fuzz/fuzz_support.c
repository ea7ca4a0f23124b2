/* Shared parts of the fuzz targets; see fuzz_support.h. */
#include "fuzz_support.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h" /* fs_cpu_set_tile_size: the scan tile is fuzzed too */

/* ---- input decoding ------------------------------------------------------ */

void fz_begin(fz_in *in, const uint8_t *data, size_t size)
{
    in->p = data;
    in->n = size;
    in->at = 0;
    in->tail = size;
}

uint8_t fz_u8(fz_in *in)
{
    return in->at < in->n ? in->p[in->at++] : 0;
}

uint64_t fz_seed(fz_in *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v = v << 8 | (in->tail > 0 ? in->p[--in->tail] : 0u);
    return v;
}

uint32_t fz_u32(fz_in *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
        v |= (uint32_t)fz_u8(in) << (8 * i);
    return v;
}

uint64_t fz_u64(fz_in *in)
{
    uint64_t lo = fz_u32(in);
    return lo | (uint64_t)fz_u32(in) << 32;
}

int64_t fz_below(fz_in *in, int64_t n)
{
    if (n <= 1)
        return 0;
    uint32_t v = fz_u8(in);
    if (n > 256)
        v |= (uint32_t)fz_u8(in) << 8;
    return (int64_t)(v % (uint64_t)n);
}

int fz_chance(fz_in *in, int k)
{
    return fz_u8(in) >= 256 - k;
}

/* splitmix64: bulk values, seeded from the input */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unif(uint64_t *s) /* [0, 1) */
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_normal(uint64_t *s) /* sum of 4 uniforms, centred: close enough */
{
    double a = 0.0;
    for (int i = 0; i < 4; ++i)
        a += rng_unif(s);
    return (a - 2.0) * 1.7320508075688772;
}

/* ---- buffers ------------------------------------------------------------- */

enum { MAX_BUFS = 256 };
static void *g_bufs[MAX_BUFS];
static int g_nbufs;

void *fz_alloc(size_t bytes)
{
    if (g_nbufs == MAX_BUFS)
        fz_fail("harness: more than %d buffers", MAX_BUFS);
    void *b = malloc(bytes);
    if (!b && bytes)
        fz_fail("harness: out of memory (%zu bytes)", bytes);
    g_bufs[g_nbufs++] = b;
    return b;
}

void *fz_dup(const void *src, size_t bytes)
{
    void *b = fz_alloc(bytes);
    if (bytes)
        memcpy(b, src, bytes);
    return b;
}

void fz_end(void)
{
    for (int i = 0; i < g_nbufs; ++i)
        free(g_bufs[i]);
    g_nbufs = 0;
    fs_cpu_set_tile_size(0);
}

void fz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "\n==== flashspec fuzz: CONTRACT VIOLATION: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    abort();
}

fs_context *fz_ctx(void)
{
    static fs_context *ctx;
    if (!ctx && fs_context_create(&ctx, FS_DEVICE_CPU, 0) != FS_OK)
        fz_fail("harness: cannot create a CPU context");
    return ctx;
}

/* ---- dtypes ---------------------------------------------------------------- */

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Narrowing by truncation (any stored value will do: the reference widens
 * what was stored); NaN stays NaN, overflow of f16 becomes inf. */
static uint16_t to_bf16(float f)
{
    if (f != f)
        return (uint16_t)((f32_bits(f) >> 16) | 0x40u);
    return (uint16_t)(f32_bits(f) >> 16);
}

static uint16_t to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u)
        return sign | 0x7E00u;
    if (ax >= 0x47800000u) /* >= 65536 (and inf) */
        return sign | 0x7C00u;
    if (ax < 0x33800000u) /* below 2^-24 */
        return sign;
    if (ax < 0x38800000u) /* f16 subnormal: units of 2^-24 */
        return sign | (uint16_t)(bits_f32(ax) * 16777216.0f);
    return sign | (uint16_t)((((ax >> 23) - 112u) << 10) | ((ax >> 13) & 0x3FFu));
}

static float from_f16(uint16_t h)
{
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e == 0x1F ? (m ? NAN : INFINITY)
             : e == 0    ? ldexp((double)m, -24)
                         : ldexp((double)(1024 + m), e - 25);
    return (float)((h & 0x8000u) ? -v : v);
}

static size_t dt_size(fs_dtype dt)
{
    return dt == FS_DTYPE_F32 ? 4 : 2;
}

/* Store f as element i of a dt buffer; returns the value stored, widened. */
static float store(void *buf, size_t i, fs_dtype dt, float f)
{
    if (dt == FS_DTYPE_F32) {
        ((float *)buf)[i] = f;
        return f;
    }
    uint16_t h = dt == FS_DTYPE_BF16 ? to_bf16(f) : to_f16(f);
    ((uint16_t *)buf)[i] = h;
    return dt == FS_DTYPE_BF16 ? bits_f32((uint32_t)h << 16) : from_f16(h);
}

/* ---- values ------------------------------------------------------------------ */

/* The values a logit, bias, weight or hidden entry can be set to by an edit. */
static float special_value(uint8_t b)
{
    static const float table[] = {
        NAN, -NAN, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, 3e38f, -3e38f, 1e30f, -1e30f,
        1e-40f /* denormal */, -1e-40f, FLT_MIN, 0.0f, -0.0f, 65504.0f, 1e20f, -1e20f,
        40.0f, -40.0f, 1e-30f, 0.5f, 1.0f, -1.0f};
    if (b < sizeof table / sizeof table[0])
        return table[b];
    return (float)((int)b - 160) / 8.0f; /* a plain value: ties with the bulk */
}

/* a value is plain when dot products of plain values are exact in float
 * whatever the summation order: a multiple of 1/8 in [-8, 8] */
static int plain(float x)
{
    return x >= -8.0f && x <= 8.0f && floorf(x * 8.0f) == x * 8.0f;
}

/* The fused logit of hidden h [D] and weight row w [D] (values as stored),
 * and whether it is determined whatever the order of the float sums. */
static float fused_logit(const float *h, const float *w, int64_t D, int *known)
{
    int nan = 0, pinf = 0, ninf = 0, unsure = 0;
    double sum = 0.0;
    for (int64_t k = 0; k < D; ++k) {
        float a = h[k], b = w[k];
        if (a != a || b != b || (isinf(a) && b == 0.0f) || (isinf(b) && a == 0.0f)) {
            nan = 1;
        } else if (isinf(a) || isinf(b)) {
            if ((a > 0) == (b > 0))
                pinf = 1;
            else
                ninf = 1;
        } else if (plain(a) && plain(b)) {
            sum += (double)a * (double)b;
        } else {
            unsure = 1;
        }
    }
    *known = 1;
    if (nan)
        return NAN;
    if (unsure) {
        *known = 0;
        return 0.0f;
    }
    if (pinf && ninf)
        return NAN;
    if (pinf || ninf)
        return pinf ? INFINITY : -INFINITY;
    return (float)sum; /* exact: |sum| <= 64 D, a multiple of 1/64 */
}

/* ---- problems ------------------------------------------------------------------ */

static const int64_t VOCABS[] = {1,  2,  3,  5,  15, 16, 17, 31, 32, 33, 47, 48,  49,
                                 63, 64, 65, 95, 96, 97, 100, 127, 128, 129, 257, 300};

void fz_gen_inputs(fz_in *in, fz_problem *p, int fused, int64_t rows)
{
    memset(p, 0, sizeof *p);
    p->fused = fused >= 0 ? fused : (fz_u8(in) & 1);
    p->rows = rows;
    uint8_t vb = fz_u8(in);
    p->V = vb < 200 ? VOCABS[vb % (sizeof VOCABS / sizeof VOCABS[0])] : 1 + (vb - 200) * 5;
    p->dt = (fs_dtype)fz_below(in, 3);
    uint64_t rng = fz_seed(in);
    const int64_t V = p->V, R = rows;
    p->l = fz_alloc(sizeof(float) * (size_t)(R * V));
    p->known = fz_alloc((size_t)(R * V));
    memset(p->known, 1, (size_t)(R * V));
    size_t es = dt_size(p->dt);
    if (!p->fused) {
        /* logits: centre + scale * noise; mode 0 LM-like (maxima ~30, spread
           of a few units), 1 unit scale, 2 small integers (many exact ties),
           3 tiny spread, 4 huge spread */
        static const double CENTRE[] = {25.0, 0.0, 0.0, 1.0, 0.0};
        static const double SCALE[] = {3.0, 1.0, 0.0, 1e-5, 1e6};
        int mode = (int)fz_below(in, 5);
        p->logits = fz_alloc(es * (size_t)(R * V));
        for (int64_t i = 0; i < R * V; ++i) {
            double x = mode == 2 ? (double)(rng_next(&rng) % 5) - 2.0
                                 : CENTRE[mode] + SCALE[mode] * rng_normal(&rng);
            p->l[i] = store(p->logits, (size_t)i, p->dt, (float)x);
        }
        int edits = (int)fz_below(in, 6);
        for (int e = 0; e < edits; ++e) {
            int64_t r = fz_below(in, R), v = fz_below(in, V);
            float x = special_value(fz_u8(in));
            p->l[r * V + v] = store(p->logits, (size_t)(r * V + v), p->dt, x);
        }
        return;
    }
    /* fused: plain hidden and weights (exact dot products), then edits */
    p->D = 1 + fz_below(in, 40);
    const int64_t D = p->D;
    float *w = fz_alloc(sizeof(float) * (size_t)(V * D));
    float *h = fz_alloc(sizeof(float) * (size_t)(R * D));
    p->weight = fz_alloc(es * (size_t)(V * D));
    p->hidden = fz_alloc(es * (size_t)(R * D));
    int range = 1 + (int)fz_below(in, 16); /* small range: many exact ties */
    for (int64_t i = 0; i < V * D; ++i)
        w[i] = store(p->weight, (size_t)i, p->dt,
                     (float)((int64_t)(rng_next(&rng) % (uint64_t)(2 * range + 1)) - range) / 8.0f);
    for (int64_t i = 0; i < R * D; ++i)
        h[i] = store(p->hidden, (size_t)i, p->dt,
                     (float)((int64_t)(rng_next(&rng) % 17) - 8) / 8.0f);
    int edits = (int)fz_below(in, 6);
    for (int e = 0; e < edits; ++e) {
        int which = fz_u8(in) & 1;
        int64_t k = fz_below(in, D);
        float x = special_value(fz_u8(in));
        if (which) {
            int64_t v = fz_below(in, V);
            w[v * D + k] = store(p->weight, (size_t)(v * D + k), p->dt, x);
        } else {
            int64_t r = fz_below(in, R);
            h[r * D + k] = store(p->hidden, (size_t)(r * D + k), p->dt, x);
        }
    }
    for (int64_t r = 0; r < R; ++r)
        for (int64_t v = 0; v < V; ++v) {
            int known;
            p->l[r * V + v] = fused_logit(h + r * D, w + v * D, D, &known);
            p->known[r * V + v] = (uint8_t)known;
        }
    p->head.weight = p->weight;
    p->head.vocab_size = V;
    p->head.hidden_dim = D;
    p->head.dtype = p->dt;
}

static float gen_temperature(fz_in *in)
{
    static const float table[] = {
        1.0f, 0.0f, 0.7f, 0.05f, 0.1f, 0.2f, 0.3f, 2.0f,
        FS_MIN_TEMPERATURE, 1.0000001e-5f /* just above */, 9.999999e-6f /* just below */,
        1.5e-5f, 1e-6f, -0.0f, -1.0f, -FS_MIN_TEMPERATURE, NAN, -NAN, INFINITY, -INFINITY,
        FLT_MIN, 1e-39f /* denormal */, 1.4e-45f, 1e30f, FLT_MAX, 100.0f};
    uint8_t b = fz_u8(in);
    if (b < sizeof table / sizeof table[0])
        return table[b];
    if (b == 255)
        return bits_f32(fz_u32(in)); /* anything at all */
    return (float)(b - 26) / 64.0f;
}

void fz_gen_params(fz_in *in, fz_problem *p, int64_t requests)
{
    const int64_t R = p->rows, V = p->V, W = (V + 31) / 32;
    p->requests = requests;
    p->temperature = fz_alloc(sizeof(float) * (size_t)requests);
    p->seed = fz_alloc(sizeof(uint64_t) * (size_t)requests);
    int all_same = fz_u8(in) < 128; /* one temperature for every request */
    float t0 = gen_temperature(in);
    uint64_t s0 = fz_seed(in);
    for (int64_t r = 0; r < requests; ++r) {
        p->temperature[r] = all_same ? t0 : gen_temperature(in);
        p->seed[r] = s0 + (uint64_t)r * 0x9E3779B97F4A7C15ull;
    }
    if (fz_u8(in) & 1) {
        p->offset = fz_alloc(sizeof(uint64_t) * (size_t)requests);
        uint64_t o = fz_seed(in);
        for (int64_t r = 0; r < requests; ++r)
            p->offset[r] = o + (uint64_t)r;
    }
    uint64_t rng = fz_seed(in);
    uint8_t bm = fz_u8(in);
    if (bm & 1) { /* bias: multiples of 1/4 on ~half the tokens, then edits */
        p->bias = fz_alloc(sizeof(float) * (size_t)(R * V));
        for (int64_t i = 0; i < R * V; ++i)
            p->bias[i] =
                (rng_next(&rng) & 1) ? (float)((int)(rng_next(&rng) % 17) - 8) / 4.0f : 0.0f;
        int edits = (int)fz_below(in, 4);
        for (int e = 0; e < edits; ++e) {
            int64_t i = fz_below(in, R) * V + fz_below(in, V);
            p->bias[i] = special_value(fz_u8(in));
        }
    }
    uint8_t mm = fz_u8(in) % 8;
    if (mm) { /* mask: 1 full, 2 empty, 3 one token, 4-7 random density; padding bits random */
        p->allowed = fz_alloc(sizeof(uint32_t) * (size_t)(R * W));
        double keep = mm >= 4 ? (mm - 3) / 5.0 : 0.0;
        for (int64_t r = 0; r < R; ++r) {
            uint32_t *row = p->allowed + r * W;
            for (int64_t w = 0; w < W; ++w)
                row[w] = (uint32_t)rng_next(&rng); /* padding bits past V stay random */
            int64_t one = (int64_t)(rng_next(&rng) % (uint64_t)V);
            for (int64_t v = 0; v < V; ++v) {
                int on = mm == 1 ? 1 : mm == 2 ? 0 : mm == 3 ? v == one : rng_unif(&rng) < keep;
                if (on)
                    row[v / 32] |= 1u << (v % 32);
                else
                    row[v / 32] &= ~(1u << (v % 32));
            }
        }
        int flips = (int)fz_below(in, 4);
        for (int f = 0; f < flips; ++f) {
            int64_t r = fz_below(in, R), v = fz_below(in, V);
            p->allowed[r * W + v / 32] ^= 1u << (v % 32);
        }
    }
    p->params.temperature = p->temperature;
    p->params.seed = p->seed;
    p->params.offset = p->offset;
    p->params.logit_bias = p->bias;
    p->params.allowed = p->allowed;
}

int64_t fz_gen_tile(fz_in *in, int64_t V)
{
    int64_t t[] = {0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 64, V - 1, V, V + 1};
    int64_t x = FZ_PICK(in, t);
    return x > 0 ? x : 0;
}

/* ---- the documented semantics ------------------------------------------------ */

int32_t fz_temperature_status(float T)
{
    /* NaN, infinite, negative, or in (0, FLT_MIN) */
    if (T != T || isinf(T) || T < 0.0f || (T > 0.0f && T < FLT_MIN))
        return FS_ROW_BAD_TEMPERATURE;
    return FS_ROW_OK;
}

int fz_is_greedy(float T)
{
    return T < FS_MIN_TEMPERATURE;
}

float fz_inv_temp(float T)
{
    return fz_is_greedy(T) ? 1.0f : 1.0f / T;
}

int fz_allowed(const fz_problem *p, int64_t row, int64_t v)
{
    if (!p->allowed)
        return 1;
    int64_t W = (p->V + 31) / 32;
    return (p->allowed[row * W + v / 32] >> (v % 32)) & 1u;
}

float fz_score(const fz_problem *p, int64_t row, int64_t v, float inv, int *known)
{
    float b = p->bias ? p->bias[row * p->V + v] : 0.0f;
    *known = p->known[row * p->V + v] || b != b;
    if (!p->known[row * p->V + v])
        return b != b ? NAN : 0.0f;
    float lb = p->l[row * p->V + v] + b; /* s = (l + b) * (1/T), in float */
    return lb * inv;
}

void fz_row_ref(const fz_problem *p, int64_t row, float inv, fz_rowref *ref)
{
    int nonfinite = 0, finite = 0, unknown = 0;
    ref->argmax = -1;
    ref->max_s = -INFINITY;
    for (int64_t v = 0; v < p->V; ++v) {
        if (!fz_allowed(p, row, v))
            continue;
        int known;
        float s = fz_score(p, row, v, inv, &known);
        if (!known)
            unknown = 1;
        else if (s != s || s == INFINITY)
            nonfinite = 1;
        else if (s > -INFINITY) {
            finite = 1;
            if (s > ref->max_s) {
                ref->max_s = s;
                ref->argmax = (int32_t)v;
            }
        }
    }
    const unsigned OK = 1u << FS_ROW_OK, NF = 1u << FS_ROW_NONFINITE,
                   AM = 1u << FS_ROW_ALL_MASKED;
    if (nonfinite)
        ref->status_mask = NF;
    else if (!unknown)
        ref->status_mask = finite ? OK : AM;
    else
        ref->status_mask = NF | OK | (finite ? 0u : AM);
    ref->exact = !unknown && !nonfinite && finite;
    ref->lse = NAN;
    if (ref->exact) {
        double z = 0.0;
        for (int64_t v = 0; v < p->V; ++v) {
            int known;
            float s = fz_allowed(p, row, v) ? fz_score(p, row, v, inv, &known) : -INFINITY;
            if (s > -INFINITY)
                z += exp((double)s - (double)ref->max_s);
        }
        ref->lse = (double)ref->max_s + log(z);
    }
}

void fz_check_token(const fz_problem *p, int64_t row, int32_t tok, float inv, const char *what,
                    int64_t index)
{
    FZ_CHECK(tok >= 0 && tok < p->V, "%s %lld: token %d outside [0, %lld)", what,
             (long long)index, tok, (long long)p->V);
    FZ_CHECK(fz_allowed(p, row, tok), "%s %lld: token %d is masked in row %lld", what,
             (long long)index, tok, (long long)row);
    int known;
    float s = fz_score(p, row, tok, inv, &known);
    FZ_CHECK(!known || (s > -INFINITY && s < INFINITY),
             "%s %lld: token %d has score %g in row %lld (probability 0 or non-finite)", what,
             (long long)index, tok, (double)s, (long long)row);
}

void fz_check_logprob(const fz_problem *p, int64_t row, int32_t tok, float inv,
                      const fz_rowref *ref, float lp, const char *what, int64_t index)
{
    FZ_CHECK(lp > -INFINITY && lp <= 0.0f,
             "%s %lld: log-probability %g of token %d not in (-inf, 0]", what, (long long)index, (double)lp, tok);
    if (!ref->exact)
        return;
    int known;
    float s = fz_score(p, row, tok, inv, &known);
    double want = (double)s - ref->lse;
    double tol = 1e-4 + 1e-7 * (double)p->V + 4e-7 * (fabs((double)ref->max_s) + fabs((double)s));
    FZ_CHECK(fabs((double)lp - want) <= tol,
             "%s %lld: log-probability %.9g of token %d, reference %.9g (row %lld)", what,
             (long long)index, (double)lp, tok, want, (long long)row);
}

/* ---- calls ------------------------------------------------------------------------- */

static size_t query(fz_op op, int64_t rows, int64_t requests, int64_t ndt, int64_t V)
{
    size_t need = 0;
    fs_status s = op == FZ_SAMPLE   ? fs_sample_workspace_size(fz_ctx(), rows, V, &need)
                : op == FZ_ARGMAX   ? fs_draft_argmax_workspace_size(fz_ctx(), rows, V, &need)
                                    : fs_verify_workspace_size(fz_ctx(), requests, ndt, V, &need);
    FZ_CHECK(s == FS_OK, "workspace query of valid sizes failed: %s", fs_status_string(s));
    return need;
}

/* inputs that must never be written: registered by fz_call_init */
enum { MAX_WATCH = 16 };
static struct {
    const void *p;
    size_t bytes;
    uint64_t hash;
} g_watch[MAX_WATCH];
static int g_nwatch;

static uint64_t fnv(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void watch(const void *p, size_t bytes)
{
    if (!p || g_nwatch == MAX_WATCH)
        return;
    g_watch[g_nwatch].p = p;
    g_watch[g_nwatch].bytes = bytes;
    g_watch[g_nwatch].hash = fnv(p, bytes);
    ++g_nwatch;
}

/* Start the watch list (inputs the library must never write) with p's
 * input rows and, when the op takes them, its sampling parameters. */
static void watch_problem(const fz_problem *p, int params)
{
    g_nwatch = 0;
    size_t es = dt_size(p->dt);
    if (p->fused) {
        watch(p->weight, es * (size_t)(p->V * p->D));
        watch(p->hidden, es * (size_t)(p->rows * p->D));
    } else {
        watch(p->logits, es * (size_t)(p->rows * p->V));
    }
    if (params) {
        watch(p->temperature, sizeof(float) * (size_t)p->requests);
        watch(p->seed, sizeof(uint64_t) * (size_t)p->requests);
        watch(p->offset, sizeof(uint64_t) * (size_t)p->requests);
        watch(p->bias, sizeof(float) * (size_t)(p->rows * p->V));
        watch(p->allowed, sizeof(uint32_t) * (size_t)(p->rows * ((p->V + 31) / 32)));
    }
}

/* The input part of a call over p: context, LM head and hidden states or
 * logits, sizes (every op takes them alike). */
static void call_input(fz_call *c, const fz_problem *p)
{
    c->fused = p->fused;
    c->ctx = fz_ctx();
    if (p->fused) {
        c->head_v = p->head;
        c->head = &c->head_v;
        c->input = p->hidden;
    } else {
        c->input = p->logits;
    }
    c->dtype = p->dt;
    c->rows = p->rows;
    c->vocab = p->V;
}

void fz_call_init(fz_call *c, fz_op op, fz_problem *p, const fs_drafts *drafts, int vals,
                  size_t *need)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    call_input(c, p);
    if (op != FZ_ARGMAX) {
        c->params_v = p->params;
        c->params = &c->params_v;
    }
    int64_t requests = p->rows, stride = 1;
    if (op == FZ_VERIFY) {
        c->drafts_v = *drafts;
        c->drafts = &c->drafts_v;
        requests = drafts->num_requests;
        stride = drafts->max_drafts + 1;
    }
    c->tok_n = (size_t)(requests * stride);
    c->vals_n = vals ? c->tok_n : 0;
    c->st_n = (size_t)requests;
    c->nem_n = op == FZ_VERIFY ? (size_t)requests : 0;
    c->tok = fz_alloc(sizeof(int32_t) * c->tok_n);
    c->vals = vals ? fz_alloc(sizeof(float) * c->vals_n) : NULL;
    c->st = fz_alloc(sizeof(int32_t) * c->st_n);
    c->nem = op == FZ_VERIFY ? fz_alloc(sizeof(int32_t) * c->nem_n) : NULL;
    *need = query(op, p->rows, requests, op == FZ_VERIFY ? drafts->num_draft_tokens : 0, p->V);
    c->ws = fz_alloc(*need);
    c->ws_bytes = *need;

    watch_problem(p, op != FZ_ARGMAX);
    if (op == FZ_VERIFY) {
        watch(drafts->draft_tokens, sizeof(int32_t) * (size_t)drafts->num_draft_tokens);
        watch(drafts->draft_offsets, sizeof(int32_t) * (size_t)(drafts->num_requests + 1));
    }
}

static int64_t bad_size(fz_in *in)
{
    static const int64_t t[] = {0, -1, INT64_MIN, (int64_t)INT32_MAX + 1, INT64_MAX,
                                -(int64_t)INT32_MAX, (int64_t)1 << 40};
    return FZ_PICK(in, t);
}

static fs_dtype bad_dtype(fz_in *in)
{
    static const int t[] = {3, -1, 4, 0x7FFFFFFF, 255};
    return (fs_dtype)FZ_PICK(in, t);
}

void fz_corrupt(fz_in *in, fz_call *c, size_t need)
{
    for (int round = 0; round < 2; ++round) {
        if (!fz_chance(in, 24))
            return;
        switch (fz_below(in, 22)) {
        case 0: c->ctx = NULL; break;
        case 1: c->input = NULL; break;
        case 2:
            if (c->fused) c->head = NULL;
            else c->dtype = bad_dtype(in);
            break;
        case 3:
            if (c->fused) c->head_v.weight = NULL;
            else c->vocab = bad_size(in);
            break;
        case 4: c->head_v.dtype = bad_dtype(in); break;
        case 5: c->head_v.hidden_dim = bad_size(in); break;
        case 6: c->head_v.vocab_size = bad_size(in); break;
        case 7: c->rows = bad_size(in); break;
        case 8: c->params = NULL; break;
        case 9: c->params_v.temperature = NULL; break;
        case 10: c->params_v.seed = NULL; break;
        case 11: c->tok = NULL; break;
        case 12: c->st = NULL; break;
        case 13: c->nem = NULL; break;
        case 14: c->ws = NULL; break;
        case 15:
            if (need > 0) { /* a smaller workspace, allocated at its (wrong) size */
                size_t less = 1 + (size_t)fz_below(in, (int64_t)need);
                c->ws_bytes = need - less;
                c->ws = fz_alloc(c->ws_bytes);
            }
            break;
        case 16: c->drafts = NULL; break;
        case 17: {
            static const int64_t t[] = {0, -1, (int64_t)INT32_MAX / 2 + 1, INT64_MIN, INT64_MAX};
            c->drafts_v.num_requests = FZ_PICK(in, t);
            break;
        }
        case 18: {
            static const int64_t t[] = {-1, (int64_t)((1u << 24) - 1), INT64_MIN, INT64_MAX};
            c->drafts_v.max_drafts = FZ_PICK(in, t);
            break;
        }
        case 19:
            if ((fz_u8(in) & 1) || c->drafts_v.num_requests < 0 ||
                c->drafts_v.num_requests > INT32_MAX || c->drafts_v.max_drafts < 0 ||
                c->drafts_v.max_drafts > INT32_MAX)
                c->drafts_v.num_draft_tokens = -1 - fz_below(in, 4);
            else /* one more than the layout can hold */
                c->drafts_v.num_draft_tokens =
                    c->drafts_v.num_requests * c->drafts_v.max_drafts + 1 + fz_below(in, 4);
            break;
        case 20: c->drafts_v.draft_offsets = NULL; break;
        default: c->drafts_v.draft_tokens = NULL; break;
        }
    }
}

static int dtype_ok(fs_dtype d)
{
    return d == FS_DTYPE_F32 || d == FS_DTYPE_F16 || d == FS_DTYPE_BF16;
}

static int size_ok(int64_t n)
{
    return n >= 1 && n <= INT32_MAX;
}

/* The host errors of a call's input: the LM head and hidden states, or
 * the logits (every op checks these alike). */
static unsigned input_expect(const fz_call *c)
{
    const unsigned NP = 1u << FS_ERR_NULL_POINTER, IS = 1u << FS_ERR_INVALID_SIZE,
                   IA = 1u << FS_ERR_INVALID_ARGUMENT;
    unsigned m = 0;
    if (c->fused) {
        if (!c->head) {
            m |= NP;
        } else {
            if (!c->head->weight)
                m |= NP;
            if (!dtype_ok(c->head->dtype))
                m |= IA;
            if (!size_ok(c->head->hidden_dim) || !size_ok(c->head->vocab_size))
                m |= IS;
        }
        if (!c->input)
            m |= NP;
    } else {
        if (!c->input)
            m |= NP;
        if (!dtype_ok(c->dtype))
            m |= IA;
        if (!size_ok(c->vocab))
            m |= IS;
    }
    return m;
}

unsigned fz_host_expect(const fz_call *c, size_t need)
{
    const unsigned NP = 1u << FS_ERR_NULL_POINTER, IS = 1u << FS_ERR_INVALID_SIZE;
    if (!c->ctx)
        return NP;
    unsigned m = input_expect(c);
    if (c->op != FZ_VERIFY) {
        if (!size_ok(c->rows))
            m |= IS;
    } else if (!c->drafts) {
        m |= NP;
    } else {
        const fs_drafts *d = c->drafts;
        int r_ok = d->num_requests >= 1 && d->num_requests <= INT32_MAX / 2;
        int m_ok = d->max_drafts >= 0 && d->max_drafts < (int64_t)((1u << 24) - 1);
        if (!r_ok || !m_ok ||
            d->num_draft_tokens < 0 || d->num_draft_tokens > d->num_requests * d->max_drafts)
            m |= IS;
        if (!d->draft_offsets || (!d->draft_tokens && d->num_draft_tokens > 0))
            m |= NP;
    }
    if (c->op != FZ_ARGMAX &&
        (!c->params || !c->params->temperature || !c->params->seed))
        m |= NP;
    if (!c->tok || !c->st || (c->op == FZ_VERIFY && !c->nem))
        m |= NP;
    /* the workspace is checked against the size the query gave */
    if (need > 0 && !c->ws)
        m |= NP;
    if (c->ws_bytes < need)
        m |= 1u << FS_ERR_WORKSPACE_TOO_SMALL;
    return m;
}

fs_status fz_invoke(const fz_call *c)
{
    switch (c->op) {
    case FZ_SAMPLE:
        return c->fused ? fs_sample(c->ctx, c->head, c->input, c->rows, c->params, c->ws,
                                    c->ws_bytes, c->tok, c->vals, c->st)
                        : fs_sample_logits(c->ctx, c->input, c->dtype, c->rows, c->vocab,
                                           c->params, c->ws, c->ws_bytes, c->tok, c->vals, c->st);
    case FZ_ARGMAX:
        return c->fused ? fs_draft_argmax(c->ctx, c->head, c->input, c->rows, c->ws, c->ws_bytes,
                                          c->tok, c->vals, c->st)
                        : fs_draft_argmax_logits(c->ctx, c->input, c->dtype, c->rows, c->vocab,
                                                 c->ws, c->ws_bytes, c->tok, c->vals, c->st);
    default:
        return c->fused ? fs_verify(c->ctx, c->head, c->input, c->drafts, c->params, c->ws,
                                    c->ws_bytes, c->tok, c->nem, c->vals, c->st)
                        : fs_verify_logits(c->ctx, c->input, c->dtype, c->vocab, c->drafts,
                                           c->params, c->ws, c->ws_bytes, c->tok, c->nem,
                                           c->vals, c->st);
    }
}

#define CANARY 0xA5u

static void fill(void *p, size_t bytes)
{
    if (p)
        memset(p, CANARY, bytes);
}

static int intact(const void *p, size_t bytes)
{
    const uint8_t *b = p;
    for (size_t i = 0; p && i < bytes; ++i)
        if (b[i] != CANARY)
            return 0;
    return 1;
}

static const char *op_name(fz_op op)
{
    return op == FZ_SAMPLE ? "sample" : op == FZ_ARGMAX ? "draft argmax" : "verify";
}

int fz_run(const fz_call *c, size_t need, const fz_problem *p, fs_status *status)
{
    (void)p;
    unsigned expect = fz_host_expect(c, need);
    fill(c->tok, sizeof(int32_t) * c->tok_n);
    fill(c->vals, sizeof(float) * c->vals_n);
    fill(c->nem, sizeof(int32_t) * c->nem_n);
    fill(c->st, sizeof(int32_t) * c->st_n);
    fs_status s = fz_invoke(c);
    *status = s;
    for (int i = 0; i < g_nwatch; ++i)
        FZ_CHECK(fnv(g_watch[i].p, g_watch[i].bytes) == g_watch[i].hash,
                 "%s: an input buffer (%zu bytes) was written", op_name(c->op), g_watch[i].bytes);
    const char *msg = c->ctx ? fs_context_last_error(c->ctx) : "";
    if (expect) {
        FZ_CHECK((unsigned)s < 32 && ((1u << s) & expect),
                 "%s: returned %s, expected a host error of mask 0x%x (%s)", op_name(c->op),
                 fs_status_string(s), expect, msg);
        FZ_CHECK(intact(c->tok, sizeof(int32_t) * c->tok_n) &&
                     intact(c->vals, sizeof(float) * c->vals_n) &&
                     intact(c->nem, sizeof(int32_t) * c->nem_n) &&
                     intact(c->st, sizeof(int32_t) * c->st_n),
                 "%s: returned %s but wrote an output", op_name(c->op), fs_status_string(s));
        FZ_CHECK(!c->ctx || msg[0], "%s: %s without a message", op_name(c->op),
                 fs_status_string(s));
        return 0;
    }
    FZ_CHECK(s == FS_OK || s == FS_ERR_INVALID_ROWS,
             "%s: well-formed arguments gave %s (%s)", op_name(c->op), fs_status_string(s), msg);
    size_t bad = 0;
    for (size_t i = 0; i < c->st_n; ++i) {
        FZ_CHECK(c->st[i] >= FS_ROW_OK && c->st[i] <= FS_ROW_ALL_MASKED,
                 "%s: row status %d of %zu is not an fs_row_status", op_name(c->op), c->st[i], i);
        bad += c->st[i] != FS_ROW_OK;
    }
    FZ_CHECK((s == FS_ERR_INVALID_ROWS) == (bad > 0),
             "%s: returned %s with %zu bad rows of %zu", op_name(c->op), fs_status_string(s), bad,
             c->st_n);
    FZ_CHECK(s == FS_OK || msg[0], "%s: FS_ERR_INVALID_ROWS without a message", op_name(c->op));
    return 1;
}

static int same_value(float a, float b, int exact)
{
    if (a != a || b != b)
        return a != a && b != b;
    if (exact)
        return a == b;
    return fabsf(a - b) <= 1e-4f + 1e-5f * fabsf(a);
}

void fz_check_rerun(const fz_call *c, int64_t tile)
{
    fz_call d = *c;
    d.tok = fz_alloc(sizeof(int32_t) * c->tok_n);
    d.vals = c->vals ? fz_alloc(sizeof(float) * c->vals_n) : NULL;
    d.st = fz_alloc(sizeof(int32_t) * c->st_n);
    d.nem = c->nem ? fz_alloc(sizeof(int32_t) * c->nem_n) : NULL;
    fs_cpu_set_tile_size(tile);
    fs_status s1 = fz_invoke(&d);
    fs_cpu_set_tile_size(0);
    (void)s1;
    for (size_t i = 0; i < c->st_n; ++i)
        FZ_CHECK(d.st[i] == c->st[i], "%s: tile %lld changed row status %zu: %d -> %d",
                 op_name(c->op), (long long)tile, i, c->st[i], d.st[i]);
    for (size_t i = 0; i < c->nem_n; ++i)
        FZ_CHECK(d.nem[i] == c->nem[i], "%s: tile %lld changed num_emitted %zu: %d -> %d",
                 op_name(c->op), (long long)tile, i, c->nem[i], d.nem[i]);
    for (size_t i = 0; i < c->tok_n; ++i)
        FZ_CHECK(d.tok[i] == c->tok[i], "%s: tile %lld changed token %zu: %d -> %d",
                 op_name(c->op), (long long)tile, i, c->tok[i], d.tok[i]);
    for (size_t i = 0; i < c->vals_n; ++i)
        FZ_CHECK(same_value(c->vals[i], d.vals[i], c->op == FZ_ARGMAX),
                 "%s: tile %lld changed value %zu: %.9g -> %.9g", op_name(c->op),
                 (long long)tile, i, (double)c->vals[i], (double)d.vals[i]);
}

void fz_check_workspace_query(fz_in *in, fz_op op, int64_t rows, int64_t requests,
                              int64_t num_draft_tokens, int64_t vocab)
{
    static const int64_t odd[] = {0, -1, INT64_MIN, INT64_MAX, (int64_t)INT32_MAX,
                                  (int64_t)INT32_MAX + 1, (int64_t)1 << 40};
    uint8_t m = fz_u8(in);
    fs_context *ctx = m == 1 ? NULL : fz_ctx();
    int out_null = m == 2;
    if (m >= 3 && m < 6)
        vocab = FZ_PICK(in, odd);
    if (m >= 6 && m < 9) {
        rows = FZ_PICK(in, odd);
        requests = FZ_PICK(in, odd);
    }
    if (m >= 9 && m < 12)
        num_draft_tokens = FZ_PICK(in, odd);
    size_t out = 0xA5A5A5A5u;
    size_t *outp = out_null ? NULL : &out;
    fs_status s = op == FZ_SAMPLE ? fs_sample_workspace_size(ctx, rows, vocab, outp)
                : op == FZ_ARGMAX
                    ? fs_draft_argmax_workspace_size(ctx, rows, vocab, outp)
                    : fs_verify_workspace_size(ctx, requests, num_draft_tokens, vocab,
                                               outp);
    fs_status want = FS_OK;
    if (!ctx || out_null) {
        want = FS_ERR_NULL_POINTER;
    } else if (!size_ok(vocab)) {
        want = FS_ERR_INVALID_SIZE;
    } else if (op != FZ_VERIFY) {
        if (!size_ok(rows))
            want = FS_ERR_INVALID_SIZE;
    } else if (requests < 1 || num_draft_tokens < 0 ||
               num_draft_tokens > (int64_t)INT32_MAX - requests) {
        want = FS_ERR_INVALID_SIZE; /* rows = num_draft_tokens + requests in [1, INT32_MAX] */
    }
    FZ_CHECK(s == want, "%s workspace query (rows %lld, requests %lld, drafts %lld, V %lld): %s, "
             "expected %s", op_name(op), (long long)rows, (long long)requests,
             (long long)num_draft_tokens, (long long)vocab, fs_status_string(s),
             fs_status_string(want));
    if (s != FS_OK)
        FZ_CHECK(out == 0xA5A5A5A5u, "%s workspace query failed but wrote its output", op_name(op));
    else
        FZ_CHECK(out > 0 && out != 0xA5A5A5A5u, "%s workspace query gave %zu bytes", op_name(op),
                 out);
}

/* ---- shared run checks, generalised ------------------------------------------------ */

void fz_watch(const void *p, size_t bytes)
{
    watch(p, bytes);
}

int fz_layout_ok(const int32_t *off, int64_t requests, int64_t total)
{
    if (off[0] != 0 || off[requests] != total)
        return 0;
    for (int64_t r = 0; r < requests; ++r)
        if (off[r + 1] < off[r])
            return 0;
    return 1;
}

int fz_run_outputs(const char *name, fs_context *ctx, unsigned expect,
                   fs_status (*invoke)(const void *call), const void *call, const fz_out *outs,
                   int nouts, const int32_t *st, size_t st_n, int32_t max_row_status,
                   fs_status *status)
{
    for (int i = 0; i < nouts; ++i)
        fill(outs[i].p, outs[i].bytes);
    fs_status s = invoke(call);
    *status = s;
    for (int i = 0; i < g_nwatch; ++i)
        FZ_CHECK(fnv(g_watch[i].p, g_watch[i].bytes) == g_watch[i].hash,
                 "%s: an input buffer (%zu bytes) was written", name, g_watch[i].bytes);
    const char *msg = ctx ? fs_context_last_error(ctx) : "";
    if (expect) {
        FZ_CHECK((unsigned)s < 32 && ((1u << s) & expect),
                 "%s: returned %s, expected a host error of mask 0x%x (%s)", name,
                 fs_status_string(s), expect, msg);
        for (int i = 0; i < nouts; ++i)
            FZ_CHECK(intact(outs[i].p, outs[i].bytes),
                     "%s: returned %s but wrote output %d (%zu bytes)", name, fs_status_string(s),
                     i, outs[i].bytes);
        FZ_CHECK(!ctx || msg[0], "%s: %s without a message", name, fs_status_string(s));
        return 0;
    }
    FZ_CHECK(s == FS_OK || s == FS_ERR_INVALID_ROWS, "%s: well-formed arguments gave %s (%s)",
             name, fs_status_string(s), msg);
    size_t bad = 0;
    for (size_t i = 0; i < st_n; ++i) {
        FZ_CHECK(st[i] >= FS_ROW_OK && st[i] <= max_row_status,
                 "%s: row status %d of %zu is not one this op returns", name, st[i], i);
        bad += st[i] != FS_ROW_OK;
    }
    FZ_CHECK((s == FS_ERR_INVALID_ROWS) == (bad > 0), "%s: returned %s with %zu bad rows of %zu",
             name, fs_status_string(s), bad, st_n);
    FZ_CHECK(s == FS_OK || msg[0], "%s: FS_ERR_INVALID_ROWS without a message", name);
    return 1;
}

/* ---- filters ------------------------------------------------------------------------ */

static int32_t gen_top_k(fz_in *in, int64_t V)
{
    const int32_t t[] = {0,  1,  2,  3,  5,  8, 16, 17, 31, 63, 64, 65, (int32_t)V - 1, (int32_t)V,
                         (int32_t)V + 1, INT32_MAX, -1, -2, INT32_MIN};
    uint8_t b = fz_u8(in);
    if (b < sizeof t / sizeof t[0])
        return t[b];
    if (b >= 250)
        return (int32_t)fz_u32(in); /* anything at all */
    return (int32_t)(b % (uint64_t)(V + 2));
}

static float gen_top_p(fz_in *in)
{
    const float t[] = {1.0f, 0.9f, 0.5f, 0.95f, 0.1f, 0.8f, 0.3f, 0.99999994f, 1e-6f, 1e-30f,
                       1.4e-45f /* smallest denormal: still valid */, FLT_MIN,
                       0.0f, -0.0f, -0.5f, 1.0000001f, 2.0f, NAN, -NAN, INFINITY, -INFINITY};
    uint8_t b = fz_u8(in);
    if (b < sizeof t / sizeof t[0])
        return t[b];
    if (b >= 250)
        return bits_f32(fz_u32(in));
    return (float)(b - 20) / 230.0f; /* (0, 1] */
}

static float gen_min_p(fz_in *in)
{
    const float t[] = {0.0f, 0.05f, 0.1f, 0.5f, 0.9f, 0.999f, 0.99999994f, 1e-6f, 1.4e-45f, -0.0f,
                       0.3678794f /* log near -1: ties with integer scores */,
                       1.0f, -1e-6f, -1.0f, 2.0f, NAN, -NAN, INFINITY, -INFINITY};
    uint8_t b = fz_u8(in);
    if (b < sizeof t / sizeof t[0])
        return t[b];
    if (b >= 250)
        return bits_f32(fz_u32(in));
    return (float)(b - 19) / 232.0f; /* [0, 1) */
}

void fz_gen_filters(fz_in *in, fz_problem *p, int64_t requests)
{
    const uint8_t m = fz_u8(in);
    const int same = fz_u8(in) < 128; /* one value per filter for every request */
    const size_t n = (size_t)requests;
    /* the all-zero input sets every filter: a filtered call is the common case */
    if (!(m & 1)) {
        int32_t *k = fz_alloc(sizeof(int32_t) * n);
        for (size_t r = 0; r < n; ++r)
            k[r] = r == 0 || !same ? gen_top_k(in, p->V) : k[0];
        p->params.top_k = k;
    }
    if (!(m & 2)) {
        float *tp = fz_alloc(sizeof(float) * n);
        for (size_t r = 0; r < n; ++r)
            tp[r] = r == 0 || !same ? gen_top_p(in) : tp[0];
        p->params.top_p = tp;
    }
    if (!(m & 4)) {
        float *mp = fz_alloc(sizeof(float) * n);
        for (size_t r = 0; r < n; ++r)
            mp[r] = r == 0 || !same ? gen_min_p(in) : mp[0];
        p->params.min_p = mp;
    }
    p->params.out_filter_fallback = (m & 8) ? NULL : fz_alloc(sizeof(int32_t) * n);
}

int32_t fz_filter_status(const fz_problem *p, int64_t r)
{
    const fs_sampling *s = &p->params;
    if (s->top_k && s->top_k[r] < 0)
        return FS_ROW_BAD_FILTER;
    if (s->top_p && !(s->top_p[r] > 0.0f && s->top_p[r] <= 1.0f))
        return FS_ROW_BAD_FILTER;
    if (s->min_p && !(s->min_p[r] >= 0.0f && s->min_p[r] < 1.0f))
        return FS_ROW_BAD_FILTER;
    return FS_ROW_OK;
}

int fz_filter_on(const fz_problem *p, int64_t r)
{
    const fs_sampling *s = &p->params;
    return (s->top_k && s->top_k[r] > 0 && (int64_t)s->top_k[r] < p->V) ||
           (s->top_p && s->top_p[r] < 1.0f) || (s->min_p && s->min_p[r] > 0.0f);
}

static fs_status invoke_call(const void *call)
{
    return fz_invoke(call);
}

int fz_run_filters(const fz_call *c, size_t need, fs_status *status)
{
    /* one fallback count per request, as allocated (st_n), whatever
       fz_corrupt did to the call's request count */
    int32_t *fb = c->params_v.out_filter_fallback;
    const fz_out outs[] = {{c->tok, sizeof(int32_t) * c->tok_n},
                           {c->vals, sizeof(float) * c->vals_n},
                           {c->nem, sizeof(int32_t) * c->nem_n},
                           {c->st, sizeof(int32_t) * c->st_n},
                           {fb, fb ? sizeof(int32_t) * c->st_n : 0}};
    return fz_run_outputs(op_name(c->op), c->ctx, fz_host_expect(c, need), invoke_call, c, outs,
                          5, c->st, c->st_n, FS_ROW_BAD_FILTER, status);
}

static int cmp_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x > y ? -1 : x < y ? 1 : 0;
}

void fz_kept_ref(const fz_problem *p, int64_t row, float inv, int64_t r, fz_kept *k)
{
    const fs_sampling *sp = &p->params;
    float *s = malloc(sizeof(float) * (size_t)p->V);
    if (!s)
        fz_fail("harness: out of memory");
    int64_t n = 0;
    for (int64_t v = 0; v < p->V; ++v) {
        int known;
        float x = fz_allowed(p, row, v) ? fz_score(p, row, v, inv, &known) : -INFINITY;
        if (x > -INFINITY && x < INFINITY)
            s[n++] = x;
    }
    FZ_CHECK(n > 0, "harness: kept set of row %lld without a finite score", (long long)row);
    qsort(s, (size_t)n, sizeof(float), cmp_desc);
    const float m = s[0];
    /* top-k: off at 0 and when it keeps every finite score */
    const int32_t kk = sp->top_k ? sp->top_k[r] : 0;
    const float t_k = kk > 0 && (int64_t)kk < n ? s[kk - 1] : -INFINITY;
    double z_k = 0.0;
    for (int64_t i = 0; i < n && s[i] >= t_k; ++i)
        z_k += exp((double)s[i] - (double)m);
    const float tp = sp->top_p ? sp->top_p[r] : 1.0f;
    const float mp = sp->min_p ? sp->min_p[r] : 0.0f;
    const float lmp = mp > 0.0f ? logf(mp) : -INFINITY;
    /* masses are float sums in the library (~1e-6 relative, order-dependent):
       a cumulative mass this close to top_p * Z_k is a near-tie */
    const double margin = 1e-4 * z_k;
    k->lo = k->hi = m;
    k->max_s = m;
    int sure = 1;
    double before = 0.0;
    int64_t i = 0;
    while (i < n && s[i] >= t_k) {
        const float v = s[i];
        int64_t j = i;
        double w = 0.0;
        while (j < n && s[j] == v)
            w += exp((double)s[j++] - (double)m);
        if (i > 0) { /* the first group is always kept */
            int keep = 2; /* 2 sure, 1 near-tie, 0 cut */
            if (tp < 1.0f) {
                const double pz = (double)tp * z_k;
                keep = before >= pz + margin ? 0 : before >= pz - margin ? 1 : 2;
            }
            if (lmp > -INFINITY && keep) {
                /* the library compares the float difference with logf(min_p) */
                const float d = v - m;
                const float tol = 4.0f * FLT_EPSILON * (fabsf(v) + fabsf(m) + fabsf(lmp));
                int mk = d >= lmp + tol ? 2 : d < lmp - tol ? 0 : 1;
                keep = mk < keep ? mk : keep;
            }
            if (!keep)
                break;
            if (keep == 1)
                sure = 0;
            k->lo = v;
            if (sure)
                k->hi = v;
        }
        before += w;
        i = j;
    }
    double z = 0.0;
    for (int64_t t = 0; t < n && s[t] >= k->hi; ++t)
        z += exp((double)s[t] - (double)m);
    k->lse = (double)m + log(z);
    free(s);
}

void fz_check_kept(const fz_problem *p, int64_t row, int32_t tok, float inv, const fz_kept *k,
                   const char *what, int64_t index)
{
    int known;
    float s = fz_score(p, row, tok, inv, &known);
    FZ_CHECK(!known || s >= k->lo,
             "%s %lld: token %d scores %.9g in row %lld, outside the kept set {s >= %.9g} "
             "(max %.9g)", what, (long long)index, tok, (double)s, (long long)row, (double)k->lo,
             (double)k->max_s);
}

/* ---- tree verify ------------------------------------------------------------------- */

static size_t tree_query(int64_t requests, int64_t nodes, int64_t V)
{
    size_t need = 0;
    fs_status s = fs_verify_tree_workspace_size(fz_ctx(), requests, nodes, V, &need);
    FZ_CHECK(s == FS_OK, "tree workspace query of valid sizes failed: %s", fs_status_string(s));
    return need;
}

void fz_tree_call_init(fz_tree_call *t, fz_problem *p, const fs_draft_tree *tree, int vals,
                       int path, size_t *need)
{
    memset(t, 0, sizeof *t);
    fz_call *c = &t->c;
    c->op = FZ_VERIFY; /* unused by the tree functions; verify's sizes are closest */
    call_input(c, p);
    c->params_v = p->params;
    c->params = &c->params_v;
    t->tree_v = *tree;
    t->tree = &t->tree_v;
    const int64_t R = tree->num_requests, S = tree->max_depth + 1;
    c->tok_n = (size_t)(R * S);
    c->vals_n = vals ? c->tok_n : 0;
    c->st_n = c->nem_n = (size_t)R;
    c->tok = fz_alloc(sizeof(int32_t) * c->tok_n);
    c->vals = vals ? fz_alloc(sizeof(float) * c->vals_n) : NULL;
    c->st = fz_alloc(sizeof(int32_t) * c->st_n);
    c->nem = fz_alloc(sizeof(int32_t) * c->nem_n);
    t->path_n = path ? (size_t)(R * tree->max_depth) : 0;
    t->path = path ? fz_alloc(sizeof(int32_t) * t->path_n) : NULL;
    *need = tree_query(R, tree->num_nodes, p->V);
    c->ws = fz_alloc(*need);
    c->ws_bytes = *need;

    watch_problem(p, 1);
    watch(tree->tokens, sizeof(int32_t) * (size_t)tree->num_nodes);
    watch(tree->parents, sizeof(int32_t) * (size_t)tree->num_nodes);
    watch(tree->node_offsets, sizeof(int32_t) * (size_t)(R + 1));
}

void fz_tree_corrupt(fz_in *in, fz_tree_call *t, size_t need)
{
    /* fz_corrupt's draft-layout cases touch c.drafts only, which tree calls
       never pass: those rounds leave the call well-formed */
    fz_corrupt(in, &t->c, need);
    if (!fz_chance(in, 24))
        return;
    switch (fz_below(in, 8)) {
    case 0: t->tree = NULL; break;
    case 1: {
        static const int64_t v[] = {0, -1, (int64_t)INT32_MAX / 2 + 1, INT64_MIN, INT64_MAX};
        t->tree_v.num_requests = FZ_PICK(in, v);
        break;
    }
    case 2: { /* only values the host must refuse: the outputs are sized by max_depth */
        static const int64_t v[] = {-1, (int64_t)((1u << 24) - 1), (int64_t)(1u << 24), INT64_MIN,
                                    INT64_MAX};
        t->tree_v.max_depth = FZ_PICK(in, v);
        break;
    }
    case 3: {
        static const int64_t v[] = {-1, FS_TREE_MAX_CHILDREN + 1, 1000, INT64_MIN, INT64_MAX};
        t->tree_v.max_children = FZ_PICK(in, v);
        break;
    }
    case 4: {
        const int64_t v[] = {-1, INT64_MIN, INT64_MAX, (int64_t)INT32_MAX,
                             (int64_t)INT32_MAX - t->tree_v.num_requests + 1};
        t->tree_v.num_nodes = FZ_PICK(in, v);
        break;
    }
    case 5: t->tree_v.node_offsets = NULL; break;
    case 6: t->tree_v.tokens = NULL; break;
    default: t->tree_v.parents = NULL; break;
    }
}

unsigned fz_tree_host_expect(const fz_tree_call *t, size_t need)
{
    const fz_call *c = &t->c;
    const unsigned NP = 1u << FS_ERR_NULL_POINTER, IS = 1u << FS_ERR_INVALID_SIZE;
    if (!c->ctx)
        return NP;
    unsigned m = input_expect(c);
    if (!t->tree) {
        m |= NP;
    } else {
        const fs_draft_tree *d = t->tree;
        int r_ok = d->num_requests >= 1 && d->num_requests <= INT32_MAX / 2;
        if (!r_ok || d->max_depth < 0 || d->max_depth >= (int64_t)((1u << 24) - 1) ||
            d->max_children < 0 || d->max_children > FS_TREE_MAX_CHILDREN || d->num_nodes < 0 ||
            (r_ok && d->num_nodes > (int64_t)INT32_MAX - d->num_requests))
            m |= IS;
        if (!d->node_offsets || (d->num_nodes > 0 && (!d->tokens || !d->parents)))
            m |= NP;
    }
    if (!c->params || !c->params->temperature || !c->params->seed)
        m |= NP;
    if (!c->tok || !c->st || !c->nem)
        m |= NP;
    if (need > 0 && !c->ws)
        m |= NP;
    if (c->ws_bytes < need)
        m |= 1u << FS_ERR_WORKSPACE_TOO_SMALL;
    return m;
}

fs_status fz_tree_invoke(const fz_tree_call *t)
{
    const fz_call *c = &t->c;
    return c->fused ? fs_verify_tree(c->ctx, c->head, c->input, t->tree, c->params, c->ws,
                                     c->ws_bytes, c->tok, t->path, c->nem, c->vals, c->st)
                    : fs_verify_tree_logits(c->ctx, c->input, c->dtype, c->vocab, t->tree,
                                            c->params, c->ws, c->ws_bytes, c->tok, t->path,
                                            c->nem, c->vals, c->st);
}

static fs_status invoke_tree(const void *call)
{
    return fz_tree_invoke(call);
}

int fz_tree_run(const fz_tree_call *t, size_t need, fs_status *status)
{
    const fz_call *c = &t->c;
    /* the filters' fallback counts: one per request, as allocated */
    int32_t *fb = c->params_v.out_filter_fallback;
    const fz_out outs[] = {{c->tok, sizeof(int32_t) * c->tok_n},
                           {c->vals, sizeof(float) * c->vals_n},
                           {c->nem, sizeof(int32_t) * c->nem_n},
                           {c->st, sizeof(int32_t) * c->st_n},
                           {t->path, sizeof(int32_t) * t->path_n},
                           {fb, fb ? sizeof(int32_t) * c->st_n : 0}};
    return fz_run_outputs("tree verify", c->ctx, fz_tree_host_expect(t, need), invoke_tree, t,
                          outs, 6, c->st, c->st_n, FS_ROW_BAD_FILTER, status);
}

void fz_tree_check_rerun(const fz_tree_call *t, int64_t tile)
{
    fz_tree_call d = *t;
    const fz_call *c = &t->c;
    d.tree = &d.tree_v;
    d.c.params = &d.c.params_v;
    if (c->fused)
        d.c.head = &d.c.head_v;
    d.c.tok = fz_alloc(sizeof(int32_t) * c->tok_n);
    d.c.vals = c->vals ? fz_alloc(sizeof(float) * c->vals_n) : NULL;
    d.c.st = fz_alloc(sizeof(int32_t) * c->st_n);
    d.c.nem = fz_alloc(sizeof(int32_t) * c->nem_n);
    d.path = t->path ? fz_alloc(sizeof(int32_t) * t->path_n) : NULL;
    fs_cpu_set_tile_size(tile);
    (void)fz_tree_invoke(&d);
    fs_cpu_set_tile_size(0);
    for (size_t i = 0; i < c->st_n; ++i)
        FZ_CHECK(d.c.st[i] == c->st[i] && d.c.nem[i] == c->nem[i],
                 "tree verify: tile %lld changed request %zu: status %d -> %d, emitted %d -> %d",
                 (long long)tile, i, c->st[i], d.c.st[i], c->nem[i], d.c.nem[i]);
    for (size_t i = 0; i < c->tok_n; ++i)
        FZ_CHECK(d.c.tok[i] == c->tok[i], "tree verify: tile %lld changed token %zu: %d -> %d",
                 (long long)tile, i, c->tok[i], d.c.tok[i]);
    for (size_t i = 0; i < t->path_n; ++i)
        FZ_CHECK(d.path[i] == t->path[i], "tree verify: tile %lld changed path node %zu: %d -> %d",
                 (long long)tile, i, t->path[i], d.path[i]);
    for (size_t i = 0; i < c->vals_n; ++i)
        FZ_CHECK(same_value(c->vals[i], d.c.vals[i], 0),
                 "tree verify: tile %lld changed logprob %zu: %.9g -> %.9g", (long long)tile, i,
                 (double)c->vals[i], (double)d.c.vals[i]);
}

void fz_tree_check_workspace_query(fz_in *in, int64_t requests, int64_t nodes, int64_t vocab)
{
    static const int64_t odd[] = {0, -1, INT64_MIN, INT64_MAX, (int64_t)INT32_MAX,
                                  (int64_t)INT32_MAX + 1, (int64_t)1 << 40};
    uint8_t m = fz_u8(in);
    fs_context *ctx = m == 1 ? NULL : fz_ctx();
    int out_null = m == 2;
    if (m >= 3 && m < 6)
        vocab = FZ_PICK(in, odd);
    if (m >= 6 && m < 9)
        requests = FZ_PICK(in, odd);
    if (m >= 9 && m < 12)
        nodes = FZ_PICK(in, odd);
    size_t out = 0xA5A5A5A5u;
    fs_status s = fs_verify_tree_workspace_size(ctx, requests, nodes, vocab,
                                                out_null ? NULL : &out);
    /* rows = nodes + requests in [1, INT32_MAX], requests >= 1, nodes >= 0 */
    fs_status want = FS_OK;
    if (!ctx || out_null)
        want = FS_ERR_NULL_POINTER;
    else if (!size_ok(vocab) || requests < 1 || nodes < 0 || requests > INT32_MAX ||
             nodes > (int64_t)INT32_MAX - requests)
        want = FS_ERR_INVALID_SIZE;
    FZ_CHECK(s == want, "tree workspace query (requests %lld, nodes %lld, V %lld): %s, expected %s",
             (long long)requests, (long long)nodes, (long long)vocab, fs_status_string(s),
             fs_status_string(want));
    if (s != FS_OK)
        FZ_CHECK(out == 0xA5A5A5A5u, "tree workspace query failed but wrote its output");
    else
        FZ_CHECK(out > 0 && out != 0xA5A5A5A5u, "tree workspace query gave %zu bytes", out);
}
