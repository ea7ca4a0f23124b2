/* The CPU backend's vocabulary scan.  Same records, push and merge as the
 * GPU kernels (record.h); only the way logits are produced differs. */
#include "cpu_scan.h"

#include <math.h>
#include <stddef.h>

#include "cpu_backend.h"
#include "dtype.h"

/* Dot products with eight fixed partial sums: vectorisable, and the same
 * summation order on every run. */
#define FS_DEFINE_DOT(name, T, widen)                                               \
    static float name(const T *h, const T *w, int64_t n)                           \
    {                                                                               \
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                    \
        int64_t k = 0;                                                              \
        for (; k + 8 <= n; k += 8)                                                  \
            for (int l = 0; l < 8; ++l)                                             \
                acc[l] += widen(h[k + l]) * widen(w[k + l]);                        \
        for (; k < n; ++k)                                                          \
            acc[k & 7] += widen(h[k]) * widen(w[k]);                                \
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])); \
    }

static inline float widen_f32(float x)
{
    return x;
}
FS_DEFINE_DOT(dot_f32, float, widen_f32)
FS_DEFINE_DOT(dot_f16, uint16_t, fs_f16_to_f32)
FS_DEFINE_DOT(dot_bf16, uint16_t, fs_bf16_to_f32)

static float logit_fused(const fs_op_args *a, int64_t row, int64_t v)
{
    int64_t d = a->head->hidden_dim;
    size_t es = fs_dtype_bytes(a->head->dtype);
    const char *h = (const char *)a->hidden + (size_t)(row * d) * es;
    const char *w = (const char *)a->head->weight + (size_t)(v * d) * es;
    switch (a->head->dtype) {
    case FS_DTYPE_F32: return dot_f32((const float *)h, (const float *)w, d);
    case FS_DTYPE_F16: return dot_f16((const uint16_t *)h, (const uint16_t *)w, d);
    default: return dot_bf16((const uint16_t *)h, (const uint16_t *)w, d);
    }
}

static float logit_stored(const fs_op_args *a, int64_t row, int64_t v)
{
    size_t i = (size_t)(row * (a->logits_ld ? a->logits_ld : a->vocab_size) + v);
    switch (a->logits_dtype) {
    case FS_DTYPE_F32: return ((const float *)a->logits)[i];
    case FS_DTYPE_F16: return fs_f16_to_f32(((const uint16_t *)a->logits)[i]);
    default: return fs_bf16_to_f32(((const uint16_t *)a->logits)[i]);
    }
}

/* Score of local token v of `row` (-inf when the mask disallows it): mask,
 * bias and temperature exactly as the GPU epilogue applies them. */
static float score_token(const fs_op_args *a, const fs_row_desc *d, int64_t row, int64_t v)
{
    int64_t gid = a->vocab_offset + v;
    const fs_sampling *p = a->params;
    if (p && p->allowed) {
        int64_t words = (a->global_vocab + 31) / 32;
        if (!((p->allowed[row * words + gid / 32] >> (gid % 32)) & 1u))
            return -INFINITY;
    }
    float l = a->head ? logit_fused(a, row, v) : logit_stored(a, row, v);
    if (!(p && p->logit_bias))
        return fs_score_nobias(l, d->inv_temp);
    return fs_score(l, p->logit_bias[row * a->global_vocab + gid], d->inv_temp);
}

/* The noise block a row is collecting: scores by position in the block
 * (-inf where no token was pushed).  Blocks are pushed whole (into the record
 * of the tile where the next block starts), whichever tile boundaries cut
 * them, so any tile size gives the same candidates. */
typedef struct block_buf {
    int64_t block; /* -1: none open */
    float s[FS_NOISE_BLOCK];
} block_buf;

size_t fs_cpu_scan_scratch_bytes(int64_t rows)
{
    return sizeof(block_buf) * (size_t)rows;
}

static void block_flush(const fs_cpu_scan_sink *k, int64_t r, int part, block_buf *b)
{
    if (b->block >= 0)
        k->push_block(k->ctx, r, part, (int32_t)(b->block * FS_NOISE_BLOCK), b->s);
    b->block = -1;
}

static void push_token(const fs_op_args *a, const fs_cpu_scan_sink *k, const fs_row_desc *d,
                       int64_t r, int64_t v, block_buf *b)
{
    int64_t gid = a->vocab_offset + v;
    float s = score_token(a, d, r, v);
    if (gid / FS_NOISE_BLOCK != b->block) {
        block_flush(k, r, FS_SCAN_TILE, b);
        b->block = gid / FS_NOISE_BLOCK;
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            b->s[i] = -INFINITY;
    }
    b->s[gid % FS_NOISE_BLOCK] = s;
}

