/* The CPU vocabulary scan: per (row, tile) records, merged per row. */
#ifndef FS_CPU_SCAN_H
#define FS_CPU_SCAN_H

#include "backend.h"
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

#endif
