/*
 * pack_columns.c - packing 0/1 bytes or packbits bytes that lie column after column (a .npy
 * in Fortran order) into the row layout of matrix.h (oc_pack_columns, matrix_build.h).
 *
 * A strided byte a time would read a cache line for every byte it packs. Instead the rows
 * go eight at a time: each source column gives one 64-bit load of its eight bytes for those
 * rows, the eight columns of one output byte are combined by shifts (a 0/1 byte keeps its
 * value in bit 0, so byte t of sum(x_k << (7 - k)) is row t's output byte), and the eight
 * output bytes of one word are turned round by an 8 x 8 byte transpose (three rounds of
 * swapping blocks of a 64-bit word), giving each of the eight rows its word. Packbits bytes
 * are output bytes already and only take the transpose. Validity is checked per group: the
 * OR of the loads, bit 0 of each byte cleared, is zero exactly when no byte is above 1; only
 * a block holding a bad byte is scanned again, in row order, for the first one.
 */
#include <string.h>

#include "matrix/matrix.h"
#include "matrix/matrix_build.h"

#define LOW_BITS 0x0101010101010101ull

/* n <= 8 bytes at p as the low bytes of a word, byte 0 lowest (zero above n). */
static inline uint64_t load_bytes(const unsigned char *p, int64_t n)
{
    uint64_t v = 0;
    if (n == 8) memcpy(&v, p, 8); /* the common case, a constant size: one load */
    else memcpy(&v, p, (size_t)n);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* A word whose byte g is output byte g, stored as matrix.h lays bytes out. */
static inline void store_word(uint64_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

/* Each byte 1 where it was nonzero, else 0. */
static inline uint64_t nonzero_bytes(uint64_t v)
{
    const uint64_t low7 = 0x7F7F7F7F7F7F7F7Full;
    return ((((v & low7) + low7) | v) >> 7) & LOW_BITS;
}

/* x[g]'s byte t becomes x[t]'s byte g. */
static inline void transpose8(uint64_t x[8])
{
    for (int g = 0; g < 4; ++g) {
        uint64_t a = x[g], b = x[g + 4];
        x[g] = (a & 0x00000000FFFFFFFFull) | (b << 32);
        x[g + 4] = (a >> 32) | (b & 0xFFFFFFFF00000000ull);
    }
    static const int firsts[] = {0, 1, 4, 5};
    for (int k = 0; k < 4; ++k) {
        const int g = firsts[k];
        uint64_t a = x[g], b = x[g + 2];
        x[g] = (a & 0x0000FFFF0000FFFFull) | ((b & 0x0000FFFF0000FFFFull) << 16);
        x[g + 2] = ((a >> 16) & 0x0000FFFF0000FFFFull) | (b & 0xFFFF0000FFFF0000ull);
    }
    for (int g = 0; g < 8; g += 2) {
        uint64_t a = x[g], b = x[g + 1];
        x[g] = (a & 0x00FF00FF00FF00FFull) | ((b & 0x00FF00FF00FF00FFull) << 8);
        x[g + 1] = ((a >> 8) & 0x00FF00FF00FF00FFull) | (b & 0xFF00FF00FF00FF00ull);
    }
}

/* The first byte above 1 in row order among rows [0, rows) of source columns [c0, c1)
 * (column c at src + (c - c0) * stride): its row, its column in *bad_col; -1 when none. */
static int64_t first_bad_byte(const unsigned char *src, int64_t stride, int64_t rows, int64_t c0, int64_t c1,
                              int64_t *bad_col)
{
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t c = c0; c < c1; ++c)
            if (src[(c - c0) * stride + i] > 1) {
                *bad_col = c;
                return i;
            }
    return -1;
}

int64_t oc_pack_columns(const unsigned char *src, int64_t stride, int64_t rows, int64_t cols, int packed,
                        oc_dense_bytes kind, int64_t w0, int64_t w1, uint64_t *dst, int64_t ld, int64_t *bad_col)
{
    /* Source columns: one a bit (0/1 bytes) or one a byte of bits (packbits rows). */
    const int64_t per_word = packed ? 8 : 64, c0 = w0 * per_word, ncols = packed ? (cols + 7) / 8 : cols;
    const int binarize = !packed && kind == OC_DENSE_BINARIZE;
    /* The packbits column holding bits past cols, and the bits of it that are columns. */
    const int64_t last = packed && cols % 8 ? ncols - 1 : -1;
    const uint64_t keep = (uint64_t)(0xFF00u >> (cols % 8)) & 0xFF;
    for (int64_t i0 = 0; i0 < rows; i0 += 8) {
        const int64_t n = rows - i0 < 8 ? rows - i0 : 8;
        for (int64_t w = w0; w < w1; ++w) {
            uint64_t x[8], seen = 0;
            const int64_t cw = w * per_word;
            if (packed) {
                for (int g = 0; g < 8; ++g)
                    x[g] = cw + g < ncols ? load_bytes(src + (cw + g - c0) * stride + i0, n) : 0;
            } else {
                for (int g = 0; g < 8; ++g) {
                    uint64_t acc = 0;
                    const int64_t cg = cw + 8 * g, k_end = ncols - cg < 8 ? ncols - cg : 8;
                    for (int64_t k = 0; k < k_end; ++k) {
                        uint64_t v = load_bytes(src + (cg + k - c0) * stride + i0, n);
                        if (binarize) v = nonzero_bytes(v);
                        seen |= v;
                        acc |= v << (7 - k);
                    }
                    x[g] = acc;
                }
            }
            if (seen & ~LOW_BITS) {
                const int64_t c1 = w1 * per_word < ncols ? w1 * per_word : ncols;
                int64_t row = first_bad_byte(src, stride, rows, c0, c1, bad_col);
                if (row >= 0) return row;
            }
            transpose8(x);
            int64_t extra_row = -1;
            if (last >= cw && last < cw + 8) {
                /* Bits past cols: cleared, and the first row holding one reported. */
                const int shift = (int)(8 * (last - cw));
                for (int64_t t = 0; t < n; ++t) {
                    unsigned char byte = (unsigned char)(x[t] >> shift);
                    if (extra_row < 0 && (byte & ~keep & 0xFF)) {
                        extra_row = i0 + t;
                        *bad_col = oc_packed_clear_past(&byte, cols);
                    }
                    x[t] &= ~((~keep & 0xFF) << shift);
                }
            }
            for (int64_t t = 0; t < n; ++t) store_word(dst + (i0 + t) * ld + (w - w0), x[t]);
            if (extra_row >= 0) return extra_row;
        }
    }
    return -1;
}
