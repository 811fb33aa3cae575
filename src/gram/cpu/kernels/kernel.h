/*
 * kernel.h - the contracts of the CPU Gram micro-kernels and tile epilogues, written once for
 * every ISA.
 *
 * A micro-kernel adds the AND-popcounts of a small block of row pairs into a uint32 tile:
 *
 *     for i < mr, j < nr:   c[i * ldc + j] += sum over w < kw of popcount(a[i * lda + w] & b[j * ldb + w])
 *
 *   a, b     the first word of the K block of the first row of the A and B micro-panels.
 *            Both are 64-byte aligned (rows start on cache lines: see src/matrix/matrix.h).
 *   lda, ldb words between consecutive rows (the matrix's words_per_row); multiples of 8.
 *   kw       words in the K block: a positive multiple of 8 (512 bits), so no kernel has a
 *            column tail. Padding bits past the last column are zero in every row, which
 *            leaves every count unchanged.
 *   mr, nr   rows of the block, mr >= 1 and 1 <= nr <= NR of the kernel's ISA: a call
 *            covers a strip of A rows against one B micro-panel, walking the strip MR rows
 *            at a time inside the ISA's code (one call per micro-tile cost as much as a
 *            third of the loop at short K). The tails (the strip's last rows, nr < NR at
 *            a tile's right edge) are exact: a kernel never reads rows at or past
 *            a + mr * lda or b + nr * ldb and never writes outside the mr x nr block of c.
 *   c, ldc   the uint32 accumulator tile and the elements between its rows; the kernel adds
 *            to what is there, so a caller splits K into blocks by calling it once per block.
 *            The caller keeps kw * 64 plus the tile's previous values below 2^32.
 *
 * The reference kernel (ref/) is the specification; every other kernel must give the same
 * tile bit for bit. Each ISA's kernel lives in its own directory, compiled with that ISA's
 * flags only, so it must be called only after cpuid said the CPU and the OS support it
 * (src/core/isa.c decides). Kernels take raw pointers and sizes only: no runtime headers.
 */
#ifndef OC_GRAM_CPU_KERNELS_KERNEL_H
#define OC_GRAM_CPU_KERNELS_KERNEL_H

#include <stdint.h>

#include "core/isa.h"

typedef void (*oc_gram_kernel_fn)(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr,
                                  int nr, uint32_t *c, int64_t ldc);

/* Words per K step of every kernel: one 512-bit row segment. */
#define OC_KERNEL_K_WORDS 8

/* Micro-tile shapes (MR rows of A x NR rows of B): what a kernel keeps in registers. */
#define OC_KERNEL_REF_MR 4
#define OC_KERNEL_REF_NR 4
/* AVX2 has 16 ymm registers: 6 byte accumulators, the nibble table, the mask, two A rows,
 * one B row and the lookup's temporaries (a 2 x 4 block spills accumulators in the loop). */
#define OC_KERNEL_AVX2_MR 2
#define OC_KERNEL_AVX2_NR 3
/* AVX-512 has 32 zmm registers: 24 accumulators, 4 A rows, one B row and temporaries. */
#define OC_KERNEL_AVX512_MR 4
#define OC_KERNEL_AVX512_NR 6

/* The strip walk of a vector kernel over the operands of an oc_gram_kernel_fn (a .. ldc):
 * whole micro-tiles of the full width run BODY(a, lda, b, ldb, kw, c, ldc, MR, NR), the
 * ISA's always-inline micro-tile, so there is no call per micro-tile; the tails call
 * SHAPES[rows - 1][nr - 1](a, lda, b, ldb, kw, c, ldc), its instances for smaller blocks. */
