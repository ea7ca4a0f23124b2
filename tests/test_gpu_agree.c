/* GPU vs CPU agreement: every op (sample, draft argmax, verify; fused and
 * over logits), bf16 / fp16 / fp32, odd shapes (V not a tile multiple, D = 1,
 * 7, 100, 136, 4096), 1 to 1030 rows, ragged verify (0..7 drafts, and a batch
 * with no drafts at all), greedy and sampled rows, with and without bias and
 * allowed mask.  Same inputs and seeds on both contexts; tokens must be equal
 * except near-ties of the double-precision oracle, and the agreement rate is
 * printed per case.  FS_GPU_TEST_SMALL=1 caps rows and D (sanitizer runs). */
#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

typedef struct agree_case {
    int fused;
    fs_dtype dt;
    int64_t V, D, R; /* R: rows of sample/argmax, requests of verify */
    int bias_mask;
    int no_offset; /* offset array NULL */
} agree_case;

static const float temps[4] = {0.0f, 0.7f, 1.0f, 1.5f};

/* Totals over the whole suite: near-ties must stay rare. */
static int64_t g_units, g_differ;

/* Draft layouts of the verify cases: 0-7 drafts a request; none; or 33-40
 * (LONG: the CUDA walk takes a request's rows 32 at a time, op_tail.cuh). */
enum { DRAFTS_SHORT, DRAFTS_NONE, DRAFTS_LONG };

static int32_t draft_count(int64_t r, int layout)
{
    return layout == DRAFTS_NONE   ? 0
           : layout == DRAFTS_LONG ? (int32_t)(33 + (r * 5 + 3) % 8)
                                   : (int32_t)((r * 5 + 3) % 8);
}

/* Drafts of request r: the target argmax (so that some get accepted) or a
 * random token; with LONG drafts every other request drafts the argmax
 * throughout, so that its greedy rows accept all and reach the bonus row
 * past the first 32. */
static void make_drafts(fst_rng *rng, int64_t R, int64_t V, const int32_t *target_argmax,
                        int layout, int32_t **drafts, int32_t **offsets, int64_t *ndt)
{
    *offsets = malloc(sizeof(int32_t) * (size_t)(R + 1));
    (*offsets)[0] = 0;
    for (int64_t r = 0; r < R; ++r)
        (*offsets)[r + 1] = (*offsets)[r] + draft_count(r, layout);
    *ndt = (*offsets)[R];
    *drafts = malloc(sizeof(int32_t) * (size_t)(*ndt + 1));
    for (int64_t r = 0; r < R; ++r)
        for (int64_t i = (*offsets)[r]; i < (*offsets)[r + 1]; ++i) {
            int64_t row = i + r; /* target row of draft i */
            const int argmax = layout == DRAFTS_LONG && r % 2 == 0 ? 1 : fst_unif(rng) < 0.6;
            (*drafts)[i] = argmax && target_argmax && target_argmax[row] >= 0
                               ? target_argmax[row]
                               : (int32_t)fst_randint(rng, V);
        }
}

