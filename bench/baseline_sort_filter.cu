/* The sort-based filtered sampler: top-k / top-p / min-p the way an engine
 * without a fused kernel applies them (vLLM's PyTorch path sorts each row,
 * masks top-k and top-p by sort position and min-p by probability, then
 * samples), over bf16 logits already in memory.
 *
 * Built to be the leanest such pipeline, so that the fused op is compared
 * with the best a sort can do, not with PyTorch's extra passes (vLLM
 * softmaxes, cumsums and scatters the whole row back before sampling):
 *  1. one pass writes each row's scores as 64-bit keys -- the row in the
 *     high bits, the score's bits ordered descending below -- and the ids;
 *  2. one device-wide radix sort of all rows' pairs (CUB's
 *     DeviceRadixSort over the 32 score bits plus the row bits: a segmented
 *     sort by one sort, which keeps a single row as fast as many);
 *  3. a block per row walks its sorted scores only as far as the cuts:
 *     the top-k mass (the whole row when top-k is off), then the prefix that
 *     top-p keeps (the crossing token kept) and the one min-p keeps, and
 *     draws the token by inverse CDF over the kept prefix with a Philox
 *     uniform (flashspec's coordinates, purpose kPurposeCdf).
 * Ties at a cut are split by the sort's position, as in vLLM; flashspec keeps
 * a whole tie group (docs/DESIGN.md, "Sampling filters") -- the kept sets
 * differ only inside a tie group at the threshold. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <math.h>
#include <stdint.h>

#include "baselines.h"
#include "philox.h"

namespace {

constexpr int kThreads = 512;
constexpr int kItems = 4; /* sorted scores a thread takes a step */
constexpr int kChunk = kThreads * kItems;
constexpr uint32_t kPurposeCdf = 2; /* as bl_multinomial's uniforms */

/* A float's bits, ordered so that an ascending unsigned sort puts larger
 * floats first (descending), and back. */
__device__ __forceinline__ uint32_t desc_bits(float s)
{
    const uint32_t u = __float_as_uint(s);
    const uint32_t asc = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ~asc;
}

__device__ __forceinline__ float from_desc_bits(uint32_t d)
{
    const uint32_t asc = ~d;
    return __uint_as_float((asc & 0x80000000u) ? (asc & 0x7fffffffu) : ~asc);
}

/* Row blockIdx.y's keys and ids. */
__global__ void k_sort_keys(const __nv_bfloat16 *__restrict__ logits, int64_t vocab,
                            const float *__restrict__ temperature,
                            unsigned long long *__restrict__ keys, int32_t *__restrict__ ids)
{
    const int64_t r = blockIdx.y;
    const float inv_t = 1.0f / temperature[r];
    const unsigned long long hi = (unsigned long long)r << 32;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < vocab;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t x = r * vocab + i;
        keys[x] = hi | desc_bits(__bfloat162float(logits[x]) * inv_t);
        ids[x] = (int32_t)i;
    }
}

/* Row r's sorted score at place j (j < vocab). */
__device__ __forceinline__ float sorted_score(const unsigned long long *keys, int64_t r,
                                              int64_t vocab, int64_t j)
{
    return from_desc_bits((uint32_t)__ldg(&keys[r * vocab + j]));
}

using Scan = cub::BlockScan<float, kThreads>;
using Reduce = cub::BlockReduce<float, kThreads>;

/* The weights exp(s_j - mx) of this thread's places of the chunk at c0 (0
 * at and past end) and their inclusive prefix sums over the block; returns
 * the chunk's total.  Every thread calls it. */
__device__ __forceinline__ float chunk_scan(const unsigned long long *keys, int64_t r,
                                            int64_t vocab, int64_t c0, int64_t end, float mx,
                                            float (&w)[kItems], float (&cum)[kItems],
                                            typename Scan::TempStorage &ts)
{
    const int64_t j0 = c0 + (int64_t)threadIdx.x * kItems;
#pragma unroll
    for (int t = 0; t < kItems; ++t)
        w[t] = j0 + t < end ? expf(sorted_score(keys, r, vocab, j0 + t) - mx) : 0.0f;
    float total;
    Scan(ts).InclusiveSum(w, cum, total);
    return total;
}

