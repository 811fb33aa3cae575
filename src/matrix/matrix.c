#include "matrix/matrix.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "matrix/pack_bytes.h"
#include "core/pages.h"
#include "core/threads.h"

int64_t oc_bits_words_per_row(int64_t cols)
{
    int64_t words = (cols + 63) / 64;
    return (words + OC_ROW_WORD_ALIGN - 1) / OC_ROW_WORD_ALIGN * OC_ROW_WORD_ALIGN;
}

/* Positive dimensions whose bits' size fits 64-bit sizes; *bytes is that size. */
static oc_status check_dims(oc_context *ctx, int64_t rows, int64_t cols, const char *name, int64_t *bytes)
{
    *bytes = 0;
    if (rows <= 0 || cols <= 0)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the matrix has %lld rows and %lld columns; both must be positive", name,
                       (long long)rows, (long long)cols);
    /* cols is checked before oc_bits_words_per_row rounds it up, which would overflow. */
    int64_t words = cols > INT64_MAX - 512 ? 0 : oc_bits_words_per_row(cols), total;
    if (cols > INT64_MAX - 512 || !oc_mul_i64(rows, words, &total) || !oc_mul_i64(total, 8, bytes) ||
        !oc_mul_i64(rows, cols, &(int64_t){0}) || (uint64_t)*bytes > (uint64_t)SIZE_MAX / 2)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: dimensions %lld x %lld overflow 64-bit sizes", name, (long long)rows,
                       (long long)cols);
    return OC_OK;
}

oc_status oc_matrix_check_dims(oc_context *ctx, int64_t rows, int64_t cols, const char *name)
{
    int64_t bytes;
    OC_CHECK(ctx, check_dims(ctx, rows, cols, name, &bytes));
    if (cols > (int64_t)UINT32_MAX || rows > (int64_t)UINT32_MAX)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: %lld x %lld: a sparse matrix holds at most %lld rows and columns", name,
                       (long long)rows, (long long)cols, (long long)UINT32_MAX);
    return OC_OK;
}

oc_matrix *oc_matrix_new_header(int64_t rows, int64_t cols, const char *name)
{
    oc_matrix *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->rows = rows;
    m->cols = cols;
    m->words_per_row = oc_bits_words_per_row(cols);
    pthread_mutex_init(&m->pack_lock, NULL);
    snprintf(m->name, sizeof m->name, "%s", name);
    return m;
}

oc_status oc_matrix_alloc_uninit(oc_context *ctx, int64_t rows, int64_t cols, const char *name, oc_matrix **out)
{
    int64_t bytes;
    OC_CHECK(ctx, check_dims(ctx, rows, cols, name, &bytes));
    oc_matrix *m = oc_matrix_new_header(rows, cols, name);
    if (!m) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for the matrix header", name);
    m->bits = aligned_alloc(64, (size_t)bytes);
    if (!m->bits) {
        oc_matrix_free(m);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate %lld bytes for %lld x %lld packed bits", name,
                       (long long)bytes, (long long)rows, (long long)cols);
    }
    *out = m;
    return OC_OK;
}

oc_status oc_matrix_alloc(oc_context *ctx, int64_t rows, int64_t cols, const char *name, oc_matrix **out)
{
    OC_CHECK(ctx, oc_matrix_alloc_uninit(ctx, rows, cols, name, out));
    memset((*out)->bits, 0, (size_t)((*out)->rows * (*out)->words_per_row * 8));
    return OC_OK;
}

oc_status oc_matrix_alloc_csr(oc_context *ctx, int64_t rows, int64_t cols, const char *name, int64_t *ptr,
                              uint32_t *idx, oc_matrix **out)
{
    oc_status st = oc_matrix_check_dims(ctx, rows, cols, name);
    oc_matrix *m = st == OC_OK ? oc_matrix_new_header(rows, cols, name) : NULL;
    if (st == OC_OK && !m) st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for the matrix header", name);
    if (st != OC_OK) {
        free(ptr);
        free(idx);
        return st;
    }
    m->csr_ptr = ptr;
    m->csr_idx = idx;
    *out = m;
    return OC_OK;
}

