/* Unfused baselines: samplers and the materialised verify pipeline over
 * logits already in memory.  See baselines.h for what each computes.
 *
 * Design, so that the baselines are as fast as an unfused pipeline can be:
 *  - 16-byte loads, 4 loads in flight per thread, 256-thread blocks;
 *  - a row is split over several blocks when there are few rows (about
 *    4 blocks per SM in all, at least 4096 tokens per block), and the row's
 *    last block merges the partials (threadfence reduction), so a sampler is
 *    one launch and reads its input once;
 *  - fp32 arithmetic throughout, accurate expf/logf (no fast-math), the same
 *    Philox noise as flashspec. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "baselines.h"
#include "finalize.h"
#include "philox.h"
#include "record.h"

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBatch = 4;                  /* groups (or tiles) in flight per thread (warp) */
constexpr int kMaxSplits = 256;            /* blocks per row at most */
constexpr int64_t kMaxRows = 65535;        /* grid.y limit */
constexpr int64_t kMinGroupsPerChunk = 512; /* 4096 tokens per block at least */
constexpr int kTile = 256;                 /* multinomial: tokens per warp tile (32 lanes x 8) */
constexpr int64_t kMinTilesPerChunk = 16;  /* 4096 tokens per block at least */
constexpr uint32_t kPurposeCdf = 2;        /* Philox purpose of the inverse-CDF uniforms */
constexpr uint32_t kPurposeFill = 3;       /* Philox purpose of the random test data */

int g_sms = 132;

struct __align__(16) Part {
    float a;    /* best key, or running max */
    float b;    /* score of the best, or sum of exp */
    int32_t id; /* token id of the best */
    int32_t pad;
};

struct Ws {
    unsigned *cnt;    /* [rows] completion counters, left at 0 */
    Part *parts;      /* [rows * kMaxSplits] */
    float2 *rowstat;  /* [rows] (max, 1/sum) */
    float *tsum;      /* [rows * ntiles] multinomial tile sums */
    float *px;        /* [rows] gathered p(x) */
    int32_t *nacc;    /* [rows] accepted drafts per request */
    int32_t *samples; /* [rows] inverse-CDF samples */
};

size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

__host__ __device__ int64_t ntiles_of(int64_t vocab) { return (vocab + kTile - 1) / kTile; }

Ws carve(void *base, int64_t rows, int64_t vocab, size_t *total)
{
    char *p = (char *)base;
    size_t off = 0;
    Ws w;
    /* the counters sit at a fixed place for every row count, so calls with
     * different row counts on the same workspace never see stale data there */
    w.cnt = (unsigned *)(p + off);
    off += align256(sizeof(unsigned) * kMaxRows);
    w.parts = (Part *)(p + off);
    off += align256(sizeof(Part) * rows * kMaxSplits);
    w.rowstat = (float2 *)(p + off);
    off += align256(sizeof(float2) * rows);
    w.tsum = (float *)(p + off);
    off += align256(sizeof(float) * rows * ntiles_of(vocab));
    w.px = (float *)(p + off);
    off += align256(sizeof(float) * rows);
    w.nacc = (int32_t *)(p + off);
    off += align256(sizeof(int32_t) * rows);
    w.samples = (int32_t *)(p + off);
    off += align256(sizeof(int32_t) * rows);
    if (total)
        *total = off;
    return w;
}

struct Split {
    int s;       /* blocks per row */
    int64_t per; /* units (groups of 8 tokens, or tiles) per block */
};

Split split_for(int64_t rows, int64_t units, int64_t min_per)
{
    int64_t target = 4LL * g_sms;
    int64_t s = (target + rows - 1) / rows;
    int64_t maxs = units / min_per;
    if (s > maxs)
        s = maxs;
    if (s > kMaxSplits)
        s = kMaxSplits;
    if (s < 1)
        s = 1;
    int64_t per = (units + s - 1) / s;
    s = (units + per - 1) / per;
    return Split{(int)s, per};
}

/* ---- device helpers ---------------------------------------------------- */

