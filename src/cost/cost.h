/*
 * cost.h - the cost model: which backend runs a job faster, and why (docs/cost-model.md).
 *
 * A job is described by what it must do, independently of where it runs (oc_cost_job):
 * bytes that cross PCIe if it runs on a GPU, bytes the host must touch on each backend,
 * operations per class, and fixed costs. A rate table (oc_cost_rates) says how fast this
 * machine does each of those things. oc_cost_predict turns the two into seconds per
 * backend and a one-paragraph reason. The model is a roofline per backend: the stages of
 * a streamed job overlap, so a backend's time is its start-up plus the slowest of its
 * stages (transfers, host memory traffic, arithmetic), plus the job's fixed costs.
 *
 *   cpu  = cpu_fixed + fixed + max(host_bytes_cpu / host_bw, Σ ops[c] / cpu_rate[c])
 *   cuda = start-up + gpu_fixed + fixed' + max(h2d / h2d_rate, d2h / d2h_rate, (h2d + d2h) / bidir,
 *                                              host_bytes_gpu / host_bw, Σ ops[c] / gpu_rate[c])
 *
 * fixed: what the job pays whatever its size (oc_cost_fixed_term: its threads' start, the
 * output file's creation, pages, flush to the disk and rename); fixed' the same without the
 * CPU's threads.
 *
 * Pure arithmetic: no I/O, no device calls, so the decisions are unit-tested on synthetic
 * rate tables (tests/test_cost.c). Where the rates come from: cost_cache.c (the cache file),
 * cost_rates.c (the process's table, with the defaults of cost.c) and cost_measure.c (the
 * measurements, with src/cost/stream_triad.c).
 *
 * Users: oc_gram's `--backend auto` (gram.c, through oc_cost_job_gram) and the sparse/dense
 * choice (gram_choice.c, which takes its kernel rates from the same table); `outcore map`
 * and the streaming API fill an oc_cost_job themselves (oc_cost_job_map for element-wise
 * expressions; a user kernel with a CPU version states its bytes and operations directly):
 *
 *   oc_cost_rates rates;
 *   oc_cost_rates_get(ctx, backend == OC_BACKEND_AUTO && gpu_usable ? host_budget : 0, gpu_usable, &rates);
 *   double per_element[OC_COST_OPS] = {[OC_COST_F64] = 1};          // a * b
 *   oc_cost_job job;
 *   oc_cost_job_map("a*b", in_bytes, out_bytes, elements, per_element, &job);
 *   job.gpu_warm = oc_cost_gpu_warm();
 *   oc_cost_prediction p;
 *   oc_cost_predict(&rates, &job, gpu_usable, "cuda:0", why_not, &p);
 *   run on p.choice; print p.reason for --explain; after a GPU run, oc_cost_note_gpu_job().
 */
#ifndef OC_COST_COST_H
#define OC_COST_COST_H

#include <stdint.h>
#include "outcore.h"

/* Operation classes: each has a rate on the CPU (all cores) and on the GPU. */
typedef enum oc_cost_op {
    OC_COST_BIT_MAC = 0, /* one bit multiply-add of a Gram kernel (AND + popcount share) */
    OC_COST_ELEMENT,     /* one Gram result element through the epilogue and selection */
    OC_COST_F32,         /* one float32 add/mul/compare of an element-wise expression */
    OC_COST_F64,         /* one float64 add/mul/compare */
    OC_COST_F32_MATH,    /* one float32 math function (exp, log, sin, ...) */
    OC_COST_F64_MATH,    /* one float64 math function */
    OC_COST_INT,         /* one integer or boolean element op */
    OC_COST_OPS          /* the number of classes */
} oc_cost_op;

const char *oc_cost_op_name(oc_cost_op op);

/* The fixed costs of a job (oc_cost_prediction.fixed), each a term of `--explain`. */
typedef enum oc_cost_fixed_term {
    OC_COST_FIX_THREADS = 0, /* starting the CPU's worker threads (the CPU backend only) */
    OC_COST_FIX_FILE,        /* creating each output file beside its path and renaming it */
    OC_COST_FIX_PAGES,       /* sizing a new output file and faulting its pages in */
    OC_COST_FIX_SYNC,        /* flushing the output file to its disk (fsync) */
    OC_COST_FIXED_TERMS
} oc_cost_fixed_term;

const char *oc_cost_fixed_name(oc_cost_fixed_term term);

/* The default rate of the Gram kernel that a GPU of compute capability cc (x10) runs, in
 * bit-MACs computed per second, and that kernel's name (*kernel); 0 for cc 0. The table and
 * where its figures come from: cost_gpu_defaults.c. */
double oc_cost_gpu_default_bit_macs(int cc, const char **kernel);

/* Rates of one machine. Every rate is per second and > 0 once the table is resolved
 * (oc_cost_rates_resolve fills the gaps with defaults). `measured` has bit OC_COST_M_* set
 * for each figure that was measured on this machine; the others are defaults, and the reason
 * text says so. */
enum {
    OC_COST_M_PCIE = 1 << 0,     /* h2d/d2h pinned and pageable, bidir */
    OC_COST_M_HOST_BW = 1 << 1,  /* STREAM triad */
    OC_COST_M_CPU_BITS = 1 << 2, /* the CPU Gram kernel's bit-MAC rate */
    OC_COST_M_STARTUP = 1 << 3,  /* device start-up */
    OC_COST_M_GPU_BITS = 1 << 4, /* the GPU Gram kernel's bit-MAC rate */
    OC_COST_M_CPU_OPS = 1 << 5,  /* some element-op rates on the CPU (cpu_ops_measured says which) */
    OC_COST_M_GPU_OPS = 1 << 6,  /* some element-op rates on the GPU (gpu_ops_measured) */
    OC_COST_M_PAGES = 1 << 7,    /* fresh pages faulted in (the triad's first touch) */
    OC_COST_M_HOST = OC_COST_M_HOST_BW | OC_COST_M_CPU_BITS | OC_COST_M_CPU_OPS | OC_COST_M_PAGES /* the host's key */
};

typedef struct oc_cost_rates {
    double h2d_pinned, d2h_pinned, bidir_pinned; /* bytes/s over PCIe through pinned buffers */
    double h2d_pageable, d2h_pageable;           /* bytes/s from and to ordinary memory */
    double host_bw;                              /* bytes/s of host memory, all cores (triad) */
    double cpu[OC_COST_OPS];                     /* operations/s on all cores */
    double gpu[OC_COST_OPS];                     /* operations/s on one GPU */
    double gpu_startup;                          /* s: context creation and module load (first job) */
    double gpu_job_setup;                        /* s: a later job's set-up in the same process */
    double thread_start;                         /* s: starting one worker thread */
    double file_create;                          /* s: creating an output file and renaming it */
    double file_pages;                           /* bytes/s: fresh pages faulted in by one thread */
    double file_faults;                          /* bytes/s: fresh pages faulted in by every core at once */
    double file_sync;                            /* bytes/s: flushing a new file to its disk */
    int cpu_cores;
    char cpu_isa[16];
    char gpu_name[128];                          /* "" when no GPU is described */
    unsigned measured;                           /* OC_COST_M_* */
    unsigned cpu_ops_measured, gpu_ops_measured; /* bit 1 << op per element-op class measured */
    char note[256];                              /* why the cache was not used, or "" */
} oc_cost_rates;

/* Fills every rate that is <= 0 with its documented default (docs/cost-model.md) for
 * `cores` cores of ISA `isa`; measured figures are kept. */
void oc_cost_rates_resolve(oc_cost_rates *r, int cores, const char *isa);

/* What a job needs, wherever it runs. Sizes in bytes; counts as doubles (they overflow
 * nothing and need no exactness). */
