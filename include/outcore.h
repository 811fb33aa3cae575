/*
 * outcore.h - the one public header of liboutcore.
 *
 * outcore computes the binary Gram matrix C = A·Aᵀ (or A·Bᵀ) of 0/1 matrices and the
 * similarities built on it (Jaccard, cosine, Hamming), exactly, on the CPU or on 1-bit
 * tensor cores, out of core under a memory budget.
 *
 * Conventions (every function below follows them):
 *  - Every fallible call returns an oc_status; results come back through out-parameters.
 *    On failure the context keeps a one-line message (oc_context_last_error) and a
 *    file:line trace (oc_context_error_trace); out-parameters are left untouched.
 *  - Handles are opaque. *_free(NULL) is a no-op.
 *  - Option structs carry their size in their first field and have an ..._INIT macro;
 *    always start from the macro so fields added later get their defaults.
 *  - The library never aborts or exits on a runtime condition.
 *  - A context is used by one thread at a time, except oc_context_cancel, which any
 *    thread or signal handler may call.
 */
#ifndef OUTCORE_H
#define OUTCORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define OC_API
#else
#define OC_API __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------- version */
/* The same as the CMake project version (checked when CMake configures). What stays compatible
 * across versions, and the struct_size rules: docs/abi.md. */
#define OC_VERSION_MAJOR 0
#define OC_VERSION_MINOR 1
#define OC_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH"; static storage. */
OC_API const char *oc_version(void);

/* ---------------------------------------------------------------- status */
typedef enum oc_status {
    OC_OK = 0,
    OC_ERR_INVALID_ARGUMENT = 1,   /* an option or argument is out of range or inconsistent */
    OC_ERR_INPUT = 2,              /* an input or output file is missing, malformed or unusable */
    OC_ERR_IO = 3,                 /* a read or write failed while the job ran */
    OC_ERR_NO_MEMORY = 4,          /* host memory could not be allocated */
    OC_ERR_DEVICE_NO_MEMORY = 5,   /* the job does not fit the device memory budget */
    OC_ERR_DEVICE = 6,             /* a CUDA call failed */
    OC_ERR_UNSUPPORTED = 7,        /* backend, device or feature not available in this build */
    OC_ERR_CANCELLED = 8,          /* oc_context_cancel was called */
    OC_ERR_INTERNAL = 9            /* a bug: please report it */
} oc_status;

/* A short constant name for a status ("invalid argument", ...). Never NULL. */
OC_API const char *oc_status_string(oc_status status);

/* ---------------------------------------------------------------- context */
typedef struct oc_context oc_context;

/* Creates a context. Owns the last-error message, the cancel flag and, after GPU jobs, the
 * pinned staging kept for its next job (see oc_context_release_cached_memory). A context is
 * used by one thread at a time: calls on one context from two threads at once are not
 * allowed, except oc_context_cancel and oc_context_release_cached_memory. Contexts used by
 * different threads are independent. Reusing one context for a series of jobs spares each
 * job after the first the pinning of its staging.
 *
 * fork(): a process may fork while its other threads are in calls. The library's
 * process-wide locks are taken across the fork (a call into the BLAS delays it until the call
 * returns), so a child's CPU jobs on contexts it creates run; a context of the parent's, and
 * a GPU the parent used (CUDA does not survive a fork), are not the child's to use. */
OC_API oc_status oc_context_create(oc_context **out);
/* Frees the context and the memory it keeps (pinned staging, a matmul's device workspace).
 * NULL is a no-op.
 *
 * A GPU job gives its streams, device memory and pinned staging back on a thread of its own
 * after it returns (tens of milliseconds on several GPUs), while the caller goes on. The
 * next job that opens a GPU (on any context), oc_context_free, the cached-memory calls
 * below and the process's exit wait for it first, so none of them sees memory an earlier
 * job still holds. */
OC_API void oc_context_free(oc_context *ctx);

/* The one-line message of the last failure on ctx ("" when none). Valid until the next
 * call on ctx. It is safe to print: names from outside (files, matrices, kernels) have their
 * control bytes and invalid UTF-8 shown as \xNN (oc_text_escape's terminal rule), and a
 * newline, carriage return or tab a value brought in is a blank. */
OC_API const char *oc_context_last_error(const oc_context *ctx);

/* The file:line trace of the last failure, innermost first, one frame per line ("" when none
 * or ctx is NULL). Held by ctx: valid until the next call on ctx. */
OC_API const char *oc_context_error_trace(const oc_context *ctx);

/* Asks the job running on ctx to stop; it returns OC_ERR_CANCELLED soon after and leaves
 * no output file. Async-signal-safe. The flag is cleared when the next job starts. Reading
 * a matrix (oc_matrix_read) and building one from memory (oc_matrix_from_dense,
 * oc_matrix_from_bits, oc_matrix_from_values, oc_matrix_from_csr) are jobs too: a cancel stops them with
 * OC_ERR_CANCELLED ("NAME: reading was cancelled"), nothing allocated. So a cancel asked
 * after one call returned and before the next started is cleared by the next: a caller that
 * reads its inputs and then runs a job checks its own stop request between the calls (the
 * CLI does for Ctrl-C), or, as the Python binding does, repeats the cancel until the call
 * it waits for returns. */
OC_API void oc_context_cancel(oc_context *ctx);

/* ---------------------------------------------------------------- matrices */
/* A 0/1 matrix, held as packed bits inside the library. Constructors validate the data
 * (values other than 0 and 1 are an error naming the row and column) and pack it; the
 * caller's buffers are not referenced after the call returns. */
typedef struct oc_matrix oc_matrix;

typedef enum oc_bit_order {
    OC_BITS_MSB_FIRST = 0, /* numpy.packbits(A, axis=1) default: column 8k is bit 7 of byte k */
    OC_BITS_LSB_FIRST = 1  /* column 8k is bit 0 of byte k */
} oc_bit_order;

/* Dense bytes (bool/uint8/int8 holding 0 or 1), row-major, rows row_stride bytes apart. */
OC_API oc_status oc_matrix_from_dense(oc_context *ctx, const void *data, int64_t rows, int64_t cols,
                                      int64_t row_stride, oc_matrix **out);

/* Packed bits: each row holds ceil(cols/8) meaningful bytes, rows row_stride bytes apart.
 * The bits past column cols-1 in a row's last byte must be 0, as numpy.packbits writes
 * them: a set one is OC_ERR_INPUT naming the row and the bit (it means cols is not the
 * true column count, and reading on would drop a column). Bytes past the ceil(cols/8)
 * of a row (up to row_stride) are not read. */
OC_API oc_status oc_matrix_from_bits(oc_context *ctx, const void *data, int64_t rows, int64_t cols,
                                     int64_t row_stride, oc_bit_order order, oc_matrix **out);

/* Numbers of any numeric type: value_type is an oc_map_dtype code (bool, int8 ... uint64,
 * float32, float64), rows row_stride bytes apart, values in native byte order. The one rule
 * every reader applies (a .npy file of such a dtype is read by it too): without binarize
 * each value must be 0 or 1 (1.0 and 0.0 are; a bool is read as its byte, so a bool byte
 * of 2 is refused, as oc_matrix_from_dense and a bool .npy refuse it), else OC_ERR_INPUT
 * naming the value, its row and column and binarize; with binarize any nonzero value (any
 * nonzero bool byte) is a one. NaN is an error either way. */
OC_API oc_status oc_matrix_from_values(oc_context *ctx, const void *data, int64_t rows, int64_t cols,
                                       int64_t row_stride, int value_type, int binarize, oc_matrix **out);

/* Sparse rows (CSR): the ones of row i are at columns indices[indptr[i] .. indptr[i+1]-1].
 * Duplicate indices are allowed; an index outside [0, cols) is an error. */
OC_API oc_status oc_matrix_from_csr(oc_context *ctx, int64_t rows, int64_t cols, const int64_t *indptr,
                                    const int64_t *indices, oc_matrix **out);

/* How a file is read into a 0/1 matrix. */
typedef struct oc_read_options {
    size_t struct_size; /* sizeof(oc_read_options) */
    /* > 0: the .npy holds numpy.packbits(A, axis=1) output of a matrix with `bits` columns;
     * a bit set past them in a row's last byte is an input error. */
    int64_t bits;
    /* Nonzero: any nonzero value is a one, in every format. Zero (the default): a value other
     * than 0 or 1 is an input error naming its row and column. */
    int binarize;
    /* The host memory budget in bytes (docs/memory.md); 0 = 80% of the memory available
     * (MemAvailable) when the read starts; a negative value is OC_ERR_INVALID_ARGUMENT. A
     * .npy whose packed bits take more than half of it is not loaded: the matrix stays
     * file-backed and jobs read its rows in panels on demand, checking the values as they
     * go, so a bad value fails the job that meets it. .mtx and text inputs are always read
     * into memory. */
    int64_t host_mem_bytes;
} oc_read_options;

#define OC_READ_OPTIONS_INIT {sizeof(oc_read_options), 0, 0, 0}

/* Reads a matrix from a file, chosen by extension: .npy (versions 1-3; bool/uint8/int8 0/1
 * bytes or packed bits with opts->bits, memory-mapped, one larger than opts->host_mem_bytes
 * allows staying in its file and read by jobs in panels; int16 to int64, float32 and float64
 * 0/1 values packed as they are read), .mtx (MatrixMarket coordinate pattern/integer/real),
 * .txt/.csv (0/1 text: any decimal number equal to 0 or 1, 1.0 and 1e0 included, as in a
 * float64 .npy; '#' lines skipped).
 * opts may be NULL (the defaults). Errors name the file and the problem; rows and columns
 * in them count from 0, line numbers from 1. Blocks while reading; oc_context_cancel stops
 * it with OC_ERR_CANCELLED. */
OC_API oc_status oc_matrix_read(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out);

/* The shape path declares, without reading its data: a .npy's header (with opts->bits, a
 * packed .npy's columns) or a .mtx's banner and size line, checked as oc_matrix_read checks
 * them before it allocates: a bad header, and a declared shape whose reading would take more
 * than the host budget (opts->host_mem_bytes: a .mtx's row index, a wide-dtype .npy's packed
 * bits) fail with OC_ERR_INPUT naming the file. Text files (.txt, .csv) declare nothing:
 * *rows and *cols are -1. Only the header's pages are read, so a file declaring billions of
 * rows costs nothing to refuse. opts may be NULL. */
