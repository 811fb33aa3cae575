/*
 * matmul_cuda.c - the CUDA backend of the dense product (oc_mm_backend_cuda): the plan from
 * the devices' memory and the budgets (matmul_cuda_plan.h), then one thread per device
 * (matmul_device.h) pulling tiles from one queue, while the calling thread reports progress;
 * the first failure in time is the job's message. A resident plan (operands and result
 * already on the one device) runs on the calling thread instead (matmul_resident.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/gpu_probe.h"
#include "core/threads.h"
#include "core/trace.h"
#include "engine/cuda/device.h"
#include "engine/cuda/driver_status.h"
#include "engine/engine_plan.h"
#include "matmul/cuda/cublaslt.h"
#include "matmul/cuda/matmul_cuda_plan.h"
#include "matmul/cuda/matmul_device.h"
#include "matmul/cuda/matmul_rate.h"
#include "matmul/cuda/matmul_resident.h"
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_job.h"

#define MIB(x) ((double)(x) / 1048576.0)

/* The device first: loading cuBLASLt maps a large library, worth it only where a GPU is. */
static int cuda_usable(int device, char *why, size_t why_size)
{
    if (!oc_cuda_device_usable(device)) return oc_gpu_probe_cuda.device_cc(device, why, why_size), 0;
    return oc_cublaslt_load(why, why_size) != NULL;
}

static int job_device(const oc_matmul_job *job, int i) { return job->ndevices > 0 ? job->devices[i] : 0; }
static int job_ndevices(const oc_matmul_job *job) { return job->ndevices > 0 ? job->ndevices : 1; }
/* Into how many logical devices device i's physical device is split (1: not split). */
static int job_parts(const oc_matmul_job *job, int i)
{
    return job->ndevices > 0 && job->device_parts && job->device_parts[i] > 1 ? job->device_parts[i] : 1;
}

/* A, B and C where they are caller memory (NULL for those that are not), with the elements
 * between their rows, A's and B's transposes, and the device whose memory holds each (-1
 * for host memory and for none): asked of the driver once a job. */
typedef struct caller_arrays {
    const void *p[3];
    int64_t ld[3];
    int transposed[2];
    int device[3];
} caller_arrays;

static void caller_arrays_of(const oc_matmul_job *job, caller_arrays *ca)
{
    memset(ca, 0, sizeof *ca);
    if (job->stored_memory) ca->p[0] = job->stored_memory(job, OC_MM_A, &ca->ld[0], &ca->transposed[0]);
    if (job->stored_memory) ca->p[1] = job->stored_memory(job, OC_MM_B, &ca->ld[1], &ca->transposed[1]);
    if (job->tile_memory) ca->p[2] = job->tile_memory(job, 0, 0, &ca->ld[2]);
    for (int i = 0; i < 3; ++i) ca->device[i] = job->gpu_memory && ca->p[i] ? oc_cuda_memory_device(ca->p[i]) : -1;
}

/* Whether A, B and C are all in the memory of the job's one device with their rows back to
 * back: the plan is then one product on them where they are (matmul_cuda_plan.h), with *ta
 * and *tb the operations' transposes and unaligned[0], [1] whether A's and B's memory starts
 * off a 16-byte boundary. */
static int job_resident(const oc_matmul_job *job, const caller_arrays *ca, int *ta, int *tb, int unaligned[2])
{
    *ta = ca->transposed[0], *tb = ca->transposed[1];
    if (!job->gpu_memory || job_ndevices(job) != 1 || !job->stored_memory || !job->tile_memory) return *ta = *tb = 0;
    unaligned[0] = (uintptr_t)ca->p[0] % 16 != 0, unaligned[1] = (uintptr_t)ca->p[1] % 16 != 0;
    const int dev = job_device(job, 0);
    return ca->p[0] && ca->p[1] && ca->p[2] && ca->ld[0] == (*ta ? job->m : job->k) &&
           ca->ld[1] == (*tb ? job->k : job->n) && ca->ld[2] == job->n && ca->device[0] == dev &&
           ca->device[1] == dev && ca->device[2] == dev;
}

/* Device memory of the caller's is read and written on the job's streams: first the work
 * already queued on its devices (a framework's, which made it) is waited for. */