/* The mass of sorted places [0, end), in thread 0.  Every thread calls it. */
__device__ __forceinline__ float prefix_mass(const unsigned long long *keys, int64_t r,
                                             int64_t vocab, int64_t end, float mx,
                                             typename Reduce::TempStorage &ts)
{
    float part = 0.0f;
    for (int64_t j = threadIdx.x; j < end; j += kThreads)
        part += expf(sorted_score(keys, r, vocab, j) - mx);
    return Reduce(ts).Sum(part);
}

/* One block a row: the cuts, then the draw.  kept[r] = the kept prefix's
 * length. */
__global__ void __launch_bounds__(kThreads)
    k_sort_filter_sample(const unsigned long long *__restrict__ keys,
                         const int32_t *__restrict__ ids, int64_t vocab,
                         const int32_t *__restrict__ top_k, const float *__restrict__ top_p,
                         const float *__restrict__ min_p, const uint64_t *__restrict__ seed,
                         int32_t *__restrict__ out_tokens, int32_t *__restrict__ out_kept)
{
    __shared__ union {
        typename Scan::TempStorage scan;
        typename Reduce::TempStorage reduce;
    } tmp;
    __shared__ float s_total;
    __shared__ int64_t s_cut;
    __shared__ float s_target;
    const int64_t r = blockIdx.x;
    const float mx = sorted_score(keys, r, vocab, 0);
    const int32_t k = top_k ? top_k[r] : 0;
    const int64_t kk = k > 0 && k < vocab ? k : vocab;
    const float p = top_p ? top_p[r] : 1.0f;
    const float mp = min_p ? min_p[r] : 0.0f;

    /* the top-k set's mass (top-p renormalises over it) */
    const float zk = prefix_mass(keys, r, vocab, kk, mx, tmp.reduce);
    if (threadIdx.x == 0) {
        s_total = zk;
        s_cut = kk;
    }
    __syncthreads();
    const float zk_all = s_total;
    /* the cuts: top-p keeps j while the mass before it is < p of the top-k
       mass, min-p while its weight is >= min_p of the max's */
    const float p_mass = p * zk_all;
    float carry = 0.0f;
    for (int64_t c0 = 0; c0 < kk; c0 += kChunk) {
        float w[kItems], cum[kItems];
        const float chunk_total = chunk_scan(keys, r, vocab, c0, kk, mx, w, cum, tmp.scan);
        const int64_t j0 = c0 + (int64_t)threadIdx.x * kItems;
#pragma unroll
        for (int t = 0; t < kItems; ++t) {
            const int64_t j = j0 + t;
            if (j >= kk)
                break;
            const float incl = carry + cum[t], before = incl - w[t];
            /* the first place a cut ends the kept prefix: j itself is out */
            const bool out = (p < 1.0f && before >= p_mass) || (mp > 0.0f && w[t] < mp);
            if (out)
                atomicMin(reinterpret_cast<unsigned long long *>(&s_cut),
                          (unsigned long long)j);
        }
        __syncthreads();
        carry += chunk_total;
        if (s_cut < kk)
            break; /* every later place is past the cut */
        __syncthreads();
    }
    __syncthreads();
    const int64_t n_keep = s_cut;
    /* the kept mass, and the draw: first j with cumulative mass > u Z */
    const float z = prefix_mass(keys, r, vocab, n_keep, mx, tmp.reduce);
    __syncthreads();
    if (threadIdx.x == 0) {
        s_target = fs_uniform(fs_philox_draw(seed[r], 0, 0, kPurposeCdf, 0).v[0]) * z;
        s_cut = n_keep - 1; /* rounding: the last kept token */
    }
    __syncthreads();
    const float target = s_target;
    carry = 0.0f;
    for (int64_t c0 = 0; c0 < n_keep; c0 += kChunk) {
        float w[kItems], cum[kItems];
        const float chunk_total = chunk_scan(keys, r, vocab, c0, n_keep, mx, w, cum, tmp.scan);
        const int64_t j0 = c0 + (int64_t)threadIdx.x * kItems;
#pragma unroll
        for (int t = 0; t < kItems; ++t)
            if (j0 + t < n_keep && w[t] > 0.0f && carry + cum[t] > target) {
                atomicMin(reinterpret_cast<unsigned long long *>(&s_cut),
                          (unsigned long long)(j0 + t));
                break;
            }
        __syncthreads();
        carry += chunk_total;
        if (carry > target)
            break; /* crossed in this chunk */
        __syncthreads();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        out_tokens[r] = __ldg(&ids[r * vocab + s_cut]);
        if (out_kept)
            out_kept[r] = (int32_t)n_keep;
    }
}

