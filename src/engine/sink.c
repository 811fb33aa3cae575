#include "engine/sink.h"

#include <string.h>

#include "core/pages.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Transposed copy in 32x32 blocks keeps both the reads and the writes within a few cache
 * lines per row. */
#define MIRROR_BLOCK 32

#define DEFINE_MIRROR(NAME, T)                                                                                  \
    static void NAME(const oc_dense_sink *s, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const T *tile, \
                     int64_t tile_ld)                                                                           \
    {                                                                                                           \
        T *base = (T *)s->base;                                                                                 \
        for (int64_t cb = 0; cb < cols; cb += MIRROR_BLOCK)                                                     \
            for (int64_t rb = 0; rb < rows; rb += MIRROR_BLOCK) {                                               \
                int64_t ce = cb + MIRROR_BLOCK < cols ? cb + MIRROR_BLOCK : cols;                               \
                int64_t re = rb + MIRROR_BLOCK < rows ? rb + MIRROR_BLOCK : rows;                               \
                for (int64_t c = cb; c < ce; ++c) {                                                             \
                    T *dst = base + (j0 + c) * s->ld + i0;                                                      \
                    for (int64_t r = rb; r < re; ++r)                                                           \
                        if (j0 + c > i0 + r) dst[r] = tile[r * tile_ld + c];                                    \
                }                                                                                               \
            }                                                                                                   \
    }

DEFINE_MIRROR(mirror_u16, uint16_t)
DEFINE_MIRROR(mirror_u32, uint32_t)

void oc_dense_sink_store(const oc_dense_sink *s, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const void *tile,
                         int64_t tile_ld)
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
    if (es == 2) mirror_u16(s, i0, j0, rows, cols, tile, tile_ld);
    else mirror_u32(s, i0, j0, rows, cols, tile, tile_ld);
}

/* One row, n bytes: plain stores up to a 16-byte boundary of the destination, then 16-byte
 * non-temporal stores (SSE2 is part of x86-64, so this needs no dispatch), then the tail. */
static void copy_row_streaming(char *dst, const char *src, size_t n)
{
#if defined(__SSE2__)
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (n < head + 64) {
        memcpy(dst, src, n);
        return;
    }
    memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    memcpy(dst + i, src + i, n - i);
#else
    memcpy(dst, src, n);
#endif
}

/* A block that covers whole rows of the destination overwrites every byte of its range right
 * after, so whatever the memory (a fresh numpy array, a mapped output), faulting the range
 * in at once (oc_pages_populate_write) is safe and spares one exception per page. */
#define POPULATE_MIN_BYTES ((size_t)1 << 20)

void oc_dense_sink_put(const oc_dense_sink *s, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const void *block,
                       int64_t block_ld)
{
    const char *src = block;
    int64_t es = (int64_t)s->elem_size;
    if (s->populate && j0 == 0 && cols == s->ld && (size_t)(rows * cols * es) >= POPULATE_MIN_BYTES)
        oc_pages_populate_write(s->base + i0 * s->ld * es, (size_t)(rows * cols * es));
    for (int64_t r = 0; r < rows; ++r)
        copy_row_streaming(s->base + ((i0 + r) * s->ld + j0) * es, src + r * block_ld * es, (size_t)(cols * es));
#if defined(__SSE2__)
    /* Non-temporal stores are weakly ordered: fence them before the caller reports the
     * block delivered (another thread may read the destination after that). */
    _mm_sfence();
#endif
}