typedef struct oc_cost_job {
    char what[96];               /* what the reason calls the job: "a*b", "gram 4627x4627x216" */
    double h2d_bytes;            /* crossing PCIe host -> device on the GPU */
    double d2h_bytes;            /* device -> host */
    int pageable;                /* the copies come from ordinary memory (no pinned staging) */
    double host_bytes_cpu;       /* host memory the CPU backend reads and writes */
    double host_bytes_gpu;       /* host memory the GPU path touches (staging copies, output) */
    double ops[OC_COST_OPS];     /* operations per class; the same work on either backend */
    double cpu_fixed, gpu_fixed; /* other seconds on each (per-call set-up the job knows of) */
    int threads;                 /* CPU worker threads the job starts */
    int files;                   /* output files created, flushed and renamed */
    double file_bytes;           /* their bytes */
    int file_in_memory;          /* they are on a memory file system (tmpfs): their fsync writes no disk */
    int gpu_warm;                /* this process already ran a GPU job: no context creation */
    int gpu_devices;             /* physical GPUs the job shares (0 or 1: one): the driver starts
                                  * each in turn, and they share the work and the PCIe bytes */
    /* Seconds that this process's earlier CPU jobs, chosen by auto, took beyond what a warm
     * GPU would have (oc_cost_gpu_regret). Once this job's loss would bring them to the GPU's
     * start-up, the start-up is worth paying: the GPU is chosen (ski rental), so a process
     * that repeats jobs a warm GPU runs faster moves to the GPU after a few of them instead
     * of paying the start-up in every prediction and never moving. */
    double gpu_regret;
} oc_cost_job;

/* Gram outputs, as the model sees them. */
typedef enum oc_cost_gram_output {
    OC_COST_GRAM_DENSE = 0, /* n x p elements of elem_bytes written */
    OC_COST_GRAM_TOPK,      /* n x k (index, score) */
    OC_COST_GRAM_THRESHOLD, /* pairs: est_pairs x (row, col, value) */
    OC_COST_GRAM_DISCARD    /* nothing leaves the device */
} oc_cost_gram_output;

typedef struct oc_cost_gram_shape {
    int64_t n, p, m; /* rows of A, rows of B, columns (bits) */
    int symmetric;   /* A·Aᵀ: only the upper triangle is computed */
    oc_cost_gram_output output;
    int elem_bytes;     /* result element size (4 int32/float32, 2 uint16) */
    int64_t k;          /* top-k */
    double est_pairs;   /* threshold: expected pairs (0 when unknown) */
    int popcounts;      /* the metric needs row popcounts (not counts) */
    int to_file;        /* the result goes to a file (not memory) */
    int file_in_memory; /* that file is on a memory file system (tmpfs): no flush to a disk */
    int threads;        /* CPU worker threads the job would start (beyond the pool's) */
} oc_cost_gram_shape;

/* The job description of a dense-algorithm Gram job (the sparse algorithm has its own
 * prediction in gram_choice.c, which uses the same table). */
void oc_cost_job_gram(const oc_cost_gram_shape *g, oc_cost_job *job);

/* An element-wise job (`outcore map`): bytes_in read, bytes_out written, elements computed,
 * ops[] per element. Inputs and outputs cross PCIe once each way on the GPU. */
void oc_cost_job_map(const char *what, double bytes_in, double bytes_out, double elements,
                     const double ops_per_element[OC_COST_OPS], oc_cost_job *job);

typedef enum oc_cost_choice { OC_COST_CPU = 0, OC_COST_GPU = 1 } oc_cost_choice;

typedef struct oc_cost_prediction {
    double cpu_seconds;
    double gpu_seconds; /* INFINITY when no GPU may run it */
    /* The stages of each (seconds), for the reason and for tests. */
    double cpu_memory, cpu_compute;
    double gpu_transfer, gpu_host, gpu_compute, gpu_start;
    /* The fixed costs (seconds), each in both totals but the threads' (the CPU's only). */
    double fixed[OC_COST_FIXED_TERMS];
    oc_cost_choice choice;
    /* CPU chosen while a warm GPU would be faster: by how much (else 0); the caller that runs
     * the job on the CPU adds it with oc_cost_note_cpu_job. */
    double regret;
    char reason[512]; /* one paragraph: the figures that decided */
} oc_cost_prediction;

/* Predicts both backends (gpu_available == 0: the GPU is not a candidate, and the reason
 * says why in `no_gpu_reason`, which may be NULL) and picks the faster; ties go to the CPU,
 * which costs nothing to start. gpu_label names the device in the reason ("cuda:0"). */
void oc_cost_predict(const oc_cost_rates *r, const oc_cost_job *job, int gpu_available, const char *gpu_label,
                     const char *no_gpu_reason, oc_cost_prediction *out);

/* ---------------------------------------------------------------- the rate cache (cost_cache.c, cost_rates.c) */

/* The cache file: $OUTCORE_COST_CACHE ("off" disables it), else
 * $XDG_CACHE_HOME/outcore/rates.txt, else ~/.cache/outcore/rates.txt. Returns 0 when the cache
 * is disabled or no path can be made. */