OC_API oc_status oc_matrix_peek(oc_context *ctx, const char *path, const oc_read_options *opts, int64_t *rows,
                                int64_t *cols);

/* oc_matrix_read with bits and no other option. */
OC_API oc_status oc_matrix_open(oc_context *ctx, const char *path, int64_t bits, oc_matrix **out);

/* The files oc_matrix_read reads, each named by its path's suffix (compared lower-cased):
 * oc_input_format_name(i) for i = 0, 1, ... until NULL lists them ("npy", "mtx", ...). */
typedef enum oc_input_format {
    OC_INPUT_NPY = 0,     /* .npy */
    OC_INPUT_MTX = 1,     /* MatrixMarket */
    OC_INPUT_TXT = 2,     /* 0/1 text */
    OC_INPUT_CSV = 3,     /* 0/1 text, read as .txt */
    OC_INPUT_FORMAT_COUNT /* the number of formats, not a format */
} oc_input_format;
OC_API const char *oc_input_format_name(oc_input_format format);

/* Writes m to path as .npy: uint8 0/1 (packed = 0) or numpy.packbits rows (packed = 1; any
 * other value is OC_ERR_INVALID_ARGUMENT). Written under a temporary name and renamed when
 * complete. */
OC_API oc_status oc_matrix_save(oc_context *ctx, const oc_matrix *m, const char *path, int packed);

/* Called from the thread that called the job (oc_gram, oc_matrix_write_rows), about ten
 * times a second while it runs: done and total are in the same unit (work items). A call
 * comes a tenth of a second after the previous one returned, or nine times as long as the
 * previous one took when that is longer, so a slow callback is called less often and takes
 * at most about a tenth of the calling thread's time. The job's worker threads go on
 * meanwhile; what the calling thread does itself (the CPU product of oc_matmul, a GPU job's
 * loop over its tiles or chunks) waits for it. The callback may call oc_context_cancel on the job's
 * context: the job then stops as it would on a cancel from another thread. */
typedef void (*oc_progress_fn)(void *user, double done, double total);

/* Streaming .npy output of a 0/1 matrix that need never be in memory as a whole: the
 * caller's fill function produces rows [row0, row0 + nrows) into bits, row i at
 * bits + i * stride bytes with stride = ((cols + 63) / 64) * 8 (8-byte aligned), in the
 * OC_BITS_MSB_FIRST layout. The bits of a row past its cols bits are ignored, whatever
 * they hold (the buffer is the library's, reused from block to block, and a packed file
 * gets zero padding, as numpy.packbits writes it); oc_matrix_from_bits, which reads the
 * caller's data, refuses them instead. fill is called from opts->threads worker threads
 * at once, each on its own block of rows and buffer, so it must be safe to call
 * concurrently; it returns 0, or nonzero to stop the job (OC_ERR_INPUT naming the row). */
typedef int (*oc_rows_fill_fn)(void *user, int64_t row0, int64_t nrows, unsigned char *bits, int64_t stride);

typedef struct oc_write_options {
    size_t struct_size;        /* sizeof(oc_write_options) */
    int packed;                /* 0: uint8 0/1 bytes; 1: numpy.packbits rows (as oc_matrix_save); no other */
    int threads;               /* worker threads; 0 = all cores */
    int64_t block_rows;        /* rows a worker fills and writes at a time; 0 = chosen (a few MB) */
    oc_progress_fn progress;   /* may be NULL; called from the calling thread */
    void *progress_user;
} oc_write_options;

#define OC_WRITE_OPTIONS_INIT {sizeof(oc_write_options), 0, 0, 0, NULL, NULL}

/* Writes the rows x cols matrix that fill produces to path (.npy) with the header
 * oc_matrix_save writes for the same shape, each block written at its offset as soon as it
 * is filled: memory is a block or two per thread whatever the matrix size. Written under a
 * temporary name and renamed when complete; on failure (OC_ERR_IO naming the file and the
 * cause, OC_ERR_INPUT for a bad path, OC_ERR_INVALID_ARGUMENT for a shape no file can hold,
 * its bytes past 64-bit sizes) no file is left. oc_context_cancel stops it with
 * OC_ERR_CANCELLED. Blocks. opts may be NULL (the defaults). */
OC_API oc_status oc_matrix_write_rows(oc_context *ctx, const char *path, int64_t rows, int64_t cols,
                                      oc_rows_fill_fn fill, void *user, const oc_write_options *opts);

/* Output paths (docs/write-failures.md, "Output paths"). oc_output_check: OC_ERR_INPUT with one
 * line when path cannot take an output (its folder missing or not writable, path a folder, a
 * pipe or a device, a file the user may not write, a name too long for the temporary name
 * written beside it); every job that writes a file makes the same check, this call makes it
 * before any work. */
OC_API oc_status oc_output_check(oc_context *ctx, const char *path);
/* Called for each file oc_output_clean removed: its path and size in bytes. */
typedef void (*oc_removed_fn)(void *user, const char *path, int64_t bytes);
/* Removes what interrupted jobs left beside the output path: temporaries (PATH.tmp-*) of
 * processes no longer running, and the resume journal (PATH.outcore-journal) with its
 * snapshot, unless a running job holds it (OC_ERR_INPUT); a file it cannot remove is
 * OC_ERR_IO naming it, after the others are removed. fn may be NULL; *removed (may be
 * NULL) gets the count on success (on failure fn has named what was removed). The output
 * itself is never touched. It waits up to a few seconds for the locks of a job that has just
 * ended; oc_context_cancel ends the wait (OC_ERR_CANCELLED). */
OC_API oc_status oc_output_clean(oc_context *ctx, const char *path, oc_removed_fn fn, void *user, int64_t *removed);
/* Where a job on ctx reports the stale temporaries it removes beside its output (a killed
 * job's PATH.tmp-PID-RANDOM, docs/write-failures.md): fn(user, path, bytes) for each, on the
 * job's thread. NULL (the default) prints one line on stderr for each ("outcore: removed
 * ..."); a function that does nothing silences them (the CLI's -q). */
OC_API void oc_context_set_removed_fn(oc_context *ctx, oc_removed_fn fn, void *user);
/* Called with a warning: a one-line message, naming the file, about an input the job reads as
 * asked that is likely not what was meant (a text file's first column that counts up the rows,
 * an index column, read as data under binarize: docs/cli.md). */
typedef void (*oc_warning_fn)(void *user, const char *message);
/* Where a job on ctx sends its warnings: fn(user, message) for each, on the thread that called
 * the job. NULL (the default) prints one line on stderr for each ("outcore: warning: ..."); a
 * function that does nothing silences them. */
OC_API void oc_context_set_warning_fn(oc_context *ctx, oc_warning_fn fn, void *user);

/* The matrix's rows and columns (bits for a binary matrix); 0 when m is NULL. */
OC_API int64_t oc_matrix_rows(const oc_matrix *m);
OC_API int64_t oc_matrix_cols(const oc_matrix *m);
/* The name used in messages: the file path, or "A"/"B" style names set by the caller ("" when
 * m is NULL). Held by m: valid until oc_matrix_set_name or oc_matrix_free on it. A file's path
 * longer than 511 bytes is named by its first 511. */
OC_API const char *oc_matrix_name(const oc_matrix *m);
/* Names m in messages from now on (a copy of name is kept). A name longer than 511 bytes, or
 * a NULL m or name, is OC_ERR_INVALID_ARGUMENT and leaves the name as it was. */
OC_API oc_status oc_matrix_set_name(oc_context *ctx, oc_matrix *m, const char *name);
OC_API void oc_matrix_free(oc_matrix *m);

/* ---------------------------------------------------------------- gram */
typedef enum oc_metric {
    OC_METRIC_COUNTS = 0,  /* c = |a ∧ b| */
    OC_METRIC_JACCARD = 1, /* c / (|a|+|b|-c); 0/0 = 1 */
    OC_METRIC_COSINE = 2,  /* c / sqrt(|a|·|b|); 0 when a row is empty */
    OC_METRIC_HAMMING = 3, /* |a|+|b|-2c */
    OC_METRIC_COUNT        /* the number of metrics, not a metric: names run 0 .. OC_METRIC_COUNT - 1 */
} oc_metric;

typedef enum oc_dtype {
    OC_DTYPE_DEFAULT = 0, /* int32 for counts and hamming, float32 for jaccard and cosine */
    OC_DTYPE_INT32 = 1,
    OC_DTYPE_UINT16 = 2,  /* counts and hamming when cols < 65536 */
    OC_DTYPE_FLOAT32 = 3,
    OC_DTYPE_COUNT        /* the number of codes, not a dtype */
} oc_dtype;

typedef enum oc_backend {
    OC_BACKEND_AUTO = 0, /* the one the cost model predicts faster (docs/cost-model.md); CPU without a usable GPU */
    OC_BACKEND_CPU = 1,
    OC_BACKEND_CUDA = 2,
    OC_BACKEND_COUNT /* the number of backends, not a backend */
} oc_backend;

/* How oc_gram computes: the packed-bit kernels (dense), or per-row accumulation over the
 * columns' row lists with the densest columns as bit words (sparse, CPU; docs/sparse.md).
 * Both give the same bytes for every output. */
typedef enum oc_algorithm {
    OC_ALGORITHM_AUTO = 0,   /* the one predicted faster (oc_gram_stats.algorithm_desc says why) */
    OC_ALGORITHM_DENSE = 1,
    OC_ALGORITHM_SPARSE = 2,
    OC_ALGORITHM_COUNT /* the number of algorithms, not an algorithm */
} oc_algorithm;

typedef enum oc_gpu_mem_mode {
    OC_GPU_MEM_GROW = 0,    /* allocate on demand up to the budget */
    OC_GPU_MEM_RESERVE = 1, /* take the whole budget at start; fail fast */
    OC_GPU_MEM_MODE_COUNT   /* the number of modes, not a mode */
} oc_gpu_mem_mode;


/* The most CPU worker threads a job takes (the CLI's --threads, Python's threads=). */
#define OC_MAX_THREADS 4096

