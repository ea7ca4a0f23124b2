/* The sm_90a building blocks both Hopper scans use (scan_hopper.cu: vocabulary
 * as the wgmma M dimension; scan_hopper_rows.cu: rows as M): mbarriers, TMA
 * tile loads with an L2 policy, wgmma fences and the shared-memory operand
 * descriptor for 128-byte-swizzled K-major tiles, and the host-side tensor
 * map.  The device functions exist only when compiling for sm_90a (FSH_SM90A);
 * the kernels compile to empty bodies elsewhere so the host stubs link. */
#ifndef FS_HOPPER_PTX_CUH
#define FS_HOPPER_PTX_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "cuda_common.cuh" /* fs_tail_args, fs_record, fs_row_desc */

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FSH_SM90A 1
#else
#define FSH_SM90A 0
#endif

namespace fshp {

/* K extent of one pipeline stage: 64 x 16-bit = one 128-byte swizzled row */
constexpr int BK = 64;
/* sm_90 opt-in dynamic shared memory per block */
constexpr int SMEM_MAX = 232448;

#if FSH_SM90A

static __device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* The dynamic shared memory rounded up to 1024 bytes (the 128-byte swizzle's
 * pattern repeats every 1024).  Aligned by an offset from smem_raw, not by
 * rounding the generic address: that keeps the compiler aware that every
 * pointer derived from it is shared (32-bit addresses, LDS / STS).  Rounding
 * the address made the tile kernel's accesses generic (its SASS had 400 LD /
 * 768 ST and no LDS / STS; with the offset, 208 LDS / 640 STS). */
static __device__ __forceinline__ unsigned char *smem_align_1024(unsigned char *smem_raw)
{
    return smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
}

static __device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

static __device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}

static __device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* count arrivals at once (a thread standing in for several) */
static __device__ __forceinline__ void mbar_arrive_count(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(count)
                 : "memory");
}

static __device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

static __device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, int c0, int c1,
                                            uint32_t bar, uint64_t policy)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
                 : "memory");
}

/* The same load without an L2 cache hint.  For a stream read once this is
 * faster than any hint on an H200: W at 4.29 TB/s against 4.10 with an
 * evict_first policy and 3.72-3.76 with an evict_normal one, the same
 * default priority (bench/w_stream_probe.cu; docs/DESIGN.md, "Measured
 * (H200), and the W stream"). */
static __device__ __forceinline__ void tma_load_2d_nohint(uint32_t dst, const CUtensorMap *map,
                                                          int c0, int c1, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

/* The same load delivered to the CTAs of the cluster named in cta_mask, at
 * the same shared-memory offsets (dst and bar) in each, each CTA's barrier
 * receiving the bytes that land there: one L2 read for all of them. */
static __device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap *map,
                                                             int c0, int c1, uint32_t bar,
                                                             uint16_t cta_mask, uint64_t policy)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask),
                 "l"(policy)
                 : "memory");
}

/* W's loads by their L2 hint (enum fs_w_hint, scan_hopper.cuh): none, or the
 * policy pol made from it (policy_of_w_hint). */
static __device__ __forceinline__ void tma_load_w(uint32_t dst, const CUtensorMap *map, int c0,
                                                  int c1, uint32_t bar, int hint, uint64_t pol)
{
    if (hint == 0)
        tma_load_2d_nohint(dst, map, c0, c1, bar);
    else
        tma_load_2d(dst, map, c0, c1, bar, pol);
}

/* tma_load_w's load delivered to the CTAs of cta_mask (tma_load_2d_multicast). */
static __device__ __forceinline__ void tma_load_w_multicast(uint32_t dst, const CUtensorMap *map,
                                                            int c0, int c1, uint32_t bar,
                                                            uint16_t cta_mask, int hint,
                                                            uint64_t pol)
{
    if (hint == 0)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                     "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar),
                     "h"(cta_mask)
                     : "memory");
    else
        tma_load_2d_multicast(dst, map, c0, c1, bar, cta_mask, pol);
}

/* Arrive on the barrier at local address bar in cluster CTA `rank`.  Default
 * (.release.cta) semantics, as for a local arrive: what it orders is this
 * warp's wgmma reads of the stage, already complete (wgmma.wait_group); a
 * cluster-scope release would add a fence to every k-block. */
