/*
 * kernel.h - the contract of the CPU Gram micro-kernels, written once for every ISA.
 *
 * A micro-kernel adds the AND-popcounts of a small block of row pairs into a uint32 tile:
 *
 *     for i < mr, j < nr:   c[i * ldc + j] += sum over w < kw of popcount(a[i * lda + w] & b[j * ldb + w])
 *
 *   a, b     the first word of the K block of the first row of the A and B micro-panels.
 *            Both are 64-byte aligned (rows start on cache lines: see src/core/matrix.h).
 *   lda, ldb words between consecutive rows (the matrix's words_per_row); multiples of 8.
 *   kw       words in the K block: a positive multiple of 8 (512 bits), so no kernel has a
 *            column tail. Padding bits past the last column are zero in every row, which
 *            leaves every count unchanged.
 *   mr, nr   rows of the block, 1 <= mr <= MR and 1 <= nr <= NR of the kernel's ISA. The
 *            tails (mr < MR at the bottom edge of a tile, nr < NR at its right edge) are
 *            exact: a kernel never reads rows at or past a + mr * lda or b + nr * ldb and
 *            never writes outside the mr x nr block of c.
 *   c, ldc   the uint32 accumulator tile and the elements between its rows; the kernel adds
 *            to what is there, so a caller splits K into blocks by calling it once per block.
 *            The caller keeps kw * 64 plus the tile's previous values below 2^32.
 *
 * The reference kernel (ref/) is the specification; every other kernel must give the same
 * tile bit for bit. Each ISA's kernel lives in its own directory, compiled with that ISA's
 * flags only, so it must be called only after cpuid said the CPU and the OS support it
 * (src/cpu/isa.c decides). Kernels take raw pointers and sizes only: no runtime headers.
 */
#ifndef OC_CPU_KERNELS_KERNEL_H
#define OC_CPU_KERNELS_KERNEL_H

#include <stdint.h>

typedef void (*oc_gram_kernel_fn)(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw,
                                  int mr, int nr, uint32_t *c, int64_t ldc);

/* Words per K step of every kernel: one 512-bit row segment. */
#define OC_KERNEL_K_WORDS 8

/* Micro-tile shapes (MR rows of A x NR rows of B). */
#define OC_KERNEL_REF_MR 4
#define OC_KERNEL_REF_NR 4
/* AVX2 has 16 ymm registers: 6 byte accumulators, the nibble table, the mask, two A rows,
 * one B row and the lookup's temporaries (a 2 x 4 block spills accumulators in the loop). */
#define OC_KERNEL_AVX2_MR 2
#define OC_KERNEL_AVX2_NR 3
/* AVX-512 has 32 zmm registers: 24 accumulators, 4 A rows, one B row and temporaries. */
#define OC_KERNEL_AVX512_MR 4
#define OC_KERNEL_AVX512_NR 6

void oc_gram_kernel_ref(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr, int nr,
                        uint32_t *c, int64_t ldc);
void oc_gram_kernel_avx2(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr, int nr,
                         uint32_t *c, int64_t ldc);
void oc_gram_kernel_avx512(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr,
                           int nr, uint32_t *c, int64_t ldc);

#endif
