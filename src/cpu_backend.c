/* The CPU backend: row descriptors, the shared scan, the shared finalizers.
 * Slow but complete; it is the oracle every GPU kernel is tested against. */
#include <stdint.h>

#include "backend.h"
#include "cpu_backend.h"
#include "cpu_scan.h"
#include "finalize.h"

static int64_t g_tile = FS_CPU_DEFAULT_TILE;
static uint32_t g_faults = FS_FAULT_NONE;

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
} cpu_workspace;

static size_t align_up(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static size_t carve(void *base, int64_t rows, int64_t requests, cpu_workspace *w)
{
    char *p = base;
    size_t at = 0;
    if (w) w->descs = (fs_row_desc *)(p + at);
    at += align_up((size_t)rows * sizeof(fs_row_desc));
    if (w) w->tile_recs = (fs_record *)(p + at);
    at += align_up((size_t)rows * sizeof(fs_record));
    if (w) w->row_recs = (fs_record *)(p + at);
    at += align_up((size_t)rows * sizeof(fs_record));
    if (w) w->pre_status = (int32_t *)(p + at);
    at += align_up((size_t)requests * sizeof(int32_t));
    if (w) w->scan_scratch = p + at;
    at += align_up(fs_cpu_scan_scratch_bytes(rows));
    return at;
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

static const char *op_name(fs_op op)
{
    return op == FS_OP_SAMPLE ? "sample" : op == FS_OP_ARGMAX ? "draft argmax" : "verify";
}

fs_status fs_cpu_run(fs_context *ctx, const fs_op_args *a)
{
    int64_t requests = a->op == FS_OP_VERIFY ? a->drafts->num_requests : a->rows;
    cpu_workspace w;
    carve(a->workspace, a->rows, requests, &w);
    build_descs(a, &w);
    fs_cpu_scan(a, w.descs, g_tile, g_faults, w.tile_recs, w.row_recs, w.scan_scratch);
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
