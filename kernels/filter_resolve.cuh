/* The filters' one-pass decision on the GPU, run by the merge kernel's block
 * of a filtered row (merge_finalize.cu) once the row's record is merged: the
 * exact prefix of its sorted scores from the scan's candidate lists
 * (src/cand_list.h), its best FS_FILTER_CANDIDATES as an fs_filter_record,
 * then the shared fs_filter_resolve / fs_filter_kept_record
 * (filter_finalize.h) -- the same decisions as the CPU backend -- give the
 * kept record, or the row is handed to the second pass (filter_fallback.cu).
 *
 * A row is one block of THREADS and rows are few (1 .. 64), so what counts is
 * the block's chain of dependent memory round trips and barriers, not its
 * work.  The steps, with the barriers each one waits on:
 *  1. Every thread loads PER of the row's ~1000 lists at once (three wide
 *     loads a list), before the row's tile records are merged so that both
 *     sets of loads are in flight together, and keeps them in registers;
 *     D = max(drop) and the count of finite tokens are one block reduction
 *     (1 barrier).
 *  2. The entries above D -- the exact prefix, G entries, hundreds for a
 *     151936-token row -- are staged from registers into shared memory as
 *     64-bit keys (score key, then the id reversed: distinct keys ordered as
 *     (score desc, id asc)), a warp taking its slots with one atomic
 *     (1 barrier).
 *  3. A radix select narrows the keys from the top, 8 bits a round, starting
 *     below the bits that all of them share (their score keys lie between
 *     D's and the largest), and stops once at most CAP keys lie at or above
 *     the selected bucket (1 barrier a round).  The first digit already
 *     splits the prefix's score range 256 ways, so one or two rounds are
 *     typical; ties at the 64th score go on into the id bits.  The keys left
 *     hold the best N = min(64, G); they are gathered (1 barrier) and each
 *     one's rank among them is counted directly, the best N written in order
 *     into the record (1 barrier).  G <= CAP needs no round.
 *  4. Thread 0 decides on the record while two warps note, for each
 *     candidate, the first candidate of its noise block (1 barrier).
 *  5. A decided row's kept record: one thread per kept noise block draws the
 *     block's Gumbel candidate, and the candidates are merged over one warp,
 *     or two when the kept set reaches past candidate 31 (1 barrier); the
 *     log-sum-exp comes from the decision's weights (kept_record_chain;
 *     tree rows push whole blocks, kept_record_tree).  Pushed one block after
 *     another by a single thread it cost ~150 us a row at k = 50 (H100).
 *  6. A row those 64 cannot decide while its prefix is longer (G > 64)
 *     tries again from the best min(G, 512) of it (wide_decide) before it
 *     is handed over.
 * The longest serial part is thread 0's fs_filter_resolve_w, a walk over up
 * to 64 candidates whose sums must keep the CPU backend's order (their
 * weights are computed by a warp beforehand; top-k alone needs no walk).
 * The code runs cold on every call (fs_hd.h, FS_UNROLL_HOT): under a
 * clock64 probe on an H100, each of steps 1-4 took 1.5-2.5 us more than
 * when the same block ran it a second time, and the kept record ~9 us more
 * before its loops were rolled (~3 us after).  So the merge kernel runs a
 * made-up row (warm_inputs) in three blocks ahead of the rows, one for each
 * part of the resolve (warm_part), which pull the code into L2 before the
 * rows fetch it (merge_row.cuh). */
#ifndef FS_FILTER_RESOLVE_CUH
#define FS_FILTER_RESOLVE_CUH

#include "filter_gpu.cuh"
#include "probe_resolve.cuh"

namespace fsf {

constexpr int THREADS = 256; /* the merge kernel's block */
constexpr int WARPS = THREADS / 32;
constexpr unsigned FULL = 0xffffffffu;
/* Lists a thread loads at once and holds until D is known: 5 x 256 covers the
 * Hopper tile kernel's 8 a CTA (1056 lists on an H100) and the generic scans'
 * one per 128 tokens up to 163840 tokens; longer rows loop over groups of
 * PER x THREADS lists, loading those twice. */
constexpr int PER = 5;
/* Prefix entries staged in shared memory as keys: reading the lists from L2
 * in each of 8 radix rounds instead cost ~40 us a row (H100).  Larger
 * prefixes (rows whose lists saw few finite tokens each) are read from the
 * lists. */
constexpr int STAGE = 2048;

/* Keys at or above the bucket the radix rounds stop in, whose ranks are then
 * counted directly: up to 128, two threads a key, 64 comparisons each --
 * about the issue time of one more round (a pass over the keys, a barrier,
 * a scan of the histogram). */
constexpr int CAP = 128;

/* Candidates of the wide resolve (wide_decide): a row the best 64 cannot
 * decide -- top-k above 64, a nucleus or min-p band of more than 64 tokens
 * -- is decided from the best min(G, WIDE) tokens of its exact prefix when
 * the prefix is longer than 64 (G was 330-830 for 151936-token rows at 1-64
 * rows on an H100's tile kernel: it depends on how the top tokens fall into
 * the lists, not on the logits), instead of taking the second pass: two
 * more passes over the LM head, 1-2.5 ms a call there. */
constexpr int WIDE = 512;

/* The block's shared state for one row (~25 KB). */
struct resolve_smem {
    unsigned long long stage[STAGE];    /* the prefix's keys */
    unsigned long long top[CAP];        /* the keys the rank orders, after radix rounds */
    alignas(16) unsigned int hist[3][256];
    /* per first candidate of a noise block: its candidates' scores by place */
    alignas(16) float vt[FS_FILTER_CANDIDATES][FS_NOISE_BLOCK];
    alignas(16) fs_filter_record f;
    float w[FS_FILTER_CANDIDATES]; /* the candidates' weights exp(s - max_s), for the walk */
    fs_record red;
    alignas(16) uint32_t red_kd[WARPS];
    alignas(16) int32_t red_count[WARPS];
    uint32_t leads[FS_FILTER_CANDIDATES / 32]; /* first candidates of their blocks */
    int g;        /* prefix entries counted (staged while < STAGE) */
    int c;        /* keys gathered into top */
    uint32_t khi; /* the largest score key of the prefix */
    int one;      /* thread 0's decision */
    fs_filter_cut cut;
    float child_s[FS_TREE_MAX_CHILDREN]; /* tree rows: the kept record's children's scores */
    /* the wide resolve (its arrays share the others': wide_decide) */
    int wm;             /* kept candidates */
    float wzp[WARPS];   /* the walk's top-k mass, by warp */
};

/* The key of an entry: its score's key, then the id reversed, so that keys
 * are distinct and order as (score desc, id asc) does. */
__device__ __forceinline__ unsigned long long entry_key(uint32_t score_key, int32_t id)
{
    return ((unsigned long long)score_key << 32) | (uint32_t)~(uint32_t)id;
}

/* List k of a row's n lists as loaded, and put in place.  A list is 40
 * bytes at an 8-byte boundary (cuda_ops.cu's carve aligns the array), so two
 * 16-byte loads and one 8-byte load cover it whichever half of a 16-byte unit
 * it starts in.  Default caching: the lanes' lists share L1 lines.
 *
 * The loads (issue_list) and the fields put in place from them (take_list)
 * are two steps, and issue_list has no use of a loaded value: a bounds-check
 * branch that held the selects too would wait for its own loads, and a
 * thread's five lists would come one L2 round trip after another -- the
 * merge kernel's tile records only after them. */
struct raw_list {
    float4 a, b;
    float2 e;
};

__device__ __forceinline__ bool list_odd(const fs_cand_list *L, int64_t k)
{
    return (reinterpret_cast<uintptr_t>(L + k) & 8u) != 0;
}

__device__ __forceinline__ void issue_list(const fs_cand_list *L, int64_t k, int64_t n,
                                           raw_list &r)
{
    static_assert(sizeof(fs_cand_list) == 40 && offsetof(fs_cand_list, id) == 16 &&
                      offsetof(fs_cand_list, drop) == 32 && FS_CAND_LIST == 4,
                  "the loads below follow fs_cand_list's layout");
    r.a = r.b = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    r.e = make_float2(0.0f, 0.0f);
    if (k < n) {
        const char *p = reinterpret_cast<const char *>(L + k);
        const bool odd = list_odd(L, k);
        r.a = __ldca(reinterpret_cast<const float4 *>(p + (odd ? 8 : 0)));
        r.b = __ldca(reinterpret_cast<const float4 *>(p + (odd ? 24 : 16)));
        r.e = __ldca(reinterpret_cast<const float2 *>(p + (odd ? 0 : 32)));
    }
}

/* The list issue_list loaded into r (list_odd: odd), or an empty one (!ok:
 * past the end). */
__device__ __forceinline__ fs_cand_list take_list(const raw_list &r, bool odd, bool ok)
{
    const float4 a = r.a, b = r.b;
    const float2 e = r.e;
    /* even: s0..s3 | id0..id3 | drop count;  odd: s2 s3 id0 id1 | id2 id3 drop count | s0 s1 */
    fs_cand_list c;
    c.s[0] = odd ? e.x : a.x;
    c.s[1] = odd ? e.y : a.y;
    c.s[2] = odd ? a.x : a.z;
    c.s[3] = odd ? a.y : a.w;
    c.id[0] = __float_as_int(odd ? a.z : b.x);
    c.id[1] = __float_as_int(odd ? a.w : b.y);
    c.id[2] = __float_as_int(odd ? b.x : b.z);
    c.id[3] = __float_as_int(odd ? b.y : b.w);
    c.drop = odd ? b.z : e.x;
    c.count = __float_as_int(odd ? b.w : e.y);
    if (!ok)
        fs_cand_init(&c);
    return c;
}

/* The lists tid + i THREADS (i < PER) of group g0 (a multiple of
 * PER x THREADS) in two steps: issue_group's loads all in flight at once,
 * take_group's fields put in place from them. */
__device__ __forceinline__ void issue_group(const fs_cand_list *L, int64_t g0, int64_t n,
                                            raw_list (&r)[PER])
{
#pragma unroll
    for (int i = 0; i < PER; ++i)
        issue_list(L, g0 + (int64_t)i * THREADS + threadIdx.x, n, r[i]);
}

__device__ __forceinline__ void take_group(const fs_cand_list *L, int64_t g0, int64_t n,
                                           const raw_list (&r)[PER], fs_cand_list (&c)[PER])
{
    /* THREADS lists apart are 16-byte multiples apart: one parity */
    static_assert(THREADS * sizeof(fs_cand_list) % 16 == 0, "one parity for a thread's lists");
    const bool odd = list_odd(L, g0 + threadIdx.x);
#pragma unroll
    for (int i = 0; i < PER; ++i)
        c[i] = take_list(r[i], odd, g0 + (int64_t)i * THREADS + threadIdx.x < n);
}

__device__ __forceinline__ void load_group(const fs_cand_list *L, int64_t g0, int64_t n,
                                           fs_cand_list (&c)[PER])
{
    raw_list r[PER];
    issue_group(L, g0, n, r);
    take_group(L, g0, n, r, c);
}

__device__ __forceinline__ uint32_t umax(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

/* The row's D = max(drop), as its key fs_select_key(D), and its count of
 * finite allowed tokens, to every thread; `mine` holds the thread's lists
 * of the first group (fs_filter_take_lists).  One barrier. */
__device__ __forceinline__ void row_bounds(const fs_cand_list *L, int64_t n,
                                           const fs_cand_list (&mine)[PER], resolve_smem &sh,
                                           uint32_t *kd_out, int *count_out)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    uint32_t kd = fs_select_key(-INFINITY);
    int count = 0;
    /* the later groups' drop and count first, while no list is held (their
       entries are staged after) */
    for (int64_t g0 = PER * THREADS; g0 < n; g0 += PER * THREADS) {
        float2 dc[PER];
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            const int64_t k = g0 + (int64_t)i * THREADS + tid;
            dc[i] = k < n ? __ldca(reinterpret_cast<const float2 *>(&L[k].drop))
                          : make_float2(-INFINITY, 0.0f);
        }
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            kd = umax(kd, fs_select_key(dc[i].x));
            count += __float_as_int(dc[i].y);
        }
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        kd = umax(kd, fs_select_key(mine[i].drop));
        count += mine[i].count;
    }
    kd = __reduce_max_sync(FULL, kd);
    count = __reduce_add_sync(FULL, count);
    if (lane == 0) {
        sh.red_kd[warp] = kd;
        sh.red_count[warp] = count;
    }
    __syncthreads();
    kd = sh.red_kd[0];
    count = sh.red_count[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w) {
        kd = umax(kd, sh.red_kd[w]);
        count += sh.red_count[w];
    }
    *kd_out = kd;
    *count_out = count;
}

