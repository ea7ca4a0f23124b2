/* One row of the merge: its tile records merged into one record, a filtered
 * row resolved (filter_resolve.cuh), then the record finalized or stored.
 * The body of the merge kernel (merge_finalize.cu) and the first phase of
 * the filtered merge (filter_fallback.cu), which runs the second pass in
 * the same launch.  Include it only from translation units that define
 * FS_COLD_CODE (fs_hd.h): it runs once per row per call, from cold code. */
#ifndef FS_MERGE_ROW_CUH
#define FS_MERGE_ROW_CUH

#include "cuda_common.cuh"
#include "filter_resolve.cuh"
#include "op_tail.cuh"
#include "pdl.cuh"

/* What a merge block reads and writes besides the filters' workspace.
 * fin_op: -1 = only store the merged record in row_recs; FS_OP_SAMPLE /
 * FS_OP_ARGMAX = finalize the row into the outputs. */
struct fs_merge_io {
    const fs_record *tile_recs;
    int64_t tiles_per_row;
    const fs_row_desc *descs;
    fs_record *row_recs;
    int fin_op;
    const int32_t *pre_status;
    int32_t *out_tokens;
    float *out_values;
    int32_t *out_row_status;
    int32_t *out_fallback;
    int force_second_pass;
};

/* A merge of op a (fs_launch_merge's arguments). */
static inline fs_merge_io fs_merge_io_make(const fs_op_args *a, const fs_record *tile_recs,
                                           int64_t tiles_per_row, const fs_row_desc *descs,
                                           const int32_t *pre_status, fs_record *row_recs,
                                           int finalize, const fs_filter_ws *filt,
                                           int force_second_pass)
{
    fs_merge_io m = {};
    m.tile_recs = tile_recs;
    m.tiles_per_row = tiles_per_row;
    m.descs = descs;
    m.row_recs = row_recs;
    m.fin_op = finalize && a->op != FS_OP_VERIFY ? (int)a->op : -1;
    m.pre_status = pre_status;
    m.out_tokens = a->out_tokens;
    m.out_values = a->out_values;
    m.out_row_status = a->out_row_status;
    m.out_fallback = filt && a->params ? a->params->out_filter_fallback : nullptr;
    m.force_second_pass = force_second_pass;
    return m;
}

/* Row slot `slot` of a merge grid (FS_MERGE_THREADS threads).  Its threads
 * merge tiles t, t + 256, ... in that order (fs_merge_run), then the block
 * merges the threads' records in a fixed tree: the result, sum_exp's
 * rounding included, is the same on every run.  A filtered row
 * (filt.fdescs non-NULL, FS_ROWF_FILTER) is then resolved by the block: its
 * kept record is what gets stored or finalized, or the row is handed to the
 * second pass, which ends it.  On a sharded context (filt.sums non-NULL) a
 * filtered row is not resolved here: its block writes the shard's
 * fs_filter_summary and stores the shard's record (fs_filter_tp_resolve_kernel
 * resolves after the exchange).
 *
 * FILT: the op has filters; only that instance holds the resolve, with its
 * registers and its ~25 KB of (dynamic) shared memory.  TREE (with FILT only): tree
 * verify's rows, whose kept records go through the tree push and whose
 * children's scores filt.tree_child_s the resolve replaces.
 *
 * filt.warm (chain rows): slots 0-2 (FS_FILTER_WARM_SLOTS) resolve a
 * made-up row (fsf::warm_inputs) at once, without waiting for the scan, and
 * write nothing; row r is slot r + 3.  Their lists and candidates in
 * registers, they run ahead of the rows' blocks, which first wait for the
 * scan and load their lists and records, and pull the resolve's code into
 * L2 before the rows reach it.  That code, run once a call, is evicted from
 * L2 by the scan's weight stream, and cold it cost the resolve ~25 us a call
 * (DESIGN "On the GPU").  The merge kernel starts when the scan ends (its
 * blocks do not fit beside the scan's CTAs), so the slots start with the
 * rows: slot 0 runs the steps up to the candidates (fsf::WARM_PREFIX), slot
 * 1 the decision from made-up candidates (fsf::WARM_DECIDE), slot 2 the kept
 * record from them (fsf::WARM_KEPT; slot s runs part s + 1), each ahead of
 * the rows on its part; one slot running it all reached the kept record
 * after the rows and, the grid barrier waiting for it, was the last block
 * of the kernel.  One code path serves every kind of slot: a second call
 * site would be a second copy of the code.
 *
 * Every thread returns; a caller that runs another slot in the same block
 * must put a barrier in between (the shared records are reused). */
