/*
 * cost_rates.c - this process's rates: the rate cache (cost_cache.c) read once, host figures
 * under the host's key and GPU figures under the GPUs', then measured where the caller
 * allows it (the host's, once per machine: a brief measurement at the first job that needs
 * a prediction) and the defaults (cost.c) for the rest.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/hash.h"
#include "core/threads.h"
#include "core/trace.h"
#include "cost/cost.h"
#include "core/process/fork_locks.h"

/* ---------------------------------------------------------------- the process's rates */

static pthread_mutex_t rates_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(rates_lock, OC_FORK_RANK_COST_RATES, NULL)
static int host_loaded, gpu_loaded;
static oc_cost_rates rates_cached;
static char host_key[1400], gpu_key[2500];
static int gpu_jobs_run;

/* The named figures (oc_cost_figure) this process has found or measured, under rates_lock:
 * a figure is read from the cache file once, as the rates are, not at every job that asks
 * (a matmul with the auto backend asks its BLAS's rate at each call, and reading the file
 * cost more than a small product). Replaced round robin when full; a section's figure is
 * told apart from another's with the same name by `gpus` and the cache's path. */
#define FIGURES_KEPT 32
typedef struct figure {
    int gpus;
    char name[96];
    unsigned long long path_hash;
    double value;
} figure;
static figure figures[FIGURES_KEPT];
static int nfigures, figures_next;

void oc_cost_rates_reset(void)
{
    pthread_mutex_lock(&rates_lock);
    host_loaded = gpu_loaded = 0;
    nfigures = figures_next = 0;
    pthread_mutex_unlock(&rates_lock);
}

int oc_cost_gpu_warm(void) { return __atomic_load_n(&gpu_jobs_run, __ATOMIC_RELAXED) != 0; }
void oc_cost_note_gpu_job(void) { __atomic_store_n(&gpu_jobs_run, 1, __ATOMIC_RELAXED); }

static double cpu_regret; /* under rates_lock */

double oc_cost_gpu_regret(void)
{
    pthread_mutex_lock(&rates_lock);
    double v = cpu_regret;
    pthread_mutex_unlock(&rates_lock);
    return v;
}

void oc_cost_note_cpu_job(double regret)
{
    if (!(regret > 0)) return;
    pthread_mutex_lock(&rates_lock);
    cpu_regret += regret;
    pthread_mutex_unlock(&rates_lock);
}

/* The cache's sections for this machine as this process first read them (under rates_lock):
 * the host's figures under the host's key, which needs no driver (a CPU job never touches
 * CUDA), and the GPUs' under the key that adds them, read when a GPU is a candidate. */
static void load_once(int gpu)
{
    char path[4096], why[sizeof rates_cached.note];
    int cache = oc_cost_cache_path_why(path, sizeof path, why, sizeof why);
    if (!host_loaded) {
        memset(&rates_cached, 0, sizeof rates_cached);
        snprintf(rates_cached.cpu_isa, sizeof rates_cached.cpu_isa, "%s", oc_cpu_isa());
        oc_cost_machine_key(host_key, sizeof host_key, 0);
        if (cache) oc_cost_cache_load(path, host_key, &rates_cached);
        else if (why[0]) memcpy(rates_cached.note, why, sizeof why);
        host_loaded = 1;
    }
    if (gpu && !gpu_loaded) {
        oc_cost_machine_key(gpu_key, sizeof gpu_key, 1);
        char note[sizeof rates_cached.note];
        memcpy(note, rates_cached.note, sizeof note);
        rates_cached.note[0] = '\0';
        if (cache && !oc_cost_cache_load(path, gpu_key, &rates_cached))
            snprintf(rates_cached.note, sizeof rates_cached.note,
                     "GPU rates not measured here: `outcore devices --bandwidth` measures them");
        if (note[0]) memcpy(rates_cached.note, note, sizeof note); /* the host section's note first */
        gpu_loaded = 1;
    }
}

void oc_cost_cache_keys(char *host, size_t host_size, char *gpu, size_t gpu_size)
{
    pthread_mutex_lock(&rates_lock);
    load_once(1);
    snprintf(host, host_size, "%s", host_key);
    snprintf(gpu, gpu_size, "%s", gpu_key);
    pthread_mutex_unlock(&rates_lock);
}

/* The cache's path and the key of this machine's host section (gpu 0) or GPUs' section
 * (gpu 1); 0 (errno ENOENT) when the cache is off. */