/* The first of n (< 32) consecutive slots counted from *ctr for this lane:
 * each warp takes its lanes' slots with one atomic.  Every lane of the warp
 * calls it. */
__device__ __forceinline__ int warp_alloc(int *ctr, int n)
{
    const int lane = threadIdx.x & 31;
    const unsigned below = (1u << lane) - 1u;
    int before = 0, total = 0;
#pragma unroll
    for (int b = 0; b < 5; ++b) {
        const unsigned m = __ballot_sync(FULL, (n >> b) & 1);
        before += __popc(m & below) << b;
        total += __popc(m) << b;
    }
    int base = 0;
    if (lane == 0 && total > 0)
        base = atomicAdd(ctr, total);
    return __shfl_sync(FULL, base, 0) + before;
}

/* Stage the entries of c above D (key kd) -- this thread's share of the
 * exact prefix -- as keys, from registers, and raise sh.khi to their largest
 * score key.  Every thread calls it. */
__device__ __forceinline__ void stage_lists(const fs_cand_list (&c)[PER], uint32_t kd,
                                            resolve_smem &sh)
{
    static_assert(PER * FS_CAND_LIST < 32, "a lane's entries fit a 32-bit mask");
    uint32_t valid = 0u, khi = 0u;
#pragma unroll
    for (int i = 0; i < PER; ++i)
#pragma unroll
        for (int j = 0; j < FS_CAND_LIST; ++j) {
            const uint32_t ks = fs_select_key(c[i].s[j]);
            const bool v = c[i].id[j] >= 0 && ks > kd;
            valid |= (v ? 1u : 0u) << (FS_CAND_LIST * i + j);
            khi = v ? umax(khi, ks) : khi;
        }
    khi = __reduce_max_sync(FULL, khi);
    if ((threadIdx.x & 31) == 0 && khi > 0u)
        atomicMax(&sh.khi, khi);
    int at = warp_alloc(&sh.g, __popc(valid));
#pragma unroll
    for (int i = 0; i < PER; ++i)
#pragma unroll
        for (int j = 0; j < FS_CAND_LIST; ++j)
            if ((valid >> (FS_CAND_LIST * i + j)) & 1u) {
                if (at < STAGE)
                    sh.stage[at] = entry_key(fs_select_key(c[i].s[j]), c[i].id[j]);
                ++at;
            }
}

/* Stage the row's prefix (the first group from `mine`, later ones reloaded);
 * returns G, its number of entries (staged when G <= STAGE).  One barrier. */
__device__ __forceinline__ int stage_row(const fs_cand_list *L, int64_t n,
                                         const fs_cand_list (&mine)[PER], uint32_t kd,
                                         resolve_smem &sh)
{
    stage_lists(mine, kd, sh);
    for (int64_t g0 = PER * THREADS; g0 < n; g0 += PER * THREADS) {
        fs_cand_list c[PER];
        load_group(L, g0, n, c);
        stage_lists(c, kd, sh);
    }
    __syncthreads();
    return sh.g;
}

/* Where the radix select reads the prefix's keys: the staged ones, or the
 * lists' entries above D when the prefix was too long to stage. */
struct key_src {
    const unsigned long long *stage; /* NULL: read the lists */
    const fs_cand_list *L;
    int64_t total; /* keys staged, or entries of the lists */
    uint32_t kd;
};

/* Keys a thread reads at once: all of a full stage. */
constexpr int BATCH = STAGE / THREADS;

/* This thread's keys k0 + i THREADS + tid (i < BATCH) of src; ok[i] when
 * there is one.  STAGED: src.stage is known to be set (no list reads
 * compiled). */
template <bool STAGED = false>
__device__ __forceinline__ void load_keys(const key_src &src, int64_t k0,
                                          unsigned long long (&key)[BATCH], bool (&ok)[BATCH])
{
#pragma unroll
    for (int i = 0; i < BATCH; ++i) {
        const int64_t k = k0 + (int64_t)i * THREADS + threadIdx.x;
        ok[i] = false;
        key[i] = 0ull;
        if (k >= src.total)
            continue;
        if (STAGED || src.stage) {
            key[i] = src.stage[k];
            ok[i] = true;
            continue;
        }
        const fs_cand_list &c = src.L[k / FS_CAND_LIST];
        const int j = (int)(k % FS_CAND_LIST);
        const uint32_t ks = fs_select_key(c.s[j]);
        const int32_t id = c.id[j];
        ok[i] = id >= 0 && ks > src.kd;
        key[i] = entry_key(ks, id);
    }
}

/* The radix select's progress, the same in every thread: the N-th largest
 * key has bits >= hi equal to prefix's (below hi prefix is 0), and is the
 * need-th largest of the keys that do; `size` keys are >= prefix -- the
 * keys above that bucket (all among the best N) and the bucket's own. */