int64_t oc_matrix_packed_bytes(int64_t rows, int64_t cols)
{
    int64_t words, bytes;
    if (cols <= 0 || cols > INT64_MAX - 512) return INT64_MAX;
    words = oc_bits_words_per_row(cols);
    if (!oc_mul_i64(rows, words, &bytes) || !oc_mul_i64(bytes, 8, &bytes)) return INT64_MAX;
    return bytes;
}

oc_status oc_matrix_create_file_backed(oc_context *ctx, int64_t rows, int64_t cols, const char *name,
                                       const oc_matrix_source_ops *ops, void *source, oc_matrix **out)
{
    if (rows <= 0 || cols <= 0 || oc_matrix_packed_bytes(rows, cols) == INT64_MAX) {
        ops->close(source);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: dimensions %lld x %lld are not positive or overflow 64-bit sizes", name,
                       (long long)rows, (long long)cols);
    }
    oc_matrix *m = oc_matrix_new_header(rows, cols, name);
    if (!m) {
        ops->close(source);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for the matrix header", name);
    }
    m->source_ops = ops;
    m->source = source;
    *out = m;
    return OC_OK;
}

/* Sets the bits of lists row i in a zeroed packed row. */
static void set_row_bits(const oc_matrix *m, int64_t i, uint64_t *dst)
{
    unsigned char *row = (unsigned char *)dst;
    for (int64_t k = m->csr_ptr[i]; k < m->csr_ptr[i + 1]; ++k)
        row[m->csr_idx[k] >> 3] |= (unsigned char)(0x80u >> (m->csr_idx[k] & 7));
}

oc_status oc_matrix_pack(oc_context *ctx, const oc_matrix *cm)
{
    oc_matrix *m = (oc_matrix *)cm;
    if (!m->csr_ptr || __atomic_load_n(&m->bits, __ATOMIC_ACQUIRE)) return OC_OK; /* resident, or file-backed */
    oc_status st = OC_OK;
    pthread_mutex_lock(&m->pack_lock);
    if (!m->bits) {
        const size_t bytes = (size_t)(m->rows * m->words_per_row) * 8; /* checked when the matrix was made */
        uint64_t *bits = aligned_alloc(64, bytes);
        if (!bits) {
            st = oc_fail(ctx, OC_ERR_NO_MEMORY,
                         "%s: cannot allocate %zu bytes to pack %lld x %lld bits for the dense "
                         "algorithm (the sparse one needs none: --algorithm sparse)",
                         m->name, bytes, (long long)m->rows, (long long)m->cols);
        } else {
            memset(bits, 0, bytes);
            for (int64_t i = 0; i < m->rows; ++i) set_row_bits(m, i, bits + i * m->words_per_row);
            __atomic_store_n(&m->bits, bits, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&m->pack_lock);
    return st;
}

oc_status oc_matrix_load_rows(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, uint64_t *dst)
{
    if (row0 < 0 || rows < 0 || row0 > m->rows - rows)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: rows %lld to %lld requested of a matrix of %lld rows",
                       m->name, (long long)row0, (long long)(row0 + rows), (long long)m->rows);
    if (rows == 0) return OC_OK;
    const uint64_t *bits = __atomic_load_n(&m->bits, __ATOMIC_ACQUIRE); /* oc_matrix_pack may set it */
    if (bits) {
        memcpy(dst, bits + row0 * m->words_per_row, (size_t)(rows * m->words_per_row) * 8);
        return OC_OK;
    }
    if (m->csr_ptr) { /* lists: the rows are filled from them, so loading never packs the whole matrix */
        memset(dst, 0, (size_t)(rows * m->words_per_row) * 8);
        for (int64_t i = 0; i < rows; ++i) set_row_bits(m, row0 + i, dst + i * m->words_per_row);
        return OC_OK;
    }
    return m->source_ops->load_rows(m->source, ctx, m, row0, rows, dst);
}

oc_status oc_matrix_check_source(oc_context *ctx, const oc_matrix *m)
{
    if (!m->source_ops || !m->source_ops->check) return OC_OK;
    return m->source_ops->check(m->source, ctx, m);
}

oc_status oc_matrix_load_cols(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0, int64_t w1,
                              uint64_t *dst, int64_t ld)
{
    if (w0 < 0 || w1 < w0 || w1 > m->words_per_row || ld < w1 - w0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: words %lld to %lld requested of rows of %lld words, %lld apart", m->name, (long long)w0,
                       (long long)w1, (long long)m->words_per_row, (long long)ld);
    if (row0 < 0 || rows < 0 || row0 > m->rows - rows)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: rows %lld to %lld requested of a matrix of %lld rows",
                       m->name, (long long)row0, (long long)(row0 + rows), (long long)m->rows);
    const int64_t width = w1 - w0, wpr = m->words_per_row;
    if (rows == 0 || width == 0) return OC_OK;
    const uint64_t *bits = __atomic_load_n(&m->bits, __ATOMIC_ACQUIRE);
    if (bits) {
        for (int64_t i = 0; i < rows; ++i) memcpy(dst + i * ld, bits + (row0 + i) * wpr + w0, (size_t)width * 8);
        return OC_OK;
    }
    if (m->source_ops && m->source_ops->load_cols)
        return m->source_ops->load_cols(m->source, ctx, m, row0, rows, w0, w1, dst, ld);
    return oc_matrix_load_cols_by_rows(ctx, m, row0, rows, w0, w1, dst, ld);
}

