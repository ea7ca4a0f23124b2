/* The rows kernel's candidate lists (filtered sample and verify past 160
 * rows; kernels/rows_epilogue.cuh, cand_tile) against their definition
 * (src/cand_list.h): one warp's lists after several tiles of values that
 * tie often (multiples of 1/8), hold -inf (masked tokens, a whole masked
 * tile, a whole masked row), at four temperatures, in rows that filter and
 * rows that do not, and in "staircase" rows whose first tile holds four high
 * scores a list and every other token masked: each list fills at once with
 * nothing let go, and every later tile's best ranks below its last entry.
 * A warp takes the one-comparison fast path only when no lane's list can
 * take a token, so every fourth case makes every row a staircase: from the
 * second tile on each list's drop must rise to the tile's best there (a
 * staircase row among live ones checks the same through the insert path).
 * Each of a lane's two lists of a row takes its tokens of
 * the noise blocks of one parity; it must hold exactly their best four by
 * (score desc, id asc), drop must be the score of the fifth (-inf when
 * none), list 0's count the row's finite tokens in the lane (list 1's 0),
 * and a row that does not filter keeps empty lists.  The end-to-end
 * agreement of the filters is test_gpu_filter's; a list whose drop is too
 * low leaves a hole only at the end of the exact prefix, which the
 * filters' decisions rarely reach, so it is checked here.  Skipped without
 * a GPU. */
#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

#include "cand_list.h"
#include "record.h"

int fs_test_rows_lists(const float *vals, const fs_row_desc *descs, int tiles,
                       int64_t vocab_offset, fs_cand_list *out);

enum { TILES = 7, LANES = 32 };

static void check_case(uint64_t seed)
{
    fst_rng rng;
    fst_rng_seed(&rng, seed);
    const int64_t voff = 16 * (int64_t)fst_randint(&rng, 1000);
    const int all_stairs = seed % 4 == 0;
    float *vals = malloc(sizeof(float) * TILES * LANES * 128);
    fs_row_desc descs[64];
    static const float TEMPS[4] = {1.0f, 0.7f, 2.0f, 0.05f};
    for (int r = 0; r < 64; ++r) {
        memset(&descs[r], 0, sizeof descs[r]);
        descs[r].inv_temp = 1.0f / TEMPS[r % 4];
        descs[r].flags = FS_ROWF_VALID | (r % 7 == 3 ? 0u : FS_ROWF_FILTER);
        descs[r].excluded = -1;
        descs[r].selected = -1;
    }
    for (int t = 0; t < TILES; ++t)
        for (int l = 0; l < LANES; ++l)
            for (int h = 0; h < 2; ++h) {
                const int row = 2 * l + h;
                for (int k = 0; k < 64; ++k) {
                    float v = (float)((int)fst_randint(&rng, 49) - 24) / 8.0f;
                    if (fst_randint(&rng, 10) == 0 || row == 5 || (row == 9 && t == 2))
                        v = -INFINITY; /* masked; row 5 wholly, row 9 one tile */
                    /* a staircase row's first tile: values k < 8 are columns
                       8 (k / 2) + 2 gc + k % 2, four in each parity's list,
                       above any later score */
                    if ((all_stairs || row % 5 == 1) && row != 5 && t == 0)
                        v = k < 8 ? 16.0f + (float)k / 8.0f : -INFINITY;
                    vals[((t * LANES + l) * 2 + h) * 64 + k] = v;
                }
            }
    fs_cand_list out[LANES * 4];
    const int e = fs_test_rows_lists(vals, descs, TILES, voff, out);
    if (e != 0)
        fail_msg("fs_test_rows_lists: CUDA error %d", e);
    fst_tok *toks = malloc(sizeof(fst_tok) * TILES * 32);
    for (int l = 0; l < LANES; ++l)
        for (int h = 0; h < 2; ++h) {
            const int row = 2 * l + h, gc = l & 3;
            const float it = descs[row].inv_temp;
            const int filt = (descs[row].flags & FS_ROWF_FILTER) != 0;
            int finite = 0;
            for (int p = 0; p < 2; ++p) {
                int n = 0;
                for (int t = 0; t < TILES; ++t)
                    for (int j = 0; j < 32; ++j)
                        for (int e2 = 0; e2 < 2; ++e2) {
                            const int col = 8 * j + 2 * gc + e2;
                            if (((col >> 4) & 1) != p)
                                continue;
                            const float v = vals[((t * LANES + l) * 2 + h) * 64 + 2 * j + e2];
                            if (!(v > -INFINITY))
                                continue;
                            toks[n].s = (v + 0.0f) * it;
                            toks[n].id = (int32_t)(voff + 256 * t + col);
                            ++n;
                        }
                finite += n;
                qsort(toks, (size_t)n, sizeof(fst_tok), fst_tok_before);
                const fs_cand_list *c = &out[4 * l + 2 * h + p];
                for (int i = 0; i < FS_CAND_LIST; ++i) {
                    const int in = filt && i < n;
                    const float s = in ? toks[i].s : -INFINITY;
                    const int32_t id = in ? toks[i].id : -1;
                    if (c->s[i] != s || c->id[i] != id)
                        fail_msg("seed %llu row %d list %d entry %d: (%g, %d), expected (%g, %d)",
                                 (unsigned long long)seed, row, p, i, c->s[i], c->id[i], s, id);
                }
                const float drop = filt && n > FS_CAND_LIST ? toks[FS_CAND_LIST].s : -INFINITY;
                if (c->drop != drop)
                    fail_msg("seed %llu row %d list %d: drop %g, expected %g",
                             (unsigned long long)seed, row, p, c->drop, drop);
                if (p == 1 && c->count != 0)
                    fail_msg("seed %llu row %d list 1: count %d", (unsigned long long)seed, row,
                             c->count);
            }
            const int count = filt ? finite : 0;
            if (out[4 * l + 2 * h].count != count)
                fail_msg("seed %llu row %d: count %d, expected %d", (unsigned long long)seed, row,
                         out[4 * l + 2 * h].count, count);
        }
    free(toks);
    free(vals);
}

static void test_lists(void **state)
{
    (void)state;
    for (uint64_t s = 1; s <= 40; ++s)
        check_case(s);
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_rows_lists");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lists)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_rows_lists")
#endif
