/* The CPU backend of tree verify, in its four stages: prepare (row
 * descriptors, filter descriptors and pre-scan statuses), scan (merged
 * records of the rows, and the filters' candidates, over the vocabulary that
 * a's input holds), filter (each filtered row's kept record, from its
 * candidates or by the second pass) and finalize (the walk).  Exposed so the
 * test suite can scan vocabulary shards separately and merge their records
 * as tensor-parallel ranks do. */
#ifndef FS_CPU_TREE_H
#define FS_CPU_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_filter.h"
#include "tree_backend.h"
#include "tree_record.h"

typedef struct fs_cpu_tree_ws {
    fs_tree_row *rows;         /* [rows] descriptors */
    fs_tree_record *tile_recs; /* [rows] the tile being scanned */
    fs_tree_record *row_recs;  /* [rows] merged so far */
    int32_t *pre_status;       /* [requests] status known before the scan */
    void *scan_scratch;        /* the scan's noise blocks being collected */
    fs_cpu_filter_ws filter;   /* filter descriptors [rows], candidate records per tile and
                                  merged [rows], the second pass's histograms */
    /* the tensor-parallel emulation only (fs_cpu_set_vocab_shards when the
       workspace was carved; NULL otherwise): one part's records */
    fs_tree_record *part_recs;    /* [rows] */
    fs_filter_record *part_frecs; /* [rows] */
} fs_cpu_tree_ws;

/* Bytes of the workspace (= fs_cpu_tree_workspace_bytes); fills w when base
 * is given. */
size_t fs_cpu_tree_carve(void *base, int64_t rows, int64_t requests, fs_cpu_tree_ws *w);
void fs_cpu_tree_prepare(const fs_tree_args *a, const fs_cpu_tree_ws *w);
/* Scan a's vocabulary into w->row_recs and, for the filtered rows,
 * w->filter.recs.row (w->rows and w->filter.fdescs as prepare left them). */
void fs_cpu_tree_scan(const fs_tree_args *a, const fs_cpu_tree_ws *w);
/* After the scan (records merged over every part): each filtered row whose
 * record is usable gets its kept tree record in w->row_recs, and
 * params->out_filter_fallback (if given) is written for every request.
 * parts[0 .. nparts) hold the vocabulary in order (one part: &a->base); the
 * second pass sums their histograms and merges their draw records in part
 * order. */
void fs_cpu_tree_filter(const fs_op_args *const *parts, int nparts, const fs_tree_args *a,
                        const fs_cpu_tree_ws *w);
void fs_cpu_tree_finalize(const fs_tree_args *a, const fs_cpu_tree_ws *w);

#endif