/* Group g = tokens 8g .. 8g+7 of a row; past the end reads as `pad`. */
template <bool VEC>
__device__ __forceinline__ void load8_bf16(const __nv_bfloat16 *row, int64_t g, int64_t vocab,
                                           float v[8])
{
    if (VEC) {
        uint4 u = __ldg(reinterpret_cast<const uint4 *>(row) + g);
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            float2 f = __bfloat1622float2(h[k]);
            v[2 * k] = f.x;
            v[2 * k + 1] = f.y;
        }
    } else {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            int64_t i = g * 8 + k;
            v[k] = i < vocab ? __bfloat162float(row[i]) : -INFINITY;
        }
    }
}

template <bool VEC>
__device__ __forceinline__ void load8_f32(const float *row, int64_t g, int64_t vocab, float v[8])
{
    if (VEC) {
        float4 a = __ldg(reinterpret_cast<const float4 *>(row) + 2 * g);
        float4 b = __ldg(reinterpret_cast<const float4 *>(row) + 2 * g + 1);
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
        v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    } else {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            int64_t i = g * 8 + k;
            v[k] = i < vocab ? row[i] : 0.0f;
        }
    }
}

template <bool VEC>
__device__ __forceinline__ void store8_f32(float *row, int64_t g, int64_t vocab, const float v[8])
{
    if (VEC) {
        reinterpret_cast<float4 *>(row)[2 * g] = make_float4(v[0], v[1], v[2], v[3]);
        reinterpret_cast<float4 *>(row)[2 * g + 1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            int64_t i = g * 8 + k;
            if (i < vocab)
                row[i] = v[k];
        }
    }
}

/* (a, ia) beats (b, ib): larger value, then lower id; id -1 never wins. */
__device__ __forceinline__ bool beats(float a, int ia, float b, int ib)
{
    if (ia < 0)
        return false;
    if (ib < 0)
        return true;
    return a > b || (a == b && ia < ib);
}

/* Result in thread 0. */
__device__ void block_argbest(float &key, int &id, float &val)
{
    __shared__ float sk[kWarps], sv[kWarps];
    __shared__ int si[kWarps];
    __syncthreads(); /* the shared arrays may be in use by a previous call */
    for (int o = 16; o; o >>= 1) {
        float k2 = __shfl_xor_sync(0xffffffffu, key, o);
        int i2 = __shfl_xor_sync(0xffffffffu, id, o);
        float v2 = __shfl_xor_sync(0xffffffffu, val, o);
        if (beats(k2, i2, key, id))
            key = k2, id = i2, val = v2;
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0)
        sk[warp] = key, si[warp] = id, sv[warp] = val;
    __syncthreads();
    if (warp == 0) {
        key = lane < kWarps ? sk[lane] : -INFINITY;
        id = lane < kWarps ? si[lane] : -1;
        val = lane < kWarps ? sv[lane] : -INFINITY;
        for (int o = 16; o; o >>= 1) {
            float k2 = __shfl_xor_sync(0xffffffffu, key, o);
            int i2 = __shfl_xor_sync(0xffffffffu, id, o);
            float v2 = __shfl_xor_sync(0xffffffffu, val, o);
            if (beats(k2, i2, key, id))
                key = k2, id = i2, val = v2;
        }
    }
}

/* Online log-sum-exp pair: m = max, s = sum exp(x - m). */
__device__ __forceinline__ void ms_merge(float &m, float &s, float m2, float s2)
{
    if (m2 == -INFINITY)
        return;
    if (m == -INFINITY) {
        m = m2, s = s2;
        return;
    }
    float mm = fmaxf(m, m2);
    s = s * expf(m - mm) + s2 * expf(m2 - mm);
    m = mm;
}

/* Result in thread 0. */
__device__ void block_ms(float &m, float &s)
{
    __shared__ float sm[kWarps], ss[kWarps];
    __syncthreads();
    for (int o = 16; o; o >>= 1)
        ms_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0)
        sm[warp] = m, ss[warp] = s;
    __syncthreads();
    if (warp == 0) {
        m = lane < kWarps ? sm[lane] : -INFINITY;
        s = lane < kWarps ? ss[lane] : 0.0f;
        for (int o = 16; o; o >>= 1)
            ms_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o),
                     __shfl_xor_sync(0xffffffffu, s, o));
    }
}