int oc_cost_cache_path(char *buf, size_t size);
/* The same, with why[] saying why a named cache is not used: a path that is not a regular
 * file (nor a link to one), which the cache leaves alone. A link is resolved: buf names its
 * target. */
int oc_cost_cache_path_why(char *buf, size_t size, char *why, size_t why_size);

/* This machine's key: hostname, CPU model and cores; with gpus != 0 also the GPUs (driver
 * version, names, UUIDs; "no GPU" when a CUDA build sees none, or without CUDA), which
 * queries the driver (no context is created). Host figures are stored under the first key,
 * GPU figures under the second, so a CPU job never touches CUDA to find its rates. */
void oc_cost_machine_key(char *buf, size_t size, int gpus);

/* This process's two keys (host, host and GPUs), as oc_cost_rates_get uses them. */
void oc_cost_cache_keys(char *host, size_t host_size, char *gpu, size_t gpu_size);

/* Reads the rates stored for machine `key` from `path` into *r (the others stay as they
 * are). Returns 1 when the file held this machine's rates; 0 when it is absent, and 0 with
 * r->note set when it was unreadable, corrupted or another machine's (the caller goes on
 * with defaults or measures). */
int oc_cost_cache_load(const char *path, const char *key, oc_cost_rates *r);

/* Writes the measured figures of *r that fields_mask (OC_COST_M_*) selects to the section
 * `key` of `path`, keeping that section's other figures and the other sections (temporary
 * name, then rename; the directory is created). Returns 0 on success, -1 (errno set) otherwise. */
int oc_cost_cache_store(const char *path, const char *key, const oc_cost_rates *r, unsigned fields_mask);

/* Named figures beside the rates: a job kind's own measurement that the rates do not hold,
 * as OC_COST_GEMM_FIGURE "<blas>.<type>" (flop/s a core of a BLAS's GEMM: matmul's choice,
 * in the host's section) and OC_COST_GPU_GEMM_FIGURE "<type>" (flop/s of cuBLASLt on one GPU,
 * in the GPUs' section).
 * oc_cost_cache_value returns the figure `name` of section `key`, or 0 when absent;
 * oc_cost_cache_store_value writes it there as oc_cost_cache_store does (0, or -1 with errno). */
#define OC_COST_GEMM_FIGURE "cpu_gemm."
#define OC_COST_GPU_GEMM_FIGURE "gpu_gemm."
/* The place + 1 among cuBLASLt's heuristic candidates of the fastest int8 algorithm for a
 * shape, "<rows>x<cols>x<depth>" (matmul/cuda/matmul_gemm.h), in the GPUs' section. */
#define OC_COST_GPU_INT8_ALGO_FIGURE "gpu_int8_algo."
double oc_cost_cache_value(const char *path, const char *key, const char *name);
int oc_cost_cache_store_value(const char *path, const char *key, const char *name, double value);

/* Takes the measurers' lock of the cache at `path` (`path`.lock, created with its directory,
 * never through a link: a held lock means this process can write there), waiting while
 * another process or thread holds it; returns its descriptor for oc_cost_cache_unlock, or -1
 * with errno. Processes that start together on a machine without rates measure one after
 * another, and each after the first finds the figures stored. The wait ends when ctx (may be
 * NULL) is cancelled (ECANCELED: Ctrl-C stops the job at once) and after
 * OC_COST_CACHE_WAIT seconds (EWOULDBLOCK: a holder stopped with Ctrl-Z holds it for as long
 * as it is stopped; the job goes on with the rates it has). After a wait that ran out, the
 * process tries once, without waiting, until it next takes the lock. */
#define OC_COST_CACHE_WAIT 10.0
int oc_cost_cache_lock(const char *path, oc_context *ctx);
void oc_cost_cache_unlock(int fd);

/* The rates for this process: the cache (read once per process, when enabled; the GPU
 * section only with gpu != 0), then defaults for what is missing. With `measure_room` > 0 (a
 * job that reports or acts on a prediction: the bytes of host memory its budget allows,
 * OC_COST_ROOM_ANY for no limit), the host figures that the cache lacks (triad, CPU kernel)
 * are measured once, briefly, and stored under the cache's lock (first use); never with the
 * cache off, nor inside a measurement's own job, nor where the measurement takes more than
 * the room (the defaults for that job, and the note says why: a later job with more room
 * measures). The GPU figures come only from `outcore devices --bandwidth`
 * (oc_cost_calibrate). Thread-safe; never fails (a failure to measure leaves the default, and
 * the note says why). */