void fs_cpu_scan_run(const fs_op_args *a, const fs_cpu_scan_sink *k, int64_t tile,
                     uint32_t faults, void *scratch)
{
    int64_t rows = a->rows, vocab = a->vocab_size;
    block_buf *bufs = scratch;
    for (int64_t r = 0; r < rows; ++r) {
        k->init(k->ctx, r, FS_SCAN_ROW);
        bufs[r].block = -1;
    }
    for (int64_t t0 = 0; t0 < vocab; t0 += tile) {
        int64_t t1 = t0 + tile < vocab ? t0 + tile : vocab;
        if (faults & FS_FAULT_TILE_EDGE)
            --t1;
        for (int64_t r = 0; r < rows; ++r)
            k->init(k->ctx, r, FS_SCAN_TILE);
        if (a->head) {
            /* token-major: one LM-head row serves every hidden row while cached */
            for (int64_t v = t0; v < t1; ++v)
                for (int64_t r = 0; r < rows; ++r) {
                    const fs_row_desc *d = k->desc(k->ctx, r);
                    if (d->flags & FS_ROWF_VALID)
                        push_token(a, k, d, r, v, &bufs[r]);
                }
        } else {
            for (int64_t r = 0; r < rows; ++r) {
                const fs_row_desc *d = k->desc(k->ctx, r);
                if (d->flags & FS_ROWF_VALID)
                    for (int64_t v = t0; v < t1; ++v)
                        push_token(a, k, d, r, v, &bufs[r]);
            }
        }
        for (int64_t r = 0; r < rows; ++r)
            k->merge(k->ctx, r);
    }
    /* a block still open lies across the last tile boundary: into the merged record */
    for (int64_t r = 0; r < rows; ++r)
        block_flush(k, r, FS_SCAN_ROW, &bufs[r]);
}

/* ---- the fs_record sink (sample, draft argmax, verify; filters' candidates) */

typedef struct plain_sink {
    const fs_row_desc *descs;
    fs_record *recs[2];           /* [FS_SCAN_TILE], [FS_SCAN_ROW] */
    const fs_cpu_filter_recs *f;  /* NULL: no row has filters */
} plain_sink;

/* Row r's candidate record of that part, or NULL when it has no filters. */
static fs_filter_record *plain_frec(const plain_sink *p, int64_t r, int part)
{
    if (!p->f || !p->f->fdescs[r].active)
        return NULL;
    return part == FS_SCAN_TILE ? &p->f->tile[r] : &p->f->row[r];
}

static const fs_row_desc *plain_desc(const void *ctx, int64_t r)
{
    return &((const plain_sink *)ctx)->descs[r];
}

static void plain_init(void *ctx, int64_t r, int part)
{
    plain_sink *p = ctx;
    fs_record_init(&p->recs[part][r]);
    fs_filter_record *fr = plain_frec(p, r, part);
    if (fr)
        fs_filter_record_init(fr);
}

static void plain_push_block(void *ctx, int64_t r, int part, int32_t id0, const float *s)
{
    plain_sink *p = ctx;
    fs_record_push_block(&p->recs[part][r], &p->descs[r], id0, FS_NOISE_BLOCK, s);
    fs_filter_record *fr = plain_frec(p, r, part);
    if (fr)
        fs_filter_push_block(fr, id0, FS_NOISE_BLOCK, s, p->f->cap);
}

static void plain_merge(void *ctx, int64_t r)
{
    plain_sink *p = ctx;
    fs_record_merge(&p->recs[FS_SCAN_ROW][r], &p->recs[FS_SCAN_TILE][r]);
    fs_filter_record *fr = plain_frec(p, r, FS_SCAN_ROW);
    if (fr)
        fs_filter_merge(fr, plain_frec(p, r, FS_SCAN_TILE), p->f->cap);
}

void fs_cpu_scan_filtered(const fs_op_args *a, const fs_row_desc *descs, int64_t tile,
                          uint32_t faults, fs_record *tile_recs, fs_record *row_recs,
                          const fs_cpu_filter_recs *f, void *scratch)
{
    plain_sink p = {descs, {tile_recs, row_recs}, f};
    const fs_cpu_scan_sink k = {&p, plain_desc, plain_init, plain_push_block, plain_merge};
    fs_cpu_scan_run(a, &k, tile, faults, scratch);
}

void fs_cpu_scan(const fs_op_args *a, const fs_row_desc *descs, int64_t tile, uint32_t faults,
                 fs_record *tile_recs, fs_record *row_recs, void *scratch)
{
    fs_cpu_scan_filtered(a, descs, tile, faults, tile_recs, row_recs, NULL, scratch);
}

float fs_cpu_score(const fs_op_args *a, const fs_row_desc *d, int64_t row, int64_t v)
{
    return score_token(a, d, row, v);
}
