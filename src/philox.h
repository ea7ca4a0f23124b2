/* Counter-based Philox4x32-10 (Salmon et al., "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11) and the mapping from flashspec's coordinates to
 * counters.  Usable from C and from CUDA device code.
 *
 * Sampling noise is drawn per noise block (FS_NOISE_BLOCK = 16 consecutive
 * global token ids, record.h explains why), so a random number depends only
 * on (seed, offset, position, noise block, purpose):
 *   key     = (seed lo, seed hi)
 *   counter = (block / 2, position | purpose << 24, offset lo, offset hi)
 * and block b takes output words 2 (b % 2) (its Gumbel uniform) and
 * 2 (b % 2) + 1 (its within-block uniform).  Never the tile, batch slot or
 * GPU that happens to hold the block. */
#ifndef FS_PHILOX_H
#define FS_PHILOX_H

#include <math.h>
#include <stdint.h>

#include "fs_hd.h"

typedef struct fs_u32x4 {
    uint32_t v[4];
} fs_u32x4;

enum fs_purpose {
    FS_PURPOSE_GUMBEL = 0, /* Gumbel noise of sampling, recovery and bonus tokens */
    FS_PURPOSE_ACCEPT = 1  /* the uniform of a draft's acceptance test */
};

#define FS_MAX_POSITION ((1u << 24) - 1u)

FS_HD void fs_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

FS_HD fs_u32x4 fs_philox4x32_10(fs_u32x4 c, uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0, lo0, hi1, lo1;
        fs_mulhilo32(0xD2511F53u, c.v[0], &hi0, &lo0);
        fs_mulhilo32(0xCD9E8D57u, c.v[2], &hi1, &lo1);
        fs_u32x4 n;
        n.v[0] = hi1 ^ c.v[1] ^ k0;
        n.v[1] = lo1;
        n.v[2] = hi0 ^ c.v[3] ^ k1;
        n.v[3] = lo0;
        c = n;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}

/* The four words of counter index `index` (noise: blocks 2 index, 2 index + 1). */
FS_HD fs_u32x4 fs_philox_draw(uint64_t seed, uint64_t offset, uint32_t position,
                              uint32_t purpose, uint32_t index)
{
    fs_u32x4 c;
    c.v[0] = index;
    c.v[1] = (position & FS_MAX_POSITION) | (purpose << 24);
    c.v[2] = (uint32_t)offset;
    c.v[3] = (uint32_t)(offset >> 32);
    return fs_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* Uniform strictly inside (0, 1): (k + 1/2) / 2^23 for the top 23 bits k.
 * Every step is exact in float, the largest value is 1 - 2^-24 < 1 and the
 * smallest 2^-24 > 0, so -log(-log(u)) is always finite. */
FS_HD float fs_uniform(uint32_t x)
{
    return ((float)(x >> 9) + 0.5f) * (1.0f / 8388608.0f);
}

FS_HD float fs_gumbel(uint32_t x)
{
    return -logf(-logf(fs_uniform(x)));
}

/* The two words of noise block `block`: *wg for its Gumbel noise, *wu for the
 * uniform that picks the token inside it. */
FS_HD void fs_block_words(uint64_t seed, uint64_t offset, uint32_t position, uint32_t block,
                          uint32_t *wg, uint32_t *wu)
{
    fs_u32x4 w = fs_philox_draw(seed, offset, position, FS_PURPOSE_GUMBEL, block >> 1);
    *wg = (block & 1u) ? w.v[2] : w.v[0];
    *wu = (block & 1u) ? w.v[3] : w.v[1];
}

/* The acceptance uniform of the draft at a position. */
FS_HD float fs_accept_uniform(uint64_t seed, uint64_t offset, uint32_t position)
{
    fs_u32x4 w = fs_philox_draw(seed, offset, position, FS_PURPOSE_ACCEPT, 0);
    return fs_uniform(w.v[0]);
}

#endif