__device__ __forceinline__ float warp_sum(float x)
{
    for (int o = 16; o; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

__device__ __forceinline__ float warp_inclusive_scan(float x)
{
    int lane = threadIdx.x % 32;
    for (int o = 1; o < 32; o <<= 1) {
        float n = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o)
            x += n;
    }
    return x;
}

/* Exclusive prefix of x over the block, and the block total, in every thread. */
__device__ float block_exclusive_scan(float x, float *total)
{
    __shared__ float sw[kWarps];
    __shared__ float stot;
    __syncthreads();
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float incl = warp_inclusive_scan(x);
    if (lane == 31)
        sw[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        float w = lane < kWarps ? sw[lane] : 0.0f;
        float wi = warp_inclusive_scan(w);
        if (lane < kWarps)
            sw[lane] = wi - w;
        if (lane == kWarps - 1)
            stot = wi;
    }
    __syncthreads();
    *total = stot;
    return sw[warp] + incl - x;
}

/* Threadfence reduction: returns true in every thread of the row's last block
 * to finish (which then resets the counter).  Call after this block's
 * partial is written; every thread must call it. */
__device__ bool last_block_of_row(unsigned *cnt, int splits)
{
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(&cnt[blockIdx.y], 1u) == (unsigned)(splits - 1);
        if (last)
            cnt[blockIdx.y] = 0;
    }
    __syncthreads();
    if (last)
        __threadfence();
    return last;
}

__device__ __forceinline__ Part load_part(const Part *p)
{
    float4 f = __ldcg(reinterpret_cast<const float4 *>(p));
    Part r;
    r.a = f.x;
    r.b = f.y;
    r.id = __float_as_int(f.z);
    r.pad = 0;
    return r;
}

/* ---- kernels ----------------------------------------------------------- */

__global__ void k_fill_normal(__nv_bfloat16 *dst, size_t n, float stddev, uint64_t seed)
{
    size_t groups = (n + 3) / 4;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < groups;
         q += (size_t)gridDim.x * blockDim.x) {
        fs_u32x4 c;
        c.v[0] = (uint32_t)q;
        c.v[1] = (uint32_t)(q >> 32);
        c.v[2] = kPurposeFill << 24;
        c.v[3] = 0;
        fs_u32x4 w = fs_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
        float out[4];
        for (int h = 0; h < 2; ++h) {
            float r = sqrtf(-2.0f * logf(fs_uniform(w.v[2 * h])));
            float t = 6.28318530718f * fs_uniform(w.v[2 * h + 1]);
            out[2 * h] = r * cosf(t);
            out[2 * h + 1] = r * sinf(t);
        }
        for (int k = 0; k < 4; ++k) {
            size_t i = q * 4 + k;
            if (i >= n)
                break;
            __nv_bfloat16 b = __float2bfloat16(stddev * out[k]);
            if (__bfloat162float(b) == 0.0f)
                b = __float2bfloat16(k & 1 ? 1e-3f * stddev : -1e-3f * stddev);
            dst[i] = b;
        }
    }
}

/* noise blocks (16 tokens) in flight per thread: 4 would spill */
constexpr int kBatchBlocks = 2;

/* The library's block Gumbel draw (record.h: the same noise, so the same
 * tokens as the fused ops up to logit rounding), or, GREEDY, argmax, over each
 * row of bf16 logits in one pass.  Unit: a noise block of 16 tokens.  Grid
 * (S, rows). */
