#include "report.h"

#include <errno.h>
#include <math.h>
#include <string.h>

double row_bound_ms(const bench_row *r)
{
    return r->matmul_ms > r->floor_ms ? r->matmul_ms : r->floor_ms;
}

const char *row_target(const bench_row *r)
{
    if (!r->fused || !r->valid)
        return "";
    return r->median_ms <= BENCH_TARGET_RATIO * row_bound_ms(r) ? "PASS" : "MISS";
}

static double ratio(double a, double b) { return b > 0.0 ? a / b : NAN; }

void report_table_header(FILE *f)
{
    fprintf(f, "%-7s %-30s %7s %5s %5s %4s %10s %17s %8s %8s %7s %-6s %s\n", "family", "method",
            "V", "D", "rows", "req", "median_ms", "rounds_lo-hi", "x_matmul", "x_bound",
            "%floor", "target", "check");
}

void report_table_row(FILE *f, const bench_row *r)
{
    if (!r->valid) {
        fprintf(f, "%-7s %-30s %7lld %5lld %5lld %4lld %10s  %s\n", r->family, r->method,
                (long long)r->vocab, (long long)r->dim, (long long)r->rows,
                (long long)r->requests, "-", r->note);
        fflush(f);
        return;
    }
    char rounds[40]; /* one whitespace-free column: the table is read back by field */
    snprintf(rounds, sizeof rounds, "%.4f-%.4f", r->round_lo_ms, r->round_hi_ms);
    fprintf(f, "%-7s %-30s %7lld %5lld %5lld %4lld %10.4f %17s %8.3f %8.3f %6.1f%% %-6s %s\n",
            r->family, r->method, (long long)r->vocab, (long long)r->dim, (long long)r->rows,
            (long long)r->requests, r->median_ms, rounds, ratio(r->median_ms, r->matmul_ms),
            ratio(r->median_ms, row_bound_ms(r)), 100.0 * ratio(r->floor_ms, r->median_ms),
            row_target(r), r->check);
    fflush(f);
}

void report_power_row(FILE *f, const bench_row *r)
{
    if (!r->valid || r->power_samples <= 0)
        return;
    /* cycles a call at the mean clock: set beside ncu's cycles of a lone
       launch, they say whether a call lost cycles or clock */
    fprintf(f,
            "  power %-30s %5lld rows: %6.0f MHz, %4.0f%% of readings power-capped, "
            "%.2f M cycles a call",
            r->method, (long long)r->rows, r->sm_mhz, 100.0 * r->capped,
            r->median_ms * r->sm_mhz * 1e-3);
    if (r->watts >= 0.0)
        fprintf(f, ", %.0f W, %.1f mJ a call", r->watts, r->watts * r->median_ms);
    fprintf(f, " (%d readings)\n", r->power_samples);
}

/* CSV fields never contain commas or quotes except check/note: quote those. */
static void csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; ++s) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int report_write_csv(const char *path, const bench_row *rows, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "family,method,fused,V,D,rows,requests,median_ms,min_ms,p90_ms,matmul_ms,"
               "floor_ms,bound_ms,ratio_matmul,ratio_bound,floor_pct,target,check,note,rounds,"
               "round_lo_ms,round_hi_ms\n");
    for (int i = 0; i < n; ++i) {
        const bench_row *r = &rows[i];
        fprintf(f, "%s,%s,%d,%lld,%lld,%lld,%lld,", r->family, r->method, r->fused,
                (long long)r->vocab, (long long)r->dim, (long long)r->rows,
                (long long)r->requests);
        if (r->valid)
            fprintf(f, "%.6f,%.6f,%.6f,", r->median_ms, r->min_ms, r->p90_ms);
        else
            fprintf(f, ",,,");
        fprintf(f, "%.6f,%.6f,%.6f,", r->matmul_ms, r->floor_ms, row_bound_ms(r));
        if (r->valid)
            fprintf(f, "%.4f,%.4f,%.2f,", ratio(r->median_ms, r->matmul_ms),
                    ratio(r->median_ms, row_bound_ms(r)),
                    100.0 * ratio(r->floor_ms, r->median_ms));
        else
            fprintf(f, ",,,");
        fprintf(f, "%s,", row_target(r));
        csv_str(f, r->check);
        fputc(',', f);
        csv_str(f, r->note);
        if (r->valid)
            fprintf(f, ",%d,%.6f,%.6f\n", r->rounds, r->round_lo_ms, r->round_hi_ms);
        else
            fprintf(f, ",,,\n");
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "error writing %s\n", path);
        return -1;
    }
    return 0;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, "%.6g", x);
    else
        fprintf(f, "null");
}

