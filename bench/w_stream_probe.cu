/* w_stream_probe: how fast a TMA stream of the LM head can run on this chip,
 * and which of its layout choices set that.
 *
 * The Hopper tile kernel reads W at 4.0-4.1 TB/s on an H200 where cuBLAS's
 * small-row matmul reads 4.3 (docs/DESIGN.md, "Measured (H200), and the W
 * stream"), and its consumers are not the limit: consumers that only
 * release their stages ran as fast as the real kernel.  This program is
 * that stripped kernel with every layout choice a runtime setting, timed
 * beside a device copy and cuBLAS's matmul of 1 and 16 rows in the same
 * process, so one run shows which choice moves the stream:
 *
 *   tile=T     tokens (W rows) per tile                      (128)
 *   box=B      W rows per TMA box, T % B == 0, B <= 256       (128)
 *   kb=K       64-element k-boxes per stage                   (2)
 *   st=S       stages (capped by what fits)                   (6)
 *   order=s|c|p  a CTA's tiles strided by the grid, or contiguous, or
 *              "pairs": tiles of T tokens strided for as many whole waves
 *              as fit, then the last T/2-token units one at a time, so that
 *              CTAs stream the same W bytes to one unit           (s)
 *   cl=1|2     cluster size (placement only: nothing shared)  (1)
 *   pol=ef|en|el|none  the loads' L2 policy                   (ef)
 *   promo=0|128|256    the map's L2 promotion                 (0)
 *   cps=1|2    CTAs per SM (shared memory split between them) (1)
 *   cw=N       consumer warps that wait for and release a stage (8)
 *   h=0|1      an H box per k-box beside W's, as the tile kernel loads it
 *              (evict_last)                                   (1)
 *   hr=R       rows of that H box, 8-256 (the tile kernel's row block) (16)
 *
 * A configuration is one argument of comma-separated settings, e.g.
 * "tile=64,box=64,kb=1,st=16,cl=2".  Each is timed as the benchmark times
 * an op (bench/timing.h: L2 flushed by a memset before every call, dirty,
 * CUDA events), configurations alternated in rounds; the table gives the
 * median, the range of the round medians, W bytes / median, and the spread
 * of the CTAs' end times (globaltimer) in the last call.
 *
 *   w_stream_probe --shapes 151936x4096 --rounds 3 --reps 20 CONFIG...
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>

#include "baselines.h"
#include "hopper_ptx.cuh"
extern "C" {
#include "timing.h" /* C */
}

using namespace fshp;