/* The share of a device's free memory a GPU job takes without a size (gpu_mem_bytes 0) and
 * without a fraction of its own (gpu_mem_fraction 0): the options' INIT value. */
#define OC_GPU_MEM_FRACTION_DEFAULT 0.9

typedef struct oc_gram_options {
    size_t struct_size;         /* sizeof(oc_gram_options) */
    oc_metric metric;
    oc_dtype dtype;
    oc_backend backend;
    int threads;                /* CPU worker threads, 0 to OC_MAX_THREADS; 0 = all cores */
    int device;                 /* CUDA device index */
    int64_t gpu_mem_bytes;      /* device budget in bytes; 0 = gpu_mem_fraction of free memory */
    double gpu_mem_fraction;    /* used when gpu_mem_bytes == 0; default 0.9 */
    oc_gpu_mem_mode gpu_mem_mode;
    /* The job's host memory budget in bytes (docs/memory.md); 0 = 80% of the memory available
     * (MemAvailable) when the job starts. The CPU backend reads the rows of file-backed inputs
     * (oc_read_options.host_mem_bytes) in panels that fit in it beside what the job keeps;
     * the CUDA backend's pinned staging takes at most a quarter of it, after the top-k lists,
     * shared by the devices (docs/memory.md). */
    int64_t host_mem_bytes;
    /* Top-k and threshold (docs/topk.md): the same results on every backend, tile size, thread
     * count and budget.
     * topk > 0: each row's topk best columns instead of the dense matrix, best first: score
     *   descending (hamming, a distance: ascending), ties broken by the lower column. For
     *   A·Aᵀ the row itself is excluded. Every candidate column ranks, score 0 included, so
     *   a row is filled with score-0 columns (lowest first) before any padding; only slots
     *   past the candidates a row has (topk > p - 1 for A·Aᵀ) hold index -1, score 0.
     *   topk may not exceed p, the result's columns (OC_ERR_INVALID_ARGUMENT).
     * use_threshold: every pair whose score is >= threshold (hamming: <=), compared in the
     *   result dtype (float32 scores against (float)threshold; integer scores against the
     *   integers the threshold admits). For A·Aᵀ each unordered pair once, as (i, j) with
     *   i < j; the diagonal is excluded. Pairs arrive sorted by (row, col). NaN is invalid. */
    int64_t topk;
    int use_threshold;
    double threshold;
    int64_t tile;               /* tile edge in rows; 0 = the planner chooses (tests force it) */
    oc_progress_fn progress;    /* may be NULL */
    void *progress_user;
    oc_algorithm algorithm;     /* auto (default), dense or sparse */
    /* Nonzero: keep a journal of the work done beside a file output (PATH.outcore-journal)
     * and continue from it when one of the same job exists (a journal of another job is
     * refused with OC_ERR_INPUT); the result's bytes are those of an uninterrupted run. With
     * 0, an existing journal is refused with OC_ERR_INPUT saying how to resume or remove it.
     * Dense resumable jobs run the dense algorithm (auto never picks sparse for them). */
    int resume;
    /* Several devices (CUDA backend; an error with OC_BACKEND_CPU): "0,1,3", "all", or "0:2"
     * to split device 0 into two logical devices, each with half of its budget and its own
     * streams (docs/architecture.md). NULL or "": `device` alone. Where no CUDA device is
     * usable (a build without CUDA, a machine without a GPU) a list is OC_ERR_UNSUPPORTED; an
     * index past the machine's devices is OC_ERR_INVALID_ARGUMENT. */
    const char *devices;
    /* Per-device budgets, "0=20G,1=40G" (SIZE or PCT as gpu_mem_bytes / gpu_mem_fraction take
     * them), or one value for every device; devices not named keep gpu_mem_bytes /
     * gpu_mem_fraction. A split device's budget is shared equally by its parts. NULL or "". */
    const char *gpu_mem_devices;
    /* Version 5. use_min_score (top-k only): each row's topk best columns among those whose
     * score is >= min_score (hamming: <=), compared in the result dtype as a threshold is;
     * the slots the row has no such column for hold index -1 and score NaN (float32),
     * -1 (int32) or 65535 (uint16). The lists are the plain top-k lists with the columns
     * that miss min_score removed. NaN is invalid. */
    int use_min_score;
    double min_score;
} oc_gram_options;

#define OC_GRAM_OPTIONS_INIT                                                                        \
    {                                                                                               \
        sizeof(oc_gram_options), OC_METRIC_COUNTS, OC_DTYPE_DEFAULT, OC_BACKEND_AUTO, 0, 0, 0,      \
            OC_GPU_MEM_FRACTION_DEFAULT, OC_GPU_MEM_GROW, 0, 0, 0, 0.0, 0, NULL, NULL, OC_ALGORITHM_AUTO, 0, NULL, NULL, 0, \
            0.0                                                                                     \
    }

typedef enum oc_output_kind {
    OC_OUTPUT_MEMORY = 0, /* dense result into caller memory */
    OC_OUTPUT_FILE = 1,   /* result into a file chosen by extension: .npy dense; top-k .npz
                           * (indices, scores) or .tsv; threshold .npz (rows, cols, values),
                           * .mtx or .tsv */
    OC_OUTPUT_TOPK = 2,   /* top-k into caller arrays: indices[n*k] (int64), scores[n*k] */
    OC_OUTPUT_PAIRS = 3,  /* threshold pairs through a callback, in (row, col) order */
    OC_OUTPUT_DISCARD = 4 /* compute and drop the result (benchmarks: output stays on the device) */
} oc_output_kind;

/* Receives a batch of threshold pairs; scores has the result dtype. Return nonzero to stop
 * the job with OC_ERR_CANCELLED. Called from the thread that called oc_gram. */
typedef int (*oc_pairs_fn)(void *user, const int64_t *rows, const int64_t *cols, const void *scores,
                           int64_t count);

typedef struct oc_output {
    size_t struct_size;  /* sizeof(oc_output) */
    oc_output_kind kind;
    void *data;          /* MEMORY: n x p elements of the result dtype */
    int64_t ld;          /* MEMORY: elements between rows; 0 = p */
    const char *path;    /* FILE */
    int64_t *indices;    /* TOPK: n*k column indices, -1 in the slots no column fills */
    void *scores;        /* TOPK: n*k scores of the result dtype */
    oc_pairs_fn pairs;   /* PAIRS */
    void *pairs_user;
} oc_output;

#define OC_OUTPUT_INIT {sizeof(oc_output), OC_OUTPUT_MEMORY, NULL, 0, NULL, NULL, NULL, NULL, NULL}

/* Logical devices one job may run on (oc_gram_options.devices). */
#define OC_MAX_LOGICAL_DEVICES 16

/* What one logical device of a CUDA job did. */
typedef struct oc_device_stats {
    char name[32];              /* "cuda:0", or "cuda:0.1/2": part 1 of device 0 split in two */
    int64_t tiles;              /* tiles it computed */
    int64_t bytes_h2d, bytes_d2h;
    double busy_seconds;        /* wall time its worker spent on tiles (set-up excluded) */
    int64_t budget_bytes, peak_bytes; /* its device budget and the most its pool held */
} oc_device_stats;

/* The phases of a job (oc_gram_stats.phases), in seconds. */
typedef struct oc_gram_phases {
    double cuda_start; /* the CUDA driver's start, when this job was the process's first to ask */
    double prepare;    /* checks, the cost model's choices, row popcounts, packing the inputs */
    double setup;      /* the destination opened; on GPUs the devices opened and planned */
    double compute;    /* the tiles (on GPUs with each device's own buffers and pinned rings) */
    double output;     /* the result completed: lists and pairs written, the file synced, renamed */
    double teardown;   /* what the job releases before it returns */
} oc_gram_phases;

typedef struct oc_gram_stats {
    size_t struct_size;         /* sizeof(oc_gram_stats); set by the caller */
    oc_backend backend;         /* the backend that ran */
    char backend_desc[96];      /* e.g. "cpu avx512 2 threads", "cuda:0 NVIDIA H100 80GB HBM3" */
    double seconds;             /* wall time of the job, output included */
    double bit_macs_computed;   /* bit multiply-adds the kernels actually did */
    double bit_macs_effective;  /* n·p·m: what the result represents */
    int64_t tiles;              /* tiles computed */
    int64_t host_peak_bytes;    /* the process's peak resident memory since it started (VmHWM) */
    int64_t dev_budget_bytes;   /* CUDA only, below */
    int64_t dev_peak_bytes;
    int64_t dev_current_bytes;
    int64_t dev_allocations;
    int64_t bytes_h2d;
    int64_t bytes_d2h;
    /* top-k and threshold */
    int64_t pairs;              /* threshold: pairs delivered (written or passed to the callback) */
    char select_desc[64];       /* where the selection ran: "cpu", "device", "host (k > 128)" */
    int64_t host_budget_bytes;  /* the job's host memory budget (host_mem_bytes, resolved) */
    oc_algorithm algorithm;     /* the algorithm that ran: dense or sparse */
    char algorithm_desc[320];   /* why: the predicted times of both (`--explain`) */
    /* Where it ran and why: the cost model's prediction for the CPU and the GPU, the stage
     * that bounds each, and which rates were defaults (`--explain`, docs/cost-model.md). */
    char backend_explain[640];
    /* CUDA: what each logical device did (oc_gram_options.devices), in the order named. */
    int device_count;
    oc_device_stats devices[OC_MAX_LOGICAL_DEVICES];
    /* Version 5: the CPU worker threads the job ran on (at most one per tile or block of
     * rows, whatever opts.threads asked); 0 when it ran on a GPU. */
    int threads;
    /* Version 6: where the job's wall time went, in seconds (docs/cli.md, "Where the time
     * goes"). The phases follow one another on the caller's thread, so they sum to at most
     * `seconds`. */
    oc_gram_phases phases;
    /* Version 7: the cost model's prediction of this job's seconds on the backend and with
     * the algorithm that ran (what `--explain` prints for it), beside `seconds`; 0 when the
     * job ran without a prediction. */
    double predicted_seconds;
} oc_gram_stats;

