/* libFuzzer target: the top-k / top-p / min-p filters of fs_sampling in
 * fs_sample / fs_sample_logits and fs_verify / fs_verify_logits (an input
 * byte picks the op and the variant) on the CPU backend.  Filter values are
 * chosen by the input: valid, edge (k = 0, 1, >= V; p tiny; min_p near 1)
 * and bad ones (k < 0, p outside (0, 1], min_p outside [0, 1), NaN, raw
 * bits), each array present or NULL, out_filter_fallback present or not.
 *
 * Checks, beyond fuzz_sample's and fuzz_verify's host-level and per-row
 * contracts: a request with bad filters gets FS_ROW_BAD_FILTER (after the
 * layout, draft and temperature statuses; before the scan's non-finite and
 * all-masked statuses) with sentinels; an OK row's token lies in the kept
 * set the harness computes from the scores (fz_kept_ref), greedy rows give
 * the argmax whatever the filters; verify's accepted drafts and recovered
 * and bonus tokens lie in their row's kept set; logprobs are under the
 * filtered law; out_filter_fallback is in [0, rows of the request], 0 for
 * bad, greedy and unfiltered requests, and every row of a filtered request
 * when the second pass is forced.  The call runs twice, each time with a
 * scan tile, a candidate cap (fs_cpu_set_filter_candidates) and a forced
 * second pass (fs_cpu_set_filter_second_pass) chosen by the input: statuses
 * must agree, and tokens wherever no row of the request has a near-tie at
 * its kept set's boundary (there the one pass and the second pass may round
 * a mass differently, and both tokens were already checked to be in the
 * kept set allowing either side of the tie). */
#include "cpu_backend.h"
#include "fuzz_support.h"

#include <limits.h>
#include <math.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ROWS = 6, MAX_REQ = 4, MAX_DRAFTS = 5, MAX_REQ_ROWS = MAX_DRAFTS + 2 };

/* What the harness knows about one scanned row of an OK request. */
typedef struct row_info {
    fz_rowref ref; /* unfiltered, at the request's 1/T */
    int filtered;  /* sampling, a filter on, scores exact: kept holds its kept set */
    fz_kept kept;
} row_info;

typedef struct hooks {
    int64_t tile;
    int cap, force;
} hooks;

static void gen_hooks(fz_in *in, int64_t V, hooks *h)
{
    static const int caps[] = {0, 1, 2, 3, 4, 7, 8, 16, 63};
    h->tile = fz_gen_tile(in, V);
    h->cap = FZ_PICK(in, caps);
    h->force = fz_u8(in) & 1;
}

static void set_hooks(const hooks *h)
{
    fs_cpu_set_tile_size(h->tile);
    fs_cpu_set_filter_candidates(h->cap);
    fs_cpu_set_filter_second_pass(h->force);
}

static void clear_hooks(void)
{
    fs_cpu_set_tile_size(0);
    fs_cpu_set_filter_candidates(0);
    fs_cpu_set_filter_second_pass(0);
}

static void row_info_make(const fz_problem *p, int64_t row, int64_t r, row_info *ri)
{
    const float T = p->temperature[r], inv = fz_inv_temp(T);
    fz_row_ref(p, row, inv, &ri->ref);
    ri->filtered = !fz_is_greedy(T) && fz_filter_on(p, r) && ri->ref.exact;
    if (ri->filtered)
        fz_kept_ref(p, row, inv, r, &ri->kept);
}

/* A token emitted from a row: in range, allowed, finite; in the kept set;
 * its logprob under the filtered law where the kept set is exact, else
 * under the row's softmax (greedy or unfiltered rows) or only in range. */