namespace {

struct Cfg {
    int tile = 128, box = 128, kb = 2, st = 6, order = 0, cl = 1, pol = 0, promo = 0, cps = 1,
        cw = 8, h = 1, hr = 16;
    std::string text;
};

struct Params {
    int n_tiles, steps_per_tile, tile, box, kb, stages, order, per_cta, cw, pol, h, hr;
    int n_units, pairs; /* order p: tile / 2-token units; two-unit tiles before the single units */
    unsigned long long *t_end; /* [grid] globaltimer at each CTA's end */
};

/* The i-th tile of this CTA's sequence: its first token, or -1 past its end;
 * *ntok its tokens (order p: tile or tile / 2). */
__device__ __forceinline__ int tile_of(const Params &p, int i, int *ntok)
{
    *ntok = p.tile;
    if (p.order == 2) {
        const int k = (int)blockIdx.x + i * (int)gridDim.x, unit = p.tile / 2;
        if (k < p.pairs)
            return k * p.tile;
        *ntok = unit;
        const int u = 2 * p.pairs + (k - p.pairs);
        return u < p.n_units ? u * unit : -1;
    }
    if (p.order == 0) {
        const int t = (int)blockIdx.x + i * (int)gridDim.x;
        return t < p.n_tiles ? t * p.tile : -1;
    }
    const int t = (int)blockIdx.x * p.per_cta + i;
    return i < p.per_cta && t < p.n_tiles ? t * p.tile : -1;
}

__global__ void __launch_bounds__(288, 1)
    probe_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                 const Params p)
{
#if FSH_SM90A
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem = smem_align_1024(smem_raw);
    const uint32_t sbase = smem_u32(smem);
    const int wbox = p.box * 128, hbox = p.hr * 128;
    const int stage_bytes = p.kb * ((p.tile / p.box) * wbox + (p.h ? hbox : 0));
    const uint32_t sbar = sbase + (uint32_t)(p.stages * stage_bytes);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        for (int s = 0; s < p.stages; ++s) {
            mbar_init(sbar + 8u * s, 1);
            mbar_init(sbar + 8u * (p.stages + s), p.cw);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == 0 && lane == 0) {
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmw)) : "memory");
        const uint64_t pol = p.pol == 1 ? policy_evict_normal()
                             : p.pol == 2 ? policy_evict_last()
                                          : policy_evict_first();
        const uint64_t pol_h = policy_evict_last();
        int s = 0;
        uint32_t ph = 0;
        for (int i = 0;; ++i) {
            int ntok;
            const int t0 = tile_of(p, i, &ntok);
            if (t0 < 0)
                break;
            const int step_bytes = p.kb * ((ntok / p.box) * wbox + (p.h ? hbox : 0));
            for (int k = 0; k < p.steps_per_tile; ++k) {
                const uint32_t full = sbar + 8u * s, empty = sbar + 8u * (p.stages + s);
                mbar_wait(empty, ph ^ 1u);
                mbar_expect_tx(full, (uint32_t)step_bytes);
                uint32_t dst = sbase + (uint32_t)(s * stage_bytes);
                for (int h = 0; h < p.kb; ++h) {
                    const int kc = (k * p.kb + h) * BK;
                    for (int m = 0; m < ntok; m += p.box) {
                        if (p.pol == 3)
                            tma_load_2d_nohint(dst, &tmw, kc, t0 + m, full);
                        else
                            tma_load_2d(dst, &tmw, kc, t0 + m, full, pol);
                        dst += (uint32_t)wbox;
                    }
                    if (p.h) {
                        tma_load_2d(dst, &tmh, kc, 0, full, pol_h);
                        dst += (uint32_t)hbox;
                    }
                }
                if (++s == p.stages) {
                    s = 0;
                    ph ^= 1u;
                }
            }
        }
    } else if (warp >= 1 && warp <= p.cw && lane == 0) {
        int s = 0;
        uint32_t ph = 0;
        int ntok;
        for (int i = 0; tile_of(p, i, &ntok) >= 0; ++i)
            for (int k = 0; k < p.steps_per_tile; ++k) {
                mbar_wait(sbar + 8u * s, ph);
                mbar_arrive(sbar + 8u * (p.stages + s));
                if (++s == p.stages) {
                    s = 0;
                    ph ^= 1u;
                }
            }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        p.t_end[blockIdx.x] = t;
    }
#endif
}

int parse_cfg(const char *s, Cfg *c)
{
    c->text = s;
    std::string str(s);
    size_t pos = 0;
    while (pos < str.size()) {
        size_t end = str.find(',', pos);
        if (end == std::string::npos)
            end = str.size();
        const std::string kv = str.substr(pos, end - pos);
        pos = end + 1;
        const size_t eq = kv.find('=');
        if (eq == std::string::npos)
            return -1;
        const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        const int n = atoi(v.c_str());
        if (k == "tile") c->tile = n;
        else if (k == "box") c->box = n;
        else if (k == "kb") c->kb = n;
        else if (k == "st") c->st = n;
        else if (k == "order") c->order = v == "c" ? 1 : v == "p" ? 2 : 0;
        else if (k == "cl") c->cl = n;
        else if (k == "pol") c->pol = v == "en" ? 1 : v == "el" ? 2 : v == "none" ? 3 : 0;
        else if (k == "promo") c->promo = n;
        else if (k == "cps") c->cps = n;
        else if (k == "cw") c->cw = n;
        else if (k == "h") c->h = n;
        else if (k == "hr") c->hr = n;
        else return -1;
    }
    if (c->box < 8 || c->box > 256 || c->box % 8 || c->tile % c->box || c->kb < 1 || c->st < 2 ||
        (c->cl != 1 && c->cl != 2) || (c->cps != 1 && c->cps != 2) || c->cw < 1 || c->cw > 8 ||
        (c->promo != 0 && c->promo != 128 && c->promo != 256) || c->hr < 8 || c->hr > 256 ||
        c->hr % 8 || (c->order == 2 && (c->tile / 2) % c->box))
        return -1;
    return 0;
}

struct Run {
    Cfg c;
    CUtensorMap tmw, tmh;
    Params p;
    int grid, smem;
    cudaStream_t stream;
};

int run_probe(void *arg)
{
    Run *r = (Run *)arg;
    cudaLaunchConfig_t lc = {};
    lc.gridDim = dim3(r->grid);
    lc.blockDim = dim3(288);
    lc.dynamicSmemBytes = (size_t)r->smem;
    lc.stream = r->stream;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)r->c.cl;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    lc.attrs = at;
    lc.numAttrs = 1;
    return cudaLaunchKernelEx(&lc, probe_kernel, r->tmw, r->tmh, r->p) == cudaSuccess ? 0 : -1;
}