/* Computes the Gram matrix of a (with b == NULL, or b == a, the same handle: a·aᵀ,
 * symmetric; only tiles on or above the diagonal are computed, and top-k lists leave each
 * row's own pair out as for one input) or a·bᵀ, and delivers it to out. Blocks until done; uses
 * opts->threads worker threads or the GPU. stats may be NULL. On failure no output file is
 * left and the message names the problem. */
OC_API oc_status oc_gram(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                         const oc_output *out, oc_gram_stats *stats);

/* Before the inputs of a job are read from the files a and b (b NULL: a·aᵀ): what their
 * headers declare (oc_matrix_peek; A and B of different column counts: OC_ERR_INPUT, as
 * oc_gram refuses them), and, for a dense result to a file (out->kind
 * OC_OUTPUT_FILE without topk or threshold), its size against 64-bit sizes and the free space
 * of the output's folder. Fails with OC_ERR_INPUT and one line naming the file and both
 * figures ("C.npy: the dense 130000000 x 130000000 int32 result needs 67.6 PB (...bytes), but
 * its file system has 83.1 GB (...bytes) free"); text inputs and a file system that reports
 * no free space pass. oc_gram makes the same checks on the matrices once read; this call
 * refuses a hopeless job before the reading costs memory and time. read may be NULL. */
OC_API oc_status oc_gram_check_files(oc_context *ctx, const char *a, const char *b, const oc_read_options *read,
                                     const oc_gram_options *opts, const oc_output *out);

/* The plan oc_gram would run these arguments under, without running it: on a GPU the tile
 * edge, panel and output slots, the device budget and what bounds it, the pinned staging
 * under the host budget, the sink and copy threads, and the estimated time of kernels,
 * uploads and output (which one bounds the job); on the CPU the tiles and threads; for a job
 * that opts->algorithm (auto's choice, or sparse) runs on the sparse algorithm, that and why
 * (JSON: "algorithm": "sparse"). Text for
 * people, or a JSON object when json != 0, into *text (malloc'ed: the caller frees it).
 * Fails as oc_gram would when nothing fits the budgets, naming what the smallest plan
 * needs. Opens no output. Blocks while it queries the device. */
OC_API oc_status oc_gram_plan(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                              const oc_output *out, int json, char **text);

/* Why oc_gram would run these arguments where and how it would, without running them: two
 * lines of text, "backend: " and the cost model's prediction for the CPU and the GPU
 * (docs/cost-model.md), "algorithm: " and the dense/sparse prediction; what `--explain`
 * prints. *text is malloc'ed (the caller frees it). Only out->kind is read, and for a file the
 * file system of out->path (NULL allowed): a memory file system's fsync costs nothing. The
 * first call or job on a machine whose rate cache lacks the host's rates measures them (a
 * fraction of a second) and stores them. Blocks. */
OC_API oc_status oc_gram_explain(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                                 const oc_output *out, char **text);

/* The dtype a job with these options produces (resolves OC_DTYPE_DEFAULT), or
 * OC_DTYPE_DEFAULT when the combination is invalid. */
OC_API oc_dtype oc_gram_result_dtype(oc_metric metric, oc_dtype dtype);

/* The result dtypes each metric allows, as oc_gram_result_dtype accepts them, in the words
 * of the library's messages: "counts and hamming: int32 or uint16; jaccard and cosine:
 * float32" (the metrics of the same dtypes together, in the library's order). Written into
 * text (size bytes), truncated to fit and always terminated; nothing when size is 0. */
OC_API void oc_metric_dtypes_text(char *text, size_t size);

/* Size in bytes of one element of dtype (0 for OC_DTYPE_DEFAULT). */
OC_API size_t oc_dtype_size(oc_dtype dtype);

/* Names used by the CLI and the binding: "counts", "int32", "cpu", ... NULL when unknown, so
 * oc_metric_name(i) for i = 0, 1, ... until NULL lists every metric of the library. */
/* Each name is in static storage: valid for the life of the process, never freed. */
OC_API const char *oc_metric_name(oc_metric metric);
OC_API const char *oc_dtype_name(oc_dtype dtype);
OC_API const char *oc_backend_name(oc_backend backend);
OC_API const char *oc_algorithm_name(oc_algorithm algorithm);
OC_API const char *oc_gpu_mem_mode_name(oc_gpu_mem_mode mode); /* "grow", "reserve" */
/* The files a Gram result is written to (OC_OUTPUT_FILE), each named by its path's suffix:
 * oc_output_format_name(i) for i = 0, 1, ... until NULL lists them ("npy", "npz", ...), and
 * oc_output_format_results(i) says which results a format holds (OC_RESULT_* bits; 0 past
 * the last). */
typedef enum oc_output_format {
    OC_FORMAT_NPY = 0,     /* the dense matrix */
    OC_FORMAT_NPZ = 1,     /* top-k: indices, scores; threshold: rows, cols, values */
    OC_FORMAT_MTX = 2,     /* threshold pairs as a MatrixMarket coordinate matrix */
    OC_FORMAT_TSV = 3,     /* top-k or threshold: a line per entry */
    OC_OUTPUT_FORMAT_COUNT /* the number of formats, not a format */
} oc_output_format;
enum { OC_RESULT_DENSE = 1, OC_RESULT_TOPK = 2, OC_RESULT_THRESHOLD = 4 };
OC_API const char *oc_output_format_name(oc_output_format format);
OC_API unsigned oc_output_format_results(oc_output_format format);
/* Parses those names; returns OC_ERR_INVALID_ARGUMENT, writing nothing, for an unknown name or
 * a NULL out. */
OC_API oc_status oc_metric_parse(const char *name, oc_metric *out);
OC_API oc_status oc_dtype_parse(const char *name, oc_dtype *out);
OC_API oc_status oc_backend_parse(const char *name, oc_backend *out);
OC_API oc_status oc_algorithm_parse(const char *name, oc_algorithm *out);
OC_API oc_status oc_gpu_mem_mode_parse(const char *name, oc_gpu_mem_mode *out);
/* A budget as --gpu-mem and --host-mem take it: a size ("2G", "512MiB", "4096": bytes into
 * *bytes, *fraction = 0) or a percentage ("50%": *fraction = 0.5, *bytes = 0). Returns
 * OC_ERR_INVALID_ARGUMENT, setting nothing, for anything else (zero, 2^63 bytes or more,
 * above 100%, a unit other than B, K, M, G, T with optional B or iB, a NULL bytes or
 * fraction). */
OC_API oc_status oc_size_parse(const char *text, int64_t *bytes, double *fraction);
/* A host budget as --host-mem takes it, in bytes: a size as oc_size_parse reads it, or a
 * percentage of the machine's physical memory ("25%"), resolved here, so that every front end
 * gives a percentage the same bytes. Returns OC_ERR_INVALID_ARGUMENT, setting nothing, for
 * what oc_size_parse refuses, a NULL bytes and a percentage that comes to less than a byte;
 * OC_ERR_UNSUPPORTED, setting nothing, for a percentage where the machine's memory size is
 * unknown. */
OC_API oc_status oc_host_mem_parse(const char *text, int64_t *bytes);

/* Copies the ..._INIT values of the option struct named `type` ("oc_gram_options",
 * "oc_map_options", ...: every struct with an _INIT macro) into out, for callers that cannot
 * expand the macro. OC_ERR_INVALID_ARGUMENT for an unknown name or a size other than the
 * library's sizeof (the caller's copy of the layout is out of step). */
OC_API oc_status oc_struct_defaults(const char *type, void *out, size_t size);

/* Text made safe to show, for names that come from outside (file names, kernel names,
 * expressions): every text report, CLI message and JSON object of outcore escapes them so.
 *  OC_ESCAPE_TERMINAL: bytes that a terminal would act on or that are not text become \xNN
 *    (C0 controls, DEL, the C1 controls U+0080-U+009F, each byte of invalid UTF-8); valid
 *    printable UTF-8, backslash included, is kept.
 *  OC_ESCAPE_JSON: the inside of a JSON string literal (no quotes): \" and \\, control
 *    characters as \n \t \r \b \f or \u00XX, DEL as \u007f, and each byte of invalid
 *    UTF-8 as \ufffd (U+FFFD, the replacement character); valid UTF-8 is kept.
 * Writes at most size bytes into out, NUL included (out may be NULL when size is 0), and
 * returns the length of the whole escaped text, as snprintf does. NULL text is "". */
typedef enum oc_escape { OC_ESCAPE_TERMINAL = 0, OC_ESCAPE_JSON = 1 } oc_escape;
OC_API size_t oc_text_escape(char *out, size_t size, const char *text, oc_escape how);

/* ---------------------------------------------------------------- system */
/* The CPU kernel path in use: "ref", "avx2" or "avx512" (OUTCORE_CPU_ISA forces one), in
 * static storage. Safe from any thread: the first call of any makes the choice, once
 * (pthread_once). */
OC_API const char *oc_cpu_isa(void);
/* Logical CPU cores available to this process (its CPU affinity, else the online CPUs; at
 * least 1), asked of the system at each call: safe from any thread. */
OC_API int oc_cpu_cores(void);
/* Number of usable CUDA devices; 0 when built without CUDA or none is present. */
OC_API int oc_cuda_device_count(void);
/* Starts CUDA ahead of a job: initialises the driver and makes the contexts of the devices a
 * job on `devices` would use (as oc_gram_options.devices: "0,1", "all", "0:2"; NULL or "":
 * device `device` alone), which the first GPU job of a process otherwise pays at its start
 * (the driver's start, then each device's context, one device after the other;
 * docs/cost-model.md); for several GPUs also enables peer access between them, as a
 * job that shares panels between its devices would (unless OUTCORE_PANEL_EXCHANGE=0). Meant to run on a thread of the caller's beside work of its own,
 * as the CLI does while it reads the input. Thread-safe; a list that does not parse or a
 * device that fails is left for the job to report. Returns the number of CUDA devices (0
 * when built without CUDA or none is usable). */
OC_API int oc_cuda_warm_up(const char *devices, int device);