struct select_state {
    unsigned long long prefix;
    int hi; /* 64: no bit fixed */
    int need;
    int size;
};

/* Before the first round: every staged key's score key lies in
 * [kd + 1, khi], so the bits above their highest difference are common to
 * all of them and need no round. */
__device__ __forceinline__ select_state select_start(uint32_t kd, uint32_t khi, int G, int N)
{
    const uint32_t diff = (kd + 1u) ^ khi;
    select_state st;
    st.hi = 32 + (diff ? 32 - __clz((int)diff) : 0);
    st.prefix = st.hi >= 64 ? 0ull : (((unsigned long long)khi << 32) >> st.hi) << st.hi;
    st.need = N;
    st.size = G;
    return st;
}

__device__ __forceinline__ bool in_bucket(unsigned long long key, const select_state &st)
{
    return st.hi >= 64 || (key >> st.hi) == (st.prefix >> st.hi);
}

/* Histogram into h the digit (key >> shift) & 255 of the keys in st's
 * bucket. */
template <bool STAGED>
__device__ __forceinline__ void count_digits(const key_src &src, const select_state &st,
                                             int shift, unsigned int *h)
{
    for (int64_t k0 = 0; k0 < src.total; k0 += (int64_t)BATCH * THREADS) {
        unsigned long long key[BATCH];
        bool ok[BATCH];
        load_keys<STAGED>(src, k0, key, ok);
#pragma unroll
        for (int i = 0; i < BATCH; ++i)
            if (ok[i] && in_bucket(key[i], st))
                atomicAdd(&h[(key[i] >> shift) & 255u], 1u);
    }
}

/* Each warp on its own, from the whole histogram h of the digit at shift:
 * narrow st to the bucket holding the need-th largest key.  Every warp
 * computes the same, so no thread has to publish it (and no barrier). */
__device__ __forceinline__ void narrow(const unsigned int *h, int shift, int N, select_state &st)
{
    const int lane = threadIdx.x & 31;
    /* lane l holds buckets 255 - 8 l .. 248 - 8 l, from the top */
    const uint4 a = *reinterpret_cast<const uint4 *>(h + 252 - 8 * lane);
    const uint4 b = *reinterpret_cast<const uint4 *>(h + 248 - 8 * lane);
    const unsigned int v[8] = {a.w, a.z, a.y, a.x, b.w, b.z, b.y, b.x};
    unsigned int part = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i)
        part += v[i];
    unsigned int incl = part;
#pragma unroll
    for (int m = 1; m < 32; m <<= 1) {
        const unsigned int o = __shfl_up_sync(FULL, incl, m);
        if (lane >= m)
            incl += o;
    }
    const unsigned int need = (unsigned int)st.need;
    const int src = __ffs(__ballot_sync(FULL, incl >= need)) - 1;
    /* what the lane would pick if the need-th key were among its buckets */
    unsigned int above = incl - part, cnt = 0;
    int at = 8;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        if (at == 8 && above + v[i] >= need) {
            at = i;
            cnt = v[i];
        } else if (at == 8) {
            above += v[i];
        }
    }
    at = __shfl_sync(FULL, at, src);
    above = __shfl_sync(FULL, above, src);
    cnt = __shfl_sync(FULL, cnt, src);
    st.prefix |= (unsigned long long)(255 - 8 * src - at) << shift;
    st.need = (int)(need - above);
    st.size = N - st.need + (int)cnt;
    st.hi = shift;
}

/* Radix rounds, 8 bits a round from the top, until at most CAP keys lie at
 * or above st's bucket (with distinct keys a bucket of fixed bits holds one
 * key, so at most 8 rounds); returns the rounds done.  One barrier a round:
 * the rounds count into three histograms in turn and round r zeroes round
 * r + 1's, whose last readers (round r - 2's narrow, in every warp) are
 * behind round r - 1's barrier, and whose counts come after round r's. */
template <int CAPT, bool STAGED = false>
__device__ __forceinline__ int select_rounds(const key_src &src, int N, select_state &st,
                                             unsigned int (&hist)[3][256])
{
    int r = 0;
    while (st.size > CAPT && st.hi > 0) {
        unsigned int *h = hist[r % 3];
        hist[(r + 1) % 3][threadIdx.x] = 0u;
        const int shift = st.hi > 8 ? st.hi - 8 : 0;
        count_digits<STAGED>(src, st, shift, h);
        __syncthreads();
        narrow(h, shift, N, st);
        ++r;
    }
    return r;
}

/* The keys >= st.prefix (st.size <= CAPT of them) into top.  One barrier. */
template <int CAPT, bool STAGED = false>
__device__ __forceinline__ void gather_top(const key_src &src, const select_state &st,
                                           unsigned long long *top, int *slots)
{
    for (int64_t k0 = 0; k0 < src.total; k0 += (int64_t)BATCH * THREADS) {
        unsigned long long key[BATCH];
        bool ok[BATCH];
        load_keys<STAGED>(src, k0, key, ok);
        int n = 0;
#pragma unroll
        for (int i = 0; i < BATCH; ++i) {
            ok[i] = ok[i] && key[i] >= st.prefix;
            n += ok[i] ? 1 : 0;
        }
        int at = warp_alloc(slots, n);
#pragma unroll
        for (int i = 0; i < BATCH; ++i)
            if (ok[i]) {
                if (at < CAPT)
                    top[at] = key[i];
                ++at;
            }
    }
    __syncthreads();
}

/* The best N of the c (<= THREADS) distinct keys into f, in order: a key's
 * rank is the number of larger keys, counted by P threads a key (as many as
 * fit the block, up to 8) and summed over them. */
__device__ __forceinline__ void rank_keys(const unsigned long long *keys, int c, int N,
                                          fs_filter_record &f)
{
    const int lg = c <= THREADS / 8 ? 3 : c <= THREADS / 4 ? 2 : c <= THREADS / 2 ? 1 : 0;
    const int P = 1 << lg;
    const int q = threadIdx.x >> lg, part = threadIdx.x & (P - 1);
    unsigned long long key = 0ull;
    int r = 0;
    if (q < c) {
        key = keys[q];
#pragma unroll 4
        for (int j = part; j < c; j += P)
            r += keys[j] > key ? 1 : 0;
    }
    for (int m = 1; m < P; m <<= 1)
        r += __shfl_xor_sync(FULL, r, m);
    if (q < c && part == 0 && r < N) {
        f.s[r] = fs_select_score((uint32_t)(key >> 32));
        f.id[r] = (int32_t)~(uint32_t)key;
    }
}

/* Warps 2 and 3, candidate t = tid - 64 each (t < N), while thread 0
 * decides: the first candidate of t's noise block -- the one that pushes the
 * block in the kept record -- gets t's score in its row of sh.vt, at t's place in
 * the block; sh.leads marks the first ones.  The kept set is a prefix of the
 * candidates (every filter keeps an upper set of scores, and the candidates
 * are sorted by score), so for a kept t the first candidate of its block is
 * also its first kept one, the block fs_filter_kept_record groups it in. */
__device__ __forceinline__ void note_blocks(const fs_filter_record &f, int N,
                                            float (*vt)[FS_NOISE_BLOCK], uint32_t *leads)
{
    const int t = threadIdx.x - 64, lane = t & 31;
    const bool cand = t < N;
    const int32_t id = cand ? f.id[t] : 0;
    const int32_t blk = cand ? id / FS_NOISE_BLOCK : -1 - lane; /* the others match nothing */
    int first = (t & ~31) + __ffs(__match_any_sync(FULL, blk)) - 1;
    if (cand && t >= 32) {
        /* candidates 0 .. 31 come before (all present: N > t) */
        uint32_t m = 0u;
#pragma unroll
        for (int j = 0; j < 32; ++j)
            m |= (f.id[j] / FS_NOISE_BLOCK == blk ? 1u : 0u) << j;
        if (m)
            first = __ffs(m) - 1;
    }
    if (cand)
        vt[first][id % FS_NOISE_BLOCK] = f.s[t];
    const uint32_t firsts = __ballot_sync(FULL, cand && first == t);
    if (lane == 0)
        leads[t >> 5] = firsts;
}

/* fs_record_warp_reduce's result in lane 0 when only the lanes with `pushed`
 * changed their records from fs_record_init: the rounds whose partners of
 * lanes 0 .. mask - 1 are all untouched are left out (merging an untouched
 * record changes nothing, bit for bit, and those lanes' values are all lane
 * 0's tree reads afterwards).  The whole warp calls it. */
__device__ __forceinline__ void reduce_pushed(fs_record &rec, bool pushed)
{
    const uint32_t m = __ballot_sync(FULL, pushed);
    const int last = 31 - __clz((int)m); /* -1 when none pushed */
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1)
        if (mask <= last) { /* the same in every lane */
            const fs_record o = fs_record_shfl_xor(rec, mask);
            fs_record_merge(&rec, &o);
        }
}

