/* The CPU backend's top-k / top-p / min-p filters: per-row filter
 * descriptors before the scan, and after it each filtered row's kept record
 * (filter_finalize.h), resolved from its candidates in the one pass or by the
 * exact second pass over the row (radix select, filter_select.h, then the
 * draw).  The finalizers then read the kept records unchanged. */
#ifndef FS_CPU_FILTER_H
#define FS_CPU_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "cpu_scan.h"
#include "filter_finalize.h"
#include "filter_select.h"
#include "record.h"

/* Scratch of the second pass: one level's histogram over the whole
 * vocabulary, and one shard's part of it. */
typedef struct fs_filter_hist {
    int32_t count[FS_SELECT_BUCKETS];
    float mass[FS_SELECT_BUCKETS];
    int32_t part_count[FS_SELECT_BUCKETS];
    float part_mass[FS_SELECT_BUCKETS];
} fs_filter_hist;

/* The filters' part of the CPU workspace. */
typedef struct fs_cpu_filter_ws {
    fs_filter_desc *fdescs;  /* [rows] */
    fs_cpu_filter_recs recs; /* candidate records [rows] per tile and merged */
    fs_filter_hist *hist;
} fs_cpu_filter_ws;

size_t fs_cpu_filter_ws_bytes(int64_t rows);
/* Lay the filters' workspace out at base (fs_cpu_filter_ws_bytes(rows) bytes). */
void fs_cpu_filter_carve(void *base, int64_t rows, fs_cpu_filter_ws *w);

/* Before the scan: a request whose filter parameters are bad gets
 * FS_ROW_BAD_FILTER in pre_status (if it was FS_ROW_OK) and its rows are
 * skipped; every row gets its filter descriptor. */
void fs_cpu_filter_prepare(const fs_op_args *a, fs_row_desc *descs, int32_t *pre_status,
                           fs_cpu_filter_ws *w);

/* After the scan: each filtered row whose record is usable gets its kept
 * record in row_recs; params->out_filter_fallback (if given) is written for
 * every request.  faults: FS_FAULT_UNFILTERED_PX (cpu_backend.h). */
/* parts[0 .. nparts) hold the op's vocabulary in order (one part: the whole
 * of it; more: the shards of the tensor-parallel emulation). */
void fs_cpu_filter_finish(const fs_op_args *const *parts, int nparts, const fs_row_desc *descs,
                          fs_record *row_recs, const fs_cpu_filter_ws *w, uint32_t faults);

/* One filtered row of a vocabulary held in nshards parts (shards[i] covers
 * its [vocab_offset, vocab_offset + vocab_size), offsets multiples of 16;
 * one part = the whole vocabulary), from the row's records merged over every
 * part: the kept record in *kept.  The second pass sums the parts'
 * histograms in part order and merges their draw records, as vocabulary
 * shards on several ranks would.  Returns 1 if it took the second pass
 * (always when force_second_pass). */
int fs_cpu_filter_row(const fs_op_args *const *shards, int nshards, int64_t row,
                      const fs_row_desc *d, const fs_filter_desc *fd, const fs_record *rec,
                      const fs_filter_record *frec, int force_second_pass, fs_filter_hist *hist,
                      fs_record *kept);

/* fs_cpu_filter_row in its two steps, for rows whose records are not
 * fs_records (tree verify).  The kept set: resolved from the candidates
 * (returns 0), or by the second pass's radix selects over the parts
 * (returns 1; always when force_second_pass).  rec is the row's fs_record
 * (log-sum-exp and max over every allowed token). */
int fs_cpu_filter_cut(const fs_op_args *const *shards, int nshards, int64_t row,
                      const fs_row_desc *d, const fs_filter_desc *fd, const fs_record *rec,
                      const fs_filter_record *frec, int force_second_pass, fs_filter_hist *hist,
                      fs_filter_cut *cut);

/* Where the draw pass's blocks go: per part, a fresh record (part_init), its
 * blocks pushed with the scores outside the kept set at -inf, then merged
 * into the row's kept record (part_merge), in part order. */
typedef struct fs_cpu_kept_sink {
    void *ctx;
    void (*part_init)(void *ctx);
    void (*part_push_block)(void *ctx, int32_t id0, const float *s);
    void (*part_merge)(void *ctx);
} fs_cpu_kept_sink;

/* The draw pass of a row whose kept set is *cut, over the parts in order. */
void fs_cpu_filter_draw(const fs_op_args *const *shards, int nshards, int64_t row,
                        const fs_row_desc *d, const fs_filter_cut *cut,
                        const fs_cpu_kept_sink *k);

/* Whether fs_cpu_set_filter_second_pass forces the second pass. */
int fs_cpu_filter_forced(void);

#endif
