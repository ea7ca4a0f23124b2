/* The CPU backend's filters; see cpu_filter.h and docs/DESIGN.md ("Sampling filters"). */
#include "cpu_filter.h"

#include <math.h>
#include <string.h>

#include "cpu_backend.h"
#include "finalize.h"
#include "ws_carve.h"

static int g_cap = FS_FILTER_CANDIDATES;
static int g_force_second_pass = 0;

void fs_cpu_set_filter_candidates(int cap)
{
    g_cap = cap > 0 && cap <= FS_FILTER_CANDIDATES ? cap : FS_FILTER_CANDIDATES;
}

void fs_cpu_set_filter_second_pass(int force)
{
    g_force_second_pass = force != 0;
}

static size_t carve(void *base, int64_t rows, fs_cpu_filter_ws *w)
{
    fs_carver c = {base, 0};
    fs_cpu_filter_ws l = {0};
    l.fdescs = fs_carve(&c, (size_t)rows * sizeof(fs_filter_desc));
    l.recs.tile = fs_carve(&c, (size_t)rows * sizeof(fs_filter_record));
    l.recs.row = fs_carve(&c, (size_t)rows * sizeof(fs_filter_record));
    l.hist = fs_carve(&c, sizeof(fs_filter_hist));
    if (w)
        *w = l;
    return c.at;
}

size_t fs_cpu_filter_ws_bytes(int64_t rows)
{
    return carve(NULL, rows, NULL);
}

void fs_cpu_filter_carve(void *base, int64_t rows, fs_cpu_filter_ws *w)
{
    carve(base, rows, w);
    w->recs.fdescs = w->fdescs;
    w->recs.cap = g_cap;
}

void fs_cpu_filter_prepare(const fs_op_args *a, fs_row_desc *descs, int32_t *pre_status,
                           fs_cpu_filter_ws *w)
{
    const fs_sampling *p = a->params;
    for (int64_t i = 0; i < a->rows; ++i)
        w->fdescs[i].active = 0;
    if (!p || !(p->top_k || p->top_p || p->min_p))
        return;
    if (a->op == FS_OP_SAMPLE) {
        for (int64_t r = 0; r < a->rows; ++r) {
            if (pre_status[r] != FS_ROW_OK)
                continue;
            int32_t st = fs_filter_status(p->top_k, p->top_p, p->min_p, r);
            if (st != FS_ROW_OK) {
                pre_status[r] = st;
                descs[r] = fs_row_desc_skip();
                continue;
            }
            w->fdescs[r] =
                fs_filter_desc_make(p->top_k, p->top_p, p->min_p, r, a->global_vocab, &descs[r]);
        }
    } else if (a->op == FS_OP_VERIFY) {
        const fs_drafts *d = a->drafts;
        for (int64_t r = 0; r < d->num_requests; ++r) {
            if (pre_status[r] != FS_ROW_OK)
                continue;
            /* an OK request implies a well-formed layout: its rows are these */
            int64_t row0 = d->draft_offsets[r] + r;
            int64_t n = d->draft_offsets[r + 1] - d->draft_offsets[r];
            int32_t st = fs_filter_status(p->top_k, p->top_p, p->min_p, r);
            for (int64_t j = 0; j <= n; ++j) {
                if (st != FS_ROW_OK)
                    descs[row0 + j] = fs_row_desc_skip();
                else
                    w->fdescs[row0 + j] = fs_filter_desc_make(p->top_k, p->top_p, p->min_p, r,
                                                              a->global_vocab, &descs[row0 + j]);
            }
            pre_status[r] = st;
        }
    }
}

/* ---- the second pass ----------------------------------------------------- */

static int finite(float s)
{
    return s > -INFINITY && s < INFINITY;
}

/* Add the histogram of one part's finite scores >= floor at q's level into
 * count / mass (masses relative to m). */
static void histogram(const fs_op_args *a, int64_t row, const fs_row_desc *d, float m,
                      float floor, const fs_select *q, int32_t *count, float *mass)
{
    for (int64_t v = 0; v < a->vocab_size; ++v) {
        float s = fs_cpu_score(a, d, row, v);
        if (!finite(s) || s < floor)
            continue;
        int b = fs_select_bucket(q, fs_select_key(s));
        if (b < 0)
            continue;
        count[b]++;
        mass[b] += fs_exp(s - m);
    }
}

/* Run a radix select to its end: one histogram pass per level; with several
 * parts, each part's histogram is summed into the total in part order, as
 * an all-reduce over vocabulary shards would. */
static void run_select(const fs_op_args *const *shards, int nshards, int64_t row,
                       const fs_row_desc *d, float m, float floor, fs_select *q,
                       fs_filter_hist *h)
{
    while (!fs_select_done(q)) {
        memset(h->count, 0, sizeof h->count);
        memset(h->mass, 0, sizeof h->mass);
        if (nshards == 1) {
            histogram(shards[0], row, d, m, floor, q, h->count, h->mass);
        } else {
            for (int i = 0; i < nshards; ++i) {
                memset(h->part_count, 0, sizeof h->part_count);
                memset(h->part_mass, 0, sizeof h->part_mass);
                histogram(shards[i], row, d, m, floor, q, h->part_count, h->part_mass);
                for (int b = 0; b < FS_SELECT_BUCKETS; ++b) {
                    h->count[b] += h->part_count[b];
                    h->mass[b] += h->part_mass[b];
                }
            }
        }
        fs_select_step(q, h->count, h->mass);
    }
}