/* A tree row's part in its resolve (TREE instances only): its children, and
 * its FS_TREE_MAX_CHILDREN scores in global memory, which the resolve
 * replaces by the kept record's -- a child outside the kept set at -inf. */
struct tree_ctx {
    const fs_tree_row *row;
    float *child_s;
};

/* A kept noise block's row of vt (its scores by place, -inf where no
 * candidate is), as four 16-byte loads. */
__device__ __forceinline__ void load_vt_row(const float (&row)[FS_NOISE_BLOCK],
                                            float (&v)[FS_NOISE_BLOCK])
{
#pragma unroll
    for (int q = 0; q < FS_NOISE_BLOCK / 4; ++q) {
        const float4 x = reinterpret_cast<const float4 *>(row)[q];
        v[4 * q] = x.x;
        v[4 * q + 1] = x.y;
        v[4 * q + 2] = x.z;
        v[4 * q + 3] = x.w;
    }
}

/* The kept record of the N candidates f under cut: a thread per kept noise
 * block (its first candidate, from note_blocks) pushes the block's kept
 * scores from its row of vt, and the blocks' records are merged over the
 * warp -- or the first two, when the kept set reaches past candidate 31 --
 * into the return value of thread 0.  The same blocks, noise and tokens as
 * fs_filter_kept_record; sum_exp carries the merge's rounding.  For tree
 * rows (chain rows take kept_record_chain): the block goes through the tree
 * push first (tree_scan.cuh: the row's excluded children in the block into
 * the log-sum-exp alone, the kept children's scores into child_s, shared
 * memory set to -inf beforehand), so the record is
 * fs_tree_filter_kept_record's.  Every thread of the block calls it. */
__device__ __forceinline__ fs_record kept_record_tree(const fs_filter_record &f, int N,
                                                 const fs_filter_cut &cut,
                                                 const float (*vt)[FS_NOISE_BLOCK],
                                                 const uint32_t *leads, const fs_row_desc &d,
                                                 fs_record *red, const fs_tree_row *tree_row,
                                                 float *child_s)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const bool wide = N > 32 && fs_filter_keeps(&cut, f.s[32]); /* the same in every thread */
    fs_record rec;
    fs_record_init(&rec);
    const bool push = tid < N && fs_filter_keeps(&cut, f.s[tid]) && ((leads[warp] >> lane) & 1u);
    if (push) {
        float v[FS_NOISE_BLOCK];
        load_vt_row(vt[tid], v);
        /* the block's candidates past the kept prefix, and its empty places */
#pragma unroll
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            v[i] = fs_filter_keeps(&cut, v[i]) ? v[i] : -INFINITY;
        const int32_t blk = f.id[tid] / FS_NOISE_BLOCK;
        fs_tree_scan_block(&rec, d, tree_row, child_s, blk * FS_NOISE_BLOCK, FS_NOISE_BLOCK, v);
        fs_record_push_block(&rec, &d, blk * FS_NOISE_BLOCK, FS_NOISE_BLOCK, v);
    }
    if (warp == 0 || (wide && warp == 1))
        reduce_pushed(rec, push);
    if (wide) {
        if (warp == 1 && lane == 0)
            *red = rec;
        __syncthreads();
        if (tid == 0)
            fs_record_merge(&rec, red);
    }
    return rec;
}

/* The sampling candidate of lane (lane ^ mask) merged into (key, id, s) by
 * fs_record_merge's rule (larger key, then lower id).  The whole warp calls it. */
__device__ __forceinline__ void best_merge_xor(float &key, int32_t &id, float &s, int mask)
{
    const float ok = __shfl_xor_sync(FULL, key, mask);
    const int32_t oi = __shfl_xor_sync(FULL, id, mask);
    const float os = __shfl_xor_sync(FULL, s, mask);
    if (fs_beats(ok, oi, key, id)) {
        key = ok;
        id = oi;
        s = os;
    }
}

/* fs_record_offer_block of a kept block into a fresh record, unrolled: the
 * same S (fs_block_sum's pairs and tree), key and inverse CDF (fs_block_pick
 * adds the same weights in the same order; the excluded and empty places
 * are -inf, weight 0, which leave its sum as it is), so the same bits.
 * This unit keeps record.h's loops rolled for size (FS_COLD_CODE), which
 * puts a 16-step loop of exponentials and the pick's 16 steps on the kept
 * step's path; with the kept step's code already in L2 (the warm-up slots)
 * its length is latency. */
__device__ __forceinline__ void kept_block_draw(fs_record &rec, const fs_row_desc &d,
                                                int32_t id0, const float (&v)[FS_NOISE_BLOCK],
                                                float m)
{
    float e[FS_NOISE_BLOCK];
#pragma unroll
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        e[i] = fs_exp(v[i] - m);
    float t[FS_NOISE_BLOCK / 2];
#pragma unroll
    for (int i = 0; i < FS_NOISE_BLOCK / 2; ++i)
        t[i] = e[2 * i] + e[2 * i + 1];
#pragma unroll
    for (int w = FS_NOISE_BLOCK / 4; w > 0; w >>= 1)
#pragma unroll
        for (int i = 0; i < w; ++i)
            t[i] = t[2 * i] + t[2 * i + 1];
    const float S = t[0];
    uint32_t wg, wu;
    fs_block_words(d.seed, d.offset, d.position, (uint32_t)id0 / FS_NOISE_BLOCK, &wg, &wu);
    const float key = m + logf(S) + fs_gumbel(wg);
    const float target = fs_uniform(wu) * S;
    float c = 0.0f, last_s = -INFINITY, pick_s = -INFINITY;
    int last = -1, pick = -1;
#pragma unroll
    for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
        if (e[i] > 0.0f) {
            c += e[i];
            last = i;
            last_s = v[i];
            if (pick < 0 && target < c) {
                pick = i;
                pick_s = v[i];
            }
        }
    }
    if (pick < 0) {
        pick = last;
        pick_s = last_s;
    }
    if (pick >= 0) {
        rec.best_key = key;
        rec.best_id = id0 + pick;
        rec.best_s = pick_s;
    }
}

/* The kept record of a chain row, from what the decision already holds: the
 * same record bit for bit but sum_exp, with less code on a path that runs
 * once a call on cold code (the kept step was 13-15k of a resolve's ~33k SM
 * cycles).  The kept set is the candidate prefix [0, M), so
 *   max_s, max_id = candidate 0's (the first is always kept);
 *   sum_exp      = the kept candidates' weights sh.w (exp(s - max_s), the
 *                  walk's), summed by warp 0 -- kept_record_tree's rounds
 *                  it by block instead;
 *   sel_s        = the merged record's, if the cut keeps it (a kept selected
 *                  token is a candidate, with the scan's score);
 *   flags        = 0 (candidates are finite);
 * and the Gumbel winner from each kept block's lead as fs_record_push_block
 * draws it (the same v and fs_block_max, and kept_block_draw, hence the
 * same keys and tokens), merged by (key, id) alone.  Every thread of the block calls it; thread 0 gets the
 * record. */
__device__ __forceinline__ fs_record kept_record_chain(const fs_filter_record &f, int N,
                                                       const fs_filter_cut &cut,
                                                       const float (*vt)[FS_NOISE_BLOCK],
                                                       const uint32_t *leads, const float *w,
                                                       const fs_row_desc &d, float sel_s,
                                                       fs_record *red)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const bool wide = N > 32 && fs_filter_keeps(&cut, f.s[32]); /* the same in every thread */
    fs_record rec;
    fs_record_init(&rec);
    if (!(d.flags & FS_ROWF_GREEDY) && tid < N && fs_filter_keeps(&cut, f.s[tid]) &&
        ((leads[warp] >> lane) & 1u)) {
        const int32_t id0 = f.id[tid] / FS_NOISE_BLOCK * FS_NOISE_BLOCK;
        float v[FS_NOISE_BLOCK];
        load_vt_row(vt[tid], v);
        /* eligible: kept (the block's empty places are -inf) and not excluded */
#pragma unroll
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            v[i] = fs_filter_keeps(&cut, v[i]) && id0 + i != d.excluded ? v[i] : -INFINITY;
        const float m = fs_block_max(v);
        if (m > -INFINITY)
            kept_block_draw(rec, d, id0, v, m);
    }
    float key = rec.best_key, bs = rec.best_s;
    int32_t bid = rec.best_id;
    if (warp == 0 || (wide && warp == 1)) {
#pragma unroll
        for (int mask = 16; mask > 0; mask >>= 1)
            best_merge_xor(key, bid, bs, mask);
    }
    float z = 0.0f;
    if (warp == 0) {
        z = tid < N && fs_filter_keeps(&cut, f.s[tid]) ? w[tid] : 0.0f;
        if (tid + 32 < N && fs_filter_keeps(&cut, f.s[tid + 32]))
            z += w[tid + 32];
#pragma unroll
        for (int mask = 16; mask > 0; mask >>= 1)
            z += __shfl_xor_sync(FULL, z, mask);
    }
    if (wide) {
        if (warp == 1 && lane == 0) {
            red->best_key = key;
            red->best_id = bid;
            red->best_s = bs;
        }
        __syncthreads();
        if (tid == 0 && fs_beats(red->best_key, red->best_id, key, bid)) {
            key = red->best_key;
            bid = red->best_id;
            bs = red->best_s;
        }
    }
    rec.max_s = f.s[0];
    rec.max_id = f.id[0];
    rec.sum_exp = z;
    rec.best_key = key;
    rec.best_id = bid;
    rec.best_s = bs;
    rec.sel_s = fs_filter_keeps(&cut, sel_s) ? sel_s : -INFINITY;
    rec.flags = 0u;
    return rec;
}

