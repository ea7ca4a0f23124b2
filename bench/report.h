/* Results of the benchmark: the printed table, CSV and JSON. */
#ifndef FS_BENCH_REPORT_H
#define FS_BENCH_REPORT_H

#include <stdint.h>
#include <stdio.h>

/* Fused ops must run within this factor of max(floor, cuBLAS matmul alone). */
#define BENCH_TARGET_RATIO 1.05

typedef struct bench_row {
    char family[12];   /* sample | argmax | verify */
    char method[40];
    int fused;         /* a fused flashspec op: judged against the target */
    int64_t vocab, dim;
    int64_t rows;      /* rows of the GEMM (verify: target rows) */
    int64_t requests;  /* verify: requests; else 0 */
    int valid;         /* 0: not measured (see note) */
    double median_ms, min_ms, p90_ms; /* over every round's calls */
    int rounds;                        /* rounds the methods alternated in */
    double round_lo_ms, round_hi_ms;   /* the lowest and highest round median */
    double matmul_ms;  /* cuBLAS matmul alone at the same rows (0 if unknown) */
    double floor_ms;   /* V * D * 2 bytes / measured bandwidth */
    /* --power: the SM clock and board power while the method's calls ran
       (means over its rounds; power_samples 0: not measured, watts < 0: no
       power reading) and the fraction of readings a power cap held */
    int power_samples;
    double sm_mhz, watts, capped;
    char check[96];    /* correctness cross-check of the outputs */
    char note[512];    /* why it was not measured */
} bench_row;

typedef struct bench_meta {
    char gpu[256];
    int sm_count, cc_major, cc_minor;
    size_t l2_bytes, mem_bytes;
    double copy_gbps;   /* read + write bytes per second of a large D2D copy */
    int reps, rounds, warmup, drafts_per_request;
    double temperature; /* every request's */
    int rotated; /* rounds before the last started at other methods */
    const char *gemm_mode;
    int cuda_runtime, cuda_driver, flashspec_version;
    size_t cublaslt_version;
    char timestamp[32];
} bench_meta;

double row_bound_ms(const bench_row *r);   /* max(floor, matmul) */
const char *row_target(const bench_row *r); /* "PASS", "MISS" or "" (not fused / not measured) */

void report_table_header(FILE *f);
void report_table_row(FILE *f, const bench_row *r);
/* --power: one line of r's clock, power, cycles and energy a call (nothing
 * when r has no readings). */
void report_power_row(FILE *f, const bench_row *r);
/* 0 on success; prints the reason on failure. */
int report_write_csv(const char *path, const bench_row *rows, int n);
int report_write_json(const char *path, const bench_meta *m, const bench_row *rows, int n);

#endif
