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
    FS_FAULT_LOW_T_GREEDY = 16u /* rows with a valid temperature below 0.3 sample greedily */
};

#define FS_CPU_DEFAULT_TILE 256

void fs_cpu_set_tile_size(int64_t tile); /* <= 0 restores the default */
void fs_cpu_set_faults(uint32_t faults);

#endif