static oc_status wait_for_callers_devices(oc_context *ctx, const caller_arrays *ca)
{
    static const char *const names[3] = {"A", "B", "C"};
    for (int i = 0; i < 3; ++i) {
        const int dev = ca->device[i];
        if (dev < 0 || (i > 0 && ca->device[0] == dev) || (i > 1 && ca->device[1] == dev)) continue; /* once a device */
        cudaError_t e = cudaSetDevice(dev);
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return oc_fail(ctx, OC_ERR_DEVICE, "CUDA device %d, which holds %s: %s", dev, names[i],
                           cudaGetErrorString(e));
        }
    }
    return OC_OK;
}

/* The stored type of an operand of a mixed pair that numpy promotes (int8 x float32, say):
 * its panels cross to the device as stored and are converted there; else DEFAULT. */
static oc_matmul_dtype promoted_from(const oc_matmul_job *job, oc_mm_operand which)
{
    return oc_matmul_widens(job->stored_type[which], job->in_type) ? job->stored_type[which] : OC_MATMUL_DEFAULT;
}

/* The plan, from each device's memory (queried, nothing allocated); `where` names them. */
static oc_status make_plan(oc_context *ctx, const oc_matmul_job *job, const caller_arrays *ca, oc_mm_cuda_plan *plan,
                           char *where, size_t size)
{
    const int nd = job_ndevices(job);
    int64_t budget = -1;
    size_t used = 0;
    where[0] = '\0';
    for (int i = 0; i < nd; ++i) {
        const int dev = job_device(job, i);
        cudaError_t e = cudaSetDevice(dev);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            int count = 0;
            if (e == cudaErrorInvalidDevice && cudaGetDeviceCount(&count) == cudaSuccess && count > 0)
                return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                               "CUDA device %d does not exist: this machine has %d (0..%d)", dev, count, count - 1);
            (void)cudaGetLastError();
            char why[400];
            oc_cuda_no_device_reason(e, why, sizeof why);
            return oc_fail(ctx, OC_ERR_UNSUPPORTED, "no usable CUDA device: %s", why);
        }
        const int parts = job_parts(job, i);
        int part = 0; /* of a split device, this logical device's part */
        for (int j = 0; j < i; ++j)
            if (job_device(job, j) == dev && parts == 1)
                return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "CUDA device %d is listed twice", dev);
            else if (job_device(job, j) == dev) ++part;
        oc_cuda_props prop;
        size_t free_b = 0, total_b = 0;
        if ((e = oc_cuda_props_get(dev, &prop)) != cudaSuccess ||
            (e = cudaMemGetInfo(&free_b, &total_b)) != cudaSuccess) {
            (void)cudaGetLastError();
            return oc_fail(ctx, OC_ERR_DEVICE, "CUDA device %d: %s", dev, cudaGetErrorString(e));
        }
        int64_t b;
        if (job->gpu_mem_bytes > 0) {
            if (job->gpu_mem_bytes > (int64_t)total_b - OC_ENGINE_HEADROOM)
                return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                               "--gpu-mem %.1f MiB exceeds what cuda:%d (%s) can give: %.1f MiB in all, less %lld MiB "
                               "kept for the CUDA context and libraries",
                               MIB(job->gpu_mem_bytes), dev, prop.name, MIB(total_b), OC_ENGINE_HEADROOM >> 20);
            b = job->gpu_mem_bytes;
        } else {
            /* the job's share of free memory (0: the default) */
            const double fraction = job->gpu_mem_fraction > 0 ? job->gpu_mem_fraction : OC_GPU_MEM_FRACTION_DEFAULT;
            const int64_t share = (int64_t)(fraction * (double)free_b), avail = (int64_t)free_b - OC_ENGINE_HEADROOM;
            b = share < avail ? share : avail;
            if (b <= 0)
                return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY, "cuda:%d (%s) has only %.1f MiB free", dev, prop.name,
                               MIB(free_b));
        }
        b /= parts; /* a logical device of a split one: its share */
        if (budget < 0 || b < budget) budget = b;
        char name[32];
        if (parts > 1) snprintf(name, sizeof name, "cuda:%d.%d/%d", dev, part, parts);
        else snprintf(name, sizeof name, "cuda:%d", dev);
        if (used + 8 < size)
            used += (size_t)snprintf(where + used, size - used, "%s%s %s (%d SMs, %.1f GiB free)", i ? ", " : "", name,
                                     prop.name, prop.sm_count, (double)free_b / (1 << 30));
        if (used >= size) used = size - 1;
    }
    int ta = 0, tb = 0, unaligned[2] = {0, 0};
    const int resident = job_resident(job, ca, &ta, &tb, unaligned);
    const oc_mm_cuda_plan_input in = {.m = job->m,
                                      .n = job->n,
                                      .k = job->k,
                                      .in_type = job->in_type,
                                      .out_type = job->out_type,
                                      .tf32 = job->tf32,
                                      .symmetric = job->symmetric,
                                      .device_budget = budget,
                                      .device_budget_given = job->gpu_mem_bytes > 0,
                                      .host_budget = job->host_mem_bytes,
                                      .ndevices = nd,
                                      .tile = job->tile,
                                      .resident = resident,
                                      .ta = ta,
                                      .tb = tb,
                                      .a_unaligned = unaligned[0],
                                      .b_unaligned = unaligned[1],
                                      .from = {promoted_from(job, OC_MM_A), promoted_from(job, OC_MM_B)}};
    OC_CHECK(ctx, oc_mm_cuda_plan_make(ctx, &in, plan));
    if (job->gpu_resident_only && !plan->in.resident)
        return oc_fail(ctx, job->in_type == OC_MM_INT8 && job->n % 4 ? OC_ERR_INPUT : OC_ERR_DEVICE_NO_MEMORY,
                       "%s runs as one product on A, B and C in device memory, %s",
                       job->symmetric ? "A·Aᵀ" : "a product of an operand read transposed",
                       job->in_type == OC_MM_INT8 && job->n % 4
                           ? "which for int8 needs n a multiple of 4: transpose the operand on the device first"
                           : "whose workspace and packing do not fit the device budget beside them: give a larger "
                             "--gpu-mem, or transpose the operand on the device first");
    return OC_OK;
}