template <bool VEC, bool GREEDY>
__global__ void __launch_bounds__(kThreads, 2)
k_gumbel(const __nv_bfloat16 *logits, int64_t vocab, int64_t per, int splits,
         const float *temperature, const uint64_t *seed, Part *parts, unsigned *cnt,
         int32_t *out_tokens, float *out_values)
{
    const int64_t row = blockIdx.y;
    const __nv_bfloat16 *L = logits + row * vocab;
    const int64_t ng8 = (vocab + 7) / 8, nb = (vocab + 15) / 16;
    const int64_t g0 = blockIdx.x * per;
    const int64_t g1 = g0 + per < nb ? g0 + per : nb;
    fs_row_desc d = fs_row_desc_make(1.0f, 0, 0, 0, -1, -1, 0);
    if (!GREEDY)
        d = fs_row_desc_make(temperature[row], seed[row], 0, 0, -1, -1, 0);
    fs_record rec;
    fs_record_init(&rec);
    float bkey = -INFINITY, bval = -INFINITY;
    int bid = -1;
    for (int64_t g = g0 + threadIdx.x; g < g1; g += kBatchBlocks * kThreads) {
        float v[kBatchBlocks][16];
#pragma unroll
        for (int b = 0; b < kBatchBlocks; ++b) {
            int64_t gg = g + b * kThreads;
            if (gg < g1) {
                load8_bf16<VEC>(L, 2 * gg, vocab, v[b]);
                if (2 * gg + 1 < ng8)
                    load8_bf16<VEC>(L, 2 * gg + 1, vocab, v[b] + 8);
                else
                    for (int k = 8; k < 16; ++k)
                        v[b][k] = -INFINITY;
            }
        }
#pragma unroll
        for (int b = 0; b < kBatchBlocks; ++b) {
            int64_t gg = g + b * kThreads;
            if (gg >= g1)
                break;
            const int n = vocab - 16 * gg < 16 ? (int)(vocab - 16 * gg) : 16;
            if (GREEDY) {
#pragma unroll
                for (int k = 0; k < 16; ++k)
                    /* ids rise within a thread: strict > keeps the lowest on ties */
                    if (k < n && (v[b][k] > bkey || bid < 0))
                        bkey = v[b][k], bid = (int)(16 * gg + k), bval = v[b][k];
            } else {
#pragma unroll
                for (int k = 0; k < 16; ++k)
                    v[b][k] = fs_score(v[b][k], 0.0f, d.inv_temp);
                fs_record_push_block(&rec, &d, (int32_t)(16 * gg), n, v[b]);
            }
        }
    }
    if (!GREEDY) {
        const bool greedy_row = d.flags & FS_ROWF_GREEDY; /* T = 0 */
        bkey = greedy_row ? rec.max_s : rec.best_key;
        bid = greedy_row ? rec.max_id : rec.best_id;
        bval = greedy_row ? rec.max_s : rec.best_s;
    }
    block_argbest(bkey, bid, bval);
    if (splits == 1) {
        if (threadIdx.x == 0) {
            out_tokens[row] = bid;
            if (out_values)
                out_values[row] = bval;
        }
        return;
    }
    if (threadIdx.x == 0) {
        Part p;
        p.a = bkey;
        p.b = bval;
        p.id = bid;
        p.pad = 0;
        parts[row * kMaxSplits + blockIdx.x] = p;
    }
    if (!last_block_of_row(cnt, splits))
        return;
    bkey = -INFINITY, bval = -INFINITY, bid = -1;
    for (int t = threadIdx.x; t < splits; t += kThreads) {
        Part p = load_part(&parts[row * kMaxSplits + t]);
        if (beats(p.a, p.id, bkey, bid))
            bkey = p.a, bid = p.id, bval = p.b;
    }
    block_argbest(bkey, bid, bval);
    if (threadIdx.x == 0) {
        out_tokens[row] = bid;
        if (out_values)
            out_values[row] = bval;
    }
}

/* Softmax pass 1: (max, 1/sum) of logits / T per row.  Grid (S, rows). */
template <bool VEC>
__global__ void __launch_bounds__(kThreads, 2)
k_softmax_stats(const __nv_bfloat16 *logits, int64_t vocab, int64_t per, int splits,
                const float *temperature, int64_t rows_per_param, Part *parts, unsigned *cnt,
                float2 *rowstat)
{
    const int64_t row = blockIdx.y;
    const __nv_bfloat16 *L = logits + row * vocab;
    const int64_t ng = (vocab + 7) / 8;
    const int64_t g0 = blockIdx.x * per;
    const int64_t g1 = g0 + per < ng ? g0 + per : ng;
    const float inv_t = 1.0f / temperature[row / rows_per_param];
    float m = -INFINITY, s = 0.0f;
    for (int64_t g = g0 + threadIdx.x; g < g1; g += kBatch * kThreads) {
        float v[kBatch][8];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            int64_t gg = g + b * kThreads;
            if (gg < g1)
                load8_bf16<VEC>(L, gg, vocab, v[b]);
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            if (g + b * kThreads >= g1)
                break;
            float mm = -INFINITY;
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                v[b][k] *= inv_t;
                mm = fmaxf(mm, v[b][k]);
            }
            if (mm == -INFINITY)
                continue;
            if (mm > m) {
                s *= expf(m - mm);
                m = mm;
            }
#pragma unroll
            for (int k = 0; k < 8; ++k)
                s += expf(v[b][k] - m);
        }
    }
    block_ms(m, s);
    if (splits == 1) {
        if (threadIdx.x == 0)
            rowstat[row] = make_float2(m, 1.0f / s);
        return;
    }
    if (threadIdx.x == 0) {
        Part p;
        p.a = m;
        p.b = s;
        p.id = 0;
        p.pad = 0;
        parts[row * kMaxSplits + blockIdx.x] = p;
    }
    if (!last_block_of_row(cnt, splits))
        return;
    m = -INFINITY, s = 0.0f;
    for (int t = threadIdx.x; t < splits; t += kThreads) {
        Part p = load_part(&parts[row * kMaxSplits + t]);
        ms_merge(m, s, p.a, p.b);
    }
    block_ms(m, s);
    if (threadIdx.x == 0)
        rowstat[row] = make_float2(m, 1.0f / s);
}

