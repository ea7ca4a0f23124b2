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

static size_t dtype_size(fs_dtype d)
{
    return d == FS_DTYPE_F32 ? 4 : 2;
}

static float logit_fused(const fs_op_args *a, int64_t row, int64_t v)
{
    int64_t d = a->head->hidden_dim;
    size_t es = dtype_size(a->head->dtype);
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
    size_t i = (size_t)(row * a->vocab_size + v);
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
    float b = (p && p->logit_bias) ? p->logit_bias[row * a->global_vocab + gid] : 0.0f;
    return fs_score(l, b, d->inv_temp);
}

/* The noise block a row is collecting: scores by position in the block
 * (-inf where no token was pushed).  Blocks are pushed whole (into the record
 * of the tile where the next block starts), whichever tile boundaries cut
 * them, so any tile size gives the same candidates. */
typedef struct block_buf {
    int64_t block; /* -1: none open */
    float s[FS_NOISE_BLOCK];
} block_buf;

/* frec (NULL for a row without filters) receives the block's candidates. */
static void block_flush(block_buf *b, const fs_row_desc *d, fs_record *rec,
                        fs_filter_record *frec, int cap)
{
    if (b->block >= 0) {
        fs_record_push_block(rec, d, (int32_t)(b->block * FS_NOISE_BLOCK), FS_NOISE_BLOCK, b->s);
        if (frec)
            fs_filter_push_block(frec, (int32_t)(b->block * FS_NOISE_BLOCK), FS_NOISE_BLOCK, b->s,
                                 cap);
    }
    b->block = -1;
}

static void push_token(const fs_op_args *a, const fs_row_desc *d, int64_t row, int64_t v,
                       fs_record *rec, fs_filter_record *frec, int cap, block_buf *b)
{
    int64_t gid = a->vocab_offset + v;
    float s = score_token(a, d, row, v);
    if (gid / FS_NOISE_BLOCK != b->block) {
        block_flush(b, d, rec, frec, cap);
        b->block = gid / FS_NOISE_BLOCK;
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            b->s[i] = -INFINITY;
    }
    b->s[gid % FS_NOISE_BLOCK] = s;
}

size_t fs_cpu_scan_scratch_bytes(int64_t rows)
{
    return sizeof(block_buf) * (size_t)rows;
}

/* Row r's candidate records (per tile, merged), or NULL when it has no
 * filters. */
static fs_filter_record *tile_frec(const fs_cpu_filter_recs *f, int64_t r)
{
    return f && f->fdescs[r].active ? &f->tile[r] : NULL;
}

static fs_filter_record *row_frec(const fs_cpu_filter_recs *f, int64_t r)
{
    return f && f->fdescs[r].active ? &f->row[r] : NULL;
}

static void scan(const fs_op_args *a, const fs_row_desc *descs, int64_t tile, uint32_t faults,
                 fs_record *tile_recs, fs_record *row_recs, const fs_cpu_filter_recs *f,
                 void *scratch)
{
    int64_t rows = a->rows, vocab = a->vocab_size;
    int cap = f ? f->cap : 0;
    block_buf *bufs = scratch;
    for (int64_t r = 0; r < rows; ++r) {
        fs_record_init(&row_recs[r]);
        bufs[r].block = -1;
        if (row_frec(f, r))
            fs_filter_record_init(row_frec(f, r));
    }
    for (int64_t t0 = 0; t0 < vocab; t0 += tile) {
        int64_t t1 = t0 + tile < vocab ? t0 + tile : vocab;
        if (faults & FS_FAULT_TILE_EDGE)
            --t1;
        for (int64_t r = 0; r < rows; ++r) {
            fs_record_init(&tile_recs[r]);
            if (tile_frec(f, r))
                fs_filter_record_init(tile_frec(f, r));
        }
        if (a->head) {
            /* token-major: one LM-head row serves every hidden row while cached */
            for (int64_t v = t0; v < t1; ++v)
                for (int64_t r = 0; r < rows; ++r)
                    if (descs[r].flags & FS_ROWF_VALID)
                        push_token(a, &descs[r], r, v, &tile_recs[r], tile_frec(f, r), cap,
                                   &bufs[r]);
        } else {
            for (int64_t r = 0; r < rows; ++r)
                if (descs[r].flags & FS_ROWF_VALID)
                    for (int64_t v = t0; v < t1; ++v)
                        push_token(a, &descs[r], r, v, &tile_recs[r], tile_frec(f, r), cap,
                                   &bufs[r]);
        }
        for (int64_t r = 0; r < rows; ++r) {
            fs_record_merge(&row_recs[r], &tile_recs[r]);
            if (row_frec(f, r))
                fs_filter_merge(row_frec(f, r), tile_frec(f, r), cap);
        }
    }
    for (int64_t r = 0; r < rows; ++r)
        block_flush(&bufs[r], &descs[r], &row_recs[r], row_frec(f, r), cap);
}

