/* Unfused baselines for the flashspec benchmark: the pipelines an inference
 * engine runs today, each reading materialised logits / probabilities.
 *
 *  - bl_gumbel_sample:  single-pass Gumbel sampler over bf16 logits: the
 *                       library's two-level block draw (src/record.h) with
 *                       the same Philox noise and coordinates as fs_sample,
 *                       so on the same logits it picks the same tokens.
 *  - bl_argmax:         greedy argmax over bf16 logits.
 *  - bl_softmax + bl_multinomial: probabilities written in fp32, then an
 *                       inverse-CDF (prefix-sum search) sampler over them.
 *  - bl_verify_materialised: the standard greedy-draft verify pipeline:
 *                       softmax -> probs, gather p(x) + acceptance, residual
 *                       distributions written, inverse-CDF sampling, finalize.
 *
 * Every row is split over several blocks when there are few rows (so one row
 * still uses the whole GPU); the partial results are merged by the last block
 * of each row (threadfence reduction), so each sampler is one launch.
 * Logits are bf16 [rows, vocab] row-major, probabilities fp32 [rows, vocab].
 * All launchers are asynchronous on `stream` and return the launch status. */
#ifndef FS_BENCH_BASELINES_H
#define FS_BENCH_BASELINES_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Once per process, on the device used: sizes the split-row grids. */
cudaError_t bl_init(int device);

/* Scratch needed by every launcher below for up to `rows` rows (for verify:
 * target rows) of `vocab` tokens.  Zero it once after allocating: it holds
 * per-row completion counters that the kernels leave at zero. */
size_t bl_workspace_bytes(int64_t rows, int64_t vocab);

/* dst[i] = bf16(stddev * N(0,1)), a fixed function of (seed, i); never 0. */
cudaError_t bl_fill_normal_bf16(void *dst, size_t n, float stddev, uint64_t seed,
                                cudaStream_t stream);

/* (b) token[r] = the block Gumbel draw (record.h) from softmax(logit[r] / T_r)
 * with seed_r; T_r = 0 is the plain argmax.  temperature and seed are
 * [rows]. */
cudaError_t bl_gumbel_sample(const void *logits, int64_t rows, int64_t vocab,
                             const float *temperature, const uint64_t *seed, void *ws,
                             int32_t *out_tokens, cudaStream_t stream);

/* Greedy: token[r] = argmax_i logit[r,i] (lowest id on ties), and its logit. */
cudaError_t bl_argmax(const void *logits, int64_t rows, int64_t vocab, void *ws,
                      int32_t *out_tokens, float *out_logits, cudaStream_t stream);

/* (c, d) probs[r,:] = softmax(logit[r,:] / T), T = temperature[r / rows_per_param]
 * (> 0).  Two launches: per-row max and sum, then the write. */
cudaError_t bl_softmax(const void *logits, int64_t rows, int64_t vocab,
                       const float *temperature, int64_t rows_per_param, void *ws,
                       float *probs, cudaStream_t stream);

/* (c) Inverse-CDF sampling from probs [rows, vocab]: u from (seed[r], position 0),
 * token = first i with cumsum(p)_i > u * sum(p).  One launch: per-tile sums,
 * then the last block of the row searches the tile sums and one tile. */
cudaError_t bl_multinomial(const float *probs, int64_t rows, int64_t vocab,
                           const uint64_t *seed, void *ws, int32_t *out_tokens,
                           cudaStream_t stream);

/* (d) Materialised greedy-draft verify for `requests` requests of exactly k
 * drafts each (target rows r*(k+1) .. r*(k+1)+k, the last the bonus row):
 *   softmax(logits / T) -> probs [requests*(k+1), vocab]
 *   gather p(x_j), accept left to right while u_j <= p(x_j)
 *   residual_j = p_j with x_j zeroed, divided by 1 - p(x_j) -> residual [requests*k, vocab]
 *   inverse-CDF sample every residual row and every bonus row
 *   finalize: out_tokens [requests, k+1] (accepted drafts, then the recovered or
 *   bonus token, -1 padded), out_num_emitted [requests].
 * Randomness uses flashspec's coordinates (acceptance uniforms are the same
 * numbers fs_verify uses), so accepted counts agree with fs_verify up to
 * rounding of p(x).  temperature and seed are [requests]. */
cudaError_t bl_verify_materialised(const void *logits, int64_t requests, int k, int64_t vocab,
                                   const int32_t *draft_tokens, const float *temperature,
                                   const uint64_t *seed, float *probs, float *residual,
                                   void *ws, int32_t *out_tokens, int32_t *out_num_emitted,
                                   cudaStream_t stream);

/* ---- the sort-based filtered sampler, in baseline_sort_filter.cu -------- */

/* Scratch bl_sort_filter_sample needs for `rows` rows of `vocab` tokens
 * (keys and ids twice, and CUB's sort space: ~24 bytes a token). */
size_t bl_sort_filter_workspace_bytes(int64_t rows, int64_t vocab);

/* token[r] = a draw from softmax(logit[r] / T_r) restricted to what top-k,
 * top-p and min-p keep (in that order; each array may be NULL: off), the way
 * a sort-based engine computes it: every row sorted by score (one CUB radix
 * sort of all rows), the cuts found along the sorted row, an inverse-CDF
 * draw over the kept prefix (u from (seed[r], position 0)).  kept[r] (may be
 * NULL): the kept prefix's length.  rows <= 65535, rows x vocab < 2^31;
 * temperatures > 0. */
cudaError_t bl_sort_filter_sample(const void *logits, int64_t rows, int64_t vocab,
                                  const float *temperature, const int32_t *top_k,
                                  const float *top_p, const float *min_p,
                                  const uint64_t *seed, void *ws, size_t ws_bytes,
                                  int32_t *out_tokens, int32_t *out_kept, cudaStream_t stream);

/* ---- (a) the LM-head GEMM (cuBLASLt), in gemm.cu ----------------------- */

/* logits [rows, V] bf16 = hidden [rows, D] bf16 x W [V, D]^T, fp32 accumulation,
 * bf16 output (what inference engines do: a bf16 nn.Linear).  Computed as the
 * column-major product logits^T = W * hidden^T, so the vocabulary is the
 * GEMM's M dimension.  tune = 0 runs cuBLASLt's first heuristic choice (what
 * cublasGemmEx / torch.matmul get); tune = 1 times up to 16 heuristic
 * candidates once on the given buffers and keeps the fastest. */
typedef struct bl_gemm bl_gemm;

int bl_gemm_create(bl_gemm **out, int64_t vocab, int64_t hidden_dim, int64_t rows,
                   const void *weight, const void *hidden, void *logits, int tune,
                   cudaStream_t stream);
int bl_gemm_run(const bl_gemm *g, const void *weight, const void *hidden, void *logits,
                cudaStream_t stream);
/* Short description of the chosen algorithm ("heuristic #0 of 12", ...). */
const char *bl_gemm_info(const bl_gemm *g);
void bl_gemm_destroy(bl_gemm *g);
/* Message for the last bl_gemm_* failure. */
const char *bl_gemm_last_error(void);
/* cublasLtGetVersion(). */
size_t bl_cublaslt_version(void);
/* Frees the shared cuBLASLt handle and workspace. */
void bl_gemm_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif
