/* The CPU backend of tree verify, in its three stages: prepare (row
 * descriptors and pre-scan statuses), scan (merged records of the rows over
 * the vocabulary that a's input holds) and finalize (the walk).  Exposed so
 * the test suite can scan vocabulary shards separately and merge their
 * records as tensor-parallel ranks do. */
#ifndef FS_CPU_TREE_H
#define FS_CPU_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "tree_backend.h"
#include "tree_record.h"

typedef struct fs_cpu_tree_ws {
    fs_tree_row *rows;         /* [rows] descriptors */
    fs_tree_record *tile_recs; /* [rows] the tile being scanned */
    fs_tree_record *row_recs;  /* [rows] merged so far */
    int32_t *pre_status;       /* [requests] status known before the scan */
    void *scan_scratch;        /* the scan's noise blocks being collected */
} fs_cpu_tree_ws;

/* Bytes of the workspace (= fs_cpu_tree_workspace_bytes); fills w when base
 * is given. */
size_t fs_cpu_tree_carve(void *base, int64_t rows, int64_t requests, fs_cpu_tree_ws *w);
void fs_cpu_tree_prepare(const fs_tree_args *a, const fs_cpu_tree_ws *w);
void fs_cpu_tree_scan(const fs_tree_args *a, const fs_cpu_tree_ws *w);
void fs_cpu_tree_finalize(const fs_tree_args *a, const fs_cpu_tree_ws *w);

#endif