oc_status oc_matrix_load_cols_by_rows(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0,
                                      int64_t w1, uint64_t *dst, int64_t ld)
{
    const int64_t width = w1 - w0, wpr = m->words_per_row;
    if (rows <= 0 || width <= 0) return OC_OK;
    int64_t chunk = (1 << 20) / (wpr * 8) > 0 ? (1 << 20) / (wpr * 8) : 1;
    if (chunk > rows) chunk = rows;
    uint64_t *bounce = malloc((size_t)(chunk * wpr) * 8);
    if (!bounce)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate a %lld-row read buffer", m->name, (long long)chunk);
    oc_status st = OC_OK;
    for (int64_t r = 0; r < rows && st == OC_OK; r += chunk) {
        int64_t n = rows - r < chunk ? rows - r : chunk;
        st = oc_matrix_load_rows(ctx, m, row0 + r, n, bounce);
        for (int64_t i = 0; st == OC_OK && i < n; ++i)
            memcpy(dst + (r + i) * ld, bounce + i * wpr + w0, (size_t)width * 8);
    }
    free(bounce);
    return st;
}

/* Words [w0, w1) of the rows, whole rows (straight into dst) where they are all of them and
 * rows lie ld apart as they are stored. */
static oc_status load_range(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0, int64_t w1,
                            uint64_t *dst, int64_t ld)
{
    if (w0 == 0 && w1 == m->words_per_row && ld == m->words_per_row)
        return oc_matrix_load_rows(ctx, m, row0, rows, dst);
    return oc_matrix_load_cols(ctx, m, row0, rows, w0, w1, dst, ld);
}

/* Part `part` of `parts` equal shares of count: its first in *first, its length returned (0
 * for a part past the end). */
static int64_t share(int64_t count, int part, int parts, int64_t *first)
{
    const int64_t per = (count + parts - 1) / parts;
    *first = part * per;
    return *first >= count ? 0 : count - *first < per ? count - *first : per;
}

oc_status oc_matrix_load_part(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0, int64_t w1,
                              uint64_t *dst, int64_t ld, int part, int parts)
{
    int64_t first, n;
    if (m->column_slices && !oc_matrix_resident(m)) {
        if ((n = share(w1 - w0, part, parts, &first)) == 0) return OC_OK;
        return load_range(ctx, m, row0, rows, w0 + first, w0 + first + n, dst + first, ld);
    }
    if ((n = share(rows, part, parts, &first)) == 0) return OC_OK;
    return load_range(ctx, m, row0 + first, n, w0, w1, dst + first * ld, ld);
}

