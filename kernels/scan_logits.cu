/* Scan over materialised logits [rows, V] (the *_logits ops): one pass, one
 * CTA per (row, chunk of the vocabulary), one record per CTA.
 *
 * A thread takes one noise block (16 consecutive global ids) at a time;
 * consecutive threads take consecutive blocks.  When every block is whole and
 * aligned (vocab_offset and V multiples of 16, 16-byte aligned logits) its
 * logits are four vector loads (16 bytes fp32, 8 bytes fp16/bf16 each);
 * otherwise guarded scalar loads. */
#include <cuda_fp16.h>

#include "cuda_common.cuh"

namespace {

constexpr int THREADS = FS_SCAN_THREADS;

__global__ void __launch_bounds__(THREADS)
    fs_scan_logits_kernel(const void *__restrict__ logits, fs_dtype dt, int vec, int64_t chunk,
                          int64_t chunks, fs_scan_args a)
{
    __shared__ fs_record scratch[32];
    __shared__ fs_cand_list cand_scratch[THREADS / 32];
    const int64_t row = blockIdx.x / chunks, c = blockIdx.x % chunks;
    const fs_row_desc d = a.descs[row];
    if (!(d.flags & FS_ROWF_VALID))
        return; /* uniform over the block */

    const int64_t V = a.vocab;
    const int64_t lb = c * chunk, le = lb + chunk < V ? lb + chunk : V; /* local range */
    const int64_t gb = a.vocab_offset + lb, ge = a.vocab_offset + le; /* global range */
    const int64_t B0 = gb / FS_NOISE_BLOCK, nslots = (ge - 1) / FS_NOISE_BLOCK - B0 + 1;
    const int64_t row_base = row * V - a.vocab_offset; /* element of global id 0 in this row */

    fs_record rec;
    fs_record_init(&rec);
    const bool filt = a.cands && (d.flags & FS_ROWF_FILTER); /* uniform over the block */
    fs_cand_list cl;
    fs_cand_init(&cl);
    for (int64_t s = threadIdx.x; s < nslots; s += THREADS) {
        const int64_t g16 = (B0 + s) * FS_NOISE_BLOCK;
        float l[FS_NOISE_BLOCK];
        int64_t t0;
        int cnt;
        if (vec) {
            t0 = g16;
            cnt = FS_NOISE_BLOCK;
#pragma unroll
            for (int q = 0; q < FS_NOISE_BLOCK / 4; ++q) {
                const int64_t e = row_base + g16 + 4 * q;
                if (dt == FS_DTYPE_F32) {
                    float4 v = __ldg(reinterpret_cast<const float4 *>(static_cast<const float *>(logits) + e));
                    l[4 * q + 0] = v.x;
                    l[4 * q + 1] = v.y;
                    l[4 * q + 2] = v.z;
                    l[4 * q + 3] = v.w;
                } else {
                    uint2 v = __ldg(reinterpret_cast<const uint2 *>(static_cast<const unsigned short *>(logits) + e));
                    l[4 * q + 0] = fs_half_bits_to_float((uint16_t)(v.x & 0xffffu), dt);
                    l[4 * q + 1] = fs_half_bits_to_float((uint16_t)(v.x >> 16), dt);
                    l[4 * q + 2] = fs_half_bits_to_float((uint16_t)(v.y & 0xffffu), dt);
                    l[4 * q + 3] = fs_half_bits_to_float((uint16_t)(v.y >> 16), dt);
                }
            }
        } else {
            t0 = g16 > gb ? g16 : gb;
            const int64_t t1 = g16 + FS_NOISE_BLOCK < ge ? g16 + FS_NOISE_BLOCK : ge;
            cnt = (int)(t1 - t0);
#pragma unroll
            for (int i = 0; i < FS_NOISE_BLOCK; ++i)
                l[i] = i < cnt ? fs_load_elem(logits, row_base + t0 + i, dt) : 0.0f;
        }
        fs_push_block(&rec, filt ? &cl : nullptr, d, a, row, t0, cnt, l);
    }
    rec = fs_record_block_reduce(rec, scratch);
    if (threadIdx.x == 0)
        a.tile_recs[row * a.tiles_per_row + c] = rec;
    if (filt) {
        /* the block's candidate list: warps, then warp 0 over the warps */
        fs_cand_warp_reduce(cl);
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        if (lane == 0)
            cand_scratch[warp] = cl;
        __syncthreads();
        if (warp == 0) {
            if (lane < THREADS / 32)
                cl = cand_scratch[lane];
            else
                fs_cand_init(&cl);
            fs_cand_warp_reduce(cl);
            if (lane == 0)
                a.cands[row * a.tiles_per_row + c] = cl;
        }
    }
}

} // namespace

/* Tokens per block (and per record): large chunks for many rows, smaller ones
 * when there are too few (row, chunk) blocks to fill the GPU.  Always a
 * multiple of FS_REC_MIN_TOKENS, so the workspace bound holds. */
int64_t fs_logits_chunk(int64_t rows, int64_t vocab, int sm_count)
{
    const int64_t target = 4 * (int64_t)(sm_count > 0 ? sm_count : 100);
    int64_t chunk = 4096;
    while (chunk > 256 && rows * ((vocab + chunk - 1) / chunk) < target)
        chunk >>= 1;
    return chunk;
}

cudaError_t fs_launch_scan_logits(const fs_op_args *a, const fs_scan_args *s, int64_t chunk,
                                  cudaStream_t stream)
{
    const int64_t chunks = (a->vocab_size + chunk - 1) / chunk;
    const int64_t blocks = a->rows * chunks;
    if (blocks > 0x7fffffff)
        return cudaErrorInvalidConfiguration;
    const size_t es = a->logits_dtype == FS_DTYPE_F32 ? 4 : 2;
    const bool vec = a->vocab_offset % FS_NOISE_BLOCK == 0 && a->vocab_size % FS_NOISE_BLOCK == 0 &&
                     ((uintptr_t)a->logits & (4 * es - 1)) == 0;
    fs_scan_logits_kernel<<<(unsigned)blocks, THREADS, 0, stream>>>(
        a->logits, a->logits_dtype, vec ? 1 : 0, chunk, chunks, *s);
    return cudaGetLastError();
}