static void check_emitted(const fz_problem *p, int64_t row, int64_t r, const row_info *ri,
                          int32_t tok, const float *lp, const char *what, int64_t index)
{
    const float T = p->temperature[r], inv = fz_inv_temp(T);
    fz_check_token(p, row, tok, inv, what, index);
    if (ri->filtered)
        fz_check_kept(p, row, tok, inv, &ri->kept, what, index);
    if (!lp)
        return;
    fz_rowref ref = ri->ref;
    if (ri->filtered) {
        ref.exact = ri->kept.lo == ri->kept.hi;
        ref.lse = ri->kept.lse;
    } else if (!fz_is_greedy(T) && fz_filter_on(p, r)) {
        ref.exact = 0; /* filtered but not exactly known: range only */
    }
    fz_check_logprob(p, row, tok, inv, &ref, *lp, what, index);
}

/* out_filter_fallback of request r with `nrows` rows and status st: 0 for
 * requests failed before the scan, greedy and unfiltered ones; every row of
 * an OK filtered request when the second pass is forced. */
static void check_fallback(const fz_problem *p, const int32_t *fb, int64_t r, int64_t nrows,
                           int32_t st, int pre_bad, int force)
{
    if (!fb)
        return;
    const int32_t f = fb[r];
    FZ_CHECK(f >= 0 && f <= nrows, "request %lld: out_filter_fallback %d outside [0, %lld]",
             (long long)r, f, (long long)nrows);
    const int on = fz_filter_on(p, r) && !fz_is_greedy(p->temperature[r]);
    if (pre_bad || !on)
        FZ_CHECK(f == 0, "request %lld: out_filter_fallback %d for a %s request (status %d)",
                 (long long)r, f, pre_bad ? "bad" : on ? "?" : "greedy or unfiltered", st);
    else if (force && st == FS_ROW_OK)
        FZ_CHECK(f == nrows,
                 "request %lld: second pass forced, out_filter_fallback %d of %lld rows",
                 (long long)r, f, (long long)nrows);
}

/* ---- sample ---------------------------------------------------------------- */

static void sample_checks(const fz_problem *p, const fz_call *c, const hooks *h)
{
    for (int64_t r = 0; r < p->rows; ++r) {
        const float T = p->temperature[r];
        const int32_t st = c->st[r], tok = c->tok[r];
        const float *lp = c->vals ? &c->vals[r] : NULL;
        row_info ri;
        int32_t want = fz_temperature_status(T);
        if (want == FS_ROW_OK)
            want = fz_filter_status(p, r);
        if (want != FS_ROW_OK) {
            FZ_CHECK(st == want, "sample row %lld: status %d, expected %d (T %g)", (long long)r,
                     st, want, (double)T);
        } else {
            row_info_make(p, r, r, &ri);
            FZ_CHECK((1u << st) & ri.ref.status_mask,
                     "sample row %lld: status %d, expected one of mask 0x%x", (long long)r, st,
                     ri.ref.status_mask);
        }
        check_fallback(p, c->params_v.out_filter_fallback, r, 1, st, want != FS_ROW_OK,
                       h->force);
        if (st != FS_ROW_OK) {
            FZ_CHECK(tok == -1 && (!lp || *lp != *lp),
                     "sample row %lld: bad row (status %d) has token %d", (long long)r, st, tok);
            continue;
        }
        check_emitted(p, r, r, &ri, tok, lp, "sample row", r);
        if (fz_is_greedy(T) && ri.ref.exact)
            FZ_CHECK(tok == ri.ref.argmax,
                     "sample row %lld: greedy (T %g) gave %d, argmax %d (filters change nothing)",
                     (long long)r, (double)T, tok, ri.ref.argmax);
    }
}

/* ---- verify ---------------------------------------------------------------- */

typedef struct vprob {
    int64_t R, maxd, ndt;
    int32_t *off, *drafts;
    int wellformed;
} vprob;