/* Softmax pass 2: probs = exp(l / T - max) / sum, written in fp32. */
template <bool VEC>
__global__ void __launch_bounds__(kThreads, 2)
k_softmax_write(const __nv_bfloat16 *logits, int64_t vocab, int64_t per,
                const float *temperature, int64_t rows_per_param, const float2 *rowstat,
                float *probs)
{
    const int64_t row = blockIdx.y;
    const __nv_bfloat16 *L = logits + row * vocab;
    float *P = probs + row * vocab;
    const int64_t ng = (vocab + 7) / 8;
    const int64_t g0 = blockIdx.x * per;
    const int64_t g1 = g0 + per < ng ? g0 + per : ng;
    const float inv_t = 1.0f / temperature[row / rows_per_param];
    const float2 st = rowstat[row];
    for (int64_t g = g0 + threadIdx.x; g < g1; g += kBatch * kThreads) {
        float v[kBatch][8];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            int64_t gg = g + b * kThreads;
            if (gg < g1)
                load8_bf16<VEC>(L, gg, vocab, v[b]);
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            int64_t gg = g + b * kThreads;
            if (gg >= g1)
                break;
#pragma unroll
            for (int k = 0; k < 8; ++k)
                v[b][k] = expf(v[b][k] * inv_t - st.x) * st.y;
            store8_f32<VEC>(P, gg, vocab, v[b]);
        }
    }
}

/* Inverse-CDF sampling.  Sample row `row` reads residual row (req*k + j) when
 * j < k (k > 0: verify layout, rows of k+1 per request) and probs row `row`
 * otherwise.  Each warp sums 256-token tiles into tsum; the row's last block
 * scans the tile sums for u * total, then one warp scans that tile. */
