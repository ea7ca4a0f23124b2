/* The CPU backend: row descriptors, the shared scan, the shared finalizers.
 * Slow but complete; it is the oracle every GPU kernel is tested against. */
#include <stdint.h>

#include "backend.h"
#include "cpu_backend.h"
#include "cpu_filter.h"
#include "cpu_scan.h"
#include "dtype.h"
#include "ws_carve.h"
#include "finalize.h"

static int64_t g_tile = FS_CPU_DEFAULT_TILE;
static uint32_t g_faults = FS_FAULT_NONE;
static int g_nshards = 1;
static int64_t g_cuts[FS_CPU_MAX_SHARDS + 1];

int fs_cpu_set_vocab_shards(int n, const int64_t *cuts)
{
    if (n <= 1) {
        g_nshards = 1;
        return 0;
    }
    if (n > FS_CPU_MAX_SHARDS || !cuts || cuts[0] != 0)
        return -1;
    for (int i = 1; i <= n; ++i)
        if (cuts[i] <= cuts[i - 1] || (i < n && cuts[i] % FS_NOISE_BLOCK != 0))
            return -1;
    for (int i = 0; i <= n; ++i)
        g_cuts[i] = cuts[i];
    g_nshards = n;
    return 0;
}

int fs_cpu_vocab_shards(void)
{
    return g_nshards;
}

void fs_cpu_set_tile_size(int64_t tile)
{
    g_tile = tile > 0 ? tile : FS_CPU_DEFAULT_TILE;
}

void fs_cpu_set_faults(uint32_t faults)
{
    g_faults = faults;
}

typedef struct cpu_workspace {
    fs_row_desc *descs;   /* [rows] */
    fs_record *tile_recs; /* [rows] the tile being scanned */
    fs_record *row_recs;  /* [rows] merged so far */
    int32_t *pre_status;  /* [requests] status known before the scan */
    void *scan_scratch;   /* fs_cpu_scan's noise blocks being collected */
    void *filter;         /* the filters' part (cpu_filter.h) */
    /* tensor-parallel emulation only: one part's records before the merge */
    fs_record *part_recs;          /* [rows] */
    fs_filter_record *part_frecs;  /* [rows] */
    fs_filter_summary *part_sums;  /* [parts][rows]: what each rank exports */
} cpu_workspace;

/* Fills w when base is given; returns the bytes either way. */
static size_t carve(void *base, int64_t rows, int64_t requests, cpu_workspace *w)
{
    fs_carver c = {base, 0};
    cpu_workspace l = {0};
    l.descs = fs_carve(&c, (size_t)rows * sizeof(fs_row_desc));
    l.tile_recs = fs_carve(&c, (size_t)rows * sizeof(fs_record));
    l.row_recs = fs_carve(&c, (size_t)rows * sizeof(fs_record));
    l.pre_status = fs_carve(&c, (size_t)requests * sizeof(int32_t));
    l.scan_scratch = fs_carve(&c, fs_cpu_scan_scratch_bytes(rows));
    l.filter = fs_carve(&c, fs_cpu_filter_ws_bytes(rows));
    if (g_nshards > 1) {
        l.part_recs = fs_carve(&c, (size_t)rows * sizeof(fs_record));
        l.part_frecs = fs_carve(&c, (size_t)rows * sizeof(fs_filter_record));
        l.part_sums = fs_carve(&c, (size_t)g_nshards * (size_t)rows * sizeof(fs_filter_summary));
    }
    if (w)
        *w = l;
    return c.at;
}

size_t fs_cpu_workspace_bytes(fs_op op, int64_t rows, int64_t requests, int64_t vocab_size)
{
    (void)op;
    (void)vocab_size;
    return carve(NULL, rows, requests, NULL);
}

static uint64_t offset_of(const fs_sampling *p, int64_t r)
{
    return p->offset ? p->offset[r] : 0;
}

/* The temperature a valid row is sampled at (FS_FAULT_LOW_T_GREEDY: 0 below 0.3). */
static float temperature_of(const fs_sampling *p, int64_t r)
{
    float t = p->temperature[r];
    return (g_faults & FS_FAULT_LOW_T_GREEDY) && t < 0.3f ? 0.0f : t;
}

