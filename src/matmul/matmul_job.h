/*
 * matmul_job.h - a dense matrix product C = op(A)·op(B) as the backends see it: the job layer
 * (matmul.c) checks the inputs, promotes the dtypes and opens the output; a backend
 * (matmul/cpu/, matmul/cuda/) reads panels of the operands through read_panel, computes tiles
 * of C and hands each finished tile to write_tile. Neither side knows where the numbers live
 * (caller memory, a memory-mapped .npy, a .npy read in panels larger than memory) or where
 * the tiles go (caller memory, a .npy written tile by tile).
 *
 * Shapes are those of the product: op(A) is m x k, op(B) is k x n, C is m x n. Panels are
 * delivered already transposed when the job asks for a transpose, converted to the compute
 * dtype (or, for an operand whose backend converts it itself, as stored: panel_stored),
 * row-major and densely packed (leading dimension = the panel's column count).
 */
#ifndef OC_MATMUL_MATMUL_JOB_H
#define OC_MATMUL_MATMUL_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"

/* The element types a product computes in. Inputs of other numeric types are promoted by
 * the job layer (numpy's rules) before they reach a backend. */
typedef enum oc_mm_type {
    OC_MM_FLOAT64 = 0, /* IEEE double, FP64 accumulation */
    OC_MM_FLOAT32,     /* IEEE single, FP32 accumulation (TF32 only when the job says so) */
    OC_MM_FLOAT16,     /* IEEE half operands, FP32 accumulation */
    OC_MM_BFLOAT16,    /* bfloat16 operands, FP32 accumulation */
    OC_MM_INT8,        /* int8 operands, exact int32 accumulation */
    OC_MM_INT32,       /* output only: the int8 product */
    OC_MM_BOOL,        /* output only: bool x bool's product, its int32 sums not 0 (numpy's any of the ANDs) */
    OC_MM_TYPE_COUNT
} oc_mm_type;

/* The largest k at which an int8 x int8 product's sums are exact in float32 whatever their
 * order: every partial sum is an integer of magnitude at most k·128·128 <= 2^24. A BLAS
 * multiplies such a product with sgemm, beyond it with dgemm (exact to k·2^14 < 2^53); with a
 * bool input the bound is larger (matmul_dtype.h's oc_matmul_int8_f32_k_max). */
#define OC_MM_INT8_F32_K_MAX 1024

/* Which operand a panel is read from. */
typedef enum oc_mm_operand { OC_MM_A = 0, OC_MM_B = 1 } oc_mm_operand;

typedef struct oc_matmul_job oc_matmul_job;

/* Copies rows [row0, row0+rows) x columns [col0, col0+cols) of op(X) (after the transpose,
 * in the compute type in_type, or in stored_type[which] where panel_stored[which]) into
 * dst, row-major with leading dimension cols. Thread-safe: backends call it from several
 * threads at once. Returns OC_OK or an error already recorded
 * in the job's context (a file that changed while being read, an I/O error). */
typedef oc_status (*oc_mm_read_panel_fn)(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t rows,
                                         int64_t col0, int64_t cols, void *dst);

/* Stores the finished tile C[row0 .. row0+rows) x [col0 .. col0+cols), given row-major in
 * out_type with leading dimension ld (elements). Each tile of C is written exactly once;
 * thread-safe for disjoint tiles. */
typedef oc_status (*oc_mm_write_tile_fn)(const oc_matmul_job *job, int64_t row0, int64_t rows, int64_t col0,
                                         int64_t cols, const void *tile, int64_t ld);

/* A resumable job (the job layer keeps its journal: matmul_resume.h). Before its first tile
 * a backend reports its plan: tiles of tm x tn (tile (I, J) starts at row I·tm, column J·tn;
 * a symmetric job's tiles are square) with K panels of kp, and in `how` what else decides the
 * result's bits (the library and the multiply). It fails, its message on the job's context,
 * when the plan is not the one the job's journal was written under. */