#define OC_KERNEL_STRIP_WALK(BODY, SHAPES, MR, NR, a, lda, b, ldb, kw, mr, nr, c, ldc)                              \
    do {                                                                                                            \
        int i_ = 0;                                                                                                 \
        if (nr == (NR))                                                                                             \
            for (; i_ + (MR) <= mr; i_ += (MR)) BODY(a + i_ * lda, lda, b, ldb, kw, c + i_ * ldc, ldc, (MR), (NR)); \
        for (; i_ < mr; i_ += (MR)) {                                                                               \
            const int rows_ = mr - i_ < (MR) ? mr - i_ : (MR);                                                      \
            (SHAPES)[rows_ - 1][nr - 1](a + i_ * lda, lda, b, ldb, kw, c + i_ * ldc, ldc);                          \
        }                                                                                                           \
    } while (0)

void oc_gram_kernel_ref(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr, int nr,
                        uint32_t *c, int64_t ldc);
void oc_gram_kernel_avx2(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr, int nr,
                         uint32_t *c, int64_t ldc);
void oc_gram_kernel_avx512(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr, int nr,
                           uint32_t *c, int64_t ldc);

/*
 * The tile epilogue: converts a rows x cols block of uint32 counts into one output of the
 * job (src/core/metric.h defines every value):
 *
 *     for r < rows, j < cols:   out[r * ldo + j] = metric(c[r * ldc + j], pa[r], pb[j])
 *
 *   kind     the metric and the output's element type (below); pa and pb are unused, and may
 *            be NULL, for OC_EPILOGUE_COUNTS_U16.
 *   pa, pb   the row popcounts of the block's A rows and B rows.
 *   pop_max  a bound of every popcount and every count: 0 <= c, pa[r], pb[j] <= pop_max
 *            <= UINT32_MAX (the matrix's column count bounds them all). Kernels may use it to
 *            pick a narrower exact path (avx2/ and avx512/ say when).
 *   out, ldo the output block and the elements between its rows; nothing outside the
 *            rows x cols block is written.
 *
 * The reference (ref/) calls metric.h element by element; every other ISA's epilogue must
 * give the same bytes for every input that satisfies the bounds above.
 */
typedef enum oc_epilogue_kind {
    OC_EPILOGUE_COUNTS_U16 = 0, /* uint16: the count, truncated (the caller checked it fits) */
    OC_EPILOGUE_HAMMING_I32,    /* int32: |a| + |b| - 2c */
    OC_EPILOGUE_HAMMING_U16,    /* uint16: |a| + |b| - 2c, truncated (the caller checked it fits) */
    OC_EPILOGUE_JACCARD,        /* float32 */
    OC_EPILOGUE_COSINE          /* float32 */
} oc_epilogue_kind;

typedef void (*oc_epilogue_fn)(oc_epilogue_kind kind, const uint32_t *c, int64_t ldc, const int64_t *pa,
                               const int64_t *pb, int64_t rows, int64_t cols, int64_t pop_max, void *out, int64_t ldo);

void oc_epilogue_ref(oc_epilogue_kind kind, const uint32_t *c, int64_t ldc, const int64_t *pa, const int64_t *pb,
                     int64_t rows, int64_t cols, int64_t pop_max, void *out, int64_t ldo);
void oc_epilogue_avx2(oc_epilogue_kind kind, const uint32_t *c, int64_t ldc, const int64_t *pa, const int64_t *pb,
                      int64_t rows, int64_t cols, int64_t pop_max, void *out, int64_t ldo);
void oc_epilogue_avx512(oc_epilogue_kind kind, const uint32_t *c, int64_t ldc, const int64_t *pa, const int64_t *pb,
                        int64_t rows, int64_t cols, int64_t pop_max, void *out, int64_t ldo);

/* A CPU path's Gram kernel and the same instruction set's tile epilogue (kernel_table.c). */
typedef struct oc_cpu_kernel {
    oc_cpu_isa_id isa;
    const char *name; /* "ref", "avx2", "avx512" */
    int mr, nr;       /* micro-tile shape */
    oc_gram_kernel_fn fn;
    oc_epilogue_fn epilogue; /* the same ISA's tile epilogue */
} oc_cpu_kernel;

/* The kernel of the path in use (core/isa.h: selected on first call; thread-safe). */
const oc_cpu_kernel *oc_cpu_kernel_get(void);

#endif