void oc_cost_rates_get(oc_context *ctx, int64_t measure_room, int gpu, oc_cost_rates *out);
#define OC_COST_ROOM_ANY INT64_MAX

/* Whether the file at `path` (it may not exist yet: its folder is asked) is on a memory file
 * system, where its fsync flushes nothing to a disk. */
int oc_cost_in_memory_fs(const char *path);

/* Seconds of writing a result file of `bytes` whose blocks are reserved beside the job
 * (npy_array.h's oc_npy_out_create_nd_ahead: matmul's): its creation, the writers' faults of
 * its pages (on a memory file system at every core's rate, file_faults; on a disk at one
 * thread's, file_pages) and, on a disk, its flush. The reservation itself runs beside the job
 * and is not counted. r as oc_cost_rates_get gives it (defaults filled in). */
double oc_cost_result_file_seconds(const oc_cost_rates *r, double bytes, int in_memory);

/* Stores the measured figures of *r in the rate cache (host figures under the host's key, GPU
 * figures under the GPUs'), keeping every figure it does not measure, and makes this process's
 * next oc_cost_rates_get read them. For a job kind that calibrates its own rates (`outcore map`
 * measuring its evaluator: set r->cpu[op], r->cpu_ops_measured |= 1 << op, r->measured |=
 * OC_COST_M_CPU_OPS). Returns 0, or -1 with errno when the cache is off (ENOENT) or cannot
 * be written. */
int oc_cost_rates_store(const oc_cost_rates *r);

/* A named figure (oc_cost_cache_value) of this machine's host section (gpus 0) or of its GPUs'
 * section (gpus 1: their names and driver in the key): the one this process found or measured
 * before, else the one in the rate cache, else measure(arg) now, stored there under the
 * cache's lock for later processes (a machine's first use; OUTCORE_TRACE prints it as
 * `outcore cost: what`). The process keeps a figure once found, as it keeps the rates, until
 * oc_cost_rates_reset: the file is read once per figure, not at every call. 0 with the cache
 * off, which measures nothing as the other first-use measurements, or when the measurement
 * gives 0. */
double oc_cost_figure(int gpus, const char *name, const char *what, double (*measure)(void *arg), void *arg);

/* Forgets the rates read by oc_cost_rates_get (tests change OUTCORE_COST_CACHE between cases). */
void oc_cost_rates_reset(void);

/* Whether this process has run a GPU job (the next one pays no context creation). */
int oc_cost_gpu_warm(void);
void oc_cost_note_gpu_job(void);
/* The sum of oc_cost_prediction.regret over this process's CPU-run auto jobs, and adding to it. */
double oc_cost_gpu_regret(void);
void oc_cost_note_cpu_job(double regret);

/* ---------------------------------------------------------------- measurements (cost_measure.c) */

/* Host memory bandwidth, bytes/s: the STREAM triad a[i] = b[i] + s·c[i] over arrays far
 * larger than the caches, on `threads` threads, best of a few runs (quick: the first-use
 * measurement's smaller arrays and fewer runs). 0 on failure. first_touch and
 * first_touch_all (either may be NULL) receive the bytes/s at which fresh pages of one array
 * are faulted in by one thread, and of another by the `threads` threads at once. */
double oc_cost_measure_triad(oc_context *ctx, int threads, int quick, double *first_touch, double *first_touch_all);
/* The bytes oc_cost_measure_triad's arrays take (quick: the first-use measurement's). */
int64_t oc_cost_triad_bytes(int quick);

/* Bit-MAC/s of the CPU Gram kernel on all cores (a short counts job in memory), as the model
 * counts them (oc_cost_job_gram). 0 on failure. oc_cost_calibrate's measurement; _quick is
 * the first-use one (cost_rates.c), a job of a few hundredths of a second on this machine's
 * default rate. */
double oc_cost_measure_cpu_bits(oc_context *ctx);
double oc_cost_measure_cpu_bits_quick(oc_context *ctx);

#endif