typedef oc_status (*oc_mm_plan_tiles_fn)(const oc_matmul_job *job, int64_t tm, int64_t tn, int64_t kp, const char *how);
/* Nonzero when the tile at (row0, col0) is in the result already: the backend skips it (it
 * is not computed, read or written). Thread-safe. */
typedef int (*oc_mm_tile_done_fn)(const oc_matmul_job *job, int64_t row0, int64_t col0);

/* Where element (row0, col0) of op(X) lies in memory when read_panel would only copy it out
 * from there (in the type read_panel gives, row-major, op(X) = X): the caller's memory or a
 * mapped input file; its address, and in *ld the elements between rows; NULL when it does not (a file read
 * in segments, a conversion, a transpose). A backend that reads a panel from there itself (a
 * GPU, from page-locked memory; the CPU's BLAS) does not call read_panel for it and counts
 * its bytes in stats.bytes_straight. Thread-safe. */
typedef const void *(*oc_mm_panel_memory_fn)(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t col0,
                                             int64_t *ld);
/* panel_memory for an operand read transposed: where element (row0, col0) of op(X) lies when
 * op(X) is the transpose of X as it lies in memory (in_type; the caller's memory or a mapped
 * input): the address of X's element (col0, row0), and in *ld the elements between X's rows;
 * NULL otherwise (not transposed, a conversion, a file read in segments). A backend that
 * multiplies op(X) where it lies with a transposing GEMM (the CPU's BLAS) reads it there and
 * counts its bytes in stats.bytes_straight. Thread-safe. */
typedef const void *(*oc_mm_transposed_memory_fn)(const oc_matmul_job *job, oc_mm_operand which, int64_t row0,
                                                  int64_t col0, int64_t *ld);
/* Where element (row0, col0) of C goes in memory when write_tile would only copy a tile
 * there (out_type; the caller's memory or the mapping of the .npy being written; not A·Aᵀ,
 * which write_tile mirrors, unless C is GPU memory (then the backend mirrors:
 * gpu_resident_only)): its address, *ld elements between rows; NULL otherwise. A backend
 * that computed a tile there hands write_tile that place, which copies nothing and records
 * the tile (a resumable job's journal); one that copied it there from the device does not
 * call write_tile for it (no such job is resumable). Thread-safe. */
typedef void *(*oc_mm_tile_memory_fn)(const oc_matmul_job *job, int64_t row0, int64_t col0, int64_t *ld);
/* Waits until the place tile_memory gives for rows [row0, row0+rows) of C may be written: an
 * output file reserves its blocks as the job runs (npy_array.h), and a backend that computes
 * a tile in that place calls this before its first write there. OC_OK, or an error already
 * recorded in the job's context (the reservation failed: a full disk). Thread-safe. */
typedef oc_status (*oc_mm_tile_ready_fn)(const oc_matmul_job *job, int64_t row0, int64_t rows);
/* Where operand `which` lies in the caller's memory as stored, in in_type (not a file, not
 * converted): its element (0, 0), *ld elements between its stored rows, and *transposed
 * when op(X) is the stored matrix's transpose; NULL otherwise. What a backend that
 * multiplies whole operands where they are (a GPU's resident plan) reads. Thread-safe. */
typedef const void *(*oc_mm_stored_memory_fn)(const oc_matmul_job *job, oc_mm_operand which, int64_t *ld,
                                              int *transposed);

