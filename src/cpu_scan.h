/* The CPU vocabulary scan: per (row, tile) records, merged per row. */
#ifndef FS_CPU_SCAN_H
#define FS_CPU_SCAN_H

#include "backend.h"
#include "filter_finalize.h"
#include "record.h"

#include <stddef.h>

/* Bytes of the scratch fs_cpu_scan needs for `rows` rows (one noise block
 * being collected per row). */
size_t fs_cpu_scan_scratch_bytes(int64_t rows);

/* Scan every valid row of a over its vocabulary in tiles of `tile` tokens
 * (dropping each tile's last token under FS_FAULT_TILE_EDGE), building
 * tile_recs and merging them into row_recs.  Both arrays have a->rows
 * entries; scratch holds fs_cpu_scan_scratch_bytes(a->rows) bytes. */
void fs_cpu_scan(const fs_op_args *a, const fs_row_desc *descs, int64_t tile, uint32_t faults,
                 fs_record *tile_recs, fs_record *row_recs, void *scratch);

/* The scan engine's view of an op's records.  Every row has a tile record
 * (part FS_SCAN_TILE, reset per tile) and a merged record (FS_SCAN_ROW); the
 * sink owns them and says how to reset, push a noise block into and merge
 * them.  Ops differ only in their sink: fs_cpu_scan_filtered's holds
 * fs_records (and the filters' candidates), tree verify's its tree records. */
enum fs_cpu_scan_part { FS_SCAN_TILE = 0, FS_SCAN_ROW = 1 };

typedef struct fs_cpu_scan_sink {
    void *ctx;
    /* row r's descriptor (validity, 1/T, excluded token) */
    const fs_row_desc *(*desc)(const void *ctx, int64_t r);
    void (*init)(void *ctx, int64_t r, int part);
    /* the noise block starting at id0: FS_NOISE_BLOCK scores, -inf where no
       token was pushed */
    void (*push_block)(void *ctx, int64_t r, int part, int32_t id0, const float *s);
    /* row r's tile record into its merged record */
    void (*merge)(void *ctx, int64_t r);
} fs_cpu_scan_sink;

/* The scan itself: every valid row of a over its vocabulary in tiles of
 * `tile` tokens (dropping each tile's last token under FS_FAULT_TILE_EDGE),
 * noise blocks pushed whole, tile records merged in tile order.  scratch
 * holds fs_cpu_scan_scratch_bytes(a->rows) bytes. */
void fs_cpu_scan_run(const fs_op_args *a, const fs_cpu_scan_sink *sink, int64_t tile,
                     uint32_t faults, void *scratch);

/* The candidate records of the filters (filter_record.h) that a scan builds
 * beside tile_recs / row_recs for the rows whose fdescs[r].active is set:
 * tile[rows] per tile, row[rows] merged, at most cap candidates each. */
typedef struct fs_cpu_filter_recs {
    const fs_filter_desc *fdescs;
    fs_filter_record *tile;
    fs_filter_record *row;
    int cap;
} fs_cpu_filter_recs;

/* fs_cpu_scan, also building f's candidate records. */
void fs_cpu_scan_filtered(const fs_op_args *a, const fs_row_desc *descs, int64_t tile,
                          uint32_t faults, fs_record *tile_recs, fs_record *row_recs,
                          const fs_cpu_filter_recs *f, void *scratch);

/* Score of local token v of `row` exactly as the scan computes it (-inf when
 * the mask disallows it), for passes that revisit a row. */
float fs_cpu_score(const fs_op_args *a, const fs_row_desc *d, int64_t row, int64_t v);

/* The parts the vocabulary of a is scanned in: a itself (returns 1), or
 * under fs_cpu_set_vocab_shards (cpu_backend.h) the shards of the
 * tensor-parallel emulation, each with its own vocab_offset / vocab_size and
 * its slice of the LM head (heads[i]) or of the logits' rows.  parts and
 * heads hold FS_CPU_MAX_SHARDS entries. */
int fs_cpu_vocab_parts(const fs_op_args *a, fs_op_args *parts, fs_lm_head *heads);

#endif
