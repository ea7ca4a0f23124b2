/* The CPU backend of tree verify: tree row descriptors, the CPU scan over
 * tree records (and the filters' candidates), the filters' kept tree records
 * (tree_filter.h, or the second pass of cpu_filter.c), and the shared tree
 * finalizer (tree_finalize.h). */
#include "cpu_tree.h"

#include "cpu_backend.h"
#include "cpu_scan.h"
#include "tree_filter.h"
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
    void *filter = fs_carve(&c, fs_cpu_filter_ws_bytes(rows));
    if (fs_cpu_vocab_shards() > 1) {
        l.part_recs = fs_carve(&c, (size_t)rows * sizeof(fs_tree_record));
        l.part_frecs = fs_carve(&c, (size_t)rows * sizeof(fs_filter_record));
    }
    if (w) {
        fs_cpu_filter_carve(filter, rows, &l.filter);
        *w = l;
    }
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

/* Filter descriptors of every row; a request whose tree and temperature
 * passed but whose filter parameters are bad fails with FS_ROW_BAD_FILTER
 * and its rows are skipped (the status order of verify). */
static void prepare_filters(const fs_tree_args *a, const fs_cpu_tree_ws *w)
{
    const fs_draft_tree *t = a->tree;
    const fs_sampling *p = a->base.params;
    for (int64_t i = 0; i < a->base.rows; ++i)
        w->filter.fdescs[i].active = 0;
    if (!(p->top_k || p->top_p || p->min_p))
        return;
    for (int64_t r = 0; r < t->num_requests; ++r) {
        if (w->pre_status[r] != FS_ROW_OK)
            continue;
        /* an OK request implies a well-formed layout: its rows are these */
        const int64_t row0 = t->node_offsets[r] + r;
        const int64_t n = t->node_offsets[r + 1] - t->node_offsets[r];
        const int32_t st = fs_filter_status(p->top_k, p->top_p, p->min_p, r);
        w->pre_status[r] = st;
        for (int64_t j = 0; j <= n; ++j) {
            if (st != FS_ROW_OK)
                skip_row(&w->rows[row0 + j]);
            else
                w->filter.fdescs[row0 + j] = fs_filter_desc_make(
                    p->top_k, p->top_p, p->min_p, r, a->base.global_vocab, &w->rows[row0 + j].base);
        }
    }
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
    prepare_filters(a, w);
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

/* Row r's candidate record of that part, or NULL when it has no filters. */
static fs_filter_record *tree_frec(const fs_cpu_tree_ws *w, int64_t r, int part)
{
    if (!w->filter.fdescs[r].active)
        return NULL;
    return part == FS_SCAN_TILE ? &w->filter.recs.tile[r] : &w->filter.recs.row[r];
}

static void tree_init(void *ctx, int64_t r, int part)
{
    fs_tree_record_init(tree_rec(ctx, r, part));
    fs_filter_record *f = tree_frec(ctx, r, part);
    if (f)
        fs_filter_record_init(f);
}

static void tree_push_block(void *ctx, int64_t r, int part, int32_t id0, const float *s)
{
    const fs_cpu_tree_ws *w = ctx;
    fs_tree_record_push_block(tree_rec(ctx, r, part), &w->rows[r], id0, FS_NOISE_BLOCK, s);
    /* the candidates are the row's tokens, children included: F is a set of
       the target's scores */
    fs_filter_record *f = tree_frec(w, r, part);
    if (f)
        fs_filter_push_block(f, id0, FS_NOISE_BLOCK, s, w->filter.recs.cap);
}

static void tree_merge(void *ctx, int64_t r)
{
    const fs_cpu_tree_ws *w = ctx;
    fs_tree_record_merge(tree_rec(ctx, r, FS_SCAN_ROW), tree_rec(ctx, r, FS_SCAN_TILE));
    fs_filter_record *f = tree_frec(w, r, FS_SCAN_ROW);
    if (f)
        fs_filter_merge(f, tree_frec(w, r, FS_SCAN_TILE), w->filter.recs.cap);
}

void fs_cpu_tree_scan(const fs_tree_args *a, const fs_cpu_tree_ws *w)
{
    const fs_cpu_scan_sink sink = {(void *)w, tree_desc, tree_init, tree_push_block, tree_merge};
    fs_cpu_scan_run(&a->base, &sink, fs_cpu_tile_size(), fs_cpu_faults(), w->scan_scratch);
}

/* The draw pass's sink for a tree row: tree records, one per part. */
typedef struct tree_kept {
    const fs_tree_row *d;
    fs_tree_record part;
    fs_tree_record *kept;
} tree_kept;

static void kept_part_init(void *ctx)
{
    fs_tree_record_init(&((tree_kept *)ctx)->part);
}

static void kept_part_push(void *ctx, int32_t id0, const float *s)
{
    tree_kept *k = ctx;
    fs_tree_record_push_block(&k->part, k->d, id0, FS_NOISE_BLOCK, s);
}

static void kept_part_merge(void *ctx)
{
    tree_kept *k = ctx;
    fs_tree_record_merge(k->kept, &k->part);
}

/* The test hooks' wrong kept records (cpu_backend.h): the children's p and
 * the log-sum-exp of the unfiltered row, or its recovery candidate. */
static void apply_filter_faults(fs_tree_record *kept, const fs_tree_record *rec, uint32_t faults)
{
    if (faults & FS_FAULT_UNFILTERED_PX) {
        kept->base.max_s = rec->base.max_s;
        kept->base.max_id = rec->base.max_id;
        kept->base.sum_exp = rec->base.sum_exp;
        for (int k = 0; k < FS_TREE_MAX_CHILDREN; ++k)
            kept->child_s[k] = rec->child_s[k];
    }
    if (faults & FS_FAULT_UNFILTERED_DRAW) {
        kept->base.best_key = rec->base.best_key;
        kept->base.best_id = rec->base.best_id;
        kept->base.best_s = rec->base.best_s;
    }
}

void fs_cpu_tree_filter(const fs_op_args *const *parts, int nparts, const fs_tree_args *a,
                        const fs_cpu_tree_ws *w)
{
    const fs_draft_tree *t = a->tree;
    int32_t *out = a->base.params->out_filter_fallback;
    const uint32_t faults = fs_cpu_faults();
    for (int64_t r = 0; out && r < t->num_requests; ++r)
        out[r] = 0;
    for (int64_t i = 0; i < a->base.rows; ++i) {
        const fs_tree_record *rec = &w->row_recs[i];
        const fs_tree_row *d = &w->rows[i];
        if (!w->filter.fdescs[i].active || fs_record_status(&rec->base) != FS_ROW_OK)
            continue;
        fs_filter_cut cut;
        fs_tree_record kept;
        const int second = fs_cpu_filter_cut(parts, nparts, i, &d->base, &w->filter.fdescs[i],
                                             &rec->base, &w->filter.recs.row[i],
                                             fs_cpu_filter_forced(), w->filter.hist, &cut);
        if (!second) {
            fs_tree_filter_kept_record(&w->filter.recs.row[i], &cut, d, &kept);
        } else {
            tree_kept tk;
            tk.d = d;
            tk.kept = &kept;
            const fs_cpu_kept_sink k = {&tk, kept_part_init, kept_part_push, kept_part_merge};
            fs_tree_record_init(&kept);
            fs_cpu_filter_draw(parts, nparts, i, &d->base, &cut, &k);
        }
        apply_filter_faults(&kept, rec, faults);
        w->row_recs[i] = kept;
        if (second && out)
            out[d->base.request]++;
    }
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
                                ok ? &w->rows[begin + r] : NULL, n, stride,
                                &a->base.out_tokens[r * stride],
                                path ? &path[r * t->max_depth] : NULL,
                                lp ? &lp[r * stride] : NULL, &a->base.out_num_emitted[r],
                                &a->base.out_row_status[r]);
    }
}