/* A resumable job's plan to the job layer (matmul_job.h's plan_tiles): the tiles, the K
 * panels and the compute type, which with the tile shape decide the algorithm cuBLASLt picks. */
static oc_status report_plan(oc_context *ctx, oc_matmul_job *job, const oc_mm_cuda_plan *plan)
{
    oc_mm_type acc;
    const char *compute;
    OC_CHECK(ctx, oc_mm_cuda_types(ctx, plan->in.in_type, plan->in.out_type, plan->in.tf32, &acc, &compute));
    char how[160];
    snprintf(how, sizeof how, "cuda/cublasLt %s", compute);
    return job->plan_tiles(job, plan->tm, plan->tn, plan->kp, how);
}

static oc_status cuda_plan(oc_matmul_job *job, int json, char **out)
{
    oc_context *ctx = job->ctx;
    char why[512], where[1024];
    if (!oc_cublaslt_load(why, sizeof why)) return oc_fail(ctx, OC_ERR_UNSUPPORTED, "matmul on the GPU: %s", why);
    oc_mm_cuda_plan plan;
    caller_arrays ca;
    caller_arrays_of(job, &ca);
    OC_CHECK(ctx, make_plan(ctx, job, &ca, &plan, where, sizeof where));
    return oc_mm_cuda_plan_render(ctx, &plan, where, json, out);
}

/* ---------------------------------------------------------------- running */
typedef struct device_thread {
    oc_context *ctx;
    oc_mm_shared *sh;
    int device;
    oc_mm_device_result res;
    pthread_t thread;
    int started;
    atomic_int *running;
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
} device_thread;

static void *device_main(void *arg)
{
    device_thread *t = arg;
    oc_mm_device_run(t->ctx, t->sh, t->device, &t->res);
    pthread_mutex_lock(t->mu);
    atomic_fetch_sub(t->running, 1);
    pthread_cond_broadcast(t->cv);
    pthread_mutex_unlock(t->mu);
    return NULL;
}

/* The job's status: the first failure of any device, its message moved onto job->ctx. */
static oc_status job_status(oc_context *ctx, const device_thread *t, int nd)
{
    const device_thread *first = NULL;
    for (int i = 0; i < nd; ++i)
        if (t[i].res.st != OC_OK && (!first || t[i].res.order < first->res.order)) first = &t[i];
    if (!first) return OC_OK;
    if (first->res.message_on_job) return oc_trace_at(ctx, first->res.st, __FILE__, __LINE__);
    if (first->res.st == OC_ERR_CANCELLED) return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled");
    if (nd > 1) return oc_fail(ctx, first->res.st, "cuda:%d: %s", first->device, first->res.message);
    return oc_fail(ctx, first->res.st, "%s", first->res.message);
}