struct oc_matmul_job {
    oc_context *ctx;
    int64_t m, n, k;     /* C is m x n, the inner dimension k */
    oc_mm_type in_type;  /* the type panels are delivered in */
    oc_mm_type out_type; /* the type tiles are written in */
    int tf32;            /* FP32 inputs: nonzero allows TF32 tensor-core products */
    /* The dtype each operand is stored in (A, B; A's twice for A·Aᵀ), which read_panel
     * converts from. */
    oc_matmul_dtype stored_type[2];
    /* Nonzero for an operand whose panels read_panel and panel_memory give as stored
     * (stored_type, transposed as the job asks) instead of in in_type: set before the first
     * read by a backend that promotes them itself (a GPU, after the upload, where the stored
     * type is no wider than in_type: oc_matmul_widens, matmul_dtype.h). 0 from the job layer. */
    int panel_stored[2];
    /* A·Aᵀ (B is A, transposed): only tiles with col0 >= row0 are computed and the job layer
     * mirrors them; a backend that sees symmetric computes the upper tiles and calls
     * write_tile for those alone, whole or in parts of rows or of columns (a part of a
     * diagonal tile may then lie below the diagonal: write_tile stores the elements on and
     * above it). */
    int symmetric;
    oc_mm_read_panel_fn read_panel;
    oc_mm_write_tile_fn write_tile;
    /* Both NULL unless the job is resumable; a backend calls plan_tiles once, then asks
     * tile_done of each tile before it starts it. */
    oc_mm_plan_tiles_fn plan_tiles;
    oc_mm_tile_done_fn tile_done;
    /* May be NULL: panels and tiles then go through read_panel and write_tile alone. */
    oc_mm_panel_memory_fn panel_memory;
    oc_mm_transposed_memory_fn transposed_memory;
    oc_mm_tile_memory_fn tile_memory;
    oc_mm_tile_ready_fn tile_ready; /* with tile_memory */
    oc_mm_stored_memory_fn stored_memory;
    /* The elements between rows of the place tile_memory gives C in host memory for every
     * tile when the job runs; 0 when it gives none. tile_place_mapped: that place is the
     * output file's mapping, whose pages a tile accumulated there keeps in memory while its
     * K panels are added (the caller's memory is the caller's). Set by the job layer before a
     * plan is made, also for --plan, which opens no output: what a plan that accumulates
     * tiles in their place asks. */
    int64_t tile_place_ld;
    int tile_place_mapped;
    /* The result's .npy file: its bytes (0: the result goes to memory) and whether it lies on a
     * memory file system. Set by the job layer before the backend is chosen: writing it is in
     * both backends' predictions (cost.h's oc_cost_result_file_seconds). */
    double out_file_bytes;
    int out_file_in_memory;
    /* A, B or C is CUDA device memory, which panel_memory or tile_memory gives for every
     * panel and tile (the job layer refuses it otherwise): a GPU backend alone runs it, and
     * never calls read_panel or write_tile for it. */
    int gpu_memory;
    /* gpu_memory, and an operand in GPU memory is read transposed, or the job is A·Aᵀ: only
     * a plan that multiplies the whole operands where they are (a GPU's resident plan) can
     * run it; the job layer has checked that A, B and C are all in one device's memory. */
    int gpu_resident_only;
    void *io; /* the job layer's state for the callbacks */
    /* Budgets, resolved by the job layer: bytes of host memory a backend may use for panels
     * and tiles, bytes of device memory per device (0 on the CPU). */
    int64_t host_mem_bytes;
    int64_t gpu_mem_bytes;
    int host_mem_given; /* host_mem_bytes from the caller's budget, not the default */
    /* The whole host budget, of which the inputs mapped (oc_mm_map_limit) took what
     * host_mem_bytes leaves; the data bytes of A and B where read from a file (0 for an
     * operand in memory, an empty one, or B when the job has none): what a budget message
     * needs to name the least budget that runs the job (oc_mm_least_budget). */
    int64_t host_mem_whole;
    int64_t file_bytes[2];
    int threads; /* CPU threads (0 = all cores) */
    /* Device indices, ndevices of them (CUDA); a device split into logical devices ("0:2")
     * is named once for each, and device_parts (NULL: 1 for each) says into how many parts
     * its device is split: each takes that share of the device budget. */
    const int *devices;
    const int *device_parts;
    int ndevices;
    int64_t tile;            /* tile edge forced by the caller (tests); 0 = planned */
    oc_progress_fn progress; /* may be NULL */
    void *progress_user;
    /* Filled by the backend: what ran and what it moved. */
    struct {
        double seconds;
        int64_t tiles;
        int64_t bytes_read, bytes_to_device, bytes_from_device;
        int64_t bytes_straight; /* read from panel_memory's memory by the backend itself */
        int64_t peak_host_bytes, peak_device_bytes;
        char backend[32]; /* "cpu/openblas", "cpu/reference", "cuda/cublasLt" */
    } stats;
    /* gpu_mem_bytes is 0 when the caller gave a share instead: this share of each device's
     * free memory (0: OC_GPU_MEM_FRACTION_DEFAULT), which a GPU backend resolves when it opens
     * the device. */
    double gpu_mem_fraction;
};