/* The tensor-parallel emulation: each part scanned on its own into the part
 * records, merged into the row records in part order, as the ranks' record
 * exchange merges them. */
static void scan_parts(const fs_tree_args *a, const fs_op_args *parts, int nparts,
                       const fs_cpu_tree_ws *w)
{
    fs_cpu_tree_ws pw = *w;
    pw.row_recs = w->part_recs;
    pw.filter.recs.row = w->part_frecs;
    for (int64_t r = 0; r < a->base.rows; ++r) {
        fs_tree_record_init(&w->row_recs[r]);
        if (w->filter.fdescs[r].active)
            fs_filter_record_init(&w->filter.recs.row[r]);
    }
    for (int i = 0; i < nparts; ++i) {
        fs_tree_args ap = *a;
        ap.base = parts[i];
        fs_cpu_tree_scan(&ap, &pw);
        for (int64_t r = 0; r < a->base.rows; ++r) {
            fs_tree_record_merge(&w->row_recs[r], &w->part_recs[r]);
            if (w->filter.fdescs[r].active)
                fs_filter_merge(&w->filter.recs.row[r], &w->part_frecs[r], w->filter.recs.cap);
        }
    }
}

fs_status fs_cpu_tree_run(fs_context *ctx, const fs_tree_args *a)
{
    const int64_t requests = a->tree->num_requests;
    fs_cpu_tree_ws w;
    fs_cpu_tree_carve(a->base.workspace, a->base.rows, requests, &w);
    fs_cpu_tree_prepare(a, &w);
    fs_op_args parts[FS_CPU_MAX_SHARDS];
    fs_lm_head heads[FS_CPU_MAX_SHARDS];
    const fs_op_args *pp[FS_CPU_MAX_SHARDS];
    const int nparts = w.part_recs ? fs_cpu_vocab_parts(&a->base, parts, heads) : 1;
    if (nparts == 1) {
        pp[0] = &a->base;
        fs_cpu_tree_scan(a, &w);
    } else {
        scan_parts(a, parts, nparts, &w);
        for (int i = 0; i < nparts; ++i)
            pp[i] = &parts[i];
    }
    fs_cpu_tree_filter(pp, nparts, a, &w);
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