oc_status oc_matrix_load_redo(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0, int64_t w1,
                              uint64_t *dst, int64_t ld, oc_status st)
{
    if (st != OC_ERR_INPUT) return st;
    oc_status again = load_range(ctx, m, row0, rows, w0, w1, dst, ld);
    return again != OC_OK ? again : st; /* a file that changed back: the first failure stands */
}

typedef struct load_job {
    oc_context *ctx;
    const oc_matrix *m;
    int64_t row0, rows;
    int parts;
    uint64_t *dst;
} load_job;

static oc_status load_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    const load_job *j = arg;
    return oc_matrix_load_part(j->ctx, j->m, j->row0, j->rows, 0, j->m->words_per_row, j->dst, j->m->words_per_row,
                               (int)task, j->parts);
}

oc_status oc_matrix_load_rows_parallel(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, uint64_t *dst,
                                       int threads)
{
    if (rows <= 0) return oc_matrix_load_rows(ctx, m, row0, rows, dst);
    /* Tasks of about 1 MB of packed rows: packing 0/1 bytes is the cost for byte input, and
     * several reads in flight are what the storage wants for packed input. A source read in
     * slices of columns gets tasks of about 1 MB as well, each of every row, at least one a
     * thread where the rows have words enough. */
    const int64_t bytes = rows * m->words_per_row * 8;
    int64_t tasks = (bytes + (1 << 20) - 1) >> 20;
    int nthreads = oc_threads_resolve(threads);
    if (m->column_slices && !oc_matrix_resident(m)) {
        if (tasks < nthreads) tasks = nthreads;
        if (tasks > m->words_per_row) tasks = m->words_per_row;
    } else if (tasks > rows) {
        tasks = rows;
    }
    if (tasks > INT32_MAX) tasks = INT32_MAX;
    if (nthreads > tasks) nthreads = (int)tasks;
    load_job job = {ctx, m, row0, rows, (int)tasks, dst};
    oc_status st = oc_parallel_run(ctx, nthreads, tasks, load_task, &job, NULL, NULL);
    return oc_matrix_load_redo(ctx, m, row0, rows, 0, m->words_per_row, dst, m->words_per_row, st);
}

void oc_matrix_free(oc_matrix *m)
{
    if (!m) return;
    if (!m->bits_borrowed && m->bits) {
        /* A large input's pages go back on several threads, not one munmap's (pages.h). */
        oc_pages_discard(m->bits, (size_t)(m->rows * m->words_per_row * 8));
        free(m->bits);
    }
    free(m->csr_ptr);
    free(m->csr_idx);
    pthread_mutex_destroy(&m->pack_lock);
    if (m->source_ops) m->source_ops->close(m->source);
    free(m);
}

int64_t oc_matrix_rows(const oc_matrix *m) { return m ? m->rows : 0; }
int64_t oc_matrix_cols(const oc_matrix *m) { return m ? m->cols : 0; }
const char *oc_matrix_name(const oc_matrix *m) { return m ? m->name : ""; }

void oc_matrix_pair_names(const oc_matrix *a, const oc_matrix *b, const char **a_name, const char **b_name)
{
    *a_name = a->name;
    *b_name = b->name;
    if (a != b && (strcmp(a->name, b->name) == 0 || strcmp(b->name, "A") == 0)) {
        if (strcmp(a->name, "B") == 0) *a_name = "A";
        *b_name = "B";
    }
}

oc_status oc_matrix_set_name(oc_context *ctx, oc_matrix *m, const char *name)
{
    if (!m || !name) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_matrix_set_name: NULL argument");
    const size_t len = strlen(name);
    if (len >= sizeof m->name)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_matrix_set_name: the name is %zu bytes; at most %zu", len,
                       sizeof m->name - 1);
    memcpy(m->name, name, len + 1);
    return OC_OK;
}