int row_bits(int64_t rows)
{
    int b = 0;
    while (((int64_t)1 << b) < rows)
        ++b;
    return b;
}

size_t cub_temp_bytes(int64_t rows, int64_t vocab)
{
    size_t bytes = 0;
    cub::DeviceRadixSort::SortPairs(nullptr, bytes, (const unsigned long long *)nullptr,
                                    (unsigned long long *)nullptr, (const int32_t *)nullptr,
                                    (int32_t *)nullptr, (int)(rows * vocab), 0,
                                    32 + row_bits(rows));
    return bytes;
}

size_t align256(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

/* The scratch of one call: both key and id buffers of the sort and CUB's
 * temporary storage, asked of CUB once. */
struct sort_ws {
    unsigned long long *keys_in, *keys_out;
    int32_t *ids_in, *ids_out;
    void *temp;
    size_t temp_bytes;
};

/* Its byte size for rows x vocab pairs; fills w from base when base is
 * given. */
size_t sort_carve(int64_t rows, int64_t vocab, void *base, sort_ws *w)
{
    const size_t n = (size_t)(rows * vocab);
    const size_t temp_bytes = cub_temp_bytes(rows, vocab);
    char *p = static_cast<char *>(base);
    size_t at = 0;
    auto take = [&](size_t bytes) {
        char *q = p ? p + at : nullptr;
        at += align256(bytes);
        return q;
    };
    char *keys_in = take(n * sizeof(unsigned long long));
    char *keys_out = take(n * sizeof(unsigned long long));
    char *ids_in = take(n * sizeof(int32_t));
    char *ids_out = take(n * sizeof(int32_t));
    char *temp = take(temp_bytes);
    if (w) {
        w->keys_in = reinterpret_cast<unsigned long long *>(keys_in);
        w->keys_out = reinterpret_cast<unsigned long long *>(keys_out);
        w->ids_in = reinterpret_cast<int32_t *>(ids_in);
        w->ids_out = reinterpret_cast<int32_t *>(ids_out);
        w->temp = temp;
        w->temp_bytes = temp_bytes;
    }
    return at;
}

} // namespace

extern "C" size_t bl_sort_filter_workspace_bytes(int64_t rows, int64_t vocab)
{
    return sort_carve(rows, vocab, nullptr, nullptr);
}

extern "C" cudaError_t bl_sort_filter_sample(const void *logits, int64_t rows, int64_t vocab,
                                             const float *temperature, const int32_t *top_k,
                                             const float *top_p, const float *min_p,
                                             const uint64_t *seed, void *ws, size_t ws_bytes,
                                             int32_t *out_tokens, int32_t *out_kept,
                                             cudaStream_t stream)
{
    /* one sort of every row's pairs: int item counts (CUB's) */
    if (rows <= 0 || vocab <= 0 || rows > 65535 || rows * vocab > INT32_MAX)
        return cudaErrorInvalidValue;
    sort_ws w;
    if (ws_bytes < sort_carve(rows, vocab, ws, &w))
        return cudaErrorInvalidValue;
    /* ~1024 blocks in all: one row spread over the GPU, many rows a few each */
    const int64_t per_row = (vocab + 255) / 256, cap = (1024 + rows - 1) / rows;
    const dim3 grid((unsigned)(per_row < cap ? per_row : cap), (unsigned)rows);
    k_sort_keys<<<grid, 256, 0, stream>>>(static_cast<const __nv_bfloat16 *>(logits), vocab,
                                          temperature, w.keys_in, w.ids_in);
    cudaError_t e = cub::DeviceRadixSort::SortPairs(w.temp, w.temp_bytes, w.keys_in, w.keys_out,
                                                    w.ids_in, w.ids_out, (int)(rows * vocab), 0,
                                                    32 + row_bits(rows), stream);
    if (e != cudaSuccess)
        return e;
    k_sort_filter_sample<<<(unsigned)rows, kThreads, 0, stream>>>(
        w.keys_out, w.ids_out, vocab, top_k, top_p, min_p, seed, out_tokens, out_kept);
    return cudaGetLastError();
}