/* k = 0: C is zeros (the empty sum), written without a product: set on the device when C is
 * device memory, else through write_tile in bands of rows. */
static oc_status zero_result(oc_matmul_job *job, const caller_arrays *ca)
{
    oc_context *ctx = job->ctx;
    const size_t elem = oc_mm_type_size(job->out_type);
    int64_t ld = 0;
    void *c = job->tile_memory ? job->tile_memory(job, 0, 0, &ld) : NULL;
    const int c_device = ca->device[2];
    if (c_device >= 0) {
        cudaError_t e = cudaSetDevice(c_device);
        if (e == cudaSuccess) e = cudaMemset2D(c, (size_t)ld * elem, 0, (size_t)job->n * elem, (size_t)job->m);
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return oc_fail(ctx, OC_ERR_DEVICE, "matmul: zeroing C on the device: %s", cudaGetErrorString(e));
        }
        return OC_OK;
    }
    const int64_t band =
        job->n > 0 && (64LL << 20) / ((int64_t)elem * job->n) > 0 ? (64LL << 20) / ((int64_t)elem * job->n) : 1;
    void *zeros = calloc((size_t)(band < job->m ? band : job->m) * (size_t)job->n, elem);
    if (!zeros) return oc_fail(ctx, OC_ERR_NO_MEMORY, "matmul: out of host memory for a band of zeros");
    oc_status st = OC_OK;
    for (int64_t r = 0; r < job->m && st == OC_OK; r += band) {
        const int64_t rows = band < job->m - r ? band : job->m - r;
        /* A·Aᵀ: its upper part from row r on, mirrored by write_tile. */
        const int64_t col0 = job->symmetric ? r : 0;
        st = job->write_tile(job, r, rows, col0, job->n - col0, zeros, job->n - col0);
    }
    free(zeros);
    return st;
}

