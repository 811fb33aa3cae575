/*
 * mm_blas.h - the BLAS the CPU product calls, loaded at run time (dlopen), never linked:
 * OUTCORE_BLAS names a library (or "none": the reference loops); else the first of
 * libopenblas.so.0, libcblas.so.3, libblas.so.3, libmkl_rt.so that has cblas_sgemm and
 * cblas_dgemm.
 */
#ifndef OC_MATMUL_CPU_MM_BLAS_H
#define OC_MATMUL_CPU_MM_BLAS_H

#include <stddef.h>
#include <stdint.h>

/* CBLAS's values of its enums. */
enum { OC_CBLAS_ROW_MAJOR = 101, OC_CBLAS_NO_TRANS = 111, OC_CBLAS_TRANS = 112, OC_CBLAS_UPPER = 121 };

typedef void (*oc_sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                            const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*oc_dgemm_fn)(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                            const double *b, int ldb, double beta, double *c, int ldc);

/* C = alpha·A·Aᵀ + beta·C on the upper triangle of C alone (A n x k). */
typedef void (*oc_ssyrk_fn)(int order, int uplo, int trans, int n, int k, float alpha, const float *a, int lda,
                            float beta, float *c, int ldc);
typedef void (*oc_dsyrk_fn)(int order, int uplo, int trans, int n, int k, double alpha, const double *a, int lda,
                            double beta, double *c, int ldc);

typedef struct oc_mm_blas {
    oc_sgemm_fn sgemm; /* NULL: no BLAS, the reference loops run */
    oc_dgemm_fn dgemm;
    oc_ssyrk_fn ssyrk; /* both or neither; NULL: diagonal tiles of A·Aᵀ by gemm */
    oc_dsyrk_fn dsyrk;
    void (*set_threads)(int); /* openblas_set_num_threads or MKL_Set_Num_Threads; may be NULL */
    char name[24];            /* "openblas", "mkl_rt", "blas"; "reference" without one */
    char library[256];        /* the file that was loaded, or "" */
    char note[320];           /* without one: what was tried and how to get one */
} oc_mm_blas;

/* Fills *b from OUTCORE_BLAS or the search list (the first load is remembered per name).
 * Returns 0 (a BLAS, or none and the reference loops: b->sgemm NULL), -1 when OUTCORE_BLAS
 * names a library that cannot be loaded or lacks the two functions, or -2 when an address
 * space limit leaves no room for the threads a threaded BLAS would start as it loads (not
 * remembered); why says which. */
int oc_mm_blas_load(oc_mm_blas *b, char *why, size_t why_size);

/* Around every call into the BLAS (core/process/fork_locks.h: a fork waits for the calls in flight).
 * Calls from several threads run side by side. */
void oc_mm_blas_call_begin(void);
void oc_mm_blas_call_end(void);

/* Whether b's calls on `threads` threads have the address space they need: OpenBLAS takes a
 * buffer of about 128 MiB for each thread that runs a call and retries a failed allocation
 * for ever, so under an address space limit (ulimit -v) without that room a call would never
 * return. 0 when there is room (no limit, another BLAS, or the buffers already in place after
 * a call on as many threads); else -1 with why: the limit, the buffers' size and, where one
 * fits, a smaller --threads. */
int oc_mm_blas_room(const oc_mm_blas *b, int threads, char *why, size_t why_size);
/* Notes that a call of b on `threads` threads returned: its buffers stay in place. */
void oc_mm_blas_ran(const oc_mm_blas *b, int threads);

/* Flop/s of b's GEMM (f32: sgemm, else dgemm) on `threads` threads, measured at first use of
 * a machine (matmul's choice caches it): square products from 256 on, doubling until one
 * takes RATE_SECONDS or reaches RATE_EDGE_MAX, after an untimed first call at each edge;
 * their three matrices within `room` bytes (<= 0: no limit). 0 without a BLAS or memory, or
 * when the room ends the doubling before a product is long enough to time. */
double oc_mm_blas_gemm_rate(const oc_mm_blas *b, int f32, int threads, int64_t room);

#endif