template <bool FILT, bool TREE>
__device__ __forceinline__ void fs_merge_row(const fs_merge_io &m, const fs_filter_ws &filt,
                                             int64_t slot)
{
    __shared__ fs_record scratch[32];
    __shared__ fs_record merged;
    const bool warm_grid = FILT && !TREE && filt.warm;
    const bool warm = warm_grid && slot < FS_FILTER_WARM_SLOTS;
    const int64_t row = slot - (warm_grid ? FS_FILTER_WARM_SLOTS : 0);
    if (!warm)
        fs_pdl_wait(); /* launched while the scan may still run */
    fs_probe_resolve_stamp(0);
    /* The loads of the row's first steps go out together once the
       descriptor is in: its lists (a row that filters) and its tile records
       (a valid row), and the status its finalize reads.  Loaded one after
       another, each was one more L2 or DRAM round trip on the path to the
       resolve -- the five lists of a thread five (fsf::issue_list).  They
       wait for the descriptor because the scans write a row's lists only
       when it filters: a speculative read would be of memory no one wrote
       (compute-sanitizer initcheck). */
    const bool filt_op = FILT && (filt.sums || filt.fdescs);
    fsf::warm_row wr;
    if (warm)
        wr = fsf::warm_inputs();
    const fs_row_desc d = warm ? wr.d : m.descs[row];
    /* a row this block filters: exported (sharded contexts) or resolved */
    const bool filt_row = FILT && (d.flags & FS_ROWF_FILTER) && (warm || filt_op);
    fsf::raw_list raw[fsf::PER];
    if (filt_row && !warm)
        fsf::fs_filter_issue_lists(filt.cands, row, filt.lists_per_row, raw);
    const int32_t pre_status =
        threadIdx.x == 0 && !warm && m.fin_op >= 0 ? m.pre_status[row] : (int32_t)FS_ROW_OK;
    fs_record acc;
    fs_record_init(&acc);
    if ((d.flags & FS_ROWF_VALID) && !warm)
        acc = fs_merge_run(m.tile_recs + row * m.tiles_per_row, m.tiles_per_row, threadIdx.x,
                           FS_MERGE_THREADS);
    acc = fs_record_block_reduce(acc, scratch);
    if (warm)
        acc = wr.rec;
    fs_cand_list mine[fsf::PER];
    if (warm)
        fsf::warm_lists(mine);
    else if (filt_row)
        fsf::fs_filter_take_lists(filt.cands, row, filt.lists_per_row, raw, mine);
    fs_probe_resolve_stamp(1);
    if (filt_row && filt.sums && !warm) {
        /* a shard of a tensor-parallel context: export the row's candidates;
           every rank resolves from all of them after the exchange */
        fsf::fs_filter_summarize_row(row, filt.cands, filt.lists_per_row, mine, filt.sums + row);
    } else if (filt_row) {
        if (threadIdx.x == 0)
            merged = acc;
        __syncthreads();
        const fs_record rec = merged;
        if (fs_record_status(&rec) == FS_ROW_OK) { /* uniform */
            const fs_filter_desc fd = warm ? wr.fd : filt.fdescs[row];
            fs_record kept;
            const fsf::tree_ctx tc = {TREE ? filt.tree_rows + row : nullptr,
                                      TREE ? filt.tree_child_s + row * FS_TREE_MAX_CHILDREN
                                           : nullptr};
            const int one = fsf::fs_filter_resolve_row<TREE>(
                warm ? 0 : row, rec, fd, d, filt.cands, warm ? fsf::WARM_LISTS : filt.lists_per_row,
                mine, filt.fb, warm ? nullptr : filt.flag_n, m.out_fallback,
                warm ? 0 : m.force_second_pass, filt.wide, warm ? nullptr : m.descs + row,
                warm ? nullptr : filt.fdescs + row, &kept, tc,
                warm ? (fsf::warm_part)(slot + 1) : fsf::WARM_NONE);
            if (warm)
                return;
            if (!one)
                return; /* the second pass ends the row */
            acc = kept;
            fs_probe_resolve_print();
        }
    }
    if (threadIdx.x != 0 || warm)
        return;
    if (m.fin_op >= 0)
        fs_finalize_row(m.fin_op, acc, d, pre_status, row, m.out_tokens, m.out_values,
                        m.out_row_status);
    else
        m.row_recs[row] = acc;
}

#endif