/* GPU jobs keep their pinned host staging (up to a few hundred MiB, never more than the
 * job's host_mem_bytes cap) idle in their context between jobs, since pinning costs more
 * than a small job: the context's next job takes it back. A matmul on arrays in device
 * memory keeps its scratch there the same way (cuBLASLt's workspace, a few bytes for most
 * algorithms, with int8's packed operands or a half-precision result's float32
 * accumulator; at most 96 MiB), since allocating it
 * costs a fraction of a millisecond product. Both are
 * freed by oc_context_free, or now by oc_context_release_cached_memory(ctx). Safe from any
 * thread, even while a job runs on ctx (what that job holds is not touched; it is kept when
 * the job ends). NULL is a no-op. Both belong to the devices' CUDA contexts: a caller that
 * resets a device (cudaDeviceReset) releases first. */
OC_API void oc_context_release_cached_memory(oc_context *ctx);
/* oc_context_release_cached_memory on every live context of the process. Thread safe. */
OC_API void oc_release_cached_memory(void);
/* Bytes ctx keeps idle now, pinned staging and device scratch together (0 before its
 * first GPU job, after a release, and for CPU jobs). Any thread. */
OC_API int64_t oc_context_cached_memory_bytes(oc_context *ctx);

/* ---- resource tools (inspect, devices) */
/* `outcore inspect`: the resources of each kernel in a PTX, cubin, fatbinary or host
 * object/executable file, and whether a block size fits on a GPU architecture, with the
 * arithmetic. With a usable GPU whose architecture is the target, the driver loads the code
 * and answers; otherwise the toolkit's ptxas compiles PTX, and cubins are read directly.
 * PTX is compiled with the compiler's defaults unless maxrregcount / opt_level say otherwise
 * (a producer such as numba passes its register cap to the linker, not in the PTX); the
 * report states the options the figures assume. */
typedef struct oc_inspect_options {
    size_t struct_size;   /* sizeof(oc_inspect_options) */
    const char *arch;     /* "sm_90", "9.0", ...; NULL: the GPU's, else the code's own target */
    int block;            /* > 0: a verdict for this block size (1..1024) */
    int64_t dyn_smem;     /* dynamic shared memory per block, bytes */
    const char *kernel;   /* only this kernel (exact name); NULL: all */
    int use_gpu;          /* nonzero (default): use the driver when a GPU of the target arch is there */
    int maxrregcount;     /* > 0: register cap for compiling PTX (ptxas -maxrregcount, CU_JIT_MAX_REGISTERS);
                           * 0: none. A kernel's own .maxnreg overrides it, as in ptxas */
    int opt_level;        /* 0..4: optimisation level for compiling PTX (ptxas -O, CU_JIT_OPTIMIZATION_LEVEL);
                           * -1: the compiler's default (ptxas 3, driver JIT 4) */
} oc_inspect_options;

#define OC_INSPECT_OPTIONS_INIT {sizeof(oc_inspect_options), NULL, 0, 0, NULL, 1, 0, -1}

/* Block sizes at which occupancy is reported. */
#define OC_INSPECT_BLOCK_SIZES 6
/* The OC_INSPECT_BLOCK_SIZES sizes {64, 128, 256, 512, 768, 1024}, in static storage: valid
 * for the life of the process, never freed. */
OC_API const int *oc_inspect_block_sizes(void);

typedef struct oc_inspect_kernel {
    const char *name;             /* as in the code (mangled for C++) */
    int regs_per_thread;
    int64_t static_smem_bytes;
    int64_t local_bytes;          /* stack frame per thread, spills included */
    int64_t spill_store_bytes;    /* -1 when the source does not report it */
    int64_t spill_load_bytes;
    int64_t const_bytes;          /* constant bank 0 (parameters), -1 when unknown */
    int launch_bounds;            /* threads per block the kernel allows (.maxntid, .reqntid,
                                   * __launch_bounds__), 0 = no limit of its own */
    int maxntid;                  /* the code's directives (threads as x*y*z), 0 = absent */
    int reqntid;
    int maxnreg;
    int minnctapersm;
    int max_threads_per_block;    /* the largest block that fits on the target (no dyn smem: dyn_smem) */
    double occupancy[OC_INSPECT_BLOCK_SIZES]; /* at oc_inspect_block_sizes(); 0 = does not fit */
    int driver_blocks_per_sm;     /* with the driver and a block: cuOccupancy's answer, else -1 */
    /* With options.block > 0: */
    int fits;
    int blocks_per_sm;
    double block_occupancy;
    int largest_block;
    int reg_cap;                  /* registers per thread with which `block` fits, 0 = none */
    int needs_smem_optin;
    char limiter[64];
    char explanation[1024];       /* the arithmetic, several lines */
} oc_inspect_kernel;

typedef struct oc_inspect_report {
    char path[512];               /* the file, or the name given to oc_inspect_image / _module */
    char format[16];              /* "ptx", "cubin", "fatbin", "host-elf", "module" */
    char arch[16];                /* the target the verdicts are for, "sm_90" */
    int code_cc;                  /* compute capability x10 of the code the figures come from */
    char source[64];              /* "ptxas 13.0", "cubin attributes", "CUDA driver" */
    int block;                    /* the options' block, 0 = none */
    int64_t dyn_smem;
    /* How PTX was compiled for the figures; jit_compiler[0] == '\0' when they come from
     * machine code (a cubin), where no JIT option applies. */
    char jit_compiler[64];        /* "ptxas 13.0", "CUDA driver JIT" */
    int jit_opt_level;            /* the level used (the compiler's default when not asked) */
    int jit_maxrregcount;         /* the register cap passed, 0 = none */
    int jit_defaults;             /* 1: neither was asked, the compiler's defaults apply */
    int count;
    oc_inspect_kernel *kernels;   /* count entries, in the code's order */
} oc_inspect_report;

/* Inspects path. Bad input (not a kernel image, PTX that does not assemble (ptxas' message),
 * PTX whose .target is newer than the target, an unknown arch, a block outside 1..1024, a
 * kernel name that does not exist, maxrregcount outside 0..255, opt_level outside -1..4) fails
 * with OC_ERR_INPUT or OC_ERR_INVALID_ARGUMENT and a one-line message. Blocks while ptxas
 * runs. The caller frees *out with oc_inspect_report_free. */
OC_API oc_status oc_inspect_file(oc_context *ctx, const char *path, const oc_inspect_options *opts,
                                 oc_inspect_report **out);
/* The same for code held in memory (PTX text, a cubin or a fatbinary, size bytes, copied):
 * the code a framework loaded, such as numba's linked cubin. `name` stands for the file in
 * the report and in messages. */
OC_API oc_status oc_inspect_image(oc_context *ctx, const char *name, const void *data, size_t size,
                                  const oc_inspect_options *opts, oc_inspect_report **out);
/* The kernels of a module the caller has already loaded (a CUmodule handle, such as CuPy's
 * Module.ptr), as the driver reports them: what was really loaded, however it was compiled.
 * Queried in the context current on the calling thread (else device 0's primary context);
 * the verdicts are for that device. Needs a CUDA build and a GPU (OC_ERR_UNSUPPORTED
 * otherwise). The module stays loaded. */
OC_API oc_status oc_inspect_module(oc_context *ctx, const char *name, void *cu_module,
                                   const oc_inspect_options *opts, oc_inspect_report **out);
OC_API void oc_inspect_report_free(oc_inspect_report *report);
/* Renders the report as JSON or as text for people; *out is malloc'ed, the caller frees it. */
OC_API oc_status oc_inspect_report_render(oc_context *ctx, const oc_inspect_report *report, int json, char **out);

/* `outcore devices`: what each GPU gives and, on request, measured transfer rates. */
typedef struct oc_device_info {
    int index;
    char name[256];
    int cc;                       /* compute capability x10 */
    int sm_count;
    int64_t mem_total_bytes;
    int64_t mem_free_bytes;
    int regs_per_sm;
    int regs_per_block;
    int64_t smem_per_block;       /* default limit */
    int64_t smem_per_block_optin;
    int64_t smem_per_sm;
    int max_threads_per_block;
    int max_threads_per_sm;
    int copy_engines;             /* asyncEngineCount */
    int pcie_gen;                 /* current link generation, 0 when unknown (needs NVML) */
    int pcie_width;               /* current link width, 0 when unknown */
    int pcie_gen_max, pcie_width_max;
    char pci_bus_id[32];
    /* --bandwidth, GB/s (1e9 bytes/s), 0 when not measured: median of several 256 MiB copies */
    double h2d_pageable, d2h_pageable, h2d_pinned, d2h_pinned;
    double bidir_pinned;          /* both directions at once on two streams, total */
    int64_t bandwidth_bytes;      /* transfer size used */
} oc_device_info;

typedef struct oc_devices {
    int count;
    oc_device_info *devices;
    char no_gpu_reason[256];      /* when count == 0: why ("built without CUDA", the driver's answer) */
    char cpu_model[256];          /* from /proc/cpuinfo, "" when unknown */
    int cpu_cores;                /* oc_cpu_cores() */
    char cpu_isa[16];             /* oc_cpu_isa() */
} oc_devices;

/* Lists the usable GPUs and the CPU. bandwidth != 0 measures transfer rates (seconds per
 * GPU). No GPU is not an error: count is 0 and no_gpu_reason says why. Free with
 * oc_devices_free. */
OC_API oc_status oc_devices_query(oc_context *ctx, int bandwidth, oc_devices **out);
OC_API void oc_devices_free(oc_devices *devices);
/* Renders JSON or text; *out is malloc'ed. */
OC_API oc_status oc_devices_render(oc_context *ctx, const oc_devices *devices, int json, char **out);

/* ---------------------------------------------------------------- streaming user kernels */
/*
 * oc_stream_run runs the caller's own CUDA kernel over arrays larger than the device
 * (docs/stream.md). The caller declares its arrays and a launch callback; outcore cuts the
 * chunked arrays into chunks along their chunk axis, sizes the chunks under the device and
 * host budgets, stages inputs through pinned rings, and pipelines each chunk on three streams
 * (upload, compute, download) with several chunks in flight:
 *
 *   chunk c:  H2D inputs (stream h2d) -> launch(c) on the compute stream -> D2H outputs (d2h)
 *             ordered by events; chunk c+1 uploads while c computes and c-1 downloads.
 */