void fs_cpu_scan(const fs_op_args *a, const fs_row_desc *descs, int64_t tile, uint32_t faults,
                 fs_record *tile_recs, fs_record *row_recs, void *scratch)
{
    scan(a, descs, tile, faults, tile_recs, row_recs, NULL, scratch);
}

void fs_cpu_scan_filtered(const fs_op_args *a, const fs_row_desc *descs, int64_t tile,
                          uint32_t faults, fs_record *tile_recs, fs_record *row_recs,
                          const fs_cpu_filter_recs *f, void *scratch)
{
    scan(a, descs, tile, faults, tile_recs, row_recs, f, scratch);
}

float fs_cpu_score(const fs_op_args *a, const fs_row_desc *d, int64_t row, int64_t v)
{
    return score_token(a, d, row, v);
}

/* ---- the same scan over any record type ----------------------------------
 * fs_cpu_scan with the record operations supplied by the caller (tree
 * verify's records carry its children); tiles, block collection and merge
 * order are fs_cpu_scan's, so a row gives the same record either way.
 * (fs_cpu_scan is this scan with record.h's fs_record operations.) */

static const fs_row_desc *sink_desc(const void *descs, size_t desc_bytes, int64_t r)
{
    return (const fs_row_desc *)((const char *)descs + (size_t)r * desc_bytes);
}

static void *sink_rec(void *recs, const fs_cpu_scan_sink *k, int64_t r)
{
    return (char *)recs + (size_t)r * k->rec_bytes;
}

static void sink_flush(block_buf *b, const fs_cpu_scan_sink *k, const void *desc, void *rec)
{
    if (b->block >= 0)
        k->push_block(rec, desc, (int32_t)(b->block * FS_NOISE_BLOCK), b->s);
    b->block = -1;
}

static void sink_push_token(const fs_op_args *a, const fs_cpu_scan_sink *k, const void *desc,
                            int64_t row, int64_t v, void *rec, block_buf *b)
{
    int64_t gid = a->vocab_offset + v;
    float s = score_token(a, desc, row, v);
    if (gid / FS_NOISE_BLOCK != b->block) {
        sink_flush(b, k, desc, rec);
        b->block = gid / FS_NOISE_BLOCK;
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            b->s[i] = -INFINITY;
    }
    b->s[gid % FS_NOISE_BLOCK] = s;
}

void fs_cpu_scan_rows(const fs_op_args *a, const void *descs, size_t desc_bytes,
                      const fs_cpu_scan_sink *k, int64_t tile, uint32_t faults, void *tile_recs,
                      void *row_recs, void *scratch)
{
    int64_t rows = a->rows, vocab = a->vocab_size;
    block_buf *bufs = scratch;
    for (int64_t r = 0; r < rows; ++r) {
        k->init(sink_rec(row_recs, k, r));
        bufs[r].block = -1;
    }
    for (int64_t t0 = 0; t0 < vocab; t0 += tile) {
        int64_t t1 = t0 + tile < vocab ? t0 + tile : vocab;
        if (faults & FS_FAULT_TILE_EDGE)
            --t1;
        for (int64_t r = 0; r < rows; ++r)
            k->init(sink_rec(tile_recs, k, r));
        if (a->head) {
            /* token-major: one LM-head row serves every hidden row while cached */
            for (int64_t v = t0; v < t1; ++v)
                for (int64_t r = 0; r < rows; ++r) {
                    const fs_row_desc *d = sink_desc(descs, desc_bytes, r);
                    if (d->flags & FS_ROWF_VALID)
                        sink_push_token(a, k, d, r, v, sink_rec(tile_recs, k, r), &bufs[r]);
                }
        } else {
            for (int64_t r = 0; r < rows; ++r) {
                const fs_row_desc *d = sink_desc(descs, desc_bytes, r);
                if (d->flags & FS_ROWF_VALID)
                    for (int64_t v = t0; v < t1; ++v)
                        sink_push_token(a, k, d, r, v, sink_rec(tile_recs, k, r), &bufs[r]);
            }
        }
        for (int64_t r = 0; r < rows; ++r)
            k->merge(sink_rec(row_recs, k, r), sink_rec(tile_recs, k, r));
    }
    for (int64_t r = 0; r < rows; ++r)
        sink_flush(&bufs[r], k, sink_desc(descs, desc_bytes, r), sink_rec(row_recs, k, r));
}