static void gen_verify(fz_in *in, fz_problem *p, vprob *v)
{
    v->R = 1 + fz_below(in, MAX_REQ);
    v->maxd = fz_below(in, MAX_DRAFTS + 1);
    int64_t counts[MAX_REQ], sum = 0;
    for (int64_t r = 0; r < v->R; ++r) /* sometimes one more than max_drafts */
        sum += counts[r] = fz_below(in, v->maxd + 2);
    v->ndt = sum;
    if (fz_chance(in, 8)) /* num_draft_tokens disagrees with the offsets */
        v->ndt = sum + 1;
    const int64_t rows = v->ndt + v->R;
    fz_gen_inputs(in, p, -1, rows);
    fz_gen_params(in, p, v->R);
    fz_gen_filters(in, p, v->R);
    v->off = fz_alloc(sizeof(int32_t) * (size_t)(v->R + 1));
    v->off[0] = 0;
    for (int64_t r = 0; r < v->R; ++r)
        v->off[r + 1] = v->off[r] + (int32_t)counts[r];
    if (fz_chance(in, 12)) { /* malformed: not at 0, or two offsets swapped */
        if (fz_u8(in) & 1) {
            v->off[0] = 1;
        } else {
            int64_t i = fz_below(in, v->R);
            int32_t t = v->off[i];
            v->off[i] = v->off[i + 1];
            v->off[i + 1] = t;
        }
    }
    v->wellformed = fz_layout_ok(v->off, v->R, v->ndt);
    /* drafts: the row's argmax (always kept), random ids (often cut by the
       filters), and rarely an id out of range */
    v->drafts = fz_alloc(sizeof(int32_t) * (size_t)v->ndt);
    const uint8_t dmode = fz_u8(in) % 3;
    uint64_t h = fz_seed(in);
    for (int64_t j = 0; j < v->ndt; ++j) {
        int64_t r = 0;
        while (v->wellformed && r + 1 < v->R && v->off[r + 1] <= j)
            ++r;
        fz_rowref ref;
        ref.argmax = -1;
        if (v->wellformed)
            fz_row_ref(p, j + r, fz_inv_temp(p->temperature[r]), &ref);
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        int use_argmax = dmode == 0 || (dmode == 2 && (h >> 40) % 2);
        v->drafts[j] =
            use_argmax && ref.argmax >= 0 ? ref.argmax : (int32_t)((h >> 33) % (uint64_t)p->V);
    }
    if (v->ndt > 0 && fz_chance(in, 8)) {
        const int32_t bad[] = {-1, (int32_t)p->V, INT32_MIN, INT32_MAX};
        v->drafts[fz_below(in, v->ndt)] = FZ_PICK(in, bad);
    }
}