int report_write_json(const char *path, const bench_meta *m, const bench_row *rows, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "{\n  \"device\": {\"name\": ");
    json_str(f, m->gpu);
    fprintf(f, ", \"sm_count\": %d, \"compute_capability\": \"%d.%d\", \"l2_bytes\": %zu, "
               "\"memory_bytes\": %zu},\n",
            m->sm_count, m->cc_major, m->cc_minor, m->l2_bytes, m->mem_bytes);
    fprintf(f, "  \"copy_bandwidth_gbps\": ");
    json_num(f, m->copy_gbps);
    fprintf(f, ",\n  \"method\": {\"rounds\": %d, \"reps_per_round\": %d, \"warmup\": %d, "
               "\"order\": \"%s\", "
               "\"statistic\": \"median of every round's calls; methods alternated in rounds\", "
               "\"l2_flush\": \"memset of 2 x L2 between reps\", \"timer\": \"cuda events\", "
               "\"gemm\": ",
            m->rounds, m->reps, m->warmup, m->rotated ? "rotated" : "fixed");
    json_str(f, m->gemm_mode);
    fprintf(f, ", \"logits_dtype\": \"bf16 (fp32 accumulation)\", \"temperature\": %g, "
               "\"drafts_per_request\": %d, \"target_ratio\": %.2f},\n",
            m->temperature, m->drafts_per_request, BENCH_TARGET_RATIO);
    fprintf(f, "  \"versions\": {\"cuda_runtime\": %d, \"cuda_driver\": %d, \"cublaslt\": %zu, "
               "\"flashspec\": %d},\n",
            m->cuda_runtime, m->cuda_driver, m->cublaslt_version, m->flashspec_version);
    fprintf(f, "  \"timestamp\": ");
    json_str(f, m->timestamp);
    fprintf(f, ",\n  \"results\": [\n");
    for (int i = 0; i < n; ++i) {
        const bench_row *r = &rows[i];
        fprintf(f, "    {\"family\": \"%s\", \"method\": \"%s\", \"fused\": %s, \"V\": %lld, "
                   "\"D\": %lld, \"rows\": %lld, \"requests\": %lld, \"median_ms\": ",
                r->family, r->method, r->fused ? "true" : "false", (long long)r->vocab,
                (long long)r->dim, (long long)r->rows, (long long)r->requests);
        json_num(f, r->valid ? r->median_ms : NAN);
        fprintf(f, ", \"min_ms\": ");
        json_num(f, r->valid ? r->min_ms : NAN);
        fprintf(f, ", \"p90_ms\": ");
        json_num(f, r->valid ? r->p90_ms : NAN);
        fprintf(f, ", \"round_lo_ms\": ");
        json_num(f, r->valid ? r->round_lo_ms : NAN);
        fprintf(f, ", \"round_hi_ms\": ");
        json_num(f, r->valid ? r->round_hi_ms : NAN);
        fprintf(f, ", \"matmul_ms\": ");
        json_num(f, r->matmul_ms > 0 ? r->matmul_ms : NAN);
        fprintf(f, ", \"floor_ms\": ");
        json_num(f, r->floor_ms);
        fprintf(f, ", \"bound_ms\": ");
        json_num(f, row_bound_ms(r));
        fprintf(f, ", \"ratio_matmul\": ");
        json_num(f, r->valid ? ratio(r->median_ms, r->matmul_ms) : NAN);
        fprintf(f, ", \"ratio_bound\": ");
        json_num(f, r->valid ? ratio(r->median_ms, row_bound_ms(r)) : NAN);
        fprintf(f, ", \"floor_pct\": ");
        json_num(f, r->valid ? 100.0 * ratio(r->floor_ms, r->median_ms) : NAN);
        fprintf(f, ", \"target\": ");
        json_str(f, row_target(r));
        if (r->power_samples > 0) {
            fprintf(f, ", \"sm_mhz\": ");
            json_num(f, r->sm_mhz);
            fprintf(f, ", \"watts\": ");
            json_num(f, r->watts >= 0.0 ? r->watts : NAN);
            fprintf(f, ", \"power_capped\": ");
            json_num(f, r->capped);
            fprintf(f, ", \"power_samples\": %d", r->power_samples);
        }
        fprintf(f, ", \"check\": ");
        json_str(f, r->check);
        fprintf(f, ", \"note\": ");
        json_str(f, r->note);
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "error writing %s\n", path);
        return -1;
    }
    return 0;
}
