/* The filters' one-pass decision on the GPU, run by the merge kernel's block
 * of a filtered row (merge_finalize.cu) once the row's record is merged:
 * the exact
 * prefix of its sorted scores from the scan's candidate lists
 * (filter_cands.cuh), its best FS_FILTER_CANDIDATES as an fs_filter_record,
 * then the shared fs_filter_resolve / fs_filter_kept_record
 * (filter_finalize.h) -- the same decisions as the CPU backend -- give the
 * kept record, or the row is handed to the second pass (filter_fallback.cu).
 *
 * The lists hold ~4 x (lists per row) entries; the ones
 * above D = max(drop) are the exact prefix.  Its best 64 by (score desc, id
 * asc) come from a radix select over 64-bit keys (score key, then the id
 * reversed: keys are distinct, so exactly 64 reach the selected key), 8
 * digits of 8 bits, reading the lists from L2 each round: a few microseconds
 * for the ~4000 entries of a 151936-token row, where sorting them would
 * take tens.  The kept record is built by one thread per kept noise block
 * and reduced: pushed one block after another by a single thread it cost
 * ~150 us a row at k = 50 (H100). */
#ifndef FS_FILTER_RESOLVE_CUH
#define FS_FILTER_RESOLVE_CUH

#include "filter_gpu.cuh"

namespace fsf {

constexpr int THREADS = 256; /* the merge kernel's block */
constexpr int WARPS = THREADS / 32;
/* Prefix entries staged in shared memory as keys: a row's prefix is a few
 * hundred entries; reading the lists from L2 in each of the 8 rounds instead
 * cost ~40 us a row (H100).  Larger prefixes are read from the lists. */
constexpr int STAGE = 2048;

__device__ __forceinline__ unsigned long long entry_key(float s, int32_t id)
{
    return ((unsigned long long)fs_select_key(s) << 32) | (uint32_t)~(uint32_t)id;
}

/* Key k of the prefix: staged (k < G) or entry k of the lists (k < E). */
__device__ __forceinline__ bool prefix_key(const unsigned long long *stage, bool staged,
                                           const fs_cand_list *L, int64_t k, float D,
                                           unsigned long long *key);

/* Entry k of a row's lists: (score, id), valid when id >= 0 and s > D. */
__device__ __forceinline__ bool entry(const fs_cand_list *L, int64_t k, float D, float *s,
                                      int32_t *id)
{
    const fs_cand_list &c = L[k / FS_CAND_LIST];
    const int j = (int)(k % FS_CAND_LIST);
    *s = c.s[j];
    *id = c.id[j];
    return *id >= 0 && *s > D;
}

__device__ __forceinline__ bool prefix_key(const unsigned long long *stage, bool staged,
                                           const fs_cand_list *L, int64_t k, float D,
                                           unsigned long long *key)
{
    if (staged) {
        *key = stage[k];
        return true;
    }
    float s;
    int32_t id;
    if (!entry(L, k, D, &s, &id))
        return false;
    *key = entry_key(s, id);
    return true;
}

/* The kept record of candidates f under cut: a thread per kept noise block
 * (the first kept candidate of each block leads it), the blocks' records
 * merged over the first two warps into the return value of thread 0.  The
 * same blocks, noise and tokens as fs_filter_kept_record; sum_exp carries
 * the merge's rounding.  Every thread of the block calls it. */
__device__ __forceinline__ fs_record kept_record(const fs_filter_record &f, const fs_filter_cut &cut,
                                                 const fs_row_desc &d, fs_record *red)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    fs_record rec;
    fs_record_init(&rec);
    if (tid < f.n && fs_filter_keeps(&cut, f.s[tid])) {
        const int32_t blk = f.id[tid] / FS_NOISE_BLOCK;
        bool lead = true;
        for (int j = 0; j < tid; ++j)
            lead &= !(f.id[j] / FS_NOISE_BLOCK == blk && fs_filter_keeps(&cut, f.s[j]));
        if (lead) {
            float v[FS_NOISE_BLOCK];
            for (int i = 0; i < FS_NOISE_BLOCK; ++i)
                v[i] = -INFINITY;
            for (int j = 0; j < f.n; ++j)
                if (f.id[j] / FS_NOISE_BLOCK == blk && fs_filter_keeps(&cut, f.s[j]))
                    v[f.id[j] % FS_NOISE_BLOCK] = f.s[j];
            fs_record_push_block(&rec, &d, blk * FS_NOISE_BLOCK, FS_NOISE_BLOCK, v);
        }
    }
    if (warp < 2) {
        fs_record_warp_reduce(&rec);
        if (lane == 0)
            red[warp] = rec;
    }
    __syncthreads();
    if (tid == 0)
        fs_record_merge(&rec, &red[1]);
    return rec;
}