static oc_status run_job(oc_matmul_job *job)
{
    oc_context *ctx = job->ctx;
    const double t0 = oc_now();
    double t_phase = t0;
    /* An error an earlier call on this thread left behind (the caller's, a framework's) is
     * not this job's: the launch checks below would report it as theirs. */
    (void)cudaGetLastError();
    char why[512], where[1024];
    caller_arrays ca;
    caller_arrays_of(job, &ca);
    if (job->k == 0) {
        OC_CHECK(ctx, wait_for_callers_devices(ctx, &ca));
        memset(&job->stats, 0, sizeof job->stats);
        snprintf(job->stats.backend, sizeof job->stats.backend, "cuda/cublasLt");
        const oc_status st = zero_result(job, &ca);
        job->stats.seconds = oc_now() - t0;
        return st;
    }
    const oc_cublaslt_api *lt = oc_cublaslt_load(why, sizeof why);
    if (!lt) return oc_fail(ctx, OC_ERR_UNSUPPORTED, "matmul on the GPU: %s", why);
    oc_mm_cuda_plan plan;
    OC_CHECK(ctx, make_plan(ctx, job, &ca, &plan, where, sizeof where));
    if (job->plan_tiles) OC_CHECK(ctx, report_plan(ctx, job, &plan));
    oc_trace_phase(&t_phase, "matmul", "plan");
    OC_CHECK(ctx, wait_for_callers_devices(ctx, &ca));
    oc_trace_phase(&t_phase, "matmul", "callers' devices idle");

    const int nd = job_ndevices(job);
    device_thread *t = calloc((size_t)nd, sizeof *t);
    if (!t) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the state of %d devices", nd);
    /* The panels of a promoted operand come as stored from here to the end of the run. */
    for (int i = 0; i < 2; ++i) job->panel_stored[i] = plan.in.from[i] != OC_MATMUL_DEFAULT;
    oc_mm_shared sh = {.job = job, .plan = &plan, .lt = lt};
    atomic_init(&sh.next_tile, 0);
    atomic_init(&sh.tiles_done, 0);
    atomic_init(&sh.stop, 0);
    atomic_init(&sh.failures, 0);
    atomic_int running;
    atomic_init(&running, 0);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    oc_status st = OC_OK;
    /* A resident product (one device, nothing to copy) runs on this thread with the job's
     * context: a context and a thread per device would cost more than its copies save. */
    const int inline_run = plan.in.resident;
    if (inline_run) {
        t[0] = (device_thread){.ctx = ctx, .sh = &sh, .device = job_device(job, 0)};
        oc_mm_resident_run(ctx, &sh, t[0].device, &t[0].res);
    }
    for (int i = 0; i < nd && st == OC_OK && !inline_run; ++i) {
        /* Each device writes messages on a context of its own and takes its pinned staging
         * through this one's cache. */
        if (oc_context_create(&t[i].ctx) != OC_OK) {
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot create the context of CUDA device %d", job_device(job, i));
            break;
        }
        oc_cuda_share_pinned_cache(t[i].ctx, ctx);
        t[i] = (device_thread){
            .ctx = t[i].ctx, .sh = &sh, .device = job_device(job, i), .running = &running, .mu = &mu, .cv = &cv};
    }
    oc_trace_phase(&t_phase, "matmul", "device contexts");
    for (int i = 0; i < nd && st == OC_OK && !inline_run; ++i) {
        atomic_fetch_add(&running, 1);
        if (oc_thread_start(&t[i].thread, 0, device_main, &t[i]) != 0) {
            atomic_fetch_sub(&running, 1);
            atomic_store(&sh.stop, 1);
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot start the thread of CUDA device %d", t[i].device);
            break;
        }
        t[i].started = 1;
    }
    /* The calling thread reports progress (about ten times a second) until every device is
     * done; a cancel reaches the devices through the readers' check of the job's context. */
    oc_progress_pace pace = oc_progress_pace_start(job->progress, job->progress_user);
    pthread_mutex_lock(&mu);
    while (atomic_load(&running) > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(OC_PROGRESS_INTERVAL * 1e9);
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&cv, &mu, &ts);
        if (oc_progress_due(&pace) && atomic_load(&running) > 0) {
            pthread_mutex_unlock(&mu);
            oc_progress_report(&pace, (double)atomic_load(&sh.tiles_done), (double)plan.ntiles, 0);
            pthread_mutex_lock(&mu);
        }
    }
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < nd; ++i)
        if (t[i].started) pthread_join(t[i].thread, NULL);
    oc_trace_phase(&t_phase, "matmul", "devices");
    if (st == OC_OK) st = job_status(ctx, t, nd);
    if (st == OC_OK) oc_progress_report(&pace, (double)plan.ntiles, (double)plan.ntiles, 1);

    memset(&job->stats, 0, sizeof job->stats);
    for (int i = 0; i < nd; ++i) {
        job->stats.tiles += t[i].res.tiles;
        job->stats.bytes_read += t[i].res.bytes_read;
        job->stats.bytes_straight += t[i].res.bytes_straight;
        job->stats.bytes_to_device += t[i].res.bytes_to_device;
        job->stats.bytes_from_device += t[i].res.bytes_from_device;
        job->stats.peak_host_bytes += t[i].res.peak_pinned_bytes;
        if (t[i].res.peak_device_bytes > job->stats.peak_device_bytes)
            job->stats.peak_device_bytes = t[i].res.peak_device_bytes;
        if (!inline_run) oc_context_free(t[i].ctx);
    }
    free(t);
    job->panel_stored[0] = job->panel_stored[1] = 0;
    snprintf(job->stats.backend, sizeof job->stats.backend, "cuda/cublasLt");
    job->stats.seconds = oc_now() - t0;
    return st;
}

/* The job, with the calling thread's current device as it found it: the job sets each of
 * its devices current in turn, and a resident plan runs on this thread, whose caller (a
 * framework among them) has a current device of its own. */
static oc_status cuda_run(oc_matmul_job *job)
{
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) current = -1, (void)cudaGetLastError();
    const oc_status st = run_job(job);
    int now = -1;
    if (current >= 0 && (cudaGetDevice(&now) != cudaSuccess || now != current) && cudaSetDevice(current) != cudaSuccess)
        (void)cudaGetLastError();
    return st;
}

static double cuda_gemm_rate(oc_mm_type in, int tf32, int device, int64_t room)
{
    char why[512];
    return oc_mm_cuda_gemm_rate(oc_cublaslt_load(why, sizeof why), in, tf32, device, room);
}

const oc_mm_backend oc_mm_backend_cuda = {"cuda", cuda_usable, cuda_run, cuda_plan, NULL, cuda_gemm_rate};
