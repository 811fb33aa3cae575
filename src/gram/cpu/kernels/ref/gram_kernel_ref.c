/*
 * gram_kernel_ref.c - the reference micro-kernel: the specification of kernel.h in plain C.
 * Every ISA kernel is tested against it bit for bit; keep it obviously correct.
 */
#include "gram/cpu/kernels/kernel.h"

void oc_gram_kernel_ref(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr, int nr,
                        uint32_t *c, int64_t ldc)
{
    for (int i = 0; i < mr; ++i)
        for (int j = 0; j < nr; ++j) {
            const uint64_t *ra = a + i * lda, *rb = b + j * ldb;
            uint32_t sum = 0;
            for (int64_t w = 0; w < kw; ++w) sum += (uint32_t)__builtin_popcountll(ra[w] & rb[w]);
            c[i * ldc + j] += sum;
        }
}