struct GemmRun {
    bl_gemm *g;
    const void *w, *h;
    void *out;
    cudaStream_t stream;
};

int run_gemm(void *arg)
{
    GemmRun *g = (GemmRun *)arg;
    return bl_gemm_run(g->g, g->w, g->h, g->out, g->stream);
}

struct CopyRun {
    void *dst;
    const void *src;
    size_t bytes;
    cudaStream_t stream;
};

int run_copy(void *arg)
{
    CopyRun *c = (CopyRun *)arg;
    return cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->stream) ==
                   cudaSuccess
               ? 0
               : -1;
}

struct Method {
    std::string name;
    bench_op_fn fn;
    void *arg;
    double bytes; /* counted for the rate: W (the copy: read + write) */
    std::vector<double> all, round_med;
    Run *probe;
};

} // namespace

int main(int argc, char **argv)
{
    std::vector<std::pair<long, long>> shapes = {{151936, 4096}};
    int rounds = 3, reps = 20;
    std::vector<Cfg> cfgs;
    std::vector<int> grows = {1, 16};
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--shapes") && i + 1 < argc) {
            shapes.clear();
            char *s = argv[++i];
            for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
                long v, d;
                if (sscanf(tok, "%ldx%ld", &v, &d) != 2) {
                    fprintf(stderr, "bad shape %s\n", tok);
                    return 2;
                }
                shapes.push_back({v, d});
            }
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--gemm-rows") && i + 1 < argc) {
            grows.clear();
            for (char *tok = strtok(argv[++i], ","); tok; tok = strtok(NULL, ",")) {
                const int n = atoi(tok);
                if (n < 1 || n > 256) {
                    fprintf(stderr, "bad --gemm-rows %s\n", tok);
                    return 2;
                }
                grows.push_back(n);
            }
        } else {
            Cfg c;
            if (parse_cfg(argv[i], &c)) {
                fprintf(stderr, "bad configuration '%s' (see the header of w_stream_probe.cu)\n",
                        argv[i]);
                return 2;
            }
            cfgs.push_back(c);
        }
    }
    if (cfgs.empty()) {
        Cfg c;
        parse_cfg("tile=128", &c);
        cfgs.push_back(c);
    }
    int dev = 0, sms = 0, l2 = 0;
    CUDA_CHECK(cudaSetDevice(dev));
    CUDA_CHECK(bl_init(dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    if (prop.major != 9) {
        printf("w_stream_probe: needs an sm_90 GPU (found %s); nothing to do\n", prop.name);
        return 0;
    }
    CUDA_CHECK(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    SMEM_MAX));
    CUDA_CHECK(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
    bench_timer t;
    bench_timer_init(&t, stream, (size_t)l2, reps);
    printf("w_stream_probe on %s (%d SMs, L2 %d MiB); rounds %d x %d calls, L2 flushed (dirty)\n",
           prop.name, sms, l2 >> 20, rounds, reps);

    for (auto &sh : shapes) {
        const long V = sh.first, D = sh.second;
        if (D % (64 * 4) != 0) {
            fprintf(stderr, "D must be a multiple of 256\n");
            return 2;
        }
        const size_t wbytes = (size_t)V * D * 2;
        void *w, *hbuf, *logits, *copy_dst;
        unsigned long long *t_end;
        CUDA_CHECK(cudaMalloc(&w, wbytes));
        CUDA_CHECK(cudaMalloc(&hbuf, (size_t)256 * D * 2));
        CUDA_CHECK(cudaMalloc(&logits, (size_t)256 * V * 2));
        CUDA_CHECK(cudaMalloc(&copy_dst, wbytes / 2));
        CUDA_CHECK(cudaMalloc(&t_end, sizeof(unsigned long long) * 2 * sms));
        CUDA_CHECK(bl_fill_normal_bf16(w, (size_t)V * D, 0.02f, 1, stream));
        CUDA_CHECK(bl_fill_normal_bf16(hbuf, (size_t)256 * D, 1.0f, 2, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));

        std::vector<Method> ms;
        std::vector<Run> runs(cfgs.size());
        for (size_t i = 0; i < cfgs.size(); ++i) {
            Run &r = runs[i];
            r.c = cfgs[i];
            r.stream = stream;
            const Cfg &c = r.c;
            CUDA_CHECK(make_map(&r.tmw, w, 1, D, V, c.box, c.promo));
            CUDA_CHECK(make_map(&r.tmh, hbuf, 1, D, c.hr, c.hr));
            const int stage_bytes =
                c.kb * ((c.tile / c.box) * c.box * 128 + (c.h ? c.hr * 128 : 0));
            const int room = SMEM_MAX / c.cps - 1024 - 2 * 64 * 8;
            const int stages = std::min(c.st, room / stage_bytes);
            if (stages < 2 || (D / 64) % c.kb) {
                fprintf(stderr, "%s: does not fit\n", c.text.c_str());
                return 2;
            }
            r.smem = 1024 + stages * stage_bytes + 2 * stages * 8;
            r.grid = sms * c.cps;
            r.grid -= r.grid % c.cl;
            /* the last tile (unit): TMA zero-fills */
            const int n_tiles = (int)((V + c.tile - 1) / c.tile);
            const int n_units = (int)((V + c.tile / 2 - 1) / (c.tile / 2));
            r.p = Params{n_tiles, (int)(D / 64 / c.kb), c.tile, c.box, c.kb, stages, c.order,
                         (n_tiles + r.grid - 1) / r.grid, c.cw, c.pol, c.h, c.hr, n_units,
                         r.grid * (n_units / (2 * r.grid)), t_end};
            char name[160];
            snprintf(name, sizeof name, "%s [st %d, %d KB]", c.text.c_str(), stages,
                     r.smem >> 10);
            Method m;
            m.name = name;
            m.fn = run_probe;
            m.arg = &r;
            m.bytes = (double)wbytes;
            m.probe = &r;
            ms.push_back(m);
        }
        CopyRun cr = {copy_dst, w, wbytes / 2, stream};
        {
            Method m;
            m.name = "cudaMemcpy D2D (W/2 read + written)";
            m.fn = run_copy;
            m.arg = &cr;
            m.bytes = (double)wbytes; /* read + write */
            m.probe = nullptr;
            ms.push_back(m);
        }
        std::vector<GemmRun> gr(grows.size());
        for (size_t g = 0; g < grows.size(); ++g) {
            gr[g] = {nullptr, w, hbuf, logits, stream};
            if (bl_gemm_create(&gr[g].g, V, D, grows[g], w, hbuf, logits, 0, stream)) {
                fprintf(stderr, "cuBLAS: %s\n", bl_gemm_last_error());
                return 1;
            }
            Method m;
            char name[96];
            snprintf(name, sizeof name, "cuBLAS matmul, %d rows", grows[g]);
            m.name = name;
            m.fn = run_gemm;
            m.arg = &gr[g];
            m.bytes = (double)wbytes;
            m.probe = nullptr;
            ms.push_back(m);
        }
        std::vector<double> buf(reps);
        for (int rd = 0; rd < rounds; ++rd)
            for (auto &m : ms) {
                if (bench_time(&t, m.fn, m.arg, 3, reps, buf.data())) {
                    fprintf(stderr, "%s failed: %s\n", m.name.c_str(),
                            cudaGetErrorString(cudaGetLastError()));
                    return 1;
                }
                m.all.insert(m.all.end(), buf.begin(), buf.end());
                m.round_med.push_back(bench_quantile(buf.data(), reps, 0.5));
            }
        printf("\n%ld x %ld (W %.3f GB)\n", V, D, wbytes / 1e9);
        printf("%-58s %9s %19s %8s %12s\n", "method", "median ms", "round medians", "TB/s",
               "end spread us");
        for (auto &m : ms) {
            bench_sort_ms(m.all.data(), (int)m.all.size());
            const double med = bench_quantile(m.all.data(), (int)m.all.size(), 0.5);
            const double lo = *std::min_element(m.round_med.begin(), m.round_med.end());
            const double hi = *std::max_element(m.round_med.begin(), m.round_med.end());
            char spread[32] = "-";
            if (m.probe) {
                std::vector<unsigned long long> e(m.probe->grid);
                CUDA_CHECK(run_probe(m.probe) ? cudaErrorUnknown : cudaSuccess);
                CUDA_CHECK(cudaMemcpy(e.data(), t_end, sizeof(unsigned long long) * e.size(),
                                      cudaMemcpyDeviceToHost));
                std::sort(e.begin(), e.end());
                snprintf(spread, sizeof spread, "%.1f / %.1f",
                         (e[e.size() / 2] - e[0]) / 1e3, (e.back() - e[0]) / 1e3);
            }
            printf("%-58s %9.4f %9.4f-%-9.4f %8.3f %12s\n", m.name.c_str(), med, lo, hi,
                   m.bytes / (med * 1e-3) / 1e12, spread);
        }
        for (auto &g : gr)
            bl_gemm_destroy(g.g);
        cudaFree(w);
        cudaFree(hbuf);
        cudaFree(logits);
        cudaFree(copy_dst);
        cudaFree(t_end);
    }
    bench_timer_destroy(&t);
    bl_gemm_shutdown();
    return 0;
}