static void verify_checks(const fz_problem *p, const vprob *v, const fz_call *c, const hooks *h)
{
    const int64_t stride = v->maxd + 1, V = p->V;
    for (int64_t r = 0; r < v->R; ++r) {
        const int32_t st = c->st[r], e = c->nem[r];
        const int32_t *t = c->tok + r * stride;
        const float *lp = c->vals ? c->vals + r * stride : NULL;
        const float T = p->temperature[r];
        int64_t n = v->wellformed ? (int64_t)v->off[r + 1] - v->off[r] : 0, begin = 0;
        row_info ri[MAX_REQ_ROWS];
        unsigned want;
        int32_t pre = FS_ROW_OK;
        if (!v->wellformed || n > v->maxd) {
            pre = FS_ROW_BAD_OFFSETS;
        } else {
            begin = v->off[r] + r;
            for (int64_t j = 0; j < n; ++j)
                if (v->drafts[v->off[r] + j] < 0 || v->drafts[v->off[r] + j] >= V)
                    pre = FS_ROW_BAD_DRAFT;
            if (pre == FS_ROW_OK)
                pre = fz_temperature_status(T);
            if (pre == FS_ROW_OK)
                pre = fz_filter_status(p, r);
        }
        if (pre != FS_ROW_OK) {
            want = 1u << pre;
        } else { /* every row counts, reached by the walk or not */
            int all_ok = 1;
            want = 0;
            for (int64_t j = 0; j <= n; ++j) {
                row_info_make(p, begin + j, r, &ri[j]);
                want |= ri[j].ref.status_mask & ~(1u << FS_ROW_OK);
                all_ok &= (ri[j].ref.status_mask >> FS_ROW_OK) & 1u;
            }
            if (all_ok)
                want |= 1u << FS_ROW_OK;
        }
        FZ_CHECK((1u << st) & want, "verify request %lld: status %d, expected mask 0x%x",
                 (long long)r, st, want);
        check_fallback(p, c->params_v.out_filter_fallback, r, n + 1, st, pre != FS_ROW_OK,
                       h->force);
        if (st != FS_ROW_OK) {
            FZ_CHECK(e == 0, "verify request %lld: bad (status %d) but %d emitted", (long long)r,
                     st, e);
            for (int64_t k = 0; k < stride; ++k)
                FZ_CHECK(t[k] == -1 && (!lp || lp[k] != lp[k]),
                         "verify request %lld: bad, slot %lld holds %d", (long long)r,
                         (long long)k, t[k]);
            continue;
        }
        const int32_t *x = n > 0 ? v->drafts + v->off[r] : NULL;
        FZ_CHECK(e >= 1 && e <= n + 1, "verify request %lld: %d emitted with %lld drafts",
                 (long long)r, e, (long long)n);
        for (int64_t k = 0; k < e; ++k) {
            if (k < e - 1)
                FZ_CHECK(t[k] == x[k], "verify request %lld: slot %lld holds %d, draft %d",
                         (long long)r, (long long)k, t[k], x[k]);
            else if (k < n)
                FZ_CHECK(t[k] != x[k],
                         "verify request %lld: recovered token %d equals the draft it replaces",
                         (long long)r, t[k]);
            check_emitted(p, begin + k, r, &ri[k], t[k], lp ? &lp[k] : NULL, "verify request", r);
        }
        for (int64_t k = e; k < stride; ++k)
            FZ_CHECK(t[k] == -1 && (!lp || lp[k] != lp[k]),
                     "verify request %lld: padding slot %lld holds %d", (long long)r,
                     (long long)k, t[k]);
        if (fz_is_greedy(T)) { /* the greedy walk, filters or not */
            int exact = 1;
            for (int64_t j = 0; j <= n; ++j)
                exact &= ri[j].ref.exact;
            if (exact) {
                int64_t k = 0;
                while (k < n && x[k] == ri[k].ref.argmax)
                    ++k;
                FZ_CHECK(e == k + 1 && t[k] == ri[k].ref.argmax,
                         "verify request %lld (greedy): %d emitted, last %d; expected %lld, last %d",
                         (long long)r, e, t[e - 1], (long long)(k + 1), ri[k].ref.argmax);
            }
        }
    }
}

/* ---- the two runs compared ----------------------------------------------------- */

/* Request r's rows [row0, row0 + nrows) are exactly known with no near-tie
 * at a kept set's boundary: its outputs may not depend on the hooks. */
static int comparable(const fz_problem *p, int64_t r, int64_t row0, int64_t nrows)
{
    for (int64_t j = 0; j < nrows; ++j) {
        row_info ri;
        row_info_make(p, row0 + j, r, &ri);
        if (!ri.ref.exact || (ri.filtered && ri.kept.lo != ri.kept.hi))
            return 0;
    }
    return 1;
}