void fs_cpu_filter_draw(const fs_op_args *const *shards, int nshards, int64_t row,
                        const fs_row_desc *d, const fs_filter_cut *cut,
                        const fs_cpu_kept_sink *k)
{
    for (int i = 0; i < nshards; ++i) {
        const fs_op_args *a = shards[i];
        k->part_init(k->ctx);
        for (int64_t v0 = 0; v0 < a->vocab_size; v0 += FS_NOISE_BLOCK) {
            float s[FS_NOISE_BLOCK];
            for (int t = 0; t < FS_NOISE_BLOCK; ++t) {
                float x = v0 + t < a->vocab_size ? fs_cpu_score(a, d, row, v0 + t) : -INFINITY;
                s[t] = fs_filter_keeps(cut, x) ? x : -INFINITY;
            }
            k->part_push_block(k->ctx, (int32_t)(a->vocab_offset + v0), s);
        }
        k->part_merge(k->ctx);
    }
}

int fs_cpu_filter_cut(const fs_op_args *const *shards, int nshards, int64_t row,
                      const fs_row_desc *d, const fs_filter_desc *fd, const fs_record *rec,
                      const fs_filter_record *frec, int force_second_pass, fs_filter_hist *hist,
                      fs_filter_cut *cut)
{
    if (!force_second_pass && fs_filter_resolve(rec, frec, fd, cut) == FS_FILTER_ONE_PASS)
        return 0;
    const float m = rec->max_s;
    const int32_t k = fd->top_k > 0 && fd->top_k < frec->count ? fd->top_k : 0;
    float t_k = -INFINITY, z_k = rec->sum_exp;
    if (k > 0) {
        fs_select q;
        fs_select_init(&q, k, 0.0f);
        run_select(shards, nshards, row, d, m, -INFINITY, &q, hist);
        t_k = q.threshold;
        z_k = q.mass;
    }
    float t_p = -INFINITY;
    if (fd->top_p < 1.0f) {
        fs_select q;
        fs_select_init(&q, 0, fd->top_p * z_k);
        run_select(shards, nshards, row, d, m, t_k, &q, hist);
        t_p = q.threshold;
    }
    cut->threshold = t_k > t_p ? t_k : t_p;
    cut->max_s = m;
    cut->log_min_p = fd->log_min_p;
    return 1;
}

/* The draw pass's sink for a chain row: fs_records. */
typedef struct plain_kept {
    const fs_row_desc *d;
    fs_record part;
    fs_record *kept;
} plain_kept;

static void plain_part_init(void *ctx)
{
    fs_record_init(&((plain_kept *)ctx)->part);
}

static void plain_part_push(void *ctx, int32_t id0, const float *s)
{
    plain_kept *k = ctx;
    fs_record_push_block(&k->part, k->d, id0, FS_NOISE_BLOCK, s);
}

static void plain_part_merge(void *ctx)
{
    plain_kept *k = ctx;
    fs_record_merge(k->kept, &k->part);
}

int fs_cpu_filter_row(const fs_op_args *const *shards, int nshards, int64_t row,
                      const fs_row_desc *d, const fs_filter_desc *fd, const fs_record *rec,
                      const fs_filter_record *frec, int force_second_pass, fs_filter_hist *hist,
                      fs_record *kept)
{
    fs_filter_cut cut;
    if (!fs_cpu_filter_cut(shards, nshards, row, d, fd, rec, frec, force_second_pass, hist,
                           &cut)) {
        fs_filter_kept_record(frec, &cut, d, kept);
        return 0;
    }
    plain_kept pk;
    pk.d = d;
    pk.kept = kept;
    const fs_cpu_kept_sink k = {&pk, plain_part_init, plain_part_push, plain_part_merge};
    fs_record_init(kept);
    fs_cpu_filter_draw(shards, nshards, row, d, &cut, &k);
    return 1;
}

int fs_cpu_filter_forced(void)
{
    return g_force_second_pass;
}

void fs_cpu_filter_finish(const fs_op_args *const *parts, int nparts, const fs_row_desc *descs,
                          fs_record *row_recs, const fs_cpu_filter_ws *w, uint32_t faults)
{
    const fs_op_args *a = parts[0];
    int32_t *out = a->params ? a->params->out_filter_fallback : NULL;
    int64_t requests = a->op == FS_OP_VERIFY ? a->drafts->num_requests : a->rows;
    for (int64_t r = 0; out && r < requests; ++r)
        out[r] = 0;
    for (int64_t i = 0; i < a->rows; ++i) {
        const fs_record *rec = &row_recs[i];
        if (!w->fdescs[i].active || fs_record_status(rec) != FS_ROW_OK)
            continue;
        fs_record kept;
        int second = fs_cpu_filter_row(parts, nparts, i, &descs[i], &w->fdescs[i], rec,
                                       &w->recs.row[i], g_force_second_pass, w->hist, &kept);
        if (faults & FS_FAULT_UNFILTERED_PX) {
            /* p(x) and the log-sum-exp of the unfiltered target */
            kept.max_s = rec->max_s;
            kept.max_id = rec->max_id;
            kept.sum_exp = rec->sum_exp;
            kept.sel_s = rec->sel_s;
        }
        row_recs[i] = kept;
        if (second && out)
            out[descs[i].request]++;
    }
}
