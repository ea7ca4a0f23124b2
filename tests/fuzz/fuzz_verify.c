/* libFuzzer target: fs_verify (hidden states) and fs_verify_logits, chosen
 * by an input byte, on the CPU backend.  Ragged requests with 0..max_drafts
 * drafts (sometimes more), draft ids in range or not, well-formed or
 * malformed offsets (not starting at 0, not ending at num_draft_tokens,
 * decreasing).  Checks host-level errors (fuzz_support.c), then per request:
 * the documented status (malformed layout, too many drafts, out-of-range
 * draft, bad temperature, a non-finite or all-masked row anywhere in the
 * request); a bad request emits 0 tokens, all -1 (logprobs NaN); a good one
 * emits num_emitted in [1, n + 1] tokens: the accepted drafts (allowed, of
 * finite score) then one token that is allowed, of finite score and, when it
 * replaces a rejected draft, differs from it; -1 padding; at T <
 * FS_MIN_TEMPERATURE the exact greedy walk; log-probabilities against a
 * double reference; the same outputs with another scan tile. */
#include "cpu_backend.h"
#include "fuzz_support.h"

#include <limits.h>
#include <math.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_REQ = 4, MAX_DRAFTS = 5 };

/* offsets well-formed: start at 0, never decrease, end at ndt */
static int layout_ok(const int32_t *off, int64_t R, int64_t ndt)
{
    if (off[0] != 0 || off[R] != ndt)
        return 0;
    for (int64_t r = 0; r < R; ++r)
        if (off[r + 1] < off[r])
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in;
    fz_begin(&in, data, size);
    const int64_t R = 1 + fz_below(&in, MAX_REQ), maxd = fz_below(&in, MAX_DRAFTS + 1);
    int64_t counts[MAX_REQ], sum = 0;
    for (int64_t r = 0; r < R; ++r) /* sometimes one more than max_drafts */
        sum += counts[r] = fz_below(&in, maxd + 2);
    int64_t ndt = sum;
    if (fz_chance(&in, 16)) { /* num_draft_tokens disagrees with the offsets */
        int64_t delta = fz_below(&in, 5) - 2;
        ndt = sum + delta >= 0 ? sum + delta : 0;
    }
    const int64_t rows = ndt + R;

    fz_problem p;
    fz_gen_inputs(&in, &p, -1, rows);
    fz_gen_params(&in, &p, R);
    const int64_t V = p.V;

    int32_t *off = fz_alloc(sizeof(int32_t) * (size_t)(R + 1));
    off[0] = 0;
    for (int64_t r = 0; r < R; ++r)
        off[r + 1] = off[r] + (int32_t)counts[r];
    if (fz_chance(&in, 48)) { /* malformed layouts, mostly in the middle */
        int64_t i = fz_below(&in, R + 1);
        switch (fz_below(&in, 6)) {
        case 0: off[0] = 1 + (int32_t)fz_below(&in, 3); break;
        case 1: off[R] += (int32_t)fz_below(&in, 5) - 2; break;
        case 2:
        case 3: off[i] = (int32_t)fz_below(&in, ndt + 5) - 2; break;
        default: /* swap two neighbours */
            if (i < R) {
                int32_t t = off[i];
                off[i] = off[i + 1];
                off[i + 1] = t;
            }
        }
    }
    const int wellformed = layout_ok(off, R, ndt);

    /* drafts: the argmax of their row (accepted at T = 0), random ids, and
       edits that put ids out of range */
    int32_t *drafts = ndt > 0 || (fz_u8(&in) & 1) ? fz_alloc(sizeof(int32_t) * (size_t)ndt) : NULL;
    const uint8_t dmode = fz_u8(&in) % 3;
    uint64_t h = fz_seed(&in);
    for (int64_t j = 0; j < ndt; ++j) {
        int64_t r = 0;
        while (wellformed && r + 1 < R && off[r + 1] <= j)
            ++r;
        fz_rowref ref;
        ref.argmax = -1;
        if (wellformed)
            fz_row_ref(&p, j + r, fz_inv_temp(p.temperature[r]), &ref);
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        int use_argmax = dmode == 0 || (dmode == 2 && (h >> 40) % 2);
        drafts[j] = use_argmax && ref.argmax >= 0 ? ref.argmax : (int32_t)((h >> 33) % (uint64_t)V);
    }
    int edits = ndt > 0 ? (int)fz_below(&in, 3) : 0;
    for (int e = 0; e < edits; ++e) {
        const int32_t bad[] = {-1, (int32_t)V, (int32_t)V + 1, INT32_MIN, INT32_MAX, -(int32_t)V};
        drafts[fz_below(&in, ndt)] = FZ_PICK(&in, bad);
    }

    const int64_t tile = fz_gen_tile(&in, V), tile2 = fz_gen_tile(&in, V);
    const int with_lp = !(fz_u8(&in) & 1);
    fz_check_workspace_query(&in, FZ_VERIFY, rows, R, ndt, V);

    fs_drafts d = {R, ndt, maxd, drafts, off};
    fz_call c;
    size_t need;
    fz_call_init(&c, FZ_VERIFY, &p, &d, with_lp, &need);
    fz_corrupt(&in, &c, need);
    fs_cpu_set_tile_size(tile);
    fs_status s;
    if (fz_run(&c, need, &p, &s)) {
        const int64_t stride = maxd + 1;
        for (int64_t r = 0; r < R; ++r) {
            const int32_t st = c.st[r], e = c.nem[r];
            const int32_t *t = c.tok + r * stride;
            const float *lp = with_lp ? c.vals + r * stride : NULL;
            const float T = p.temperature[r], inv = fz_inv_temp(T);
            /* the documented status */
            unsigned want;
            int64_t n = wellformed ? (int64_t)off[r + 1] - off[r] : 0, begin = 0;
            fz_rowref refs[MAX_DRAFTS + 2];
            if (!wellformed || n > maxd) {
                want = 1u << FS_ROW_BAD_OFFSETS;
            } else {
                begin = off[r] + r; /* the request's first target row */
                int bad_draft = 0;
                for (int64_t j = 0; j < n; ++j)
                    bad_draft |= drafts[off[r] + j] < 0 || drafts[off[r] + j] >= V;
                if (bad_draft) {
                    want = 1u << FS_ROW_BAD_DRAFT;
                } else if (fz_temperature_status(T) != FS_ROW_OK) {
                    want = 1u << FS_ROW_BAD_TEMPERATURE;
                } else { /* every row counts, reached by the walk or not */
                    int all_may_ok = 1;
                    want = 0;
                    for (int64_t j = 0; j <= n; ++j) {
                        fz_row_ref(&p, begin + j, inv, &refs[j]);
                        want |= refs[j].status_mask & ~(1u << FS_ROW_OK);
                        all_may_ok &= (refs[j].status_mask >> FS_ROW_OK) & 1u;
                    }
                    if (all_may_ok)
                        want |= 1u << FS_ROW_OK;
                }
            }
            FZ_CHECK((1u << st) & want, "verify request %lld: status %d, expected mask 0x%x",
                     (long long)r, st, want);
            if (st != FS_ROW_OK) {
                FZ_CHECK(e == 0, "verify request %lld: bad (status %d) but %d emitted",
                         (long long)r, st, e);
                for (int64_t k = 0; k < stride; ++k)
                    FZ_CHECK(t[k] == -1 && (!lp || lp[k] != lp[k]),
                             "verify request %lld: bad, slot %lld holds %d", (long long)r,
                             (long long)k, t[k]);
                continue;
            }
            const int32_t *x = n > 0 ? drafts + off[r] : NULL;
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
                fz_check_token(&p, begin + k, t[k], inv, "verify request", r);
                if (lp)
                    fz_check_logprob(&p, begin + k, t[k], inv, &refs[k], lp[k], "verify request",
                                     r);
            }
            for (int64_t k = e; k < stride; ++k)
                FZ_CHECK(t[k] == -1 && (!lp || lp[k] != lp[k]),
                         "verify request %lld: padding slot %lld holds %d", (long long)r,
                         (long long)k, t[k]);
            if (fz_is_greedy(T)) { /* the greedy walk, where every row is determined */
                int exact = 1;
                for (int64_t j = 0; j <= n; ++j)
                    exact &= refs[j].exact;
                if (exact) {
                    int64_t k = 0;
                    while (k < n && x[k] == refs[k].argmax)
                        ++k;
                    FZ_CHECK(e == k + 1 && t[k] == refs[k].argmax,
                             "verify request %lld (greedy): %d emitted, last %d; expected %lld, "
                             "last %d", (long long)r, e, t[e - 1], (long long)(k + 1),
                             refs[k].argmax);
                }
            }
        }
        fz_check_rerun(&c, tile2);
    }
    fz_end();
    return 0;
}