/* Descriptors of every row and the status each request has before the scan. */
static void build_descs(const fs_op_args *a, const cpu_workspace *w)
{
    const fs_sampling *p = a->params;
    if (a->op == FS_OP_ARGMAX) {
        for (int64_t r = 0; r < a->rows; ++r) {
            w->descs[r] = fs_row_desc_make(0.0f, 0, 0, 0, -1, -1, (int32_t)r);
            w->pre_status[r] = FS_ROW_OK;
        }
    } else if (a->op == FS_OP_SAMPLE) {
        for (int64_t r = 0; r < a->rows; ++r) {
            int32_t st = fs_temperature_status(p->temperature[r]);
            w->pre_status[r] = st;
            w->descs[r] = st != FS_ROW_OK ? fs_row_desc_skip()
                                          : fs_row_desc_make(temperature_of(p, r), p->seed[r],
                                                             offset_of(p, r), 0, -1, -1,
                                                             (int32_t)r);
        }
    } else {
        const fs_drafts *d = a->drafts;
        for (int64_t i = 0; i < a->rows; ++i)
            w->descs[i] = fs_row_desc_skip();
        int32_t layout =
            fs_verify_layout_status(d->draft_offsets, d->num_requests, d->num_draft_tokens);
        for (int64_t r = 0; r < d->num_requests; ++r) {
            int32_t st = fs_verify_request_status(layout, d->draft_offsets, d->draft_tokens, r,
                                                  d->max_drafts, a->global_vocab,
                                                  p->temperature[r]);
            w->pre_status[r] = st;
            if (st != FS_ROW_OK)
                continue;
            int64_t begin = d->draft_offsets[r], n = d->draft_offsets[r + 1] - begin;
            /* draft_tokens may be NULL when there are none (NULL + 0 is undefined in C) */
            const int32_t *x = n > 0 ? d->draft_tokens + begin : NULL;
            for (int64_t j = 0; j <= n; ++j)
                w->descs[begin + r + j] =
                    fs_verify_row_desc(x, n, j, temperature_of(p, r), p->seed[r],
                                       offset_of(p, r), (int32_t)r);
        }
    }
    if (g_faults & FS_FAULT_NO_EXCLUDE)
        for (int64_t i = 0; i < a->rows; ++i)
            w->descs[i].excluded = -1;
}

static void finalize(const fs_op_args *a, const cpu_workspace *w)
{
    float *vals = a->out_values;
    if (a->op == FS_OP_SAMPLE) {
        for (int64_t r = 0; r < a->rows; ++r) {
            a->out_row_status[r] = w->pre_status[r];
            fs_finalize_sample(&w->row_recs[r], &w->descs[r], &a->out_tokens[r],
                               vals ? &vals[r] : NULL, &a->out_row_status[r]);
        }
    } else if (a->op == FS_OP_ARGMAX) {
        for (int64_t r = 0; r < a->rows; ++r)
            fs_finalize_argmax(&w->row_recs[r], &a->out_tokens[r], vals ? &vals[r] : NULL,
                               &a->out_row_status[r]);
    } else {
        const fs_drafts *d = a->drafts;
        int64_t stride = d->max_drafts + 1;
        for (int64_t r = 0; r < d->num_requests; ++r) {
            int ok = w->pre_status[r] == FS_ROW_OK;
            int64_t begin = ok ? d->draft_offsets[r] : 0;
            int64_t n = ok ? d->draft_offsets[r + 1] - begin : 0;
            a->out_row_status[r] = w->pre_status[r];
            fs_finalize_verify(ok ? &w->row_recs[begin + r] : NULL,
                               ok ? &w->descs[begin + r] : NULL,
                               ok && n > 0 ? d->draft_tokens + begin : NULL, n, stride,
                               &a->out_tokens[r * stride], vals ? &vals[r * stride] : NULL,
                               &a->out_num_emitted[r], &a->out_row_status[r]);
        }
    }
}

/* The parts the vocabulary is scanned in (cpu_scan.h). */
int fs_cpu_vocab_parts(const fs_op_args *a, fs_op_args *parts, fs_lm_head *heads)
{
    parts[0] = *a;
    if (g_nshards == 1 || g_cuts[g_nshards] != a->vocab_size)
        return 1;
    for (int i = 0; i < g_nshards; ++i) {
        fs_op_args *s = &parts[i];
        *s = *a;
        s->vocab_offset = a->vocab_offset + g_cuts[i];
        s->vocab_size = g_cuts[i + 1] - g_cuts[i];
        if (a->head) {
            heads[i] = *a->head;
            heads[i].vocab_size = s->vocab_size;
            heads[i].weight = (const char *)a->head->weight +
                              (size_t)(g_cuts[i] * a->head->hidden_dim) * fs_dtype_bytes(a->head->dtype);
            s->head = &heads[i];
        } else {
            s->logits = (const char *)a->logits + (size_t)g_cuts[i] * fs_dtype_bytes(a->logits_dtype);
            s->logits_ld = a->logits_ld ? a->logits_ld : a->vocab_size;
        }
    }
    return g_nshards;
}

