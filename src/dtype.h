/* Exact widening of the stored dtypes to float on the host.  (Every bf16 and
 * fp16 value is exactly representable in float, so any correct converter
 * gives the same value: the CPU and GPU backends see identical inputs.) */
#ifndef FS_DTYPE_H
#define FS_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flashspec.h"

/* Bytes of one element. */
static inline size_t fs_dtype_bytes(fs_dtype d)
{
    return d == FS_DTYPE_F32 ? 4 : 2;
}

static inline float fs_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float fs_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    uint32_t u;
    if (exp == 0x1Fu) {
        u = sign | 0x7F800000u | (man << 13); /* inf / NaN */
    } else if (exp != 0) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else { /* subnormal half: renormalise */
        int e = -1;
        do {
            man <<= 1;
            ++e;
        } while (!(man & 0x400u));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3FFu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
