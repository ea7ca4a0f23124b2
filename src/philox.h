/* Counter-based Philox4x32-10 (Salmon et al., "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11) and the mapping from flashspec's coordinates to
 * counters.  Usable from C and from CUDA device code.
 *
 * Coordinates -> counter/key, so that a random number depends only on
 * (seed, offset, position, token id, purpose):
 *   key     = (seed lo, seed hi)
 *   counter = (token_id / 4, position | purpose << 24, offset lo, offset hi)
 * and the token takes output word token_id % 4.  Four consecutive tokens
 * share one Philox call, which quarters the cost of the noise on the GPU
 * without tying the value to the tile that happens to hold the token. */
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

/* The four words that serve tokens 4*group .. 4*group+3. */
FS_HD fs_u32x4 fs_philox_tokens(uint64_t seed, uint64_t offset, uint32_t position,
                                uint32_t purpose, uint32_t group)
{
    fs_u32x4 c;
    c.v[0] = group;
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

/* Gumbel noise of one (global) token. */
FS_HD float fs_gumbel_token(uint64_t seed, uint64_t offset, uint32_t position, int32_t token)
{
    fs_u32x4 w = fs_philox_tokens(seed, offset, position, FS_PURPOSE_GUMBEL, (uint32_t)token >> 2);
    return fs_gumbel(w.v[token & 3]);
}

/* The acceptance uniform of the draft at a position. */
FS_HD float fs_accept_uniform(uint64_t seed, uint64_t offset, uint32_t position)
{
    fs_u32x4 w = fs_philox_tokens(seed, offset, position, FS_PURPOSE_ACCEPT, 0);
    return fs_uniform(w.v[0]);
}

#endif
