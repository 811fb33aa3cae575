/*
 * gram_cases.h - one table of Gram cases that every backend runs against one reference.
 *
 * As ggml's test-backend-ops: the table (gram_cases.c) says what to compute (shape, bit
 * pattern, output, tile, budgets), the reference (gram_reference.c) says what the answer is,
 * from the semantics of design.md written as plainly as possible, and the runner
 * (gram_runner.c) hands each case to a backend and compares the bytes it gives with the
 * reference's. A backend is one function that computes one job (gram_backend below); each
 * test binary lists its backends and their variants (tests/test_gram_cases.c for the CPU's
 * ISA paths and thread counts, tests/gpu/test_cuda_cases.c for the CUDA kernels). Adding a
 * metric, a shape or an output is adding rows; adding a backend is adding one function.
 *
 *      gram_cases[] --row--> bytes of A, B --> gram_ref_*  (reference)  --+
 *                                         \--> backend->run (one job) ----+--> memcmp
 *
 * Each row runs once per output of its `outputs` mask (metric and dtype); fields that matter
 * to one backend only (tile, gpu_tile, gpu_mem) are ignored by the others.
 */
#ifndef OC_TEST_GRAM_CASES_H
#define OC_TEST_GRAM_CASES_H

#include <stdint.h>

#include "outcore.h"

/* Every output a Gram job can produce: a metric and the dtype it is stored in. A row's
 * `outputs` is a mask of bits (1 << index) of this list; adding a metric is adding an entry. */
typedef struct gram_output {
    oc_metric metric;
    oc_dtype dtype;
} gram_output;
enum {
    GRAM_COUNTS_I32 = 1 << 0,
    GRAM_COUNTS_U16 = 1 << 1,
    GRAM_HAMMING_I32 = 1 << 2,
    GRAM_HAMMING_U16 = 1 << 3,
    GRAM_JACCARD = 1 << 4,
    GRAM_COSINE = 1 << 5,
    GRAM_OUTPUT_COUNT = 6,
    GRAM_ALL_OUTPUTS = (1 << GRAM_OUTPUT_COUNT) - 1
};
extern const gram_output gram_outputs[GRAM_OUTPUT_COUNT];

/* Under OUTCORE_TEST_QUICK the rows that run keep only these outputs of their mask. */
#define GRAM_QUICK_OUTPUTS (GRAM_COUNTS_I32 | GRAM_JACCARD | GRAM_COSINE)

/* How a row's bits are made (gram_case_bytes); every pattern is deterministic per row. */
typedef enum gram_pattern {
    GRAM_RANDOM = 0,     /* independent bits of the given density */
    GRAM_MIXED = 1,      /* rows cycle: random, empty, random, all ones, random */
    GRAM_DUPLICATES = 2, /* random rows, each odd row a copy of the row before: scores at the top */
    GRAM_SKEWED = 3      /* row i has density / 2^(i mod 8), every 11th row empty: the lengths
                          * a sparse algorithm meets (few long rows, many short ones) */
} gram_pattern;

typedef enum gram_kind {
    GRAM_DENSE = 0,    /* the n x p matrix in caller memory, rows ld = p + pad elements apart */
    GRAM_TOPK = 1,     /* each row's k best columns */
    GRAM_THRESHOLD = 2 /* every pair at or past the threshold, through the pairs callback */
} gram_kind;

/* k = p, the most the library takes: every column; for A·Aᵀ one slot past a row's n - 1
 * candidates, padded. */
#define GRAM_K_ALL_COLUMNS (-1)

/* Which backends run a row (gram_case.backends, gram_backend.kind); 0 in a row: every one. A
 * row that only makes sense to one algorithm (an input shape only a sparse algorithm must
 * survive, a budget only the GPU has) names it here; a new backend takes the next bit. */
enum { GRAM_ON_CPU = 1 << 0, GRAM_ON_CUDA = 1 << 1 };

typedef struct gram_case {
    const char *name;
    int64_t n, p;   /* rows of A and of B; p == 0: A·Aᵀ (B is A) */
    int64_t m;      /* columns */
    double density; /* fraction of ones of a random row */
    gram_pattern pattern;
    gram_kind kind;
    int64_t k;            /* GRAM_TOPK: k, or GRAM_K_ALL_COLUMNS */
    double threshold;     /* GRAM_THRESHOLD: jaccard and cosine: T; counts and hamming: the
                           * whole number nearest T * m (so one row covers every metric) */
    unsigned outputs;     /* mask of gram_outputs; 0: all (uint16 is skipped when m >= 65536,
                           * where the library refuses it) */
    int64_t tile;         /* CPU tile edge in rows (any size), 0: the planner's */
    int64_t gpu_tile;     /* CUDA tile edge in rows, rounded up to the kernel's granularity;
                           * 0: the planner's */
    int64_t pad;          /* GRAM_DENSE: extra elements at the end of each output row, which
                           * must stay untouched */
    int64_t gpu_mem;      /* CUDA budget in bytes (0: the default); small ones force panels to
                           * stream. Other backends ignore it. */
    int64_t pairs_buffer; /* GRAM_THRESHOLD: OUTCORE_PAIRS_BUFFER for the job (1 forces every
                           * pair through the spill file); 0: the default */
    unsigned backends;    /* GRAM_ON_* mask; 0: every backend */
    int quick;            /* the largest OUTCORE_TEST_QUICK level that still runs the row:
                           * 0 only the full run, 1, or 2 (racecheck's smallest grid) */
    int64_t cpu_rows;     /* n and p capped at this in a run without a GPU backend (0: never):
                           * for rows whose size serves the GPU's budgets alone and would cost
                           * the CPU paths most of the table's time for nothing */
} gram_case;

