/* The filters' one-pass decision on the GPU: per filtered row, the exact
 * prefix of its sorted scores from the scan's candidate lists
 * (filter_cands.cuh), its best FS_FILTER_CANDIDATES as an fs_filter_record,
 * then the shared fs_filter_resolve / fs_filter_kept_record
 * (filter_finalize.h) -- the same decisions as the CPU backend -- write the
 * kept record into row_recs, or hand the row to the second pass
 * (filter_fallback.cu).
 *
 * One block per row.  The lists hold ~4 x (lists per row) entries; the ones
 * above D = max(drop) are the exact prefix.  Its best 64 by (score desc, id
 * asc) come from a radix select over 64-bit keys (score key, then the id
 * reversed: keys are distinct, so exactly 64 reach the selected key), 8
 * digits of 8 bits, reading the lists from L2 each round: a few microseconds
 * for the ~4000 entries of a 151936-token row, where sorting them would
 * take tens. */
#include "filter_gpu.cuh"

namespace {

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;

__device__ __forceinline__ unsigned long long entry_key(float s, int32_t id)
{
    return ((unsigned long long)fs_select_key(s) << 32) | (uint32_t)~(uint32_t)id;
}

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

__global__ void __launch_bounds__(THREADS)
    fs_filter_resolve_kernel(const fs_cand_list *__restrict__ cands, int64_t lists_per_row,
                             const fs_filter_desc *__restrict__ fdescs,
                             const fs_row_desc *__restrict__ descs, fs_record *row_recs,
                             fs_fallback_row *fb, unsigned int *flag_n, int32_t *out_fallback,
                             int force)
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

    const int64_t row = blockIdx.x;
    const fs_filter_desc fd = fdescs[row];
    if (!fd.active)
        return;
    const fs_record rec = row_recs[row];
    if (fs_record_status(&rec) != FS_ROW_OK)
        return; /* the finalizer reports the row; nothing to filter */
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
    /* G: entries of the exact prefix */
    int g = 0;
    for (int64_t k = tid; k < E; k += THREADS) {
        float s;
        int32_t id;
        g += entry(L, k, D, &s, &id) ? 1 : 0;
    }
    for (int m = 16; m > 0; m >>= 1)
        g += __shfl_xor_sync(0xffffffffu, g, m);
    __syncthreads();
    if (lane == 0)
        red_i[warp] = g;
    __syncthreads();
    int G = 0;
    for (int w = 0; w < WARPS; ++w)
        G += red_i[w];
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
        for (int64_t k = tid; k < E; k += THREADS) {
            float s;
            int32_t id;
            if (!entry(L, k, D, &s, &id))
                continue;
            const unsigned long long key = entry_key(s, id);
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
    for (int64_t k = tid; k < E && N > 0; k += THREADS) {
        float s;
        int32_t id;
        if (!entry(L, k, D, &s, &id))
            continue;
        const unsigned long long key = entry_key(s, id);
        if (key >= K) {
            const int at = atomicAdd(&sh_slot, 1);
            if (at < FS_FILTER_CANDIDATES) {
                g_key[at] = key;
                g_s[at] = s;
                g_id[at] = id;
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
    __syncthreads();
    if (tid != 0)
        return;
    f.count = count;
    f.n = N;
    const fs_row_desc d = descs[row];
    fs_filter_cut cut;
    if (!force && fs_filter_resolve(&rec, &f, &fd, &cut) == FS_FILTER_ONE_PASS) {
        fs_record kept;
        fs_filter_kept_record(&f, &cut, &d, &kept);
        row_recs[row] = kept;
        return;
    }
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
}

} // namespace

cudaError_t fs_launch_filter_resolve(const fs_op_args *a, const fs_filter_ws *w,
                                     const fs_row_desc *descs, fs_record *row_recs, int force,
                                     cudaStream_t stream)
{
    fs_filter_resolve_kernel<<<(unsigned)a->rows, THREADS, 0, stream>>>(
        w->cands, w->lists_per_row, w->fdescs, descs, row_recs, w->fb, w->flag_n,
        a->params->out_filter_fallback, force);
    return cudaGetLastError();
}