template <bool VEC>
__global__ void __launch_bounds__(kThreads, 2)
k_multinomial(const float *probs, const float *residual, int k, int64_t vocab, int64_t per,
              int splits, const uint64_t *seed, float *tsum, unsigned *cnt, int32_t *out)
{
    const int64_t row = blockIdx.y;
    const int64_t req = k ? row / (k + 1) : row;
    const int j = k ? (int)(row % (k + 1)) : 0;
    const float *P = j < k ? residual + (req * k + j) * vocab : probs + row * vocab;
    const int64_t nt = ntiles_of(vocab);
    const int64_t ng = (vocab + 7) / 8;
    float *TS = tsum + row * nt;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t t0 = blockIdx.x * per;
    const int64_t t1 = t0 + per < nt ? t0 + per : nt;

    for (int64_t t = t0 + warp; t < t1; t += kBatch * kWarps) {
        float acc[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            int64_t tt = t + b * kWarps;
            acc[b] = 0.0f;
            if (tt < t1 && tt * 32 + lane < ng) { /* the last tile may be partial */
                float v[8];
                load8_f32<VEC>(P, tt * 32 + lane, vocab, v);
#pragma unroll
                for (int q = 0; q < 8; ++q)
                    acc[b] += v[q];
            }
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            float sum = warp_sum(acc[b]);
            int64_t tt = t + b * kWarps;
            if (lane == 0 && tt < t1)
                TS[tt] = sum;
        }
    }
    if (splits > 1) {
        if (!last_block_of_row(cnt, splits))
            return;
    } else {
        __threadfence();
        __syncthreads();
    }

    /* search the tile sums: each thread owns a contiguous segment */
    __shared__ int s_tile;
    __shared__ int s_fallback;
    __shared__ float s_rem;
    if (threadIdx.x == 0) {
        s_tile = INT_MAX;
        s_fallback = -1;
        s_rem = 0.0f;
    }
    const float u = fs_uniform(
        fs_philox_draw(seed[req], 0, (uint32_t)j, kPurposeCdf, 0).v[0]);
    const int64_t seg = (nt + kThreads - 1) / kThreads;
    const int64_t a = threadIdx.x * seg;
    const int64_t e = a + seg < nt ? a + seg : nt;
    float local = 0.0f;
    int last_pos = -1;
    for (int64_t i = a; i < e; ++i) {
        float ts = __ldcg(&TS[i]);
        local += ts;
        if (ts > 0.0f)
            last_pos = (int)i;
    }
    float total;
    float excl = block_exclusive_scan(local, &total); /* syncs: the init above is visible */
    const float target = u * total;
    int cand = INT_MAX;
    float cand_rem = 0.0f;
    if (local > 0.0f && target >= excl && target < excl + local) {
        float cum = excl;
        for (int64_t i = a; i < e; ++i) {
            float ts = __ldcg(&TS[i]);
            if (ts > 0.0f && target < cum + ts) {
                cand = (int)i;
                cand_rem = target - cum;
                break;
            }
            cum += ts;
        }
    }
    if (cand != INT_MAX)
        atomicMin(&s_tile, cand);
    if (last_pos >= 0)
        atomicMax(&s_fallback, last_pos);
    __syncthreads();
    if (cand != INT_MAX && cand == s_tile) /* segments are disjoint: one thread */
        s_rem = cand_rem;
    __syncthreads();
    if (warp != 0)
        return;
    int tile = s_tile;
    float rem = s_rem;
    if (tile == INT_MAX) { /* rounding put the target past the end */
        tile = s_fallback;
        rem = INFINITY;
    }
    int found = INT_MAX;
    int lastp = -1;
    if (tile >= 0) {
        float v[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        if ((int64_t)tile * 32 + lane < ng)
            load8_f32<VEC>(P, (int64_t)tile * 32 + lane, vocab, v);
        float ls = 0.0f;
#pragma unroll
        for (int q = 0; q < 8; ++q)
            ls += v[q];
        float cum = warp_inclusive_scan(ls) - ls;
        int base = tile * kTile + lane * 8;
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            if (v[q] > 0.0f) {
                lastp = base + q;
                cum += v[q];
                if (cum > rem && found == INT_MAX)
                    found = base + q;
            }
        }
    }
    found = __reduce_min_sync(0xffffffffu, (unsigned)found);
    lastp = __reduce_max_sync(0xffffffffu, lastp);
    if (lane == 0)
        out[row] = found != INT_MAX ? found : lastp;
}

/* Verify: gather p(x_j) of every draft and accept left to right. */
__global__ void k_gather_accept(const float *probs, int64_t vocab, int64_t requests, int k,
                                const int32_t *drafts, const uint64_t *seed, float *px,
                                int32_t *nacc)
{
    int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (r >= requests)
        return;
    int acc = k;
    for (int j = 0; j < k; ++j) {
        int32_t x = drafts[r * k + j];
        float p = probs[(r * (k + 1) + j) * vocab + x];
        px[r * k + j] = p;
        if (acc == k && !(fs_accept_uniform(seed[r], 0, (uint32_t)j) <= p))
            acc = j;
    }
    nacc[r] = acc;
}

/* Verify: residual_j = p_j with x_j zeroed, / (1 - p(x_j)).  Grid (S, requests*k). */
template <bool VEC>
__global__ void __launch_bounds__(kThreads, 2)
k_residual(const float *probs, int64_t vocab, int64_t per, int k, const int32_t *drafts,
           const float *px, float *residual)
{
    const int64_t dr = blockIdx.y;
    const int64_t r = dr / k, j = dr % k;
    const float *P = probs + (r * (k + 1) + j) * vocab;
    float *Q = residual + dr * vocab;
    const int32_t x = drafts[dr];
    const float one_minus = 1.0f - px[dr];
    const float scale = one_minus > 0.0f ? 1.0f / one_minus : 0.0f;
    const int64_t ng = (vocab + 7) / 8;
    const int64_t g0 = blockIdx.x * per;
    const int64_t g1 = g0 + per < ng ? g0 + per : ng;
    for (int64_t g = g0 + threadIdx.x; g < g1; g += kBatch * kThreads) {
        float v[kBatch][8];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            int64_t gg = g + b * kThreads;
            if (gg < g1)
                load8_f32<VEC>(P, gg, vocab, v[b]);
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            int64_t gg = g + b * kThreads;
            if (gg >= g1)
                break;
#pragma unroll
            for (int q = 0; q < 8; ++q)
                v[b][q] = gg * 8 + q == x ? 0.0f : v[b][q] * scale;
            store8_f32<VEC>(Q, gg, vocab, v[b]);
        }
    }
}

