/* libFuzzer target: fs_sample (hidden states) and fs_sample_logits,
 * chosen by an input byte, on the CPU backend.  Checks, beyond "no crash"
 * and AddressSanitizer's view of every buffer at its documented size:
 * host-level errors (fuzz_support.c), then per row the documented status
 * (bad temperature; non-finite or all-masked scores), sentinels on bad rows
 * (token -1, logprob NaN), and on good rows a token in range, allowed and of
 * finite score, the argmax for greedy rows (T < FS_MIN_TEMPERATURE), the
 * log-probability against a double reference, and the same tokens with
 * another scan tile size. */
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
    fz_gen_inputs(&in, &p, -1, rows);
    fz_gen_params(&in, &p, rows);
    const int64_t tile = fz_gen_tile(&in, p.V), tile2 = fz_gen_tile(&in, p.V);
    const int with_lp = !(fz_u8(&in) & 1);
    fz_check_workspace_query(&in, FZ_SAMPLE, rows, rows, 0, p.V);

    fz_call c;
    size_t need;
    fz_call_init(&c, FZ_SAMPLE, &p, NULL, with_lp, &need);
    fz_corrupt(&in, &c, need);
    fs_cpu_set_tile_size(tile);
    fs_status s;
    if (fz_run(&c, need, &p, &s)) {
        for (int64_t r = 0; r < rows; ++r) {
            const float T = p.temperature[r];
            const int32_t st = c.st[r], tok = c.tok[r];
            const float lp = with_lp ? c.vals[r] : NAN;
            const int32_t ts = fz_temperature_status(T);
            fz_rowref ref;
            if (ts != FS_ROW_OK) {
                FZ_CHECK(st == ts, "sample row %lld: temperature %g gave status %d, expected %d",
                         (long long)r, (double)T, st, ts);
            } else {
                fz_row_ref(&p, r, fz_inv_temp(T), &ref);
                FZ_CHECK((1u << st) & ref.status_mask,
                         "sample row %lld: status %d, expected one of mask 0x%x (T %g)",
                         (long long)r, st, ref.status_mask, (double)T);
            }
            if (st != FS_ROW_OK) {
                FZ_CHECK(tok == -1 && lp != lp,
                         "sample row %lld: bad row (status %d) has token %d, logprob %g",
                         (long long)r, st, tok, (double)lp);
                continue;
            }
            const float inv = fz_inv_temp(T);
            fz_check_token(&p, r, tok, inv, "sample row", r);
            if (fz_is_greedy(T) && ref.exact)
                FZ_CHECK(tok == ref.argmax,
                         "sample row %lld: greedy (T %g) gave token %d, argmax is %d",
                         (long long)r, (double)T, tok, ref.argmax);
            if (with_lp)
                fz_check_logprob(&p, r, tok, inv, &ref, lp, "sample row", r);
        }
        fz_check_rerun(&c, tile2);
    }
    fz_end();
    return 0;
}