/* Where a row the one pass cannot decide goes: fb[atomicAdd(flag_n)]
 * (one GPU: the order of the rows in fb does not matter), or, on a sharded
 * context, stage[row] -- the TP second pass compacts stage into fb in row
 * order, so that every rank's fb, hence its histograms' layout, is the
 * same -- with flag_n[1] raised to the histogram passes the row needs. */
struct handover {
    fs_fallback_row *fb;
    fs_fallback_row *stage; /* sharded contexts; NULL otherwise */
    unsigned int *flag_n;
    int32_t *out_fallback;
};

/* Thread 0: hand row over to the second pass (nowhere when ho.flag_n is
 * NULL: warm_inputs' made-up row). */
__device__ __forceinline__ void hand_over(int64_t row, const fs_record &rec,
                                          const fs_filter_desc &fd, const fs_row_desc &d,
                                          int count, const handover &ho)
{
    if (!ho.flag_n)
        return;
    fs_fallback_row r;
    r.row = (int32_t)row;
    r.count = count;
    r.max_key = 0u;
    r.m1 = rec.max_s;
    r.t_k = -INFINITY;
    r.t_p = -INFINITY;
    r.n_defer = 0u; /* the draw may defer blocks in any phase (a guessed draw) */
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
    if (ho.stage) {
        /* pass 0 always runs: it finds the row's max */
        const int passes = (k > 0 ? FS_SELECT_LEVELS : 0) + (fd.top_p < 1.0f ? FS_SELECT_LEVELS : 0);
        ho.stage[row] = r;
        atomicAdd(ho.flag_n, 1u);
        atomicMax(ho.flag_n + 1, (unsigned int)(passes > 0 ? passes : 1));
    } else {
        ho.fb[atomicAdd(ho.flag_n, 1u)] = r;
    }
    if (ho.out_fallback)
        atomicAdd(&ho.out_fallback[d.request], 1);
}

/* A made-up filtered row whose resolve takes every step a real row's
 * does -- staged prefix, radix rounds, the walk under all three filters, a
 * kept record over two warps -- for the merge kernel's warm-up slots to
 * run (merge_row.cuh; each runs one part, warm_part): warm_inputs gives its
 * record and descriptors, warm_lists this thread's share of its lists, in
 * registers, so that the block waits on no memory and runs ahead of the
 * rows.  Lists k < WARM_FULL (150) hold the prefix, WARM_G (600) entries of
 * distinct scores warm_score(r) = 10 - 0.05 r by rank r (list k, place j:
 * r = 150 j + k, so each list is sorted) above their drop WARM_DROP (-25),
 * each token (warm_id(r)) in a noise block of its own; the other lists are
 * empty, so all of them are the first group (WARM_LISTS = PER x THREADS
 * lists) and the lists in memory are never read.  Top-k 50, top-p 0.9 and
 * min-p 0.05 keep the best 35: the walk stops inside the candidates, and
 * the row is decided (a made-up row handed over would be handed nowhere:
 * hand_over). */
struct warm_row {
    fs_record rec;
    fs_row_desc d;
    fs_filter_desc fd;
};
constexpr int64_t WARM_LISTS = (int64_t)PER * THREADS;
constexpr int WARM_FULL = 150;
constexpr int WARM_G = WARM_FULL * FS_CAND_LIST;
constexpr int WARM_COUNT = 1000; /* finite tokens a full list saw */
constexpr float WARM_DROP = -25.0f;

__device__ __forceinline__ float warm_score(int r)
{
    return 10.0f - 0.05f * (float)r;
}

__device__ __forceinline__ int32_t warm_id(int r)
{
    return r * 37 + 11;
}

__device__ __forceinline__ void warm_lists(fs_cand_list (&mine)[PER])
{
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const int k = i * THREADS + (int)threadIdx.x;
        fs_cand_init(&mine[i]);
        if (k >= WARM_FULL)
            continue;
#pragma unroll
        for (int j = 0; j < FS_CAND_LIST; ++j) {
            const int r = j * WARM_FULL + k;
            mine[i].s[j] = warm_score(r);
            mine[i].id[j] = warm_id(r);
        }
        mine[i].drop = WARM_DROP;
        mine[i].count = WARM_COUNT;
    }
}

__device__ __forceinline__ warm_row warm_inputs()
{
    warm_row w;
    fs_record_init(&w.rec);
    w.rec.max_s = warm_score(0);
    w.rec.max_id = warm_id(0);
    w.rec.sum_exp = 20.6f; /* the prefix's ~20.5 and a tail below -25 */
    w.d.inv_temp = 1.0f;
    w.d.flags = FS_ROWF_VALID | FS_ROWF_FILTER;
    w.d.seed = 0;
    w.d.offset = 0;
    w.d.position = 0;
    w.d.excluded = -1;
    w.d.selected = -1;
    w.d.request = 0;
    w.fd.top_k = 50;
    w.fd.top_p = 0.9f;
    w.fd.log_min_p = -2.9957323f; /* log 0.05 */
    w.fd.active = 1u;
    return w;
}

/* The first PER x THREADS lists of row `row`, this thread's share, in two
 * steps: the merge kernel issues their loads (fs_filter_issue_lists),
 * merges the row's tile records while they are in flight, and then puts
 * them in place (fs_filter_take_lists). */
__device__ __forceinline__ void fs_filter_issue_lists(const fs_cand_list *__restrict__ cands,
                                                      int64_t row, int64_t lists_per_row,
                                                      raw_list (&r)[PER])
{
    issue_group(cands + row * lists_per_row, 0, lists_per_row, r);
}

__device__ __forceinline__ void fs_filter_take_lists(const fs_cand_list *__restrict__ cands,
                                                     int64_t row, int64_t lists_per_row,
                                                     const raw_list (&r)[PER],
                                                     fs_cand_list (&mine)[PER])
{
    take_group(cands + row * lists_per_row, 0, lists_per_row, r, mine);
}

/* The block's shared state: one instance per kernel, whichever of the
 * functions below the kernel calls, at the start of the kernel's dynamic
 * shared memory -- every kernel that resolves is launched with at least
 * sizeof(resolve_smem) of it.  Dynamic, so that the filtered merge's second
 * pass (filter_fallback.cu) reuses the same bytes after its grid barrier:
 * both static, the two blocks an SM it runs held 142 KB of shared memory
 * instead of 92. */
__device__ __forceinline__ resolve_smem &shared_state()
{
    extern __shared__ __align__(16) unsigned char fs_dyn_smem[];
    return *reinterpret_cast<resolve_smem *>(fs_dyn_smem);
}

/* How many of a[0 .. c-1] (16-byte aligned, distinct) come before x: the
 * larger ones (LARGER) or the smaller ones.  16-byte loads, four of them in
 * flight: one element at a time, each shared-memory load's latency would be
 * paid in turn. */
template <typename T, bool LARGER>
__device__ __forceinline__ int count_before(const T *a, int c, T x)
{
    constexpr int V = 16 / (int)sizeof(T); /* elements a load */
    int r[4] = {0, 0, 0, 0};
    int j = 0;
#pragma unroll 1
    for (; j + 4 * V <= c; j += 4 * V) {
#pragma unroll
        for (int h = 0; h < 4; ++h) {
            union {
                uint4 u;
                T v[V];
            } x16;
            x16.u = *reinterpret_cast<const uint4 *>(a + j + V * h);
#pragma unroll
            for (int e = 0; e < V; ++e)
                r[h] += (LARGER ? x16.v[e] > x : x16.v[e] < x) ? 1 : 0;
        }
    }
#pragma unroll 1
    for (; j < c; ++j)
        r[0] += (LARGER ? a[j] > x : a[j] < x) ? 1 : 0;
    return r[0] + r[1] + r[2] + r[3];
}