/* Each part scanned on its own, its records merged into row_recs in part
 * order, as the ranks' record exchange merges them; the filters' candidates
 * leave each part as an fs_filter_summary and are merged by the rule the
 * ranks use (fs_filter_summary_merge).  A CPU part's summary is its exact
 * top `cap`, so the rule's floor never cuts here; the CUDA ranks' summaries
 * can be shorter, and the same rule covers them. */
static void scan_parts(const fs_op_args *const *parts, int nparts, const cpu_workspace *w,
                       const fs_cpu_filter_ws *fw)
{
    const fs_op_args *a = parts[0];
    fs_cpu_filter_recs part_f = fw->recs;
    part_f.row = w->part_frecs;
    for (int64_t r = 0; r < a->rows; ++r)
        fs_record_init(&w->row_recs[r]);
    for (int i = 0; i < nparts; ++i) {
        fs_cpu_scan_filtered(parts[i], w->descs, g_tile, g_faults, w->tile_recs, w->part_recs,
                             &part_f, w->scan_scratch);
        for (int64_t r = 0; r < a->rows; ++r) {
            fs_record_merge(&w->row_recs[r], &w->part_recs[r]);
            if (fw->fdescs[r].active)
                fs_filter_summary_of(&w->part_frecs[r], &w->part_sums[i * a->rows + r]);
        }
    }
    for (int64_t r = 0; r < a->rows; ++r)
        if (fw->fdescs[r].active)
            fs_filter_summary_merge(&w->part_sums[r], a->rows, nparts, fw->recs.cap,
                                    &fw->recs.row[r]);
}

static const char *op_name(fs_op op)
{
    return op == FS_OP_SAMPLE ? "sample" : op == FS_OP_ARGMAX ? "draft argmax" : "verify";
}

fs_status fs_cpu_run(fs_context *ctx, const fs_op_args *a)
{
    int64_t requests = a->op == FS_OP_VERIFY ? a->drafts->num_requests : a->rows;
    cpu_workspace w = {0};
    carve(a->workspace, a->rows, requests, &w);
    build_descs(a, &w);
    fs_cpu_filter_ws fw;
    fs_cpu_filter_carve(w.filter, a->rows, &fw);
    fs_cpu_filter_prepare(a, w.descs, w.pre_status, &fw);
    fs_op_args parts[FS_CPU_MAX_SHARDS];
    fs_lm_head heads[FS_CPU_MAX_SHARDS];
    const fs_op_args *pp[FS_CPU_MAX_SHARDS];
    int nparts = fs_cpu_vocab_parts(a, parts, heads);
    for (int i = 0; i < nparts; ++i)
        pp[i] = &parts[i];
    if (nparts == 1)
        fs_cpu_scan_filtered(a, w.descs, g_tile, g_faults, w.tile_recs, w.row_recs, &fw.recs,
                             w.scan_scratch);
    else
        scan_parts(pp, nparts, &w, &fw);
    fs_cpu_filter_finish(pp, nparts, w.descs, w.row_recs, &fw, g_faults);
    finalize(a, &w);

    int64_t bad = 0, first = -1;
    for (int64_t r = 0; r < requests; ++r)
        if (a->out_row_status[r] != FS_ROW_OK && bad++ == 0)
            first = r;
    if (bad)
        return fs_fail(ctx, FS_ERR_INVALID_ROWS, "%s: %s %lld: %s (%lld bad of %lld)",
                       op_name(a->op), a->op == FS_OP_VERIFY ? "request" : "row",
                       (long long)first, fs_row_status_string(a->out_row_status[first]),
                       (long long)bad, (long long)requests);
    return FS_OK;
}

int64_t fs_cpu_tile_size(void)
{
    return g_tile;
}

uint32_t fs_cpu_faults(void)
{
    return g_faults;
}