/* Row popcounts run once per job over the whole input (2.5 GB for 100k x 200k bits), so they
 * use the POPCNT instruction where the CPU has it (core is compiled for plain x86-64, where
 * __builtin_popcountll is a table-free bit trick several times slower) and all cores. */
static inline __attribute__((always_inline)) int64_t popcount_words(const uint64_t *row, int64_t words)
{
    int64_t c = 0;
    for (int64_t w = 0; w < words; ++w) c += __builtin_popcountll(row[w]);
    return c;
}

static int64_t row_popcount_sw(const uint64_t *row, int64_t words) { return popcount_words(row, words); }

#if defined(__x86_64__) || defined(__i386__)
/* The same loop, compiled to the POPCNT instruction; chosen at run time by cpuid. */
__attribute__((target("popcnt"))) static int64_t row_popcount_hw(const uint64_t *row, int64_t words)
{
    return popcount_words(row, words);
}
#define HAVE_HW_POPCOUNT 1
#endif

typedef struct popcount_job {
    oc_context *ctx;
    const oc_matrix *m;
    int64_t *counts;
    int64_t rows_per_task;
    int64_t (*count_row)(const uint64_t *, int64_t);
    uint64_t **panels; /* file-backed: one panel of rows_per_task rows per worker */
} popcount_job;

static oc_status popcount_task(void *arg, int64_t task, int worker)
{
    const popcount_job *j = arg;
    const int64_t wpr = j->m->words_per_row, row0 = task * j->rows_per_task;
    int64_t end = (task + 1) * j->rows_per_task < j->m->rows ? (task + 1) * j->rows_per_task : j->m->rows;
    const uint64_t *rows = j->m->bits ? j->m->bits + row0 * wpr : j->panels[worker];
    if (!j->m->bits) {
        /* The source records a failure's message on ctx under its lock (matrix.h). */
        oc_status st = oc_matrix_load_rows(j->ctx, j->m, row0, end - row0, j->panels[worker]);
        if (st != OC_OK) return st;
    }
    for (int64_t i = row0; i < end; ++i) j->counts[i] = j->count_row(rows + (i - row0) * wpr, wpr);
    return OC_OK;
}

oc_status oc_matrix_row_popcounts(oc_context *ctx, const oc_matrix *m, int threads, int64_t *counts)
{
    if (m->csr_ptr) { /* lists, packed or not: the row lengths */
        for (int64_t i = 0; i < m->rows; ++i) counts[i] = m->csr_ptr[i + 1] - m->csr_ptr[i];
        return OC_OK;
    }
    popcount_job job = {ctx, m, counts, 0, row_popcount_sw, NULL};
#ifdef HAVE_HW_POPCOUNT
    if (__builtin_cpu_supports("popcnt")) job.count_row = row_popcount_hw;
#endif
    /* Tasks of about 4 MB keep the threads busy without contention on the task counter; a
     * file-backed matrix is read in smaller panels, one per thread, which bound what the
     * pass holds. */
    int64_t bytes_per_row = m->words_per_row * 8, task_bytes = m->bits ? 4 << 20 : OC_POPCOUNT_PANEL_BYTES;
    job.rows_per_task = task_bytes / bytes_per_row > 0 ? task_bytes / bytes_per_row : 1;
    int64_t tasks = (m->rows + job.rows_per_task - 1) / job.rows_per_task;
    int nthreads = oc_threads_resolve(threads);
    if (nthreads > tasks) nthreads = (int)tasks;
    if (m->bits) return oc_parallel_run(ctx, nthreads, tasks, popcount_task, &job, NULL, NULL);

    oc_status st = OC_OK;
    job.panels = calloc((size_t)nthreads, sizeof *job.panels);
    if (!job.panels) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the popcount panels", m->name);
    for (int i = 0; i < nthreads; ++i) {
        job.panels[i] = aligned_alloc(64, (size_t)(job.rows_per_task * bytes_per_row));
        if (!job.panels[i]) {
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate %d popcount panels of %lld bytes", m->name,
                         nthreads, (long long)(job.rows_per_task * bytes_per_row));
            goto cleanup;
        }
    }
    OC_CHECK_GOTO(ctx, st, oc_parallel_run(ctx, nthreads, tasks, popcount_task, &job, NULL, NULL), cleanup);