static int section_of(int gpu, char *path, size_t path_size, char *key, size_t key_size)
{
    if (!oc_cost_cache_path(path, path_size)) {
        errno = ENOENT;
        return 0;
    }
    pthread_mutex_lock(&rates_lock);
    load_once(gpu);
    snprintf(key, key_size, "%s", gpu ? gpu_key : host_key);
    pthread_mutex_unlock(&rates_lock);
    return 1;
}

/* FNV-1a of s. */
static unsigned long long hash_of(const char *s) { return oc_fnv1a(OC_FNV1A_SEED, s, strlen(s)); }

/* The value this process keeps for figure (gpus, name) of the cache at path_hash, 0 if none. */
static double figure_kept(int gpus, const char *name, unsigned long long path_hash)
{
    double v = 0;
    pthread_mutex_lock(&rates_lock);
    for (int i = 0; i < nfigures && v == 0; ++i)
        if (figures[i].gpus == gpus && figures[i].path_hash == path_hash && strcmp(figures[i].name, name) == 0)
            v = figures[i].value;
    pthread_mutex_unlock(&rates_lock);
    return v;
}

static void figure_keep(int gpus, const char *name, unsigned long long path_hash, double value)
{
    if (!(value > 0) || strlen(name) >= sizeof figures[0].name) return;
    pthread_mutex_lock(&rates_lock);
    int at = nfigures;
    if (nfigures < FIGURES_KEPT) nfigures++;
    else at = figures_next, figures_next = (figures_next + 1) % FIGURES_KEPT;
    figure *f = &figures[at];
    *f = (figure){.gpus = gpus, .path_hash = path_hash, .value = value};
    snprintf(f->name, sizeof f->name, "%s", name);
    pthread_mutex_unlock(&rates_lock);
}

double oc_cost_figure(int gpus, const char *name, const char *what, double (*measure)(void *arg), void *arg)
{
    char path[4096], key[sizeof gpu_key > sizeof host_key ? sizeof gpu_key : sizeof host_key];
    if (!section_of(gpus, path, sizeof path, key, sizeof key)) return 0;
    const unsigned long long path_hash = hash_of(path);
    double value = figure_kept(gpus, name, path_hash);
    if (value > 0) return value;
    value = oc_cost_cache_value(path, key, name);
    if (value > 0) {
        figure_keep(gpus, name, path_hash, value);
        return value;
    }
    /* Measured under the cache's lock, after reading the cache again, as the host figures are
     * (measure_host): processes that start together measure one after another, each after the
     * first finding the figure stored, where all measured at once, sharing the cores, and stored
     * a rate a fraction of the machine's. Without the lock (a cache that cannot be written, or
     * held past OC_COST_CACHE_WAIT) the figure is measured for this process and not stored. */
    double t = oc_now();
    const int lock = oc_cost_cache_lock(path, NULL);
    if (lock >= 0) value = oc_cost_cache_value(path, key, name);
    if (!(value > 0)) {
        value = measure(arg);
        oc_trace_phase(&t, "cost", what);
        if (lock >= 0 && value > 0) (void)oc_cost_cache_store_value(path, key, name, value);
    }
    oc_cost_cache_unlock(lock);
    figure_keep(gpus, name, path_hash, value);
    return value;
}

int oc_cost_rates_store(const oc_cost_rates *r)
{
    char path[4096], host[1400], gpu[2500];
    if (!oc_cost_cache_path(path, sizeof path)) {
        errno = ENOENT;
        return -1;
    }
    oc_cost_cache_keys(host, sizeof host, gpu, sizeof gpu);
    int rc = 0;
    if (r->measured & OC_COST_M_HOST) rc = oc_cost_cache_store(path, host, r, OC_COST_M_HOST);
    if (rc == 0 && r->measured & ~OC_COST_M_HOST) rc = oc_cost_cache_store(path, gpu, r, ~(unsigned)OC_COST_M_HOST);
    oc_cost_rates_reset();
    return rc;
}

/* The host figures a job's first use measures when the cache lacks them. */
enum { FIRST_USE = OC_COST_M_HOST_BW | OC_COST_M_CPU_BITS | OC_COST_M_PAGES };

/* Set on the thread that measures: the measurement's own Gram job asks for rates too, and
 * must not measure again. */
static _Thread_local int measuring;

/* The first use on this machine: the host figures r lacks, measured under the cache's lock
 * (after reading the cache again: another process may have measured while this one waited)
 * and stored. r->note says why when nothing could be stored; then nothing is measured, so a
 * cache that cannot be written does not cost every process a measurement. */