/* A backend of the product (the pattern of gram/backend.h): matmul.c reaches the backends
 * only through these tables. */
typedef struct oc_mm_backend {
    const char *name; /* "cpu", "cuda" */
    /* Nonzero when the backend can run on device `device` now, else 0 with why[] saying why
     * not (cheap; no messages). */
    int (*usable)(int device, char *why, size_t why_size);
    /* Computes the job; fills job->stats. */
    oc_status (*run)(oc_matmul_job *job);
    /* The plan the job would run under, as text or JSON (--plan), without running it. */
    oc_status (*plan)(oc_matmul_job *job, int json, char **out);
    /* The library its products would run on now, into name ("openblas", "reference"):
     * nonzero when it is a tuned one, 0 for plain loops (the cost model's CPU rate). May be
     * NULL (then tuned). */
    int (*library)(char *name, size_t size);
    /* Flop/s of its GEMM of in-type operands (float32 on TF32 when tf32), measured now (about
     * 0.1 s): the cost model's rate at a machine's first choice. `where` is the threads on the
     * CPU, the device on a GPU; `room` the bytes of memory (host, or that device's) the
     * measurement may take, <= 0 for no limit: 0 when it needs more. May be NULL. */
    double (*gemm_rate)(oc_mm_type in, int tf32, int where, int64_t room);
} oc_mm_backend;

extern const oc_mm_backend oc_mm_backend_cpu; /* matmul/cpu/ */
#ifdef OC_HAVE_CUDA
extern const oc_mm_backend oc_mm_backend_cuda; /* matmul/cuda/ */
#endif

/* At most what the smallest CPU plan of tiles of `tile` (0: planned, whose smallest is 16)
 * needs: K panels of 64 of A's and B's sides at 16 bytes an element (as read, then as
 * multiplied) and the tile at 16 (accumulator and output). */
static inline int64_t oc_mm_least_plan_bound(int64_t tile)
{
    const int64_t t = tile > 0 ? tile : 16;
    if (t > ((int64_t)1 << 29)) return INT64_MAX / 2; /* past any budget, without overflow */
    return 2 * t * 64 * 16 + t * t * 16;
}

/* The most data bytes of an input file that is mapped whole rather than read in panels,
 * under a host budget of which `mapped` is taken by the inputs mapped before it: the
 * inputs mapped together take at most half the budget (as gram keeps them), and always
 * leave the smallest plan's bound (tile as oc_mm_least_plan_bound's). So a budget that maps
 * an input still runs the product, and a larger budget never refuses a product that a
 * smaller one runs. */
static inline int64_t oc_mm_map_limit(int64_t budget, int64_t mapped, int64_t tile)
{
    const int64_t half = budget - budget / 2, bound = oc_mm_least_plan_bound(tile);
    return budget - (half > bound ? half : bound) - mapped;
}

/* The bytes of the job's input files that a host budget maps (A first, then B). */
static inline int64_t oc_mm_mapped_under(const oc_matmul_job *job, int64_t budget)
{
    int64_t mapped = 0;
    for (int i = 0; i < 2; ++i)
        if (job->file_bytes[i] > 0 && job->file_bytes[i] <= oc_mm_map_limit(budget, mapped, job->tile))
            mapped += job->file_bytes[i];
    return mapped;
}

/* The least host budget that leaves `need` bytes beside the inputs it maps: a larger budget
 * may map an input and so leave less, so the least is the first budget that is at least
 * `need` plus what it maps (at most three steps: each maps one more input or ends). */
static inline int64_t oc_mm_least_budget(const oc_matmul_job *job, int64_t need)
{
    int64_t b = need;
    for (int64_t next; (next = need + oc_mm_mapped_under(job, b)) > b;) b = next;
    return b;
}

#endif