/* Resolve filtered row `row` whose merged record is rec (every thread passes
 * it): returns 1 to every thread when the one pass decided it, with the
 * kept record in *kept (thread 0); 0 when the row was handed to the second
 * pass (fb, flag_n, out_fallback updated).  Every thread of the block calls
 * it; rows that do not filter must not. */
__device__ int fs_filter_resolve_row(int64_t row, const fs_record &rec, const fs_filter_desc &fd,
                                     const fs_row_desc &d, const fs_cand_list *__restrict__ cands,
                                     int64_t lists_per_row, fs_fallback_row *fb,
                                     unsigned int *flag_n, int32_t *out_fallback, int force,
                                     fs_record *kept)
{
    __shared__ float red_f[WARPS];
    __shared__ int red_i[WARPS];
    __shared__ unsigned int hist[256];
    __shared__ unsigned long long sh_prefix;
    __shared__ int sh_need, sh_slot;
    __shared__ unsigned long long g_key[FS_FILTER_CANDIDATES];
    __shared__ float g_s[FS_FILTER_CANDIDATES];
    __shared__ int32_t g_id[FS_FILTER_CANDIDATES];
    __shared__ fs_filter_record f;
    __shared__ fs_filter_cut sh_cut;
    __shared__ int sh_one;
    __shared__ fs_record red[2];
    __shared__ unsigned long long stage[STAGE];
    __shared__ int sh_g;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const fs_cand_list *L = cands + row * lists_per_row;
    const int64_t E = lists_per_row * FS_CAND_LIST;

    /* D and the count of finite allowed tokens */
    float D = -INFINITY;
    int count = 0;
    for (int64_t k = tid; k < lists_per_row; k += THREADS) {
        D = fmaxf(D, L[k].drop);
        count += L[k].count;
    }
    for (int m = 16; m > 0; m >>= 1) {
        D = fmaxf(D, __shfl_xor_sync(0xffffffffu, D, m));
        count += __shfl_xor_sync(0xffffffffu, count, m);
    }
    if (lane == 0) {
        red_f[warp] = D;
        red_i[warp] = count;
    }
    __syncthreads();
    D = red_f[0];
    count = red_i[0];
    for (int w = 1; w < WARPS; ++w) {
        D = fmaxf(D, red_f[w]);
        count += red_i[w];
    }
    /* the exact prefix: G entries, staged as keys when they fit */
    if (tid == 0)
        sh_g = 0;
    __syncthreads();
    for (int64_t k = tid; k < E; k += THREADS) {
        float s;
        int32_t id;
        if (entry(L, k, D, &s, &id)) {
            const int at = atomicAdd(&sh_g, 1);
            if (at < STAGE)
                stage[at] = entry_key(s, id);
        }
    }
    __syncthreads();
    const int G = sh_g;
    const bool staged = G <= STAGE;
    const int64_t total = staged ? G : E;
    const int N = G < FS_FILTER_CANDIDATES ? G : FS_FILTER_CANDIDATES;

    /* the N-th largest key, 8 bits at a time from the top */
    if (tid == 0) {
        sh_prefix = 0ull;
        sh_need = N;
        sh_slot = 0;
    }
    __syncthreads();
    for (int round = 0; round < 8 && N > 0; ++round) {
        const int shift = 56 - 8 * round;
        hist[tid] = 0u;
        __syncthreads();
        const unsigned long long prefix = sh_prefix;
        for (int64_t k = tid; k < total; k += THREADS) {
            unsigned long long key;
            if (!prefix_key(stage, staged, L, k, D, &key))
                continue;
            if (round > 0 && (key >> (shift + 8)) != (prefix >> (shift + 8)))
                continue;
            atomicAdd(&hist[(key >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (warp == 0) {
            /* lane l holds buckets 255 - 8 l .. 248 - 8 l, from the top */
            unsigned int part = 0;
            for (int i = 0; i < 8; ++i)
                part += hist[255 - 8 * lane - i];
            unsigned int incl = part;
            for (int m = 1; m < 32; m <<= 1) {
                const unsigned int o = __shfl_up_sync(0xffffffffu, incl, m);
                if (lane >= m)
                    incl += o;
            }
            const int need = sh_need;
            const unsigned int hit = __ballot_sync(0xffffffffu, incl >= (unsigned int)need);
            __syncwarp(); /* every lane has read sh_need before one lane writes it */
            if (lane == __ffs(hit) - 1) {
                unsigned int above = incl - part;
                for (int i = 0; i < 8; ++i) {
                    const int b = 255 - 8 * lane - i;
                    if (above + hist[b] >= (unsigned int)need) {
                        sh_need = need - (int)above;
                        sh_prefix = prefix | ((unsigned long long)b << shift);
                        break;
                    }
                    above += hist[b];
                }
            }
        }
        __syncthreads();
    }
    /* gather the N entries with key >= the selected one, then sort them */
    const unsigned long long K = sh_prefix;
    for (int64_t k = tid; k < total && N > 0; k += THREADS) {
        unsigned long long key;
        if (!prefix_key(stage, staged, L, k, D, &key))
            continue;
        if (key >= K) {
            const int at = atomicAdd(&sh_slot, 1);
            if (at < FS_FILTER_CANDIDATES) {
                g_key[at] = key;
                g_s[at] = fs_select_score((uint32_t)(key >> 32));
                g_id[at] = (int32_t)~(uint32_t)key;
            }
        }
    }
    __syncthreads();
    if (tid < N) {
        int rank = 0;
        for (int j = 0; j < N; ++j)
            rank += g_key[j] > g_key[tid] ? 1 : 0;
        f.s[rank] = g_s[tid];
        f.id[rank] = g_id[tid];
    }
    __syncthreads(); /* f is whole before thread 0 decides on it */
    if (tid == 0) {
        f.count = count;
        f.n = N;
        fs_filter_cut cut;
        sh_one = !force && fs_filter_resolve(&rec, &f, &fd, &cut) == FS_FILTER_ONE_PASS;
        sh_cut = cut;
    }
    __syncthreads();
    if (sh_one) {
        const fs_filter_cut cut = sh_cut;
        *kept = kept_record(f, cut, d, red);
        __syncthreads(); /* the shared state is reused by the block's next row */
        return 1;
    }
    __syncthreads();
    if (tid != 0)
        return 0;
    const unsigned int at = atomicAdd(flag_n, 1u);
    fs_fallback_row r;
    r.row = (int32_t)row;
    r.count = count;
    r.max_key = 0u;
    r.m1 = rec.max_s;
    r.t_k = -INFINITY;
    r.t_p = -INFINITY;
    const int32_t k = fd.top_k > 0 && fd.top_k < count ? fd.top_k : 0;
    if (k > 0) {
        r.phase = FS_FB_K;
        fs_select_init(&r.q, k, 0.0f);
    } else if (fd.top_p < 1.0f) {
        r.phase = FS_FB_P;
        fs_select_init(&r.q, 0, 0.0f); /* the mass target is set from the first histogram */
    } else {
        r.phase = FS_FB_DRAW;
        fs_select_init(&r.q, 0, 0.0f);
    }
    fb[at] = r;
    if (out_fallback)
        atomicAdd(&out_fallback[d.request], 1);
    return 0;
}

} // namespace fsf

#endif