/* Where the wide resolve finds a row: its lists and exact prefix, and its
 * descriptors in global memory (not the caller's copies: a called
 * function's reference arguments would keep them in local memory for the
 * whole kernel). */
struct wide_src {
    const fs_cand_list *L; /* the row's lists */
    int64_t lists;
    uint32_t kd; /* D's key */
    int G;       /* the prefix's entries; 0: no wide resolve (off, or merged summaries) */
    const fs_row_desc *d;
    const fs_filter_desc *fd;
};

/* The walk of fs_filter_resolve_n over the wide resolve's N <= 2 THREADS
 * candidates (scores s, weights w), by the whole block: the mass before
 * each candidate is a block-wide prefix sum, every tie group's first
 * candidate tests the walk's stops (min-p, top-p's cut, top-p's "cannot
 * tell" against the bounds on Z_k), and the first one that stops decides,
 * as the walk's first stop does -- the tests are monotone along the
 * candidates.  The same decision up to the rounding of the sums (added in
 * another order).  With one thread walking up to 512 candidates, a top-p
 * row decided here cost 36-96 us more than a top-k 50 row, 32-51 us with
 * this walk (H100).  The decision in sh.one and sh.cut; every thread calls
 * it. */
__device__ __forceinline__ void wide_walk(resolve_smem &sh, const float *s, const float *w, int N,
                                          int count, int32_t k, float m, float Z,
                                          const fs_filter_desc &fd)
{
    static_assert(WIDE <= 2 * THREADS, "two candidates a thread");
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    /* every thread the same, from the same scores */
    const int nk = fs_filter_top_k_prefix(k, N, count, s);
    const int limit = nk >= 0 ? nk : N;
    const bool top_p = fd.top_p < 1.0f;
    /* top-k alone: nothing ends the walk before limit */
    int key = 2 * limit;
    if (top_p || fd.log_min_p > -INFINITY) {
        const int a = 2 * tid, b = a + 1;
        const float wa = a < N ? w[a] : 0.0f, wb = b < N ? w[b] : 0.0f;
        const int upto = nk >= 0 ? nk : N;
        const float mine = wa + wb;
        float incl = mine, zp = (a < upto ? wa : 0.0f) + (b < upto ? wb : 0.0f);
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const float y = __shfl_up_sync(FULL, incl, o);
            incl += lane >= o ? y : 0.0f;
            zp += __shfl_xor_sync(FULL, zp, o);
        }
        if (lane == 31)
            sh.red_kd[warp] = __float_as_uint(incl);
        if (lane == 0)
            sh.wzp[warp] = zp;
        __syncthreads();
        float before = 0.0f, z = 0.0f;
#pragma unroll
        for (int i = 0; i < WARPS; ++i) {
            before += i < warp ? __uint_as_float(sh.red_kd[i]) : 0.0f;
            z += sh.wzp[i];
        }
        /* Z_k relative to m: exact, or bounded by the candidates' mass and
           the row's when the top-k set runs past them (top-p only) */
        const float z_lo = k > 0 && top_p ? z : Z;
        const float z_hi = k > 0 && top_p && nk < 0 ? Z : z_lo;
        before += incl - mine; /* the mass before candidate a */
        /* the first stop, as 2 i + 1 when the walk cannot tell there */
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int i = a + h;
            if (i < limit && (i == 0 || s[i] != s[i - 1])) {
                const bool cut =
                    !(s[i] - m >= fd.log_min_p) || (top_p && before >= fd.top_p * z_hi);
                const bool unsure = !cut && top_p && before >= fd.top_p * z_lo;
                if ((cut || unsure) && 2 * i + (unsure ? 1 : 0) < key)
                    key = 2 * i + (unsure ? 1 : 0);
            }
            before += h == 0 ? wa : 0.0f;
        }
        key = __reduce_min_sync(FULL, key);
        if (lane == 0)
            sh.red_count[warp] = key;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < WARPS; ++i)
            key = sh.red_count[i] < key ? sh.red_count[i] : key;
    }
    if (tid == 0) {
        const int i = key >> 1;
        /* kept up to the end of an incomplete list: the kept set may run
           past the candidates */
        const bool one = !(key & 1) && i > 0 && !(i == limit && nk < 0);
        sh.one = one ? 1 : 0;
        if (one) {
            sh.cut.threshold = s[i - 1];
            sh.cut.max_s = m;
            sh.cut.log_min_p = fd.log_min_p;
        }
    }
    __syncthreads();
}

/* The wide resolve of a chain row whose best N = min(64, G) candidates left
 * it undecided while its exact prefix holds G > N entries, all staged: the
 * same walk (fs_filter_resolve_n) over the best min(G, WIDE) of them,
 * selected and ranked as in prefix_candidates; a decided row's kept record
 * is its kept candidates sorted by id (a thread a candidate, ranked among
 * them) and pushed a noise block at a time by the thread of the block's
 * first one -- the blocks, scores, noise and tokens of
 * fs_filter_kept_record -- then merged over the block.  A row no filter
 * can end inside those candidates (a wide top-p whose prefix holds less
 * than p of the row's mass, a min-p band past the prefix) is handed over
 * after one pass over the staged keys.  Returns 1 to every thread when
 * decided (the kept record in sh.red, thread 0's), 0 when the row still
 * needs the second pass.  Taken only by rows that would otherwise take it
 * (~1 ms or more a call on an H100), so it is kept out of line: the rows
 * the best 64 decide run none of its code.  Its arrays reuse the first resolve's
 * shared memory, done with by then: the gathered keys `vt` (WIDE keys, 4
 * KB), the candidates, weights and the kept ones by id `stage` (the staged
 * keys, at most WIDE of them when ranked from there: 4 KB), the reduction
 * `top`.  Its arguments are values and pointers to global memory only (a
 * reference to the caller's record or descriptors puts them in local
 * memory for the whole kernel).  A first version with both -- references,
 * and 14 KB of shared memory of its own -- made every filtered call of 1-64
 * rows 1-4 us slower (H100, 151936 x 4096); this one costs them nothing
 * measurable.  Every thread calls it. */