static void run_op_case(const agree_case *c, int op, int layout, uint64_t seed)
{
    fst_rng rng;
    fst_rng_seed(&rng, seed);
    int64_t R = c->R, V = c->V, D = c->D;
    int32_t *drafts = NULL, *offsets = NULL, *target_argmax = NULL;
    int64_t ndt = 0, rows = R;

    /* verify needs the layout first: rows = drafts + requests */
    if (op == GT_VERIFY) {
        int32_t *tmp_off = malloc(sizeof(int32_t) * (size_t)(R + 1));
        tmp_off[0] = 0;
        for (int64_t r = 0; r < R; ++r)
            tmp_off[r + 1] = tmp_off[r] + draft_count(r, layout);
        rows = tmp_off[R] + R;
        free(tmp_off);
    }

    gt_in in;
    memset(&in, 0, sizeof in);
    in.op = op;
    in.fused = c->fused;
    in.dt = c->dt;
    in.V = V;
    in.D = c->fused ? D : 0;
    in.rows = rows;
    in.requests = op == GT_VERIFY ? R : rows;

    void *weight = NULL, *hidden = NULL, *logits = NULL;
    if (c->fused) {
        fst_gen_head(seed, V, D, rows, 3.0, c->dt, &weight, &hidden);
    } else {
        float *l = fst_gen_logits(seed, rows, V, 3.0);
        logits = fst_pack(l, (size_t)(rows * V), c->dt);
        free(l);
    }
    in.weight = weight;
    in.hidden = hidden;
    in.logits = logits;

    float *temperature = malloc(sizeof(float) * (size_t)in.requests);
    uint64_t *seeds = malloc(sizeof(uint64_t) * (size_t)in.requests);
    uint64_t *offs = malloc(sizeof(uint64_t) * (size_t)in.requests);
    for (int64_t r = 0; r < in.requests; ++r) {
        temperature[r] = temps[(r + seed) % 4];
        seeds[r] = seed * 1000003u + (uint64_t)r * 7919u;
        offs[r] = (uint64_t)r * 3u + (seed & 0xff) + ((uint64_t)r << 33);
    }
    float *bias = c->bias_mask && op != GT_ARGMAX ? fst_gen_bias(seed, rows, V) : NULL;
    uint32_t *allowed = c->bias_mask && op != GT_ARGMAX ? fst_gen_allowed(seed, rows, V, 0.8) : NULL;
    in.p.temperature = temperature;
    in.p.seed = seeds;
    in.p.offset = c->no_offset ? NULL : offs;
    in.p.logit_bias = bias;
    in.p.allowed = allowed;

    fs_context *cpu = fst_cpu_ctx();
    fs_context *gpu = gt_gpu_ctx();

    if (op == GT_VERIFY) {
        /* target argmax of every row (CPU), to draft plausible tokens */
        target_argmax = malloc(sizeof(int32_t) * (size_t)rows);
        float *tv = malloc(sizeof(float) * (size_t)rows);
        int32_t *ts = malloc(sizeof(int32_t) * (size_t)rows);
        fs_lm_head head = {weight, V, D, c->dt};
        fs_status s = c->fused ? fst_argmax(cpu, &head, hidden, rows, target_argmax, tv, ts)
                               : fst_argmax_logits(cpu, logits, c->dt, rows, V, target_argmax,
                                                   tv, ts);
        assert_int_equal(s, FS_OK);
        free(tv);
        free(ts);
        make_drafts(&rng, R, V, target_argmax, layout, &drafts, &offsets, &ndt);
        assert_int_equal(ndt + R, rows);
        in.d.num_requests = R;
        in.d.num_draft_tokens = ndt;
        in.d.max_drafts = layout == DRAFTS_LONG ? 40 : 7;
        in.d.draft_tokens = drafts;
        in.d.draft_offsets = offsets;
    }

    gt_out co, go;
    gt_out_alloc(&in, &co);
    gt_out_alloc(&in, &go);
    double t0 = fst_now();
    gt_run(cpu, &in, &co);
    double t1 = fst_now();
    gt_run(gpu, &in, &go);
    double t2 = fst_now();
    assert_int_equal(co.ret, FS_OK);
    assert_int_equal(go.ret, FS_OK);

    char label[160];
    snprintf(label, sizeof label, "%s %s V=%lld D=%lld %s=%lld%s%s%s", c->fused ? "fused" : "logits",
             fst_dtype_name(c->dt), (long long)V, (long long)D,
             op == GT_VERIFY ? "requests" : "rows", (long long)R, c->bias_mask ? " bias+mask" : "",
             c->no_offset ? " offset=NULL" : "",
             layout == DRAFTS_NONE ? " no-drafts" : layout == DRAFTS_LONG ? " 33-40 drafts" : "");
    gt_agree a = gt_compare(&in, &co, &go, label);
    printf("%-58s %-6s agree %lld/%lld (%.2f%%)%s  [cpu %.2fs gpu %.2fs]\n", label,
           gt_op_name(op), (long long)(a.units - a.differ), (long long)a.units,
           100.0 * (double)(a.units - a.differ) / (double)a.units,
           a.value_bad ? "  VALUE MISMATCH" : "", t1 - t0, t2 - t1);
    fflush(stdout);
    assert_int_equal(a.value_bad, 0);
    /* near-ties are rare: at most 1% of a case (and 2 in small cases) */
    assert_true(a.differ <= 2 + a.units / 100);
    g_units += a.units;
    g_differ += a.differ;

    gt_out_free(&co);
    gt_out_free(&go);
    fs_context_destroy(cpu);
    fs_context_destroy(gpu);
    free(weight);
    free(hidden);
    free(logits);
    free(temperature);
    free(seeds);
    free(offs);
    free(bias);
    free(allowed);
    free(drafts);
    free(offsets);
    free(target_argmax);
}