static __device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank)
{
    asm volatile("{\n.reg .b32 ra;\n"
                 "mapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
                 "r"(rank)
                 : "memory");
}

/* Every thread of every CTA of the cluster (whole warps). */
static __device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::
                     : "memory");
}

static __device__ __forceinline__ uint64_t policy_evict_last()
{
    uint64_t p;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
    return p;
}

static __device__ __forceinline__ uint64_t policy_evict_first()
{
    uint64_t p;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
    return p;
}

static __device__ __forceinline__ uint64_t policy_evict_normal()
{
    uint64_t p;
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(p));
    return p;
}

/* The policy of a W hint (1 evict_first, 2 evict_normal; unused for 0). */
static __device__ __forceinline__ uint64_t policy_of_w_hint(int hint)
{
    return hint == 1 ? policy_evict_first() : policy_evict_normal();
}

static __device__ __forceinline__ void wg_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

static __device__ __forceinline__ void wg_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N> static __device__ __forceinline__ void wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

template <int R> static __device__ __forceinline__ void fence_acc(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

/* K-major operand, 128-byte swizzle: rows of 128 bytes, 8-row atoms 1024
 * bytes apart (SBO), start address advanced by 32 bytes per k16 step. */
static __device__ __forceinline__ uint64_t make_desc(uint32_t saddr)
{
    return (uint64_t)((saddr & 0x3FFFFu) >> 4) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

#endif /* FSH_SM90A */

/* cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda). */
static inline PFN_cuTensorMapEncodeTiled_v12000 encode_fn()
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                             &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            p = nullptr;
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    }();
    return fn;
}

/* 2-D map over a [outer, D] row-major 16-bit matrix, box BK x box_rows,
 * 128-byte swizzle; rows past `outer` and columns past D read as zeros.
 * promote_bytes: what each L2 miss fetches, 256 (the box's rows are 128
 * bytes wide: the next box's half too) or 128; 0: no promotion
 * (FS_W_STREAM_PLAIN, scan_hopper.cuh). */
static inline cudaError_t make_map(CUtensorMap *map, const void *base, int is_bf16, int64_t D,
                                   int64_t outer, int box_rows, int promote_bytes = 256)
{
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn)
        return cudaErrorNotSupported;
    const cuuint64_t dims[2] = {(cuuint64_t)D, (cuuint64_t)outer};
    const cuuint64_t strides[1] = {(cuuint64_t)D * 2u};
    const cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)box_rows};
    const cuuint32_t estr[2] = {1u, 1u};
    CUresult r = fn(map, is_bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                    2, const_cast<void *>(base), dims, strides, box, estr,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                    promote_bytes == 256   ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                    : promote_bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                           : CU_TENSOR_MAP_L2_PROMOTION_NONE,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

/* The fields both Hopper scans' kernel arguments share (each kernel's Args
 * names them alike), filled in one place. */
template <class A>
static inline void fill_scan_args(A &a, const fs_row_desc *descs, const float *bias,
                                  const uint32_t *allowed, fs_record *recs, int64_t rows,
                                  int64_t V_local, int64_t vocab_offset, int64_t global_vocab,
                                  int64_t D, const fs_tail_args *tail)
{
    a.descs = descs;
    a.bias = bias;
    a.allowed = allowed;
    a.recs = recs;
    a.rows = rows;
    a.V = V_local;
    a.vocab_offset = vocab_offset;
    a.global_vocab = global_vocab;
    a.words = (global_vocab + 31) / 32;
    a.kblocks = (int)((D + BK - 1) / BK);
    a.tail_on = tail ? 1 : 0;
    if (tail)
        a.tail = *tail;
    else
        memset(&a.tail, 0, sizeof a.tail);
}

/* Opt a kernel into `bytes` of dynamic shared memory, once per device (the
 * bit of `device` in *done; devices past 63 are set on every call). */
static inline cudaError_t set_smem_once(const void *kernel, int bytes, unsigned long long *done,
                                        int device)
{
    const unsigned long long bit = device < 64 ? 1ull << device : 0ull;
    if (bit && (__atomic_load_n(done, __ATOMIC_ACQUIRE) & bit))
        return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess && bit)
        __atomic_fetch_or(done, bit, __ATOMIC_ACQ_REL);
    return e;
}

} // namespace fshp

#endif
