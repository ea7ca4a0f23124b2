/* The LM-head GEMM baseline through cuBLASLt: logits [rows, V] (bf16) =
 * hidden [rows, D] (bf16) x W [V, D]^T with fp32 accumulation.
 *
 * Column-major view: W row-major [V, D] is a column-major D x V matrix, so
 * op(A) = A^T with A = W (lda = D) gives V x D; hidden row-major [rows, D] is
 * column-major D x rows (ldb = D), op(B) = B; the product is column-major
 * V x rows with ldc = V, i.e. row-major logits [rows, V].  The vocabulary is
 * the GEMM's M dimension, as in flashspec's kernels. */
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20; /* cuBLAS' recommendation for Hopper */
constexpr int kMaxCandidates = 16;

cublasLtHandle_t g_lt = nullptr;
void *g_ws = nullptr;
char g_err[512];

void set_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
}

} // namespace

struct bl_gemm {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    int64_t vocab, dim, rows;
    char info[96];
};

#define LT_CHECK(call)                                                                        \
    do {                                                                                      \
        cublasStatus_t st_ = (call);                                                          \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            set_err("%s failed: %s (%d)", #call, cublasGetStatusString(st_), (int)st_);       \
            goto fail;                                                                        \
        }                                                                                     \
    } while (0)

static int run_algo(const bl_gemm *g, const cublasLtMatmulAlgo_t *algo, const void *w,
                    const void *h, void *logits, cudaStream_t stream)
{
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t st = cublasLtMatmul(g_lt, g->op, &alpha, w, g->a, h, g->b, &beta, logits, g->c,
                                       logits, g->c, algo, g_ws, kWorkspaceBytes, stream);
    if (st != CUBLAS_STATUS_SUCCESS) {
        set_err("cublasLtMatmul: %s (%d)", cublasGetStatusString(st), (int)st);
        return -1;
    }
    return 0;
}

/* Mean time of `reps` runs of one candidate, in ms; < 0 if it fails. */
static float time_algo(const bl_gemm *g, const cublasLtMatmulAlgo_t *algo, const void *w,
                       const void *h, void *logits, cudaStream_t stream)
{
    const int warm = 2, reps = 8;
    cudaEvent_t e0, e1;
    float ms = -1.0f;
    if (cudaEventCreate(&e0) != cudaSuccess)
        return -1.0f;
    if (cudaEventCreate(&e1) != cudaSuccess) {
        cudaEventDestroy(e0);
        return -1.0f;
    }
    int ok = 1;
    for (int i = 0; i < warm && ok; ++i)
        ok = run_algo(g, algo, w, h, logits, stream) == 0;
    ok = ok && cudaEventRecord(e0, stream) == cudaSuccess;
    for (int i = 0; i < reps && ok; ++i)
        ok = run_algo(g, algo, w, h, logits, stream) == 0;
    ok = ok && cudaEventRecord(e1, stream) == cudaSuccess;
    ok = ok && cudaEventSynchronize(e1) == cudaSuccess;
    if (ok && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess)
        ms /= reps;
    else
        ms = -1.0f;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return ms;
}

extern "C" int bl_gemm_create(bl_gemm **out, int64_t vocab, int64_t dim, int64_t rows,
                              const void *weight, const void *hidden, void *logits, int tune,
                              cudaStream_t stream)
{
    bl_gemm *g = (bl_gemm *)calloc(1, sizeof *g);
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulHeuristicResult_t res[kMaxCandidates];
    int n = 0, best = -1;
    float best_ms = 0.0f;
    size_t wsb = kWorkspaceBytes;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    *out = nullptr;
    if (!g) {
        set_err("out of host memory");
        return -1;
    }
    g->vocab = vocab, g->dim = dim, g->rows = rows;
    if (!g_lt) {
        LT_CHECK(cublasLtCreate(&g_lt));
        if (cudaMalloc(&g_ws, kWorkspaceBytes) != cudaSuccess) {
            set_err("cudaMalloc of the %zu-byte cuBLASLt workspace failed", kWorkspaceBytes);
            goto fail;
        }
    }
    LT_CHECK(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT_CHECK(cublasLtMatrixLayoutCreate(&g->a, CUDA_R_16BF, (uint64_t)dim, (uint64_t)vocab, dim));
    LT_CHECK(cublasLtMatrixLayoutCreate(&g->b, CUDA_R_16BF, (uint64_t)dim, (uint64_t)rows, dim));
    LT_CHECK(cublasLtMatrixLayoutCreate(&g->c, CUDA_R_16BF, (uint64_t)vocab, (uint64_t)rows,
                                        vocab));
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, g->op, g->a, g->b, g->c, g->c, pref,
                                            tune ? kMaxCandidates : 1, res, &n));
    if (n <= 0) {
        set_err("cuBLASLt found no algorithm for V=%lld D=%lld rows=%lld", (long long)vocab,
                (long long)dim, (long long)rows);
        goto fail;
    }
    if (!tune) {
        best = 0;
    } else {
        for (int i = 0; i < n; ++i) {
            if (res[i].state != CUBLAS_STATUS_SUCCESS)
                continue;
            float ms = time_algo(g, &res[i].algo, weight, hidden, logits, stream);
            if (ms > 0.0f && (best < 0 || ms < best_ms))
                best = i, best_ms = ms;
        }
        if (best < 0) {
            cudaGetLastError(); /* a failed candidate must not leave a sticky launch error */
            set_err("no cuBLASLt candidate ran for V=%lld D=%lld rows=%lld", (long long)vocab,
                    (long long)dim, (long long)rows);
            goto fail;
        }
    }
    g->algo = res[best].algo;
    snprintf(g->info, sizeof g->info, "cuBLASLt %s #%d of %d", tune ? "tuned" : "heuristic",
             best, n);
    cublasLtMatmulPreferenceDestroy(pref);
    *out = g;
    return 0;
fail:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    bl_gemm_destroy(g);
    return -1;
}

extern "C" int bl_gemm_run(const bl_gemm *g, const void *weight, const void *hidden,
                           void *logits, cudaStream_t stream)
{
    return run_algo(g, &g->algo, weight, hidden, logits, stream);
}

extern "C" const char *bl_gemm_info(const bl_gemm *g) { return g ? g->info : ""; }

extern "C" void bl_gemm_destroy(bl_gemm *g)
{
    if (!g)
        return;
    if (g->c)
        cublasLtMatrixLayoutDestroy(g->c);
    if (g->b)
        cublasLtMatrixLayoutDestroy(g->b);
    if (g->a)
        cublasLtMatrixLayoutDestroy(g->a);
    if (g->op)
        cublasLtMatmulDescDestroy(g->op);
    free(g);
}

extern "C" const char *bl_gemm_last_error(void) { return g_err; }

extern "C" size_t bl_cublaslt_version(void) { return cublasLtGetVersion(); }

extern "C" void bl_gemm_shutdown(void)
{
    if (g_ws)
        cudaFree(g_ws);
    if (g_lt)
        cublasLtDestroy(g_lt);
    g_ws = nullptr;
    g_lt = nullptr;
}
