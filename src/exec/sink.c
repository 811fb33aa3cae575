#include "sink.h"

#include <string.h>

/* Transposed copy in 32x32 blocks keeps both the reads and the writes within a few cache
 * lines per row. */
#define MIRROR_BLOCK 32

#define DEFINE_MIRROR(NAME, T)                                                                     \
    static void NAME(const oc_dense_sink *s, int64_t i0, int64_t j0, int64_t rows, int64_t cols,    \
                     const T *tile, int64_t tile_ld)                                               \
    {                                                                                              \
        T *base = (T *)s->base;                                                                    \
        for (int64_t cb = 0; cb < cols; cb += MIRROR_BLOCK)                                        \
            for (int64_t rb = 0; rb < rows; rb += MIRROR_BLOCK) {                                  \
                int64_t ce = cb + MIRROR_BLOCK < cols ? cb + MIRROR_BLOCK : cols;                  \
                int64_t re = rb + MIRROR_BLOCK < rows ? rb + MIRROR_BLOCK : rows;                  \
                for (int64_t c = cb; c < ce; ++c) {                                                \
                    T *dst = base + (j0 + c) * s->ld + i0;                                         \
                    for (int64_t r = rb; r < re; ++r)                                              \
                        if (j0 + c > i0 + r) dst[r] = tile[r * tile_ld + c];                       \
                }                                                                                  \
            }                                                                                      \
    }

DEFINE_MIRROR(mirror_u16, uint16_t)
DEFINE_MIRROR(mirror_u32, uint32_t)

void oc_dense_sink_store(const oc_dense_sink *s, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                         const void *tile, int64_t tile_ld)
{
    const char *src = tile;
    size_t es = s->elem_size;
    for (int64_t r = 0; r < rows; ++r) {
        /* In a diagonal tile, row r starts at the diagonal: what lies left of it is the
         * mirror's job and may be unset in the tile. */
        int64_t c0 = (s->symmetric && j0 < i0 + r) ? (i0 + r - j0) : 0;
        if (c0 >= cols) continue;
        memcpy(s->base + ((i0 + r) * s->ld + j0 + c0) * (int64_t)es, src + (r * tile_ld + c0) * (int64_t)es,
               (size_t)(cols - c0) * es);
    }
    if (!s->symmetric) return;
    if (es == 2)
        mirror_u16(s, i0, j0, rows, cols, tile, tile_ld);
    else
        mirror_u32(s, i0, j0, rows, cols, tile, tile_ld);
}