__global__ void k_finalize(const int32_t *drafts, const int32_t *nacc, const int32_t *samples,
                           int64_t requests, int k, int32_t *out_tokens, int32_t *out_num)
{
    int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (r >= requests)
        return;
    int acc = nacc[r];
    for (int i = 0; i <= k; ++i) {
        int32_t t = -1;
        if (i < acc)
            t = drafts[r * k + i];
        else if (i == acc)
            t = samples[r * (k + 1) + acc];
        out_tokens[r * (k + 1) + i] = t;
    }
    out_num[r] = acc + 1;
}

/* ---- host side --------------------------------------------------------- */

template <bool GREEDY>
cudaError_t launch_gumbel(const void *logits, int64_t rows, int64_t vocab, const float *temp,
                          const uint64_t *seed, void *ws, int32_t *out_tokens, float *out_values,
                          cudaStream_t stream)
{
    Ws w = carve(ws, rows, vocab, nullptr);
    Split sp = split_for(rows, (vocab + 15) / 16, kMinGroupsPerChunk / 2);
    dim3 grid(sp.s, (unsigned)rows);
    const __nv_bfloat16 *L = (const __nv_bfloat16 *)logits;
    if (vocab % 8 == 0)
        k_gumbel<true, GREEDY><<<grid, kThreads, 0, stream>>>(
            L, vocab, sp.per, sp.s, temp, seed, w.parts, w.cnt, out_tokens, out_values);
    else
        k_gumbel<false, GREEDY><<<grid, kThreads, 0, stream>>>(
            L, vocab, sp.per, sp.s, temp, seed, w.parts, w.cnt, out_tokens, out_values);
    return cudaGetLastError();
}

cudaError_t launch_multinomial(const float *probs, const float *residual, int k, int64_t rows,
                               int64_t vocab, const uint64_t *seed, const Ws &w, int32_t *out,
                               cudaStream_t stream)
{
    Split sp = split_for(rows, ntiles_of(vocab), kMinTilesPerChunk);
    dim3 grid(sp.s, (unsigned)rows);
    if (vocab % 8 == 0)
        k_multinomial<true><<<grid, kThreads, 0, stream>>>(probs, residual, k, vocab, sp.per,
                                                           sp.s, seed, w.tsum, w.cnt, out);
    else
        k_multinomial<false><<<grid, kThreads, 0, stream>>>(probs, residual, k, vocab, sp.per,
                                                            sp.s, seed, w.tsum, w.cnt, out);
    return cudaGetLastError();
}

bool bad_rows(int64_t rows, int64_t vocab)
{
    return rows <= 0 || rows > kMaxRows || vocab <= 0 || vocab > INT_MAX - 8;
}

} // namespace

extern "C" cudaError_t bl_init(int device)
{
    int sms = 0;
    cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess && sms > 0)
        g_sms = sms;
    return e;
}

extern "C" size_t bl_workspace_bytes(int64_t rows, int64_t vocab)
{
    size_t total = 0;
    carve(nullptr, rows, vocab, &total);
    return total;
}

extern "C" cudaError_t bl_fill_normal_bf16(void *dst, size_t n, float stddev, uint64_t seed,
                                           cudaStream_t stream)
{
    size_t groups = (n + 3) / 4;
    size_t blocks = (groups + kThreads - 1) / kThreads;
    if (blocks > (size_t)g_sms * 32)
        blocks = (size_t)g_sms * 32;
    if (blocks == 0)
        blocks = 1;
    k_fill_normal<<<(unsigned)blocks, kThreads, 0, stream>>>((__nv_bfloat16 *)dst, n, stddev,
                                                             seed);
    return cudaGetLastError();
}

extern "C" cudaError_t bl_gumbel_sample(const void *logits, int64_t rows, int64_t vocab,
                                        const float *temperature, const uint64_t *seed, void *ws,
                                        int32_t *out_tokens, cudaStream_t stream)
{
    if (bad_rows(rows, vocab))
        return cudaErrorInvalidValue;
    return launch_gumbel<false>(logits, rows, vocab, temperature, seed, ws, out_tokens, nullptr,
                                stream);
}

