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

/* Record operations of a scan over another record type (tree verify). */
typedef struct fs_cpu_scan_sink {
    size_t rec_bytes;
    void (*init)(void *rec);
    /* push the noise block starting at id0 (FS_NOISE_BLOCK scores, -inf
       where no token was pushed) of the row whose descriptor is desc */
    void (*push_block)(void *rec, const void *desc, int32_t id0, const float *s);
    void (*merge)(void *into, const void *rec);
} fs_cpu_scan_sink;

/* fs_cpu_scan over sink's records: descs holds a->rows descriptors of
 * desc_bytes each, every one starting with its fs_row_desc (validity, 1/T);
 * tile_recs and row_recs hold a->rows records of sink->rec_bytes each. */
void fs_cpu_scan_rows(const fs_op_args *a, const void *descs, size_t desc_bytes,
                      const fs_cpu_scan_sink *sink, int64_t tile, uint32_t faults,
                      void *tile_recs, void *row_recs, void *scratch);

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

#endif