static void compare_runs(const fz_problem *p, const vprob *v, const fz_call *a, const fz_call *b,
                         const hooks *ha, const hooks *hb)
{
    const int64_t requests = v ? v->R : p->rows, stride = v ? v->maxd + 1 : 1;
    for (int64_t r = 0; r < requests; ++r) {
        FZ_CHECK(a->st[r] == b->st[r],
                 "request %lld: status %d with tile %lld cap %d force %d, %d with tile %lld cap "
                 "%d force %d", (long long)r, a->st[r], (long long)ha->tile, ha->cap, ha->force,
                 b->st[r], (long long)hb->tile, hb->cap, hb->force);
        if (a->st[r] != FS_ROW_OK)
            continue;
        int64_t row0 = r, nrows = 1;
        if (v) {
            row0 = v->off[r] + r;
            nrows = v->off[r + 1] - v->off[r] + 1;
        }
        if (!comparable(p, r, row0, nrows))
            continue;
        if (v)
            FZ_CHECK(a->nem[r] == b->nem[r],
                     "verify request %lld: %d emitted (cap %d force %d tile %lld), %d (cap %d "
                     "force %d tile %lld)", (long long)r, a->nem[r], ha->cap, ha->force,
                     (long long)ha->tile, b->nem[r], hb->cap, hb->force, (long long)hb->tile);
        for (int64_t k = 0; k < stride; ++k) {
            const int64_t i = r * stride + k;
            FZ_CHECK(a->tok[i] == b->tok[i],
                     "request %lld slot %lld: token %d (cap %d force %d tile %lld), %d (cap %d "
                     "force %d tile %lld)", (long long)r, (long long)k, a->tok[i], ha->cap,
                     ha->force, (long long)ha->tile, b->tok[i], hb->cap, hb->force,
                     (long long)hb->tile);
            if (a->vals) {
                const float x = a->vals[i], y = b->vals[i];
                FZ_CHECK((x != x && y != y) || fabsf(x - y) <= 1e-4f + 1e-5f * fabsf(x),
                         "request %lld slot %lld: logprob %.9g vs %.9g under other hooks",
                         (long long)r, (long long)k, (double)x, (double)y);
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in;
    fz_begin(&in, data, size);
    const int verify = fz_u8(&in) & 1;
    fz_problem p;
    vprob v;
    memset(&v, 0, sizeof v);
    if (verify) {
        gen_verify(&in, &p, &v);
    } else {
        const int64_t rows = 1 + fz_below(&in, MAX_ROWS);
        fz_gen_inputs(&in, &p, -1, rows);
        fz_gen_params(&in, &p, rows);
        fz_gen_filters(&in, &p, rows);
    }
    hooks h1, h2;
    gen_hooks(&in, p.V, &h1);
    gen_hooks(&in, p.V, &h2);
    const int with_lp = !(fz_u8(&in) & 1);
    const int64_t requests = verify ? v.R : p.rows;

    fs_drafts d = {v.R, v.ndt, v.maxd, v.drafts, v.off};
    fz_call c;
    size_t need;
    fz_call_init(&c, verify ? FZ_VERIFY : FZ_SAMPLE, &p, verify ? &d : NULL, with_lp, &need);
    const fs_sampling *sp = &p.params;
    fz_watch(sp->top_k, sizeof(int32_t) * (size_t)requests);
    fz_watch(sp->top_p, sizeof(float) * (size_t)requests);
    fz_watch(sp->min_p, sizeof(float) * (size_t)requests);
    fz_corrupt(&in, &c, need);
    set_hooks(&h1);
    fs_status s;
    if (fz_run_filters(&c, need, &s)) {
        if (verify)
            verify_checks(&p, &v, &c, &h1);
        else
            sample_checks(&p, &c, &h1);
        /* the same call under the second hooks, into fresh outputs */
        fz_call c2 = c;
        c2.params = &c2.params_v;
        if (c.fused)
            c2.head = &c2.head_v;
        if (verify)
            c2.drafts = &c2.drafts_v;
        c2.tok = fz_alloc(sizeof(int32_t) * c.tok_n);
        c2.vals = c.vals ? fz_alloc(sizeof(float) * c.vals_n) : NULL;
        c2.st = fz_alloc(sizeof(int32_t) * c.st_n);
        c2.nem = c.nem ? fz_alloc(sizeof(int32_t) * c.nem_n) : NULL;
        if (c.params_v.out_filter_fallback)
            c2.params_v.out_filter_fallback = fz_alloc(sizeof(int32_t) * (size_t)requests);
        set_hooks(&h2);
        if (fz_run_filters(&c2, need, &s)) {
            if (verify)
                verify_checks(&p, &v, &c2, &h2);
            else
                sample_checks(&p, &c2, &h2);
            compare_runs(&p, verify ? &v : NULL, &c, &c2, &h1, &h2);
        }
    }
    clear_hooks();
    fz_end();
    return 0;
}