typedef enum oc_stream_role {
    OC_STREAM_INPUT = 0,   /* chunked, host -> device before each chunk's launch */
    OC_STREAM_OUTPUT = 1,  /* chunked, device -> host after it; never uploaded */
    OC_STREAM_INOUT = 2,   /* chunked, uploaded, changed by the kernel, downloaded */
    OC_STREAM_SIDE = 3,    /* not chunked: uploaded once, whole, before the first chunk */
    OC_STREAM_SCRATCH = 4, /* chunked device memory only (host is NULL): never copied */
    /* Not chunked: uploaded once (its initial value) before the first chunk, kept on the
     * device through every chunk, downloaded once after the last: a reduction's accumulator
     * (sums, counts, histograms). Chunks run on two streams and may overlap, so kernels
     * update it with atomics. */
    OC_STREAM_RESULT = 5
} oc_stream_role;

#define OC_STREAM_MAX_DIMS 8

/* One array. Chunked arrays (every role but SIDE and RESULT) share one chunk extent: shape[axis] is the
 * same for all of them, and a chunk is the rows [start, start + rows) of that axis. */
typedef struct oc_stream_array {
    const char *name;          /* names the array in messages */
    oc_stream_role role;
    int elem_size;             /* bytes per element (8 for float64) */
    int ndim;                  /* 1 .. OC_STREAM_MAX_DIMS */
    int64_t shape[OC_STREAM_MAX_DIMS];
    int axis;                  /* the chunked axis, 0 .. ndim-1 (axis 0 keeps chunks contiguous) */
    /* C-order host memory (input: read; output: written; a memory-mapped .npy works), the
     * caller's, which must stay valid for the call; NULL for SCRATCH. */
    void *host;
} oc_stream_array;

/* One chunk as the launch callback sees it. Every pointer is valid during the call only. */
typedef struct oc_stream_chunk {
    int64_t index;             /* 0, 1, ... in launch order */
    int64_t count;             /* chunks in all */
    int64_t start, rows;       /* this chunk is [start, start + rows) of the chunk extent */
    int narrays;
    /* Device pointer of each array, in the spec's order: a chunk's C-order buffer of shape
     * `shapes + k*OC_STREAM_MAX_DIMS` (the array's shape with shape[axis] = rows), or, for
     * SIDE and RESULT, the whole array. */
    void *const *data;
    const int64_t *shapes;
    void *stream;              /* the cudaStream_t (= CUstream) to launch on; do not synchronise it */
    int device;
} oc_stream_chunk;

/* Enqueues the caller's kernel(s) for one chunk on chunk->stream and returns 0, or nonzero to
 * stop the job (OC_ERR_INVALID_ARGUMENT naming the chunk and the value). Runs on the thread
 * that called oc_stream_run. The kernel must only read and write the chunk's buffers. */
typedef int (*oc_stream_launch_fn)(const oc_stream_chunk *chunk, void *user);

typedef struct oc_stream_spec {
    size_t struct_size;        /* sizeof(oc_stream_spec) */
    size_t array_struct_size;  /* sizeof(oc_stream_array) */
    const oc_stream_array *arrays;
    int narrays;
    oc_stream_launch_fn launch;
    void *user;                /* passed to launch */
    /* Rows of the chunk extent when no array is chunked (work that lives on the device and
     * returns only results); 0: the chunked arrays' extent (when both are given they agree). */
    int64_t extent;
} oc_stream_spec;

#define OC_STREAM_SPEC_INIT {sizeof(oc_stream_spec), sizeof(oc_stream_array), NULL, 0, NULL, NULL, 0}

typedef struct oc_stream_options {
    size_t struct_size;        /* sizeof(oc_stream_options) */
    int device;                /* CUDA device index */
    int64_t gpu_mem_bytes;     /* device budget in bytes; 0 = gpu_mem_fraction of free memory */
    double gpu_mem_fraction;   /* default 0.9 */
    oc_gpu_mem_mode gpu_mem_mode;
    int64_t host_mem_bytes;    /* caps the pinned staging (a quarter of it); 0: 1 GiB of staging */
    int64_t chunk_rows;        /* rows per chunk; 0 = the planner chooses */
    int in_flight;             /* chunks with device buffers at once, 2..8; 0 = the planner (3) */
    oc_progress_fn progress;   /* done/total in rows of the chunk extent; may be NULL */
    void *progress_user;
} oc_stream_options;

#define OC_STREAM_OPTIONS_INIT                                                                               \
    {sizeof(oc_stream_options), 0, 0, OC_GPU_MEM_FRACTION_DEFAULT, OC_GPU_MEM_GROW, 0, 0, 0, NULL, NULL}

typedef struct oc_stream_stats {
    size_t struct_size;        /* set by the caller: sizeof(oc_stream_stats) */
    int64_t chunks, chunk_rows;
    int in_flight;
    int64_t bytes_h2d, bytes_d2h;
    int64_t dev_budget_bytes, dev_peak_bytes;
    int64_t pinned_bytes;      /* the staging rings' pinned bytes (0: every array crossed straight) */
    double seconds;            /* wall time of the whole call */
    double launch_seconds;     /* time spent inside the launch callback */
    /* Of bytes_h2d + bytes_d2h, those copied straight between pinned host arrays and the
     * device (oc_pinned_alloc), with no pass through the staging rings. */
    int64_t bytes_direct;
} oc_stream_stats;

/* Runs spec over its chunks on device opts->device (opts may be NULL: defaults); blocks
 * until every output is written. Fails with OC_ERR_INVALID_ARGUMENT on an inconsistent spec
 * (shapes, roles, chunk extents) or a nonzero return of launch, OC_ERR_DEVICE_NO_MEMORY when
 * even one row per chunk does not fit the budget (naming the need), OC_ERR_DEVICE on a CUDA
 * error or a kernel fault (naming the chunk), OC_ERR_CANCELLED after oc_context_cancel,
 * OC_ERR_UNSUPPORTED without CUDA or a GPU. Outputs are then partly written. stats may be
 * NULL. */
OC_API oc_status oc_stream_run(oc_context *ctx, const oc_stream_spec *spec, const oc_stream_options *opts,
                               oc_stream_stats *stats);
/* Page-locked ("pinned") host memory for arrays that cross to and from a GPU. oc_stream_run
 * and map's CUDA backend copy an array that lies in pinned memory (from here, cudaHostAlloc,
 * cudaHostRegister, torch's pin_memory or CuPy's pinned allocator) straight between it and
 * the device at the PCIe rate; any other host array goes through pinned staging, one more
 * read and write of every byte in host memory, which then bounds the job (docs/stream.md).
 * Pinning runs far slower than the copies it serves: allocate once and reuse. *out gets
 * bytes of memory usable from every device; OC_ERR_UNSUPPORTED without CUDA or a GPU,
 * OC_ERR_NO_MEMORY when the driver refuses (naming the size). */
OC_API oc_status oc_pinned_alloc(oc_context *ctx, size_t bytes, void **out);
/* Frees memory from oc_pinned_alloc. NULL is a no-op. */
OC_API void oc_pinned_free(void *ptr);
/* ---------------------------------------------------------------- cost model */
/* Measures this machine's rates for the cost model (`--backend auto`, docs/cost-model.md)
 * and stores them in the rate cache (OUTCORE_COST_CACHE): with a usable GPU first its
 * start-up (a tiny job; right only when this process has not used CUDA yet) and its Gram
 * kernel rate, then the PCIe rates of every GPU (as oc_devices_query with bandwidth), the
 * host memory bandwidth (STREAM triad on all cores) and the CPU Gram kernel's rate. Takes a
 * few seconds per GPU. *devices (may be NULL) receives the device list with its measured
 * rates (free with oc_devices_free); *report (may be NULL) a few lines of text naming each
 * figure and where it was stored (malloc'ed). Blocks. */
OC_API oc_status oc_cost_calibrate(oc_context *ctx, oc_devices **devices, char **report);
/* ---------------------------------------------------------------- map */
/* `outcore map`: an element-wise expression over arrays of any size (docs/map.md), with
 * numpy's broadcasting and type rules (NEP 50), optionally reduced (sum, mean, min, max) over
 * all elements or one axis without materialising the element-wise result. */
typedef enum oc_map_dtype {
    OC_MAP_DTYPE_NONE = -1, /* no dtype: what oc_map_result_dtype(NULL) returns */
    OC_MAP_BOOL = 0, OC_MAP_INT8, OC_MAP_INT16, OC_MAP_INT32, OC_MAP_INT64,
    OC_MAP_UINT8, OC_MAP_UINT16, OC_MAP_UINT32, OC_MAP_UINT64, OC_MAP_FLOAT32, OC_MAP_FLOAT64
} oc_map_dtype;

/* The reductions: oc_map_reduce_name(i) for i = 1, 2, ... until NULL lists them ("sum", ...;
 * 0 is "none"). */
typedef enum oc_map_reduce {
    OC_MAP_REDUCE_NONE = 0, OC_MAP_REDUCE_SUM, OC_MAP_REDUCE_MEAN, OC_MAP_REDUCE_MIN, OC_MAP_REDUCE_MAX,
    OC_MAP_REDUCE_COUNT /* the number of values, none included: not a reduction */
} oc_map_reduce;

#define OC_MAP_MAX_DIMS 32

/* One named input: a .npy file (path) or caller memory (data, dtype and shape; C order, or
 * Fortran order with fortran_order). Memory is read in place, never copied, and must stay
 * valid until oc_map_free; it must start on its elements' alignment (OC_ERR_INVALID_ARGUMENT
 * otherwise), as a file's data must (bad input otherwise; numpy.save aligns it). */
typedef struct oc_map_array {
    size_t struct_size;      /* sizeof(oc_map_array) */
    const char *name;        /* the name the expression uses */
    const char *path;        /* a .npy file, or NULL for memory */
    const void *data;
    oc_map_dtype dtype;
    int ndim;                /* 0..OC_MAP_MAX_DIMS */
    const int64_t *shape;
    /* Version 2: nonzero: data holds the array of this shape in Fortran order (numpy's
     * F-contiguous), planned as a Fortran-order .npy file is (docs/map.md); 0 (the default):
     * C order. Ignored for a file, whose header says its order. */
    int fortran_order;
} oc_map_array;

#define OC_MAP_ARRAY_INIT {sizeof(oc_map_array), NULL, NULL, NULL, OC_MAP_FLOAT64, 0, NULL, 0}