static __device__ __noinline__ int wide_decide(float max_s, float sum_exp, int count,
                                        const fs_cand_list *L, int64_t lists, uint32_t kd, int G,
                                        const fs_row_desc *dp, const fs_filter_desc *fdp)
{
    resolve_smem &sh = shared_state();
    const fs_row_desc d = *dp;
    const fs_filter_desc fd = *fdp;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int N = G < WIDE ? G : WIDE;
    static_assert(sizeof(sh.vt) == WIDE * sizeof(unsigned long long), "the gathered keys fit vt");
    static_assert(WIDE * 8 + 3 * WIDE * 4 <= (int)sizeof(sh.stage) && 2 * WIDE * 4 <= WIDE * 8,
                  "the candidates fit the stage beside WIDE keys; the kept ones by id below them");
    static_assert(WARPS * sizeof(fs_record) <= sizeof(sh.top), "the reduction fits top");
    unsigned long long *wkey = reinterpret_cast<unsigned long long *>(&sh.vt[0][0]);
    float *wsc = reinterpret_cast<float *>(sh.stage + WIDE);
    int32_t *wid = reinterpret_cast<int32_t *>(wsc + WIDE);
    float *ww = reinterpret_cast<float *>(wid + WIDE);
    fs_record *wred = reinterpret_cast<fs_record *>(sh.top);
    const int32_t k = fs_filter_top_k(&fd, count);

    /* can a filter end inside the best N?  The prefix's mass (bounds the
       candidates' from above) and the min-p band's length in it */
    float mass = 0.0f;
    int band = 0;
#pragma unroll 1
    for (int i = tid; i < G; i += THREADS) {
        const float si = fs_select_score((uint32_t)(sh.stage[i] >> 32));
        mass += fs_exp(si - max_s);
        band += si - max_s >= fd.log_min_p ? 1 : 0;
    }
#pragma unroll
    for (int m = 16; m > 0; m >>= 1)
        mass += __shfl_xor_sync(FULL, mass, m);
    band = __reduce_add_sync(FULL, band);
    if (lane == 0) {
        sh.red_kd[warp] = __float_as_uint(mass);
        sh.red_count[warp] = band;
    }
    /* the first select's histograms and gather count, reset for this one */
#pragma unroll 1
    for (int i = tid; i < 3 * 256; i += THREADS)
        (&sh.hist[0][0])[i] = 0u;
    if (tid == 0)
        sh.c = 0;
    __syncthreads();
    mass = 0.0f;
    band = 0;
#pragma unroll
    for (int i = 0; i < WARPS; ++i) {
        mass += __uint_as_float(sh.red_kd[i]);
        band += sh.red_count[i];
    }
    /* the walk stops inside the candidates only at the end of a complete
       list, at top-k's k-th, at min-p's band (which ends inside the prefix
       when some staged score is below it: the others score <= D, below
       all of them), or where top-p's mass reaches p of Z (Z_k = Z when k
       runs past them) -- the slack covers the sums' rounding */
    const bool can = count <= N || (k > 0 && k <= N) ||
                     (fd.log_min_p > -INFINITY && band < G && band <= N) ||
                     (fd.top_p < 1.0f && mass >= fd.top_p * sum_exp * 0.999f);
    if (!can)
        return 0;

    select_state st = select_start(kd, sh.khi, G, N);
    key_src src; /* the staged keys */
    src.stage = sh.stage;
    src.L = L;
    src.total = G;
    src.kd = kd;
    const unsigned long long *keys = sh.stage; /* G <= WIDE: every staged key */
    int c = G;
    if (select_rounds<WIDE, true>(src, N, st, sh.hist) > 0) {
        gather_top<WIDE, true>(src, st, wkey, &sh.c);
        keys = wkey;
        c = st.size < WIDE ? st.size : WIDE;
    }
    /* the best N in order: a key's rank is the number of larger keys (both
       arrays 16-byte aligned) */
#pragma unroll 1
    for (int q = tid; q < c; q += THREADS) {
        const unsigned long long key = keys[q];
        const int rank = count_before<unsigned long long, true>(keys, c, key);
        if (rank < N) {
            wsc[rank] = fs_select_score((uint32_t)(key >> 32));
            wid[rank] = (int32_t)~(uint32_t)key;
        }
    }
    __syncthreads();
#pragma unroll 1
    for (int i = tid; i < N; i += THREADS)
        ww[i] = fs_exp(wsc[i] - max_s); /* fs_filter_weight's spelling */
    __syncthreads();
    if (tid == 0)
        sh.wm = 0;
    wide_walk(sh, wsc, ww, N, count, k, max_s, sum_exp, fd);
    if (!sh.one)
        return 0;
    const fs_filter_cut cut = sh.cut;
    /* every filter keeps an upper set of scores: the kept candidates are a
       prefix [0, M) of the sorted ones (the first is always kept) */
#pragma unroll 1
    for (int i = tid; i < N; i += THREADS)
        if (fs_filter_keeps(&cut, wsc[i]) && (i + 1 == N || !fs_filter_keeps(&cut, wsc[i + 1])))
            sh.wm = i + 1;
    __syncthreads();
    const int M = sh.wm;
    /* sorted by id below the candidates (the keys are ranked by now) */
    int32_t *sid = reinterpret_cast<int32_t *>(sh.stage);
    float *ssc = reinterpret_cast<float *>(sid + WIDE);
#pragma unroll 1
    for (int q = tid; q < M; q += THREADS) {
        const int32_t id = wid[q];
        const int pos = count_before<int32_t, false>(wid, M, id);
        sid[pos] = id;
        ssc[pos] = wsc[q];
    }
    __syncthreads();
    fs_record acc;
    fs_record_init(&acc);
#pragma unroll 1
    for (int q = tid; q < M; q += THREADS) {
        if (q > 0 && sid[q - 1] / FS_NOISE_BLOCK == sid[q] / FS_NOISE_BLOCK)
            continue; /* not the block's first kept candidate */
        float v[FS_NOISE_BLOCK];
        int at = q;
        const int32_t id0 = fs_filter_kept_block(sid, ssc, M, &at, v);
        fs_record_push_block(&acc, &d, id0, FS_NOISE_BLOCK, v);
    }
    /* merged over the block in a fixed order (rolled: one copy of the
       merge's code) */
    acc = fs_record_block_reduce<true>(acc, wred);
    if (tid == 0)
        sh.red = acc;
    return 1;
}

/* What the passes below count into or fill; the caller's next barrier orders
 * these writes before them. */
__device__ __forceinline__ void reset_state(resolve_smem &sh)
{
    const int tid = threadIdx.x;
    if (tid == 0) {
        sh.g = 0;
        sh.c = 0;
        sh.khi = 0u;
    }
    sh.hist[0][tid] = 0u;
    static_assert(FS_FILTER_CANDIDATES * FS_NOISE_BLOCK == 4 * THREADS, "a float4 a thread");
    reinterpret_cast<float4 *>(&sh.vt[0][0])[tid] =
        make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
}

/* The row's best N = min(64, G) candidates from its lists (`mine`: this
 * thread's share of the first group, fs_filter_take_lists) -- G the length of
 * the exact prefix above D -- into sh.f.s / sh.f.id, in order; returns N,
 * with D's key, the count of finite tokens and G.  Every thread calls it; it
 * ends with a barrier. */
__device__ __forceinline__ int prefix_candidates(const fs_cand_list *L, int64_t lists_per_row,
                                                 const fs_cand_list (&mine)[PER],
                                                 resolve_smem &sh, uint32_t *kd_out,
                                                 int *count_out, int *g_out)
{
    reset_state(sh);
    fs_probe_resolve_stamp(2);
    uint32_t kd;
    int count;
    row_bounds(L, lists_per_row, mine, sh, &kd, &count);
    fs_probe_resolve_stamp(3);
    /* the exact prefix: G entries, staged as keys when they fit */
    const int G = stage_row(L, lists_per_row, mine, kd, sh);
    fs_probe_resolve_stamp(4);
    fs_probe_resolve_g_is(G);
    const int N = G < FS_FILTER_CANDIDATES ? G : FS_FILTER_CANDIDATES;
    key_src src;
    src.stage = G <= STAGE ? sh.stage : nullptr;
    src.L = L;
    src.total = G <= STAGE ? (int64_t)G : lists_per_row * FS_CAND_LIST;
    src.kd = kd;
    /* its best N: all G ranked when few, else those at or above the radix
       select's bucket */
    select_state st = select_start(kd, sh.khi, G, N);
    const int rounds = select_rounds<CAP>(src, N, st, sh.hist);
    fs_probe_resolve_stamp(5);
    if (rounds > 0) {
        gather_top<CAP>(src, st, sh.top, &sh.c);
        rank_keys(sh.top, st.size < CAP ? st.size : CAP, N, sh.f);
    } else {
        rank_keys(sh.stage, G, N, sh.f);
    }
    __syncthreads(); /* f is whole */
    fs_probe_resolve_stamp(6);
    *kd_out = kd;
    *count_out = count;
    *g_out = G;
    return N;
}

/* Which part of the resolve a warm-up slot runs (merge_row.cuh) on
 * warm_inputs' made-up row: none (a real row), the steps up to its
 * candidates, the decision (weights, walk, noise blocks noted), or the kept
 * record (the decision's weights and noted blocks, its walk replaced by the
 * made-up row's known cut: the best WARM_KEPT_N candidates). */
enum warm_part { WARM_NONE = 0, WARM_PREFIX = 1, WARM_DECIDE = 2, WARM_KEPT = 3 };
constexpr int WARM_KEPT_N = 35;

/* Decide a row whose N candidates are in sh.f (and whose vt is reset):
 * returns 1 to every thread with the kept record in *kept (thread 0), or 0
 * when the row was handed over.  TREE: a decided row's children's scores
 * become its kept record's (tc.child_s); a handed-over row's are set to
 * -inf, for the second pass's draw to write the kept ones.  Every thread
 * calls it. */
template <bool TREE>
__device__ __forceinline__ int decide(int64_t row, const fs_record &rec, const fs_filter_desc &fd,
                                      const fs_row_desc &d, int N, int count, int force,
                                      const handover &ho, resolve_smem &sh, fs_record *kept,
                                      const tree_ctx &tc, const wide_src &wide,
                                      warm_part warm = WARM_NONE)
{
    const int tid = threadIdx.x;
    if (tid < 32) {
        /* the walk's weights by the warp, then the walk by one thread */
        for (int i = tid; i < N; i += 32)
            sh.w[i] = fs_filter_weight(&rec, &sh.f, i);
        __syncwarp();
    }
    if (tid == 0) {
        sh.f.count = count;
        sh.f.n = N;
        fs_filter_cut cut;
        if (warm == WARM_KEPT) {
            cut.threshold = sh.f.s[WARM_KEPT_N - 1];
            cut.max_s = rec.max_s;
            cut.log_min_p = fd.log_min_p;
            sh.one = 1;
        } else {
            sh.one = !force &&
                     fs_filter_resolve_w(&rec, &sh.f, &fd, sh.w, &cut) == FS_FILTER_ONE_PASS;
        }
        sh.cut = cut;
    } else if (tid >= 64 && tid < 128) {
        note_blocks(sh.f, N, sh.vt, sh.leads);
    } else if (TREE && tid >= 128 && tid < 128 + FS_TREE_MAX_CHILDREN) {
        sh.child_s[tid - 128] = -INFINITY;
    }
    __syncthreads();
    fs_probe_resolve_stamp(7);
    if (warm == WARM_DECIDE)
        return 1;
    if (sh.one) {
        const fs_filter_cut cut = sh.cut;
        if (TREE)
            *kept = kept_record_tree(sh.f, N, cut, sh.vt, sh.leads, d, &sh.red, tc.row,
                                     sh.child_s);
        else
            *kept = kept_record_chain(sh.f, N, cut, sh.vt, sh.leads, sh.w, d, rec.sel_s, &sh.red);
        fs_probe_resolve_stamp(8);
        if (TREE) {
            __syncthreads(); /* the pushes' children's scores are in sh.child_s */
            if (tid < FS_TREE_MAX_CHILDREN)
                tc.child_s[tid] = sh.child_s[tid];
        }
        return 1;
    }
    /* more of the exact prefix than the best 64 (not for tree rows, whose
       kept record goes through the tree push) */
    if (!TREE && !force && wide.G > N && wide.G <= STAGE &&
        wide_decide(rec.max_s, rec.sum_exp, count, wide.L, wide.lists, wide.kd, wide.G, wide.d,
                    wide.fd)) {
        if (tid == 0)
            *kept = sh.red;
        return 1;
    }
    if (TREE && tid < FS_TREE_MAX_CHILDREN)
        tc.child_s[tid] = -INFINITY;
    if (tid == 0)
        hand_over(row, rec, fd, d, count, ho);
    return 0;
}