static void run_cases(const agree_case *cs, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        uint64_t seed = 1000 + 17 * (uint64_t)i + (uint64_t)cs[i].V;
        agree_case c = cs[i];
        if (gt_small_mode()) { /* sanitizer runs: same code paths, less work */
            if (c.R > gt_small_rows())
                c.R = gt_small_rows();
            if (c.D > 136)
                c.D = 136;
        }
        /* verify over a target of ~4.5 rows per request: keep big-D cases smaller */
        agree_case v = c;
        if (v.fused && v.D >= 1000 && v.R > 64)
            v.R = 64;
        run_op_case(&c, GT_SAMPLE, DRAFTS_SHORT, seed);
        run_op_case(&c, GT_ARGMAX, DRAFTS_SHORT, seed + 1);
        run_op_case(&v, GT_VERIFY, DRAFTS_SHORT, seed + 2);
    }
}

static void test_fused_bf16(void **state)
{
    (void)state;
    static const agree_case cs[] = {
        {1, FS_DTYPE_BF16, 1000, 1, 1030, 0, 0},
        {1, FS_DTYPE_BF16, 5003, 7, 300, 1, 0},
        {1, FS_DTYPE_BF16, 4099, 100, 64, 0, 1},
        {1, FS_DTYPE_BF16, 2000, 4096, 3, 1, 0},
        {1, FS_DTYPE_BF16, 1000, 136, 1, 0, 0},
        {1, FS_DTYPE_BF16, 1001, 4096, 300, 1, 0},
        {1, FS_DTYPE_BF16, 3001, 136, 65, 0, 0},
        /* rows kernel with 2 row blocks (one unit per slot: half tiles only;
           on an H200 the pairs take sample and argmax of 200 rows, and
           test_gpu_agree_rowsm this kernel) and 4 row blocks (full and half
           tiles) */
        {1, FS_DTYPE_BF16, 5003, 136, 200, 1, 0},
        {1, FS_DTYPE_BF16, 12007, 136, 450, 0, 0},
        /* tile kernel row blocks of 48 and 96 (65 rows above takes 80) */
        {1, FS_DTYPE_BF16, 4099, 136, 40, 0, 1},
        {1, FS_DTYPE_BF16, 3001, 100, 90, 1, 0},
        /* rows kernel: 3-9 tiles per slot, so both consumers come back for
           more, with more k-blocks than pipeline stages; the last row block
           of the 129 sample rows has one row (one m64 block) */
        {1, FS_DTYPE_BF16, 30011, 520, 129, 0, 0},
        /* rows kernel with 3 row blocks, the last half padding, several
           tiles per CTA; bias and mask */
        {1, FS_DTYPE_BF16, 20011, 200, 320, 1, 0},
        /* under test_gpu_agree_groups (pairs in row groups past 320 rows):
           400 rows in two groups of 104-row halves (the last half 88 rows)
           with bias and mask, and verify of 100 requests (~450 rows) */
        {1, FS_DTYPE_BF16, 6007, 264, 400, 1, 0},
        {1, FS_DTYPE_BF16, 4001, 200, 100, 0, 0},
        /* rows kernel with one 192-row block (its third warpgroup partly
           padding), 3-4 tiles per CTA, more k-blocks than stages; bias and
           mask */
        {1, FS_DTYPE_BF16, 50021, 264, 150, 1, 0},
        /* under test_gpu_agree_tile160 the tile kernel's epilogue warps:
           120 rows (a 128-row block, offset NULL), verify of 33 requests
           (151 rows: a 152-row block, each row's blocks over two or three
           warps) with bias and mask, and 131 rows (a 136-row block, whose
           last 32-row group holds 8 rows) with bias and mask */
        {1, FS_DTYPE_BF16, 20011, 200, 120, 0, 1},
        {1, FS_DTYPE_BF16, 9001, 264, 33, 1, 0},
        {1, FS_DTYPE_BF16, 8009, 200, 131, 1, 0},
        /* under test_gpu_agree_pairs: 180 and 200 rows in two 104-row
           halves (the second's H box past the last row zero-filled), 222
           in two 112-row ones (no offsets) */
        {1, FS_DTYPE_BF16, 7001, 200, 180, 1, 0},
        {1, FS_DTYPE_BF16, 2003, 136, 222, 0, 1},
        /* 250 rows: sample in two 128-row halves (draft argmax on the rows
           kernel) on an H200 and under test_gpu_agree_pairs */
        {1, FS_DTYPE_BF16, 2003, 136, 250, 1, 0},
        /* 1030 rows: on an H200 sample and draft argmax in four row groups
           of 136-row halves (the last half partly padding), with bias and
           mask; elsewhere the rows kernel */
        {1, FS_DTYPE_BF16, 2003, 136, 1030, 1, 0},
        /* 200 rows with D > 5120: on an H200 draft argmax in the pairs'
           104-row halves too (verify of 64 requests, 4-8 rows each) */
        {1, FS_DTYPE_BF16, 1001, 5128, 200, 0, 0},
        /* 100 rows with D > 5120: on an H200 the tile kernel's 128-row EW
           block (the rows kernel from 104 rows there), bias and mask */
        {1, FS_DTYPE_BF16, 1001, 5128, 100, 1, 0},
    };
    run_cases(cs, sizeof cs / sizeof cs[0]);
}

