/* libFuzzer target: fs_draft_argmax (hidden states) and
 * fs_draft_argmax_logits, chosen by an input byte, on the CPU backend.
 * Checks host-level errors (fuzz_support.c), then per row: the status
 * (non-finite logit, or every logit -inf), sentinels on bad rows (token
 * -1, logit NaN), and on good rows the argmax with ties to the lowest id
 * and its logit, exactly, and the same answer with another scan tile. */
#include "cpu_backend.h"
#include "fuzz_support.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in;
    fz_begin(&in, data, size);
    const int64_t rows = 1 + fz_below(&in, 6);
    fz_problem p;
    fz_gen_inputs(&in, &p, -1, rows); /* no parameters: no bias, no mask */
    const int64_t tile = fz_gen_tile(&in, p.V), tile2 = fz_gen_tile(&in, p.V);
    const int with_val = !(fz_u8(&in) & 1);
    fz_check_workspace_query(&in, FZ_ARGMAX, rows, rows, 0, p.V);

    fz_call c;
    size_t need;
    fz_call_init(&c, FZ_ARGMAX, &p, NULL, with_val, &need);
    fz_corrupt(&in, &c, need);
    fs_cpu_set_tile_size(tile);
    fs_status s;
    if (fz_run(&c, need, &p, &s)) {
        for (int64_t r = 0; r < rows; ++r) {
            const int32_t st = c.st[r], tok = c.tok[r];
            const float val = with_val ? c.vals[r] : NAN;
            fz_rowref ref;
            fz_row_ref(&p, r, 1.0f, &ref);
            FZ_CHECK((1u << st) & ref.status_mask,
                     "argmax row %lld: status %d, expected one of mask 0x%x", (long long)r, st,
                     ref.status_mask);
            if (st != FS_ROW_OK) {
                FZ_CHECK(tok == -1 && val != val,
                         "argmax row %lld: bad row (status %d) has token %d, logit %g",
                         (long long)r, st, tok, (double)val);
                continue;
            }
            fz_check_token(&p, r, tok, 1.0f, "argmax row", r);
            if (ref.exact) {
                FZ_CHECK(tok == ref.argmax, "argmax row %lld: token %d, argmax is %d",
                         (long long)r, tok, ref.argmax);
                FZ_CHECK(!with_val || val == ref.max_s,
                         "argmax row %lld: logit %.9g, max is %.9g", (long long)r, (double)val,
                         (double)ref.max_s);
            } else if (with_val) {
                FZ_CHECK(val > -INFINITY && val < INFINITY, "argmax row %lld: logit %g",
                         (long long)r, (double)val);
            }
        }
        fz_check_rerun(&c, tile2);
    }
    fz_end();
    return 0;
}
