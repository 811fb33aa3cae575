/*
 * pack_bytes.h - packing rows of 0/1 bytes into the bit layout of matrix.h, and the
 * variants of that loop chosen by the CPU at run time.
 *
 * The kernel contract (every variant, the reference byte loop first):
 *   pack(src, cols, dst, words_per_row, binarize)
 *   - src: cols bytes, any alignment; dst: words_per_row 64-bit words, 8-byte aligned,
 *     words_per_row * 64 >= cols.
 *   - bit (7 - j % 8) of byte j / 8 of dst is 1 when src[j] is nonzero (binarize) or
 *     when src[j] & 1 (otherwise); every byte of dst past the row's bits is written 0,
 *     so dst needs no clearing first.
 *   - returns -1, or (binarize == 0 only) the index of the first byte of src greater
 *     than 1; dst is then still fully written but its content is unspecified.
 * The variants differ in instructions only and must give identical dst and returns; the
 * tests run each one against the reference on odd widths, tails and bad values at every
 * position class.
 *
 * Why these live in matrix/ and not with the ISA kernels of src/gram/cpu/kernels: the readers in
 * src/io and the public constructors in matrix/ pack bytes before any backend is chosen, and
 * nothing outside a gram/ folder includes its kernels. SSE2 is part of x86-64 itself, so its variant needs no flag;
 * the AVX2 and AVX-512BW variants are compiled with function-level target attributes and
 * taken only when cpuid reports them (and OUTCORE_CPU_ISA does not ask for less: ref, avx2),
 * the same rule as the Gram kernels. The loop reads eight bytes for each byte it writes, so
 * every vector variant is bound by memory reads rather than by its instructions.
 */
#ifndef OC_MATRIX_PACK_BYTES_H
#define OC_MATRIX_PACK_BYTES_H

#include <stdint.h>

typedef int64_t (*oc_pack_bytes_fn)(const unsigned char *src, int64_t cols, uint64_t *dst, int64_t words_per_row,
                                    int binarize);

typedef enum oc_pack_bytes_variant {
    OC_PACK_BYTES_REF = 0,
    OC_PACK_BYTES_SSE2 = 1,
    OC_PACK_BYTES_AVX2 = 2,
    OC_PACK_BYTES_AVX512 = 3,
    OC_PACK_BYTES_VARIANTS
} oc_pack_bytes_variant;

/* The variant's function, or NULL when this CPU or build cannot run it. */
oc_pack_bytes_fn oc_pack_bytes_get(oc_pack_bytes_variant v);

/* The variant used by the library: the widest this CPU runs, capped by OUTCORE_CPU_ISA
 * (ref: the byte loop; avx2: at most AVX2), chosen once. */
oc_pack_bytes_fn oc_pack_bytes_best(void);

/* Its name ("ref", "sse2", "avx2", "avx512"), for benchmarks and tests. */
const char *oc_pack_bytes_name(oc_pack_bytes_variant v);

#endif