/* A named Python-style scalar, its text a literal ("0.2", "3", "True"): a "weak" scalar in
 * NEP 50's sense (`float32_array * 0.2` stays float32). */
typedef struct oc_map_scalar {
    const char *name;
    const char *value;
} oc_map_scalar;

typedef struct oc_map_options {
    size_t struct_size;      /* sizeof(oc_map_options) */
    /* The output type, or -1 (default): the expression's own. It must be reachable from the
     * expression's type under numpy.can_cast(..., 'same_kind'), else OC_ERR_INPUT. */
    int dtype;
    oc_backend backend;      /* AUTO: the cost model's pick; CUDA: device 0, element-wise plans only */
    int threads;             /* CPU threads; 0 = all cores */
    int64_t host_mem_bytes;  /* 0 = 80% of MemAvailable; file inputs are mapped, not loaded */
    int64_t gpu_mem_bytes;   /* device budget of the GPU path; 0 = 90% of free memory */
    oc_map_reduce reduce;
    int has_axis;            /* nonzero: reduce over `axis` only (negative counts from the end) */
    int axis;
    /* May be NULL; called from the calling thread, in elements of the element-wise result (on
     * the GPU, rows of its chunks), last with done == total once the job has succeeded,
     * reductions included. */
    oc_progress_fn progress;
    void *progress_user;
    /* Version 2: the device budget as a share of the device's free memory, used when
     * gpu_mem_bytes is 0; 0 = the default (0.9). */
    double gpu_mem_fraction;
    /* Version 3: nonzero: oc_map_run's out_data takes a result in Fortran order (Fortran-order
     * inputs give one: oc_map_result_fortran_order) in that order; zero (the default):
     * such a result of 2 dimensions or more is refused there, OC_ERR_INVALID_ARGUMENT. */
    int fortran_out;
} oc_map_options;

#define OC_MAP_OPTIONS_INIT                                                                                            \
    {sizeof(oc_map_options), -1, OC_BACKEND_AUTO, 0, 0, 0, OC_MAP_REDUCE_NONE, 0, 0, NULL, NULL, 0, 0}

typedef struct oc_map_stats {
    size_t struct_size;      /* sizeof(oc_map_stats); set by the caller */
    oc_backend backend;
    char backend_desc[96];   /* "cpu 16 threads" */
    double seconds;          /* wall time of the run, output written */
    int64_t elements;        /* elements of the element-wise (broadcast) result evaluated */
    int64_t bytes_read;      /* bytes of the inputs read (each input once) */
    int64_t bytes_written;   /* bytes of the result */
    /* Version 2: the CPU threads the job ran on (at most one per block of the result,
     * whatever opts.threads asked); 0 on the GPU. */
    int threads;
    /* Version 3: the process's peak resident memory since it started (VmHWM), as gram's. */
    int64_t host_peak_bytes;
} oc_map_stats;

/* A parsed, typed expression bound to its inputs and options. */
typedef struct oc_map oc_map;

/* Parses expr, opens (maps) the file inputs, checks names, broadcasting and types. Errors
 * (OC_ERR_INPUT, one line): a syntax error, as "syntax error in the expression at column N:
 * WHAT" (N counts bytes from 1; the CLI and the binding draw the expression with a caret
 * under column N from it); an unknown name; shapes that do not
 * broadcast; a --dtype the result cannot be cast to; a missing or unreadable input. Free
 * *out with oc_map_free. Blocks while it reads headers. */
OC_API oc_status oc_map_create(oc_context *ctx, const char *expr, const oc_map_array *inputs, int n_inputs,
                               const oc_map_scalar *scalars, int n_scalars, const oc_map_options *opts,
                               oc_map **out);
/* The result: its dtype, and its shape into shape[OC_MAP_MAX_DIMS]; returns ndim. With m
 * NULL: OC_MAP_DTYPE_NONE (-1) and -1 (shape untouched; oc_map_dtype_name(-1) is NULL). */
OC_API oc_map_dtype oc_map_result_dtype(const oc_map *m);
OC_API int oc_map_result_shape(const oc_map *m, int64_t *shape);
/* 1 when the result is in Fortran order (its array inputs are in Fortran order: .npy files,
 * or memory with oc_map_array.fortran_order; docs/map.md; the shape above is the result's
 * own either way), 0 in C order, -1 for NULL. */
OC_API int oc_map_result_fortran_order(const oc_map *m);
/* Runs the job: the result goes to the .npy file out_path (temporary name + rename; a name
 * ending in .npy, else OC_ERR_INVALID_ARGUMENT; an empty path is OC_ERR_INPUT, as
 * oc_output_check says) when it is not NULL, else to out_data (C order, the result's dtype and shape). stats may be NULL.
 * Fortran-order inputs give a result in Fortran order (oc_map_result_fortran_order;
 * docs/map.md): written so to out_path, and to out_data when opts->fortran_out asked for it
 * (else a result of 2 dimensions or more is OC_ERR_INVALID_ARGUMENT, out_data untouched).
 * Blocks; uses opts->threads threads. On failure no output file is left. */
OC_API oc_status oc_map_run(oc_context *ctx, oc_map *m, const char *out_path, void *out_data, oc_map_stats *stats);
/* What the run would do and why (backend, types, shapes, bytes), text or JSON; *text is
 * malloc'ed, the caller frees it, and is left untouched on failure. Runs nothing of the job,
 * but blocks while the choice of backend measures this host's rates, at the first such call
 * on a machine (docs/cost-model.md). */
OC_API oc_status oc_map_explain(oc_context *ctx, const oc_map *m, int json, char **text);
/* numpy's name of a map dtype ("float64"), or NULL; and the reverse (OC_ERR_INVALID_ARGUMENT
 * for an unknown name). */
OC_API const char *oc_map_dtype_name(int dtype);
OC_API oc_status oc_map_dtype_parse(const char *name, int *out);
/* The expression language's functions ("abs", "sqrt", ...) and operators ("+", "//", ...),
 * by index from 0; NULL past the last (docs/map.md lists them). */
OC_API const char *oc_map_function_name(int i);
OC_API const char *oc_map_operator_name(int i);
/* The name of a reduction ("sum", "mean", "min", "max"; "none" for OC_MAP_REDUCE_NONE), or
 * NULL: --reduce and reduce= take them. */
OC_API const char *oc_map_reduce_name(oc_map_reduce reduce);
OC_API void oc_map_free(oc_map *m);

/* ---------------------------------------------------------------- matmul */
/* `outcore matmul` (docs/matmul.md): the dense product C = op(A)·op(B) of matrices that need
 * not fit in host or device memory, computed tile by tile (op: the matrix or its transpose). */
typedef enum oc_matmul_dtype {
    OC_MATMUL_DEFAULT = 0,  /* options and outputs only: the result type of the inputs (below) */
    OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT16,
    OC_MATMUL_BFLOAT16,     /* from memory only: .npy has no bfloat16 */
    OC_MATMUL_INT8, OC_MATMUL_INT16, OC_MATMUL_INT32, OC_MATMUL_INT64,
    OC_MATMUL_UINT8, OC_MATMUL_UINT16, OC_MATMUL_UINT32, OC_MATMUL_UINT64,
    OC_MATMUL_BOOL          /* numpy's bool: 1 where the byte is not 0, else 0 */
} oc_matmul_dtype;

/* One matrix of a product: a .npy file (path: a 2-D array, C or Fortran order, or a 1-D one
 * read as numpy's matmul reads it, a 1 x k row as A and a k x 1 column as B, its own
 * transpose, whose dimension a result file drops; the other fields are then read from its
 * header) or caller memory (data: rows x cols elements of dtype, row-major,
 * ld elements between rows, 0 = cols). Memory is read in place, never copied whole; on a GPU,
 * page-locked memory (cudaHostAlloc, cudaHostRegister) in the compute dtype is uploaded from
 * where it is, and a page-locked result receives its tiles by direct download (not A·Aᵀ's,
 * which are mirrored). For the result, a path (a name ending in .npy, else
 * OC_ERR_INVALID_ARGUMENT) is written under a temporary name and renamed
 * when complete, and memory must hold the result's shape and dtype (oc_matmul_result).
 *
 * gpu nonzero: data is CUDA device memory (cudaMalloc, a framework's tensor). The product then
 * runs on the GPU (the CPU backend is refused), on the device that holds that memory unless
 * the options name devices; work queued on that device is waited for first. Such an operand
 * must be in the compute dtype, or in a narrower type the device promotes to it (int8 times
 * float32) where it is read as stored (not transposed, not A·Aᵀ); OC_ERR_INPUT otherwise:
 * convert it on the device first. A
 * product whose A, B and C are all in one device's memory with rows back to back (ld = cols)
 * runs as one cuBLASLt product on them, without copies, transposes and A·Aᵀ included; any
 * other mix runs in tiles copied on the device and reads GPU operands as stored, so there a
 * transpose of one, or A·Aᵀ, is refused (OC_ERR_INPUT naming what is missing). docs/matmul.md. */
typedef struct oc_matmul_array {
    size_t struct_size;     /* sizeof(oc_matmul_array) */
    const char *path;       /* a .npy file, or NULL for memory */
    void *data;             /* memory (an input is only read) */
    oc_matmul_dtype dtype;  /* memory */
    int64_t rows, cols;     /* memory */
    int64_t ld;             /* memory: elements between rows; 0 = cols */
    int gpu;                /* memory: nonzero when data is CUDA device memory */
} oc_matmul_array;

#define OC_MATMUL_ARRAY_INIT {sizeof(oc_matmul_array), NULL, NULL, OC_MATMUL_FLOAT64, 0, 0, 0, 0}