static void test_fused_f16(void **state)
{
    (void)state;
    static const agree_case cs[] = {
        {1, FS_DTYPE_F16, 5003, 4096, 1, 0, 0},
        {1, FS_DTYPE_F16, 3001, 100, 300, 1, 0},
        {1, FS_DTYPE_F16, 1000, 7, 1030, 0, 1},
        {1, FS_DTYPE_F16, 1000, 136, 64, 1, 0},
        {1, FS_DTYPE_F16, 2047, 1, 3, 0, 0},
        /* under test_gpu_agree_pairs two 120-row halves (235 rows); under
           test_gpu_agree_groups three row groups of 120-row halves (700
           rows, the last half 100) */
        {1, FS_DTYPE_F16, 2003, 72, 235, 1, 0},
        {1, FS_DTYPE_F16, 2003, 72, 700, 0, 1},
    };
    run_cases(cs, sizeof cs / sizeof cs[0]);
}

static void test_fused_f32(void **state)
{
    (void)state;
    static const agree_case cs[] = {
        {1, FS_DTYPE_F32, 1000, 1, 3, 0, 0},
        {1, FS_DTYPE_F32, 4099, 100, 300, 1, 0},
        {1, FS_DTYPE_F32, 2000, 4096, 64, 0, 0},
        {1, FS_DTYPE_F32, 5003, 7, 1030, 1, 1},
        {1, FS_DTYPE_F32, 1001, 33, 1, 0, 0},
    };
    run_cases(cs, sizeof cs / sizeof cs[0]);
}

static void test_logits(void **state)
{
    (void)state;
    static const agree_case cs[] = {
        {0, FS_DTYPE_BF16, 5003, 0, 1030, 0, 0},
        {0, FS_DTYPE_F16, 1000, 0, 1, 1, 0},
        {0, FS_DTYPE_F32, 4099, 0, 300, 1, 1},
        {0, FS_DTYPE_F32, 151, 0, 3, 0, 0},
        {0, FS_DTYPE_BF16, 1001, 0, 64, 1, 0},
        {0, FS_DTYPE_F16, 5000, 0, 300, 0, 0},
        {0, FS_DTYPE_F32, 40000, 0, 2, 0, 0},
        /* V a multiple of 16: 16-byte loads of whole noise blocks; 300 rows
           take 16384-token chunks (fs_logits_chunk), 2 loops a thread */
        {0, FS_DTYPE_BF16, 32000, 0, 300, 1, 0},
        {0, FS_DTYPE_F16, 50000, 0, 40, 0, 0},
        {0, FS_DTYPE_BF16, 4096, 0, 64, 0, 1},
    };
    run_cases(cs, sizeof cs / sizeof cs[0]);
}

static void run_verify_cases(const agree_case *cs, size_t n, int layout, uint64_t seed)
{
    for (size_t i = 0; i < n; ++i)
        run_op_case(&cs[i], GT_VERIFY, layout, seed + i);
}