extern "C" cudaError_t bl_argmax(const void *logits, int64_t rows, int64_t vocab, void *ws,
                                 int32_t *out_tokens, float *out_logits, cudaStream_t stream)
{
    if (bad_rows(rows, vocab))
        return cudaErrorInvalidValue;
    return launch_gumbel<true>(logits, rows, vocab, nullptr, nullptr, ws, out_tokens, out_logits,
                               stream);
}

extern "C" cudaError_t bl_softmax(const void *logits, int64_t rows, int64_t vocab,
                                  const float *temperature, int64_t rows_per_param, void *ws,
                                  float *probs, cudaStream_t stream)
{
    if (bad_rows(rows, vocab) || rows_per_param <= 0)
        return cudaErrorInvalidValue;
    Ws w = carve(ws, rows, vocab, nullptr);
    Split sp = split_for(rows, (vocab + 7) / 8, kMinGroupsPerChunk);
    dim3 grid(sp.s, (unsigned)rows);
    const __nv_bfloat16 *L = (const __nv_bfloat16 *)logits;
    if (vocab % 8 == 0) {
        k_softmax_stats<true><<<grid, kThreads, 0, stream>>>(
            L, vocab, sp.per, sp.s, temperature, rows_per_param, w.parts, w.cnt, w.rowstat);
        k_softmax_write<true><<<grid, kThreads, 0, stream>>>(L, vocab, sp.per, temperature,
                                                             rows_per_param, w.rowstat, probs);
    } else {
        k_softmax_stats<false><<<grid, kThreads, 0, stream>>>(
            L, vocab, sp.per, sp.s, temperature, rows_per_param, w.parts, w.cnt, w.rowstat);
        k_softmax_write<false><<<grid, kThreads, 0, stream>>>(L, vocab, sp.per, temperature,
                                                              rows_per_param, w.rowstat, probs);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t bl_multinomial(const float *probs, int64_t rows, int64_t vocab,
                                      const uint64_t *seed, void *ws, int32_t *out_tokens,
                                      cudaStream_t stream)
{
    if (bad_rows(rows, vocab))
        return cudaErrorInvalidValue;
    Ws w = carve(ws, rows, vocab, nullptr);
    return launch_multinomial(probs, nullptr, 0, rows, vocab, seed, w, out_tokens, stream);
}

extern "C" cudaError_t bl_verify_materialised(const void *logits, int64_t requests, int k,
                                              int64_t vocab, const int32_t *draft_tokens,
                                              const float *temperature, const uint64_t *seed,
                                              float *probs, float *residual, void *ws,
                                              int32_t *out_tokens, int32_t *out_num_emitted,
                                              cudaStream_t stream)
{
    const int64_t rows = requests * (k + 1);
    if (k < 1 || requests <= 0 || bad_rows(rows, vocab))
        return cudaErrorInvalidValue;
    Ws w = carve(ws, rows, vocab, nullptr);
    cudaError_t e = bl_softmax(logits, rows, vocab, temperature, k + 1, ws, probs, stream);
    if (e != cudaSuccess)
        return e;
    unsigned rb = (unsigned)((requests + 127) / 128);
    k_gather_accept<<<rb, 128, 0, stream>>>(probs, vocab, requests, k, draft_tokens, seed, w.px,
                                            w.nacc);
    Split sp = split_for(requests * k, (vocab + 7) / 8, kMinGroupsPerChunk);
    dim3 grid(sp.s, (unsigned)(requests * k));
    if (vocab % 8 == 0)
        k_residual<true><<<grid, kThreads, 0, stream>>>(probs, vocab, sp.per, k, draft_tokens,
                                                        w.px, residual);
    else
        k_residual<false><<<grid, kThreads, 0, stream>>>(probs, vocab, sp.per, k, draft_tokens,
                                                         w.px, residual);
    e = launch_multinomial(probs, residual, k, rows, vocab, seed, w, w.samples, stream);
    if (e != cudaSuccess)
        return e;
    k_finalize<<<rb, 128, 0, stream>>>(draft_tokens, w.nacc, w.samples, requests, k, out_tokens,
                                       out_num_emitted);
    return cudaGetLastError();
}