cleanup:
    for (int i = 0; i < nthreads; ++i) free(job.panels[i]);
    free(job.panels);
    return st;
}

int64_t oc_pack_dense_row(const unsigned char *src, int64_t cols, uint64_t *dst, int64_t words_per_row)
{
    return oc_pack_bytes_best()(src, cols, dst, words_per_row, 0);
}

void oc_pack_nonzero_row(const unsigned char *src, int64_t cols, uint64_t *dst, int64_t words_per_row)
{
    oc_pack_bytes_best()(src, cols, dst, words_per_row, 1);
}

static unsigned char reverse_byte(unsigned char b)
{
    b = (unsigned char)((b & 0xF0) >> 4 | (b & 0x0F) << 4);
    b = (unsigned char)((b & 0xCC) >> 2 | (b & 0x33) << 2);
    b = (unsigned char)((b & 0xAA) >> 1 | (b & 0x55) << 1);
    return b;
}

int64_t oc_pack_bits_row(const unsigned char *src, int64_t cols, oc_bit_order order, uint64_t *dst,
                         int64_t words_per_row)
{
    unsigned char *out = (unsigned char *)dst;
    int64_t nbytes = (cols + 7) / 8;
    memset(out + nbytes, 0, (size_t)(words_per_row * 8 - nbytes));
    if (order == OC_BITS_MSB_FIRST) {
        memcpy(out, src, (size_t)nbytes);
    } else {
        for (int64_t k = 0; k < nbytes; ++k) out[k] = reverse_byte(src[k]);
    }
    if (cols % 8 == 0) return -1;
    /* Only the last byte can hold bits past the columns: its low 8 - cols % 8 bits in
     * packbits order. A set one is a column the caller's count leaves out. */
    unsigned char last = out[nbytes - 1], keep = (unsigned char)(0xFF00u >> (cols % 8));
    out[nbytes - 1] = last & keep;
    if (!(last & (unsigned char)~keep)) return -1;
    int64_t column = 8 * (nbytes - 1) + cols % 8;
    while (!(last & (0x80u >> (column % 8)))) column++;
    return column;
}

int64_t oc_packed_clear_past(unsigned char *last, int64_t cols)
{
    if (cols % 8 == 0) return -1;
    const unsigned char keep = (unsigned char)(0xFF00u >> (cols % 8)), was = *last;
    *last = was & keep;
    if (!(was & (unsigned char)~keep)) return -1;
    int64_t column = 8 * ((cols + 7) / 8 - 1) + cols % 8;
    while (!(was & (0x80u >> (column % 8)))) column++;
    return column;
}

int64_t oc_expand_packed_rows(uint64_t *dst, int64_t rows, int64_t cols, int64_t words_per_row, int64_t *extra_col)
{
    unsigned char *base = (unsigned char *)dst;
    const int64_t width = (cols + 7) / 8, stride = words_per_row * 8;
    int64_t bad_row = -1;
    /* Row i moves from i * width up to i * stride >= i * width: the rows below i still wait
     * below i * width, so walking down overwrites only rows that already moved. */
    for (int64_t i = rows - 1; i >= 0; --i) {
        unsigned char *row = base + i * stride;
        if (i * width != i * stride) memmove(row, base + i * width, (size_t)width);
        memset(row + width, 0, (size_t)(stride - width));
        int64_t column = oc_packed_clear_past(row + width - 1, cols);
        if (column >= 0) { /* the walk is backwards: the last row found is the first in the file */
            bad_row = i;
            *extra_col = column;
        }
    }
    return bad_row;
}
