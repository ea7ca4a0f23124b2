/* Test hooks of the CPU backend.  Process-wide and not thread-safe: only the
 * test suite sets them, to show that answers do not depend on the tile size
 * and that the statistical harness rejects deliberately wrong samplers
 * (docs/TESTING.md lists which test catches which fault). */
#ifndef FS_CPU_BACKEND_H
#define FS_CPU_BACKEND_H

#include <stdint.h>

enum fs_cpu_fault {
    FS_FAULT_NONE = 0,
    FS_FAULT_NO_EXCLUDE = 1u, /* recovery candidate keeps the draft token (wrong residual) */
    FS_FAULT_TILE_EDGE = 2u,  /* each tile's last token is never pushed (off-by-one) */
    FS_FAULT_KEEP_SIBLINGS = 4u, /* tree verify: the recovery candidate leaves out only the
                                   last child (a chain's rule), not the rejected siblings */
    FS_FAULT_UNFILTERED_PX = 8u,  /* filtered verify accepts drafts (tree verify: children)
                                     with the unfiltered p(x) */
    FS_FAULT_LOW_T_GREEDY = 16u, /* rows with a valid temperature below 0.3 sample greedily */
    FS_FAULT_UNFILTERED_DRAW = 32u /* filtered tree verify recovers (and draws the bonus)
                                      from the unfiltered row */
};

#define FS_CPU_DEFAULT_TILE 256

void fs_cpu_set_tile_size(int64_t tile); /* <= 0 restores the default */
void fs_cpu_set_faults(uint32_t faults);
/* The current settings, for scans outside cpu_backend.c (tree verify). */
int64_t fs_cpu_tile_size(void);
uint32_t fs_cpu_faults(void);

/* Tensor-parallel emulation: fs_cpu_run (and tree verify) scans the vocabulary as n parts
 * [cuts[i], cuts[i+1]) of the context's tokens, each on its own as a rank
 * scans its shard, and merges their records in part order as the ranks'
 * exchange does (filters' second pass: histograms summed in part order).
 * cuts[0] = 0, ascending, multiples of 16 but for cuts[n] = the vocabulary
 * size, which the op must then have.  n <= 1 turns it off.  Returns 0, or -1
 * (and changes nothing) for more than FS_CPU_MAX_SHARDS parts or bad cuts. */
#define FS_CPU_MAX_SHARDS 8
int fs_cpu_set_vocab_shards(int n, const int64_t *cuts);
/* The number of parts set (1: off). */
int fs_cpu_vocab_shards(void);

/* Filters (cpu_filter.c): candidates kept per record, 1 .. FS_FILTER_CANDIDATES
 * (<= 0 restores FS_FILTER_CANDIDATES), so that small inputs reach the second
 * pass; and a switch that sends every filtered row through the second pass.
 * Neither changes a token, up to near-ties of the masses. */
void fs_cpu_set_filter_candidates(int cap);
void fs_cpu_set_filter_second_pass(int force);

#endif