/* prefix_candidates' results for warm_inputs' made-up row, without its
 * steps: its best 64 entries (rank r: warm_score(r), warm_id(r)) in sh.f,
 * the state reset, G = WARM_G and the full lists' counts.  Every thread
 * calls it; it ends with a barrier. */
__device__ __forceinline__ int warm_candidates(resolve_smem &sh, uint32_t *kd_out,
                                               int *count_out, int *g_out)
{
    reset_state(sh);
    const int t = threadIdx.x;
    if (t < FS_FILTER_CANDIDATES) {
        sh.f.s[t] = warm_score(t);
        sh.f.id[t] = warm_id(t);
    }
    __syncthreads();
    *kd_out = fs_select_key(WARM_DROP);
    *count_out = WARM_FULL * WARM_COUNT;
    *g_out = WARM_G;
    return FS_FILTER_CANDIDATES;
}

/* Resolve filtered row `row` whose merged record is rec (every thread passes
 * it): returns 1 to every thread when the one pass decided it, with the
 * kept record in *kept (thread 0); 0 when the row was handed to the second
 * pass (fb, flag_n, out_fallback updated).  Every thread of the block calls
 * it; rows that do not filter must not.  The block resolves one row: a
 * caller that went on to another would need a __syncthreads first, the
 * shared state is not released by a barrier at the end.  TREE: a tree row,
 * tc its children and scores (decide).  wide: a chain row the best 64
 * candidates leave undecided is resolved from more of its prefix
 * (wide_decide, which reads d and fd from dp and fdp, their copies in
 * global memory; NULL: no wide resolve) before it is handed over.  warm:
 * a warm-up slot's part (warm_inputs' row, nothing written; WARM_PREFIX
 * returns after the candidates), WARM_NONE for a row. */
template <bool TREE>
__device__ int fs_filter_resolve_row(int64_t row, const fs_record &rec, const fs_filter_desc &fd,
                                     const fs_row_desc &d, const fs_cand_list *__restrict__ cands,
                                     int64_t lists_per_row, const fs_cand_list (&mine)[PER],
                                     fs_fallback_row *fb,
                                     unsigned int *flag_n, int32_t *out_fallback, int force,
                                     int wide, const fs_row_desc *dp, const fs_filter_desc *fdp,
                                     fs_record *kept, const tree_ctx &tc, warm_part warm)
{
    resolve_smem &sh = shared_state();
    uint32_t kd;
    int count, G;
    const fs_cand_list *L = cands + row * lists_per_row;
    const int N = warm == WARM_DECIDE || warm == WARM_KEPT
                      ? warm_candidates(sh, &kd, &count, &G)
                      : prefix_candidates(L, lists_per_row, mine, sh, &kd, &count, &G);
    if (warm == WARM_PREFIX)
        return 1;
    const handover ho = {fb, nullptr, flag_n, out_fallback};
    const wide_src ws = {L, lists_per_row, kd, wide && dp ? G : 0, dp, fdp};
    return decide<TREE>(row, rec, fd, d, N, count, force, ho, sh, kept, tc, ws, warm);
}

/* Sharded contexts, in the merge kernel: the shard's fs_filter_summary of
 * row `row` into *out -- the best N of its exact prefix, its count, and lo
 * = D, or the N-th score when the prefix is longer than N (every token of
 * the shard outside the N scores <= lo).  The ranks exchange the summaries
 * and resolve with fs_filter_resolve_merged.  Every thread of the block
 * calls it. */
static __device__ void fs_filter_summarize_row(int64_t row, const fs_cand_list *__restrict__ cands,
                                        int64_t lists_per_row, const fs_cand_list (&mine)[PER],
                                        fs_filter_summary *out)
{
    resolve_smem &sh = shared_state();
    uint32_t kd;
    int count, G;
    const int N =
        prefix_candidates(cands + row * lists_per_row, lists_per_row, mine, sh, &kd, &count, &G);
    for (int i = threadIdx.x; i < N; i += THREADS) {
        out->s[i] = sh.f.s[i];
        out->id[i] = sh.f.id[i];
    }
    if (threadIdx.x == 0) {
        out->count = count;
        out->n = N;
        out->lo = G > N ? sh.f.s[N - 1] : fs_select_score(kd);
        out->reserved = 0;
    }
}

/* 16-byte units of a summary, and the summaries that fit the staging area
 * (all of them up to 31 ranks; more are read from global memory). */
constexpr int SUM_UNITS = (int)(sizeof(fs_filter_summary) / 16);
constexpr int SUM_STAGED = (int)(sizeof(unsigned long long) * STAGE / sizeof(fs_filter_summary));
static_assert(sizeof(fs_filter_summary) % 16 == 0, "summaries copy as 16-byte units");

/* Sharded contexts, after the exchange: resolve row `row` from its global
 * record rec and the ranks' summaries (rank k's at sums[k * stride]) by
 * fs_filter_summary_merge's rule -- a thread per entry ranks it among the
 * kept ones (>= the floor L) -- then the same decision and kept record as
 * one GPU.  Every rank computes the same bits; a row handed over goes to
 * ho.stage[row].  Returns as fs_filter_resolve_row. */
template <bool TREE>
__device__ int fs_filter_resolve_merged(int64_t row, const fs_record &rec,
                                        const fs_filter_desc &fd, const fs_row_desc &d,
                                        const fs_filter_summary *__restrict__ sums,
                                        int64_t stride, int ranks, int force,
                                        const handover &ho, fs_record *kept, const tree_ctx &tc)
{
    resolve_smem &sh = shared_state();
    const int tid = threadIdx.x;
    reset_state(sh);
    const fs_filter_summary *m = sums;
    if (ranks <= SUM_STAGED) {
        /* the staging area of the lists' keys, unused here */
        uint4 *dst = reinterpret_cast<uint4 *>(sh.stage);
        for (int e = tid; e < ranks * SUM_UNITS; e += THREADS)
            dst[e] = reinterpret_cast<const uint4 *>(sums + (e / SUM_UNITS) * stride)[e % SUM_UNITS];
        __syncthreads();
        m = reinterpret_cast<const fs_filter_summary *>(sh.stage);
        stride = 1;
    }
    const float L = fs_filter_summary_floor(m, stride, ranks);
    for (int e = tid; e < ranks * FS_FILTER_CANDIDATES; e += THREADS) {
        const int k = e / FS_FILTER_CANDIDATES, i = e % FS_FILTER_CANDIDATES;
        const fs_filter_summary &mk = m[k * stride];
        if (i >= mk.n)
            continue;
        const int r = fs_filter_summary_rank(m, stride, ranks, k, i, L);
        if (r >= 0 && r < FS_FILTER_CANDIDATES) {
            sh.f.s[r] = mk.s[i];
            sh.f.id[r] = mk.id[i];
        }
    }
    if (tid == 0) {
        const int kept_n = fs_filter_summary_kept(m, stride, ranks, L);
        int count = 0;
        for (int k = 0; k < ranks; ++k)
            count += m[k * stride].count;
        sh.g = kept_n < FS_FILTER_CANDIDATES ? kept_n : FS_FILTER_CANDIDATES;
        sh.c = count;
    }
    __syncthreads(); /* f, N and the count are whole */
    const wide_src none = {nullptr, 0, 0u, 0, nullptr, nullptr};
    return decide<TREE>(row, rec, fd, d, sh.g, sh.c, force, ho, sh, kept, tc, none);
}

} // namespace fsf

#endif