extern const gram_case gram_cases[];
extern const int gram_case_count;

/* A row's matrices as 0/1 bytes (rows x m, row-major, malloc'ed): A, then B from the same
 * stream. NULL when out of memory. */
unsigned char *gram_case_bytes(const gram_case *row, int64_t rows, uint64_t *seed);
uint64_t gram_case_seed(const gram_case *row);

/* Threshold pairs as delivered: (row, col) and the score's bytes, in arrival order. */
typedef struct gram_pairs {
    int64_t count, cap;
    int64_t *rows, *cols;
    unsigned char *values; /* count x elem bytes */
    size_t elem;
    int failed; /* an allocation failed: the list is incomplete */
} gram_pairs;
void gram_pairs_add(gram_pairs *p, const int64_t *rows, const int64_t *cols, const void *values, int64_t count);
void gram_pairs_free(gram_pairs *p);

/* One job of a row: one output, resolved sizes. */
typedef struct gram_job {
    const gram_case *row;
    const oc_matrix *a, *b;                 /* b == NULL: A·Aᵀ */
    const unsigned char *bytes_a, *bytes_b; /* the same as 0/1 bytes, row-major (bytes_b ==
                                             * bytes_a for A·Aᵀ), for backends that take
                                             * another input form */
    int64_t n, p, m;
    oc_metric metric;
    oc_dtype dtype;
    int64_t k;        /* GRAM_TOPK */
    double threshold; /* GRAM_THRESHOLD, in the metric's units */
    int64_t ld;       /* GRAM_DENSE: p + pad */
    int64_t serial;   /* row index x GRAM_OUTPUT_COUNT + output index: a backend whose
                             * variants are too many to run each on every job (thread counts)
                             * may rotate them by it, naming its choice in the label */
} gram_job;

/* Where a backend puts its answer. dense (n x ld elements) and indices/scores (n x k) are
 * allocated and filled with a byte no result has by the runner; pairs are appended with
 * gram_pairs_add. stats: filled by backends that report them (struct_size set). */
typedef struct gram_result {
    void *dense;
    int64_t *indices;
    void *scores;
    gram_pairs pairs;
    oc_gram_stats stats;
} gram_result;

/* A backend under test. run computes one job into res and returns its status; it may check
 * what only it knows (its statistics) with CHECK_MSG, naming `label` (the row, output and
 * backend), to which it may first append its own per-job settings (GRAM_LABEL_SIZE bytes). */
#define GRAM_LABEL_SIZE 320
typedef struct gram_backend gram_backend;
struct gram_backend {
    const char *name; /* in every message: "cpu avx2", "cuda b1 buckets 1" */
    unsigned kind;    /* GRAM_ON_*: which rows it runs */
    oc_status (*run)(const gram_backend *self, oc_context *ctx, const gram_job *job, gram_result *res, char *label);
    const void *settings; /* the backend's own (threads, kernel, ...) */
    int selection_only;   /* runs the top-k and threshold rows only (a variant of a selection knob) */
};

/* Runs every row on each of the backends that takes it at this OUTCORE_TEST_QUICK level (0:
 * all), against the reference, which is computed once per row and output for all of them;
 * failures are CHECK failures. A backend's run must set up whatever global state it needs
 * (an ISA path, an environment variable) itself: the backends take turns job by job. Prints
 * one line per backend; returns the number of jobs run. */
#define GRAM_MAX_BACKENDS 32
int64_t gram_cases_run(oc_context *ctx, const gram_backend *const *backends, int count, int quick);

/* OUTCORE_TEST_QUICK: 0 when unset, else 1 or 2. */
int gram_test_quick(void);

/* For backends behind oc_gram: the options of the job (metric, dtype, k or threshold),
 * and the call itself with the output the job's kind needs (checks stats.pairs for
 * threshold jobs). The backend sets its own fields in between. */
void gram_job_options(const gram_job *job, oc_gram_options *opts);
oc_status gram_job_run_oc_gram(oc_context *ctx, const gram_job *job, const oc_gram_options *opts, gram_result *res,
                               const char *label);

#endif