typedef struct oc_matmul_options {
    size_t struct_size;      /* sizeof(oc_matmul_options) */
    /* The flags (transpose_a, transpose_b, gram, tf32, resume) are 0 or 1; another value is
     * OC_ERR_INVALID_ARGUMENT. */
    int transpose_a;         /* op(A) = Aᵀ */
    int transpose_b;         /* op(B) = Bᵀ */
    /* 1: C = op(A)·op(A)ᵀ from A alone (B must be NULL); only the tiles on and above
     * the diagonal are computed and the result is mirrored, so it is exactly symmetric. A B
     * that is A's own file or memory with op(B) = op(A)ᵀ is the same job. */
    int gram;
    /* The type the product is computed and written in; DEFAULT: numpy's result type of the
     * two inputs, except int8 x int8, which is int32 (exact; numpy's int8 wraps), and where
     * that type is float16 or bfloat16, float32: half-precision products are summed in
     * float32 and written so unless FLOAT16 or BFLOAT16 is asked for. Inputs are
     * converted to it under numpy's same_kind rule (an integer input to a float, float64 to
     * float32), else OC_ERR_INPUT. Integer products other than int8 x int8 are refused
     * (OC_ERR_INPUT naming the dtype): ask for float64. bool meets a float as that float
     * and int8 as int8 (int32 sums); bool x bool is numpy's bool (1 where any of the ANDs
     * is), or INT32 (the counts of common ones, exact) or a float when asked for; BOOL is
     * the product of two bool inputs alone. */
    oc_matmul_dtype dtype;
    int tf32;                /* float32 on the GPU: allow TF32 tensor cores (10-bit mantissa) */
    oc_backend backend;      /* AUTO: the cost model's pick (docs/matmul.md); CPU; CUDA */
    int threads;             /* CPU threads, 0 to OC_MAX_THREADS; 0 = all cores */
    int device;              /* CUDA device index */
    const char *devices;     /* several devices, as oc_gram_options.devices; NULL or "": device */
    int64_t gpu_mem_bytes;   /* device budget; 0 = gpu_mem_fraction of free memory */
    double gpu_mem_fraction; /* used when gpu_mem_bytes == 0; default 0.9 */
    int64_t host_mem_bytes;  /* host budget (docs/memory.md); 0 = 80% of MemAvailable */
    int64_t tile;            /* tile edge of C; 0 = planned (tests force it) */
    oc_progress_fn progress; /* may be NULL; done/total in multiply-adds */
    void *progress_user;
    /* Nonzero: keep a journal beside the output .npy (PATH.outcore-journal) so that an
     * interrupted job run again with resume continues where it stopped, and its file has the
     * bytes of an uninterrupted run (docs/resume.md). The journal records the inputs and the
     * plan: a journal of another job, or one whose plan this run's budgets change, is refused
     * (OC_ERR_INPUT). A result in memory cannot be resumed (OC_ERR_INVALID_ARGUMENT). Without
     * it, an output that has a journal is refused (OC_ERR_INPUT). */
    int resume;
} oc_matmul_options;

#define OC_MATMUL_OPTIONS_INIT                                                                     \
    {sizeof(oc_matmul_options), 0, 0, 0, OC_MATMUL_DEFAULT, 0, OC_BACKEND_AUTO, 0, 0, NULL, 0, OC_GPU_MEM_FRACTION_DEFAULT, 0, 0, NULL, NULL, 0}

typedef struct oc_matmul_stats {
    size_t struct_size;      /* sizeof(oc_matmul_stats); set by the caller */
    oc_backend backend;      /* the backend that ran */
    char backend_desc[96];   /* "cpu/openblas 16 threads", "cpu/reference", "cuda/cublasLt" */
    oc_matmul_dtype dtype;   /* the result's */
    int64_t m, n, k;         /* C is m x n; the inner dimension k */
    double seconds;          /* wall time, output written */
    double flops;            /* 2·m·n·k: what the result represents */
    int64_t tiles;           /* tiles of C computed */
    int64_t bytes_read;      /* bytes of panels read from the inputs */
    int64_t bytes_written;   /* bytes of the result */
    int64_t bytes_h2d, bytes_d2h;
    int64_t host_budget_bytes;
    int64_t host_peak_bytes; /* the process's peak resident memory (VmHWM) */
    int64_t dev_peak_bytes;
    int threads;             /* CPU threads the job ran on; 0 on a GPU */
    char backend_explain[640]; /* the cost model's prediction (`--explain`) */
} oc_matmul_stats;

/* The result's dtype and shape for these inputs and options, without reading more than the
 * headers: OC_ERR_INPUT (one line naming the file and the problem) for inner dimensions that
 * differ, a dtype that is not supported, a missing or malformed file. Any of the three
 * outputs may be NULL. b is NULL with opts->gram. */
OC_API oc_status oc_matmul_result(oc_context *ctx, const oc_matmul_array *a, const oc_matmul_array *b,
                                  const oc_matmul_options *opts, oc_matmul_dtype *dtype, int64_t *rows, int64_t *cols);

/* C = op(A)·op(B) into c (a .npy path or memory; see oc_matmul_array). Checks everything it
 * can before computing; on failure no output file is left, and memory c holds unspecified
 * values (it is written, on the CPU accumulated, as the product runs). Blocks; stats may be NULL. C's
 * memory may not overlap A's or B's, and an array whose elements would reach past the end of
 * the address space (a stray ld) is refused: OC_ERR_INVALID_ARGUMENT. Host memory may start
 * off its elements' alignment. */
OC_API oc_status oc_matmul(oc_context *ctx, const oc_matmul_array *a, const oc_matmul_array *b,
                           const oc_matmul_array *c, const oc_matmul_options *opts, oc_matmul_stats *stats);

/* The plan oc_matmul would run, without running it: backend, tile, K panels and what bounds
 * them (text, or JSON when json != 0); with explain != 0 instead the cost model's reasons for
 * the backend. *text is malloc'ed. c may be NULL: planned as a .npy file. */
OC_API oc_status oc_matmul_plan(oc_context *ctx, const oc_matmul_array *a, const oc_matmul_array *b,
                                const oc_matmul_array *c, const oc_matmul_options *opts, int json, int explain,
                                char **text);

/* numpy's name of a dtype ("float32", "bfloat16"; "default"), or NULL; and the reverse
 * (OC_ERR_INVALID_ARGUMENT for an unknown name). */
OC_API const char *oc_matmul_dtype_name(oc_matmul_dtype dtype);
OC_API oc_status oc_matmul_dtype_parse(const char *name, oc_matmul_dtype *out);
/* What a dtype may be in a product, as OC_MATMUL_DTYPE_* bits (0 for DEFAULT or an unknown
 * value): RESULT, the options may ask for it (the product is computed and written in it:
 * float64, float32, float16, bfloat16, int32 of int8 or bool inputs, bool of bool inputs);
 * NPY, a .npy file holds it (all but bfloat16). --dtype takes the dtypes with both. */
enum { OC_MATMUL_DTYPE_RESULT = 1, OC_MATMUL_DTYPE_NPY = 2 };
OC_API unsigned oc_matmul_dtype_uses(oc_matmul_dtype dtype);

/* ---------------------------------------------------------------- ranks (MPI, docs/mpi.md)
 * One Gram job over the ranks of MPI_COMM_WORLD (`mpirun -np R outcore gram ...`): each rank
 * computes its rows on the backend it would choose alone, and the ranks write one output
 * file. Built when the library was configured with an MPI (OUTCORE_MPI); without one,
 * oc_mpi_library returns NULL and the other calls fail with OC_ERR_UNSUPPORTED. */

/* The MPI library this build uses ("Open MPI v4.1.4, ..." as MPI_Get_library_version says,
 * first line), or NULL when it was built without MPI. Needs no MPI_Init. The text is in static
 * storage, valid for the life of the process; the first call fills it, so it is not to be
 * made from two threads at once. */
OC_API const char *oc_mpi_library(void);

/* Initialises MPI (MPI_Init_thread, funneled: only the calling thread makes MPI calls) when
 * it is not yet, and returns this process's rank and the number of ranks. Collective. A build
 * without MPI returns OC_ERR_UNSUPPORTED with *rank 0 and *size 1: the process alone. */
OC_API oc_status oc_mpi_init(int *rank, int *size);
/* Finalises MPI when oc_mpi_init initialised it, after a barrier (so that no rank's failing
 * exit makes the launcher end the others before they finished). Collective. */
OC_API void oc_mpi_finalize(void);

/* Collective: every rank passes the status of its own work. Returns OC_OK when every rank
 * passed OC_OK; else every rank returns the status of the lowest failing rank, and its
 * message becomes every rank's context error: "rank R of N: <message>" (the message alone
 * when every rank failed, e.g. the same bad input, and for OC_ERR_CANCELLED: a cancel is the
 * job's, whichever rank saw it first). */
OC_API oc_status oc_mpi_agree(oc_context *ctx, oc_status status);

/* Collective: every rank passes its own bytes (its command line, say), which must be rank
 * 0's. OC_OK when they are on every rank; else every rank returns OC_ERR_INVALID_ARGUMENT
 * with "rank R of N: its <what> differs from rank 0's ..." for the lowest rank R whose bytes
 * differ (compared by a 64-bit hash). Ranks given different jobs would otherwise wait for
 * each other's messages, or write one file from two jobs. */
OC_API oc_status oc_mpi_agree_same(oc_context *ctx, const void *bytes, size_t size, const char *what);

/* Collective: this rank's share of its node, as oc_gram_ranks runs each rank (the default
 * host budget and threads divided by the ranks on the node, the default GPU share by those
 * naming the same device; values the caller gave stay as given), written into *opts: for a
 * plan or an explanation of a ranked job with the budgets its ranks run under. Nothing
 * without MPI initialised. */
OC_API void oc_mpi_node_share(oc_gram_options *opts);

/* oc_gram over every rank; collective: every rank calls it with the same arguments (its own
 * context, the matrices read from the same files). out must be OC_OUTPUT_FILE (.npy dense,
 * top-k .npz/.tsv, threshold .npz/.mtx/.tsv); the file holds exactly the bytes one process
 * writes, whatever the number of ranks. Every rank returns the same status (oc_mpi_agree's
 * rule); on failure no file is left under the output's name. stats, on every rank: the job's
 * figures over all ranks (tiles, bit-MACs and bytes summed, the largest peaks), seconds the
 * job's wall time and pairs the job's total; devices[] is this rank's own. ranks_json (may be NULL): on rank 0 a
 * JSON array with one object per rank (rank, host, rows, backend, tiles, seconds, bytes),
 * malloc'ed; NULL on the other ranks and on failure. Progress callbacks are not called. */
OC_API oc_status oc_gram_ranks(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                               const oc_output *out, oc_gram_stats *stats, char **ranks_json);

#ifdef __cplusplus
}
#endif

#endif /* OUTCORE_H */