static void measure_host(oc_context *ctx, const char *path, int64_t room, oc_cost_rates *r, int64_t *triad_skipped)
{
    const unsigned host = FIRST_USE;
    double t = oc_now();
    const int lock = oc_cost_cache_lock(path, ctx);
    if (lock < 0 && errno == EWOULDBLOCK)
        snprintf(r->note, sizeof r->note,
                 "another process has held the rate cache %.150s for %.0f s (stopped?): this job keeps the defaults",
                 path, OC_COST_CACHE_WAIT);
    else if (lock < 0 && errno != ECANCELED) /* cancelled: the job stops at its next step */
        snprintf(r->note, sizeof r->note, "cannot write the rate cache %.150s: %.60s", path, strerror(errno));
    if (lock < 0) return;
    oc_trace_phase(&t, "cost", "cache lock");
    oc_cost_rates again = *r;
    again.note[0] = '\0';
    if (oc_cost_cache_load(path, host_key, &again)) *r = again;
    if ((r->measured & host) != host) {
        measuring = 1;
        const int64_t triad = oc_cost_triad_bytes(1);
        const int lacks_bw =
            (r->measured & (OC_COST_M_HOST_BW | OC_COST_M_PAGES)) != (OC_COST_M_HOST_BW | OC_COST_M_PAGES);
        if (lacks_bw && triad > room) {
            /* Arrays that fit the room would sit in the caches: a default now, measured by
             * a job with more room (this job's note alone says so: oc_cost_rates_get). */
            *triad_skipped = triad;
        } else if (lacks_bw) {
            r->host_bw = oc_cost_measure_triad(ctx, oc_cpu_cores(), 1, &r->file_pages, &r->file_faults);
            if (r->host_bw > 0) r->measured |= OC_COST_M_HOST_BW;
            if (r->file_pages > 0) r->measured |= OC_COST_M_PAGES;
            oc_trace_phase(&t, "cost", "triad");
        }
        if (!(r->measured & OC_COST_M_CPU_BITS)) {
            r->cpu[OC_COST_BIT_MAC] = oc_cost_measure_cpu_bits_quick(ctx);
            if (r->cpu[OC_COST_BIT_MAC] > 0) r->measured |= OC_COST_M_CPU_BITS;
            oc_trace_phase(&t, "cost", "cpu kernel");
        }
        measuring = 0;
        if (oc_cost_cache_store(path, host_key, r, host) != 0)
            snprintf(r->note, sizeof r->note, "cannot write the rate cache %.150s: %.60s", path, strerror(errno));
        else if (strstr(r->note, "other machines' rates only")) /* this machine's are there now */ r->note[0] = '\0';
        oc_trace_phase(&t, "cost", "stored");
    }
    oc_cost_cache_unlock(lock);
}

void oc_cost_rates_get(oc_context *ctx, int64_t measure_room, int gpu, oc_cost_rates *out)
{
    pthread_mutex_lock(&rates_lock);
    load_once(gpu);
    oc_cost_rates r = rates_cached;
    pthread_mutex_unlock(&rates_lock);

    const unsigned host = FIRST_USE;
    char path[4096];
    if (measure_room > 0 && !measuring && (r.measured & host) != host && oc_cost_cache_path(path, sizeof path)) {
        /* Measured outside rates_lock: the CPU kernel's measurement is an oc_gram job, which
         * asks for the rates itself. Two threads of a process measure one after the other
         * (the cache's lock), the second reading what the first stored. */
        int64_t skipped = 0;
        measure_host(ctx, path, measure_room, &r, &skipped);
        pthread_mutex_lock(&rates_lock); /* the host's figures only: another thread may have read the GPUs' */
        rates_cached.host_bw = r.host_bw;
        rates_cached.cpu[OC_COST_BIT_MAC] = r.cpu[OC_COST_BIT_MAC];
        rates_cached.file_pages = r.file_pages;
        rates_cached.file_faults = r.file_faults;
        rates_cached.measured |= r.measured & host;
        memcpy(rates_cached.note, r.note, sizeof r.note);
        pthread_mutex_unlock(&rates_lock);
        /* Why this job keeps the default is this job's to say, not a later one's. */
        if (skipped && !r.note[0])
            snprintf(r.note, sizeof r.note,
                     "host memory not measured: the measurement takes %lld MiB, more than the job's host budget of "
                     "%lld MiB",
                     (long long)(skipped >> 20), (long long)(measure_room >> 20));
    }
    oc_cost_rates_resolve(&r, oc_cpu_cores(), oc_cpu_isa());
    *out = r;
}
