#include "engine/sink.h"

#include <string.h>

#include "core/pages.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The mirror in square blocks, so that the tile's columns read in a block stay in the cache
 * while dst's rows are written in runs; inlined with elem a constant for each element size
 * (memcpy of a constant size is one move). */
#define MIRROR_BLOCK 32
static inline __attribute__((always_inline)) void mirror_blocks(unsigned char *dst, int64_t ld,
                                                                const unsigned char *tile, int64_t tile_ld,
                                                                int64_t rows, int64_t cols, int64_t diag, size_t e)
{
    for (int64_t rb = 0; rb < rows; rb += MIRROR_BLOCK) {
        const int64_t r_end = rb + MIRROR_BLOCK < rows ? rb + MIRROR_BLOCK : rows;
        /* the block's first column with an element above the diagonal */
        const int64_t c_first = rb + diag + 1 > 0 ? rb + diag + 1 : 0;
        for (int64_t cb = c_first; cb < cols; cb += MIRROR_BLOCK) {
            const int64_t c_end = cb + MIRROR_BLOCK < cols ? cb + MIRROR_BLOCK : cols;
            for (int64_t c = cb; c < c_end; c++) {
                /* rows r < c - diag of column c are above the diagonal */
                const int64_t r_stop = c - diag < r_end ? c - diag : r_end;
                unsigned char *row = dst + (size_t)c * (size_t)ld * e;
                for (int64_t r = rb; r < r_stop; r++)
                    memcpy(row + (size_t)r * e, tile + (size_t)(r * tile_ld + c) * e, e);
            }
        }
    }
}

void oc_tile_mirror(void *dst, int64_t ld, const void *tile, int64_t tile_ld, int64_t rows, int64_t cols, int64_t diag,
                    size_t elem)
{
    unsigned char *d = dst;
    const unsigned char *t = tile;
    switch (elem) {
    case 1:
        mirror_blocks(d, ld, t, tile_ld, rows, cols, diag, 1);
        break;
    case 2:
        mirror_blocks(d, ld, t, tile_ld, rows, cols, diag, 2);
        break;
    case 4:
        mirror_blocks(d, ld, t, tile_ld, rows, cols, diag, 4);
        break;
    case 8:
        mirror_blocks(d, ld, t, tile_ld, rows, cols, diag, 8);
        break;
    default:
        mirror_blocks(d, ld, t, tile_ld, rows, cols, diag, elem);
        break;
    }
}

void oc_tile_store(void *c, int64_t ld, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const void *tile,
                   int64_t tile_ld, size_t elem, int symmetric)
{
    char *base = c;
    const char *src = tile;
    const int64_t es = (int64_t)elem;
    for (int64_t r = 0; r < rows; ++r) {
        /* In a diagonal tile, row r starts at the diagonal: what lies left of it is the
         * mirror's job and may be unset in the tile. */
        int64_t c0 = (symmetric && j0 < i0 + r) ? (i0 + r - j0) : 0;
        if (c0 >= cols) continue;
        memcpy(base + ((i0 + r) * ld + j0 + c0) * es, src + (r * tile_ld + c0) * es, (size_t)((cols - c0) * es));
    }
    if (symmetric) oc_tile_mirror(base + (j0 * ld + i0) * es, ld, tile, tile_ld, rows, cols, i0 - j0, elem);
}

void oc_dense_sink_store(const oc_dense_sink *s, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const void *tile,
                         int64_t tile_ld)
{
    oc_tile_store(s->base, s->ld, i0, j0, rows, cols, tile, tile_ld, s->elem_size, s->symmetric);
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
