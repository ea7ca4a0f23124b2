/* The CPU backend of tree verify: tree row descriptors, the CPU scan over
 * tree records, and the shared tree finalizer (tree_finalize.h). */
#include "cpu_tree.h"

#include "cpu_backend.h"
#include "cpu_scan.h"
#include "tree_finalize.h"
#include "ws_carve.h"

size_t fs_cpu_tree_carve(void *base, int64_t rows, int64_t requests, fs_cpu_tree_ws *w)
{
    fs_carver c = {base, 0};
    fs_cpu_tree_ws l = {0};
    l.rows = fs_carve(&c, (size_t)rows * sizeof(fs_tree_row));
    l.tile_recs = fs_carve(&c, (size_t)rows * sizeof(fs_tree_record));
    l.row_recs = fs_carve(&c, (size_t)rows * sizeof(fs_tree_record));
    l.pre_status = fs_carve(&c, (size_t)requests * sizeof(int32_t));
    l.scan_scratch = fs_carve(&c, fs_cpu_scan_scratch_bytes(rows));
    if (w)
        *w = l;
    return c.at;
}

size_t fs_cpu_tree_workspace_bytes(int64_t rows, int64_t requests)
{
    return fs_cpu_tree_carve(NULL, rows, requests, NULL);
}

static void skip_row(fs_tree_row *d)
{
    d->base = fs_row_desc_skip();
    d->num_children = 0;
    d->excluded_mask = 0;
}

/* The test hooks' wrong exclusion sets: none, or the last child only. */
static void apply_faults(fs_tree_row *d, uint32_t faults)
{
    if (faults & FS_FAULT_NO_EXCLUDE)
        d->excluded_mask = 0;
    else if ((faults & FS_FAULT_KEEP_SIBLINGS) && d->num_children > 0)
        d->excluded_mask = 1u << (d->num_children - 1);
}

void fs_cpu_tree_prepare(const fs_tree_args *a, const fs_cpu_tree_ws *w)
{
    const fs_draft_tree *t = a->tree;
    const fs_sampling *p = a->base.params;
    const uint32_t faults = fs_cpu_faults();
    for (int64_t i = 0; i < a->base.rows; ++i)
        skip_row(&w->rows[i]);
    int32_t layout = fs_verify_layout_status(t->node_offsets, t->num_requests, t->num_nodes);
    for (int64_t r = 0; r < t->num_requests; ++r) {
        w->pre_status[r] = layout;
        if (layout != FS_ROW_OK)
            continue;
        int64_t begin = t->node_offsets[r], n = t->node_offsets[r + 1] - begin;
        fs_tree_row *rows = &w->rows[begin + r];
        /* tokens and parents may be NULL when num_nodes is 0, and NULL + 0
           is undefined: a request without nodes reads neither */
        w->pre_status[r] = fs_tree_request_rows(
            n > 0 ? t->tokens + begin : NULL, n > 0 ? t->parents + begin : NULL, n,
            t->max_depth, t->max_children,
            a->base.global_vocab, p->temperature[r], p->seed[r], p->offset ? p->offset[r] : 0,
            (int32_t)r, rows);
        for (int64_t j = 0; j <= n && w->pre_status[r] == FS_ROW_OK; ++j)
            apply_faults(&rows[j], faults);
    }
}

/* The scan engine's sink over tree records (cpu_scan.h). */
static const fs_row_desc *tree_desc(const void *ctx, int64_t r)
{
    return &((const fs_cpu_tree_ws *)ctx)->rows[r].base;
}

static fs_tree_record *tree_rec(void *ctx, int64_t r, int part)
{
    const fs_cpu_tree_ws *w = ctx;
    return part == FS_SCAN_TILE ? &w->tile_recs[r] : &w->row_recs[r];
}

static void tree_init(void *ctx, int64_t r, int part)
{
    fs_tree_record_init(tree_rec(ctx, r, part));
}

static void tree_push_block(void *ctx, int64_t r, int part, int32_t id0, const float *s)
{
    const fs_cpu_tree_ws *w = ctx;
    fs_tree_record_push_block(tree_rec(ctx, r, part), &w->rows[r], id0, FS_NOISE_BLOCK, s);
}

static void tree_merge(void *ctx, int64_t r)
{
    fs_tree_record_merge(tree_rec(ctx, r, FS_SCAN_ROW), tree_rec(ctx, r, FS_SCAN_TILE));
}

void fs_cpu_tree_scan(const fs_tree_args *a, const fs_cpu_tree_ws *w)
{
    const fs_cpu_scan_sink sink = {(void *)w, tree_desc, tree_init, tree_push_block, tree_merge};
    fs_cpu_scan_run(&a->base, &sink, fs_cpu_tile_size(), fs_cpu_faults(), w->scan_scratch);
}

void fs_cpu_tree_finalize(const fs_tree_args *a, const fs_cpu_tree_ws *w)
{
    const fs_draft_tree *t = a->tree;
    const int64_t stride = t->max_depth + 1;
    float *lp = a->base.out_values;
    int32_t *path = a->out_path_nodes;
    for (int64_t r = 0; r < t->num_requests; ++r) {
        int ok = w->pre_status[r] == FS_ROW_OK;
        int64_t begin = ok ? t->node_offsets[r] : 0;
        int64_t n = ok ? t->node_offsets[r + 1] - begin : 0;
        a->base.out_row_status[r] = w->pre_status[r];
        fs_finalize_verify_tree(ok ? &w->row_recs[begin + r] : NULL,
                                ok ? &w->rows[begin + r] : NULL,
                                ok && n > 0 ? t->parents + begin : NULL, n, stride,
                                &a->base.out_tokens[r * stride],
                                path ? &path[r * t->max_depth] : NULL,
                                lp ? &lp[r * stride] : NULL, &a->base.out_num_emitted[r],
                                &a->base.out_row_status[r]);
    }
}

fs_status fs_cpu_tree_run(fs_context *ctx, const fs_tree_args *a)
{
    const int64_t requests = a->tree->num_requests;
    fs_cpu_tree_ws w;
    fs_cpu_tree_carve(a->base.workspace, a->base.rows, requests, &w);
    fs_cpu_tree_prepare(a, &w);
    fs_cpu_tree_scan(a, &w);
    fs_cpu_tree_finalize(a, &w);

    int64_t bad = 0, first = -1;
    for (int64_t r = 0; r < requests; ++r)
        if (a->base.out_row_status[r] != FS_ROW_OK && bad++ == 0)
            first = r;
    if (bad)
        return fs_fail(ctx, FS_ERR_INVALID_ROWS, "tree verify: request %lld: %s (%lld bad of %lld)",
                       (long long)first, fs_row_status_string(a->base.out_row_status[first]),
                       (long long)bad, (long long)requests);
    return FS_OK;
}