/* A verify batch without any draft token: every request emits its bonus. */
static void test_verify_no_drafts(void **state)
{
    (void)state;
    static const agree_case cs[] = {
        {1, FS_DTYPE_BF16, 1000, 100, 37, 1, 0},
        {0, FS_DTYPE_F32, 2000, 0, 300, 0, 0},
    };
    run_verify_cases(cs, sizeof cs / sizeof cs[0], DRAFTS_NONE, 77);
}

/* Requests of 33-40 drafts: the CUDA walk's second group of 32 rows, output
 * rows wider than a warp, and (every other request drafting the argmax) greedy
 * walks that reach the bonus row past the first 32.  The fused case has
 * ~300 rows: the rows kernel. */
static void test_verify_long_drafts(void **state)
{
    (void)state;
    static const agree_case cs[] = {
        {0, FS_DTYPE_F32, 2000, 0, 40, 0, 0},
        {1, FS_DTYPE_BF16, 1000, 136, 8, 1, 0},
    };
    run_verify_cases(cs, sizeof cs / sizeof cs[0], DRAFTS_LONG, 91);
}

/* Draft argmax over logits picks the lowest id among equal maxima, however
 * the maxima fall: within a noise block, in one thread's later blocks (a
 * thread's blocks are 4096 ids apart), in other threads and in later chunks
 * (fs_logits_chunk): 200 rows take three 16384-token chunks a row on 132
 * SMs (two on 78), FS_GPU_TEST_SMALL's 40 rows 2048-token chunks, and 600
 * rows one chunk a row.  The max is a bf16 value, so it ties exactly in
 * every dtype. */
static void run_argmax_ties(int64_t rows)
{
    const int64_t V = 40000;
    const fs_dtype dts[] = {FS_DTYPE_BF16, FS_DTYPE_F32};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; ++k) {
        float *l = fst_gen_logits(77 + k, rows, V, 3.0);
        int32_t *lowest = malloc(sizeof(int32_t) * (size_t)rows);
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t q = 16 * ((r * 37) % 200); /* a block of thread (q / 16) % 256 */
            const int64_t at[] = {q + 9, q + 1, q + 1 + 4096, q + 1 + 8192, q + 1 + 16 * 17,
                                  V - 1};
            lowest[r] = (int32_t)(q + 1);
            for (size_t j = 0; j < sizeof at / sizeof at[0]; ++j)
                l[r * V + at[j]] = 64.0f;
        }
        void *packed = fst_pack(l, (size_t)(rows * V), dts[k]);
        gt_in in;
        memset(&in, 0, sizeof in);
        in.op = GT_ARGMAX;
        in.dt = dts[k];
        in.V = V;
        in.rows = in.requests = rows;
        in.logits = packed;
        gt_out co, go;
        gt_out_alloc(&in, &co);
        gt_out_alloc(&in, &go);
        gt_run(fst_cpu_ctx(), &in, &co);
        gt_run(gt_gpu_ctx(), &in, &go);
        assert_int_equal(co.ret, FS_OK);
        assert_int_equal(go.ret, FS_OK);
        for (int64_t r = 0; r < rows; ++r) {
            assert_int_equal(co.tok[r], lowest[r]);
            assert_int_equal(go.tok[r], lowest[r]);
            assert_int_equal(go.st[r], FS_ROW_OK);
            assert_true(go.val[r] == 64.0f);
        }
        gt_out_free(&co);
        gt_out_free(&go);
        free(packed);
        free(lowest);
        free(l);
    }
}

static void test_logits_argmax_ties(void **state)
{
    (void)state;
    if (gt_small_mode()) {
        run_argmax_ties(40);
        return;
    }
    run_argmax_ties(200);
    run_argmax_ties(600);
}

static void test_summary(void **state)
{
    (void)state;
    printf("GPU/CPU agreement over all cases: %lld of %lld rows/requests identical (%.3f%%), "
           "%lld near-ties\n",
           (long long)(g_units - g_differ), (long long)g_units,
           g_units ? 100.0 * (double)(g_units - g_differ) / (double)g_units : 100.0,
           (long long)g_differ);
    assert_true(g_differ * 100 <= g_units);
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_agree");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_bf16),       cmocka_unit_test(test_fused_f16),
        cmocka_unit_test(test_fused_f32),        cmocka_unit_test(test_logits),
        cmocka_unit_test(test_verify_no_drafts), cmocka_unit_test(test_verify_long_drafts),
        cmocka_unit_test(test_logits_argmax_ties), cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_agree")
#endif
