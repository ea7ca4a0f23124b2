/* Lays a CPU workspace out as consecutive arrays, each 64-byte aligned (a
 * cache line: no two arrays share one).  With base NULL it only counts, so
 * one function gives both the workspace size and the layout. */
#ifndef FS_WS_CARVE_H
#define FS_WS_CARVE_H

#include <stddef.h>

typedef struct fs_carver {
    char *base; /* NULL: count only */
    size_t at;  /* bytes laid out so far */
} fs_carver;

/* The next `bytes` of the workspace (NULL when counting). */
static inline void *fs_carve(fs_carver *c, size_t bytes)
{
    void *p = c->base ? c->base + c->at : NULL;
    c->at += (bytes + 63) & ~(size_t)63;
    return p;
}

#endif
