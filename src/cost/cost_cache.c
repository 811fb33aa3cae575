/*
 * cost_cache.c - the cost model's rate cache: a small text file per user, one section per
 * machine (cost_rates.c reads it once per process and fills what it lacks with defaults).
 *
 * The file (docs/cost-model.md shows one):
 *
 *   # outcore cost-model rates, format 2 (docs/cost-model.md)
 *   machine <key: hostname | CPU model | cores | driver and GPUs>
 *   host_bw 8.12e+10
 *   cpu_bit_macs.avx512 1.71e+12
 *   cpu_gemm.openblas.f64 1.7e+10
 *   h2d_pinned 5.5e+10
 *   ...
 *   machine <another machine's key>
 *   ...
 *
 * Sections, not one file per machine, because a home directory is often shared by the
 * nodes of a cluster: each node finds its own figures and keeps the others'. A section is
 * used only when its key equals this machine's exactly, so a new GPU, driver or CPU means
 * measuring again. A file that does not parse is ignored as a whole, with a note that reaches
 * --explain, and rewritten by the next measurement; so is a file of another format (its first
 * line names the format: format 1 counted a symmetric Gram job's rate over all n² pairs, twice
 * the n(n+1)/2 the model counts, and had no output page rate).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/text_buf.h"
#include "core/error.h"
#include "core/gpu_probe.h"
#include "core/threads.h"
#include "cost/cost.h"

#define CACHE_HEADER "# outcore cost-model rates, format 2 (docs/cost-model.md)"
#define MAX_SECTIONS 64
#define LINE_MAX_LEN 1024

/* The named path, before the checks of oc_cost_cache_path_why: 1, 0 when the cache is off
 * or nothing names it, -1 when the name is longer than buf holds. */
static int named_path(char *buf, size_t size)
{
    const char *env = getenv("OUTCORE_COST_CACHE");
    if (env && *env) {
        if (strcmp(env, "off") == 0 || strcmp(env, "0") == 0) return 0;
        return snprintf(buf, size, "%s", env) < (int)size ? 1 : -1;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    /* A relative XDG_CACHE_HOME is invalid (the XDG base directory rules): ignored, as the
     * kernel cache ignores it, rather than a cache in every working folder. */
    if (xdg && *xdg == '/') n = snprintf(buf, size, "%s/outcore/rates.txt", xdg);
    else if (home && *home == '/') n = snprintf(buf, size, "%s/.cache/outcore/rates.txt", home);
    else return 0;
    return n > 0 && n < (int)size ? 1 : -1;
}

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

int oc_cost_cache_path_why(char *buf, size_t size, char *why, size_t why_size)
{
    if (why_size) why[0] = '\0';
    const int named = named_path(buf, size);
    if (named < 0)
        snprintf(why, why_size, "the rate cache's path is longer than %zu bytes: rates not measured nor stored",
                 size - 1);
    if (named <= 0) return 0;
    if (buf[strlen(buf) - 1] == '/') {
        snprintf(why, why_size, "the rate cache %.150s names a directory, not a file: rates not measured nor stored",
                 buf);
        return 0;
    }
    /* The cache is a regular file, or none yet: anything else (a device, a FIFO, which would
     * block the open, a directory) is left alone, and so the cache is off. A symbolic link
     * names its target, which the cache is read from and renamed over, so a cache shared by a
     * link stays shared. */
    struct stat st;
    if (lstat(buf, &st) != 0) return 1; /* none yet: the first measurement makes it */
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        if (!realpath(buf, target) || strlen(target) >= size) {
            snprintf(why, why_size,
                     "the rate cache %.150s is a symbolic link to nothing usable: rates not measured nor stored", buf);
            return 0;
        }
        snprintf(buf, size, "%s", target);
        if (stat(buf, &st) != 0) return 1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_size, "the rate cache %.150s is %s, not a regular file: rates not measured nor stored", buf,
                 file_kind(st.st_mode));
        return 0;
    }
    return 1;
}

int oc_cost_cache_path(char *buf, size_t size) { return oc_cost_cache_path_why(buf, size, NULL, 0); }

void oc_cost_machine_key(char *buf, size_t size, int gpus)
{
    char host[256] = "", model[256] = "", ids[1024] = "";
    if (gethostname(host, sizeof host) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    oc_cpu_model(model, sizeof model);
#ifdef OC_HAVE_CUDA
    if (gpus && oc_gpu_probe_cuda.identity) oc_gpu_probe_cuda.identity(ids, sizeof ids);
#endif
    int n = snprintf(buf, size, "%s | %s | %d cores", host, model[0] ? model : "unknown CPU", oc_cpu_cores());
    if (gpus && n > 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, " | %s", ids[0] ? ids : "no GPU");
    for (char *c = buf; *c; ++c)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

/* ---------------------------------------------------------------- fields */

/* The figures a section may hold, as offsets into oc_cost_rates and the OC_COST_M_* bit
 * each stands for. The CPU kernel's rate is kept per ISA (OUTCORE_CPU_ISA changes the
 * kernel), as cpu_bit_macs.<isa>. */
typedef struct field {
    const char *name;
    size_t offset;
    unsigned bit;
} field;

static const field fields[] = {
    {"h2d_pinned", offsetof(oc_cost_rates, h2d_pinned), OC_COST_M_PCIE},
    {"d2h_pinned", offsetof(oc_cost_rates, d2h_pinned), OC_COST_M_PCIE},
    {"bidir_pinned", offsetof(oc_cost_rates, bidir_pinned), OC_COST_M_PCIE},
    {"h2d_pageable", offsetof(oc_cost_rates, h2d_pageable), OC_COST_M_PCIE},
    {"d2h_pageable", offsetof(oc_cost_rates, d2h_pageable), OC_COST_M_PCIE},
    {"host_bw", offsetof(oc_cost_rates, host_bw), OC_COST_M_HOST_BW},
    {"file_pages", offsetof(oc_cost_rates, file_pages), OC_COST_M_PAGES},
    {"file_faults", offsetof(oc_cost_rates, file_faults), OC_COST_M_PAGES},
    {"gpu_startup", offsetof(oc_cost_rates, gpu_startup), OC_COST_M_STARTUP},
    {"gpu_job_setup", offsetof(oc_cost_rates, gpu_job_setup), OC_COST_M_STARTUP},
    {"gpu_bit_macs", offsetof(oc_cost_rates, gpu) + OC_COST_BIT_MAC * sizeof(double), OC_COST_M_GPU_BITS},
#define OP_FIELDS(side, bit)                                                                             \
    {#side "_ops.element", offsetof(oc_cost_rates, side) + OC_COST_ELEMENT * sizeof(double), bit},       \
        {#side "_ops.f32", offsetof(oc_cost_rates, side) + OC_COST_F32 * sizeof(double), bit},           \
        {#side "_ops.f64", offsetof(oc_cost_rates, side) + OC_COST_F64 * sizeof(double), bit},           \
        {#side "_ops.f32_math", offsetof(oc_cost_rates, side) + OC_COST_F32_MATH * sizeof(double), bit}, \
        {#side "_ops.f64_math", offsetof(oc_cost_rates, side) + OC_COST_F64_MATH * sizeof(double), bit}, \
    {                                                                                                    \
#side "_ops.int", offsetof(oc_cost_rates, side) + OC_COST_INT * sizeof(double), bit              \
    }
    OP_FIELDS(cpu, OC_COST_M_CPU_OPS),
    OP_FIELDS(gpu, OC_COST_M_GPU_OPS),
#undef OP_FIELDS
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static double *field_ptr(oc_cost_rates *r, const field *f) { return (double *)((char *)r + f->offset); }

/* For an element-op field, its side's mask of measured ops and the op's bit; NULL otherwise. */
static unsigned *op_mask(oc_cost_rates *r, const field *f, unsigned *bit)
{
    if (f->bit != OC_COST_M_CPU_OPS && f->bit != OC_COST_M_GPU_OPS) return NULL;
    size_t base = f->bit == OC_COST_M_CPU_OPS ? offsetof(oc_cost_rates, cpu) : offsetof(oc_cost_rates, gpu);
    *bit = 1u << ((f->offset - base) / sizeof(double));
    return f->bit == OC_COST_M_CPU_OPS ? &r->cpu_ops_measured : &r->gpu_ops_measured;
}

/* One parsed section: its key and its lines, kept as text so that a store rewrites the
 * other machines' sections as they were. */
typedef struct section {
    char key[LINE_MAX_LEN];
    char *body; /* "name value\n" lines, malloc'ed */
} section;

/* The sections on the heap: a cache is read on a job's first call, which may run on a thread
 * of 64 KiB of stack (docs/python.md), and MAX_SECTIONS keys are as large as that. */
typedef struct cache_file {
    section *s;
    int count, cap;
} cache_file;

static void cache_file_free(cache_file *f)
{
    for (int i = 0; i < f->count; ++i) free(f->s[i].body);
    free(f->s);
    f->s = NULL;
    f->count = f->cap = 0;
}

/* Room for one more section (at most MAX_SECTIONS); -1 when out of memory. */
static int cache_file_grow(cache_file *f)
{
    if (f->count < f->cap) return 0;
    int cap = f->cap ? 2 * f->cap : 4;
    if (cap > MAX_SECTIONS) cap = MAX_SECTIONS;
    section *s = realloc(f->s, (size_t)cap * sizeof *s);
    if (!s) return -1;
    f->s = s;
    f->cap = cap;
    return 0;
}

static int append_line(section *s, const char *line)
{
    size_t old = s->body ? strlen(s->body) : 0, add = strlen(line);
    char *b = realloc(s->body, old + add + 2);
    if (!b) return -1;
    memcpy(b + old, line, add);
    b[old + add] = '\n';
    b[old + add + 1] = '\0';
    s->body = b;
    return 0;
}

/* A value line: a known name (or cpu_bit_macs.<isa>, or a named figure: cpu_gemm.<blas>.<type>,
 * gpu_gemm.<type>, gpu_int8_algo.<shape>) and a positive finite number. */
static int valid_value_line(const char *line)
{
    char name[64];
    int at = 0;
    if (sscanf(line, "%63s %n", name, &at) != 1 || at == 0) return 0;
    /* The whole number, and nothing after it: a line cut short ("3.3e") is no rate. */
    char *end;
    const double v = oc_strtod(line + at, &end);
    if (end == line + at || !isfinite(v) || v <= 0) return 0;
    while (*end == ' ' || *end == '\t' || *end == '\r') ++end;
    if (*end != '\0') return 0;
    static const char *const figures[] = {"cpu_bit_macs.", OC_COST_GEMM_FIGURE, OC_COST_GPU_GEMM_FIGURE,
                                          OC_COST_GPU_INT8_ALGO_FIGURE};
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; ++i)
        if (strncmp(name, figures[i], strlen(figures[i])) == 0) return name[strlen(figures[i])] != '\0';
    for (size_t i = 0; i < NFIELDS; ++i)
        if (strcmp(name, fields[i].name) == 0) return 1;
    return 0;
}

/* The section's line for `name` ("name value"), or NULL. */
static const char *section_line(const section *s, const char *name)
{
    size_t len = strlen(name);
    for (const char *l = s->body; l && *l;) {
        if (strncmp(l, name, len) == 0 && l[len] == ' ') return l;
        const char *nl = strchr(l, '\n');
        l = nl ? nl + 1 : NULL;
    }
    return NULL;
}

static int section_has(const section *s, const char *name) { return section_line(s, name) != NULL; }

/* Reads the file into sections. 1 on success, 0 when absent, -1 (with why[]) when corrupted. */
/* cache_file_read's result for a file that exists but cannot be opened (errno says why). */
#define CACHE_UNREADABLE (-2)

static int cache_file_read(const char *path, cache_file *f, char *why, size_t why_size)
{
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        if (errno == ENOENT) return 0;
        const int e = errno;
        snprintf(why, why_size, "cannot read the rate cache %s: %s", path, strerror(e));
        errno = e;
        return CACHE_UNREADABLE;
    }
    char line[LINE_MAX_LEN];
    int lineno = 0, rc = 1;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        size_t len = strcspn(line, "\n");
        if (line[len] != '\n' && !feof(fp)) {
            snprintf(why, why_size, "rate cache %s, line %d: too long", path, lineno);
            rc = -1;
            break;
        }
        line[len] = '\0';
        if (lineno == 1 && strcmp(line, CACHE_HEADER) != 0) {
            snprintf(why, why_size,
                     "rate cache %s is not of this outcore's format ('%.60s'): ignored, measured rates "
                     "will replace it",
                     path, line);
            rc = -1;
            break;
        }
        if (line[0] == '#' || line[0] == '\0') continue;
        if (strncmp(line, "machine ", 8) == 0) {
            /* The newest sections are kept (a store writes its machine's last): past
             * MAX_SECTIONS the oldest is dropped, with its lines. */
            if (f->count == MAX_SECTIONS) {
                free(f->s[0].body);
                memmove(f->s, f->s + 1, (size_t)(f->count - 1) * sizeof *f->s);
                f->count--;
            }
            if (cache_file_grow(f) != 0) {
                snprintf(why, why_size, "out of memory reading the rate cache");
                rc = -1;
                break;
            }
            snprintf(f->s[f->count].key, sizeof f->s[f->count].key, "%s", line + 8);
            f->s[f->count++].body = NULL;
        } else if (f->count > 0 && valid_value_line(line)) {
            if (append_line(&f->s[f->count - 1], line) != 0) {
                snprintf(why, why_size, "out of memory reading the rate cache");
                rc = -1;
                break;
            }
        } else {
            snprintf(why, why_size,
                     "rate cache %s, line %d is not a rate ('%.40s'): ignored, measured rates will "
                     "replace it",
                     path, lineno, line);
            rc = -1;
            break;
        }
    }
    fclose(fp);
    if (rc < 0) cache_file_free(f);
    return rc;
}

int oc_cost_cache_load(const char *path, const char *key, oc_cost_rates *r)
{
    cache_file f;
    int rc = cache_file_read(path, &f, r->note, sizeof r->note);
    if (rc <= 0) return 0;
    int found = 0;
    char isa_field[64];
    snprintf(isa_field, sizeof isa_field, "cpu_bit_macs.%s", r->cpu_isa[0] ? r->cpu_isa : "ref");
    for (int i = 0; i < f.count && !found; ++i) {
        if (strcmp(f.s[i].key, key) != 0) continue;
        found = 1;
        for (char *line = f.s[i].body; line && *line;) {
            char name[64];
            int at = 0;
            double v = 0;
            if (sscanf(line, "%63s %n", name, &at) == 1 && at > 0 && (v = oc_strtod(line + at, NULL)) > 0) {
                if (strcmp(name, isa_field) == 0) {
                    r->cpu[OC_COST_BIT_MAC] = v;
                    r->measured |= OC_COST_M_CPU_BITS;
                }
                for (size_t k = 0; k < NFIELDS; ++k)
                    if (strcmp(name, fields[k].name) == 0) {
                        unsigned bit, *mask = op_mask(r, &fields[k], &bit);
                        *field_ptr(r, &fields[k]) = v;
                        r->measured |= fields[k].bit;
                        if (mask) *mask |= bit;
                    }
            }
            char *nl = strchr(line, '\n');
            line = nl ? nl + 1 : NULL;
        }
    }
    if (!found && f.count > 0)
        snprintf(r->note, sizeof r->note, "the rate cache %s holds other machines' rates only (this one: %.120s)", path,
                 key);
    cache_file_free(&f);
    return found;
}

/* mkdir -p of the file's directory. */
static int make_parent_dirs(const char *path)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return -1;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; ++p) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(dir, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Set when a wait for the lock ran out, cleared when the lock is next taken: a process that
 * waited the whole OC_COST_CACHE_WAIT once (its host figures) does not wait again for its
 * next figure, or its next job, while the holder keeps it; it tries once instead. */
static atomic_int wait_ran_out;

int oc_cost_cache_lock(const char *path, oc_context *ctx)
{
    char lock[4200];
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock || make_parent_dirs(path) != 0) return -1;
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return -1;
    const struct timespec pause = {0, 20 * 1000 * 1000};
    const double end = atomic_load(&wait_ran_out) ? 0 : oc_now() + OC_COST_CACHE_WAIT;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK || e == EINTR) {
            if (oc_cancelled(ctx)) e = ECANCELED;
            else if (oc_now() < end) {
                nanosleep(&pause, NULL);
                continue;
            } else {
                e = EWOULDBLOCK;
                atomic_store(&wait_ran_out, 1);
            }
        }
        close(fd);
        errno = e;
        return -1;
    }
    atomic_store(&wait_ran_out, 0);
    return fd;
}

void oc_cost_cache_unlock(int fd)
{
    if (fd >= 0) close(fd); /* closing releases the lock */
}

/* oc_cost_cache_store with `extra` (a "name value" line, or NULL) among the figures written. */
static int store(const char *path, const char *key, const oc_cost_rates *r, unsigned fields_mask, const char *extra)
{
    cache_file f;
    char why[256];
    /* A cache of another format or corrupted is replaced; one that cannot be read (another
     * user's, say) is left as it is, with the other machines' sections it may hold. */
    const int have = cache_file_read(path, &f, why, sizeof why);
    if (have == CACHE_UNREADABLE) return -1;
    if (have < 0) memset(&f, 0, sizeof f);
    /* This machine's section: the figures measured now, then those of the old section
     * that were not measured now (a CPU-only calibration keeps the stored PCIe rates). */
    section mine = {{0}, NULL};
    snprintf(mine.key, sizeof mine.key, "%s", key);
    char line[128];
    int ok = extra ? append_line(&mine, extra) : 0;
    for (size_t k = 0; k < NFIELDS; ++k) {
        oc_cost_rates *rw = (oc_cost_rates *)r; /* read only: field_ptr and op_mask serve loads too */
        double v = *field_ptr(rw, &fields[k]);
        unsigned bit, *mask = op_mask(rw, &fields[k], &bit);
        if (!(r->measured & fields_mask & fields[k].bit) || !(v > 0) || (mask && !(*mask & bit))) continue;
        oc_snprintf(line, sizeof line, "%s %.6g", fields[k].name, v);
        ok |= append_line(&mine, line);
    }
    if (r->measured & fields_mask & OC_COST_M_CPU_BITS) {
        oc_snprintf(line, sizeof line, "cpu_bit_macs.%s %.6g", r->cpu_isa[0] ? r->cpu_isa : "ref",
                    r->cpu[OC_COST_BIT_MAC]);
        ok |= append_line(&mine, line);
    }
    int old = -1;
    for (int i = 0; i < f.count; ++i)
        if (strcmp(f.s[i].key, key) == 0) old = i;
    if (old >= 0) {
        for (char *l = f.s[old].body; l && *l;) {
            char name[64];
            char *nl = strchr(l, '\n');
            if (nl) *nl = '\0';
            if (sscanf(l, "%63s", name) == 1 && !section_has(&mine, name)) ok |= append_line(&mine, l);
            l = nl ? nl + 1 : NULL;
        }
    }
    char tmp[4200];
    int rc = -1;
    FILE *fp = NULL;
    if (ok != 0 || make_parent_dirs(path) != 0) goto cleanup;
    /* Unique per process and call: two stores may run at once (measurements outside the lock).
     * Made new, never through a name planted before it (a link is not followed). */
    static unsigned store_count;
    for (int attempt = 0; !fp && attempt < 16; ++attempt) {
        unsigned call = __atomic_fetch_add(&store_count, 1, __ATOMIC_RELAXED);
        if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld-%u", path, (long)getpid(), call) >= (int)sizeof tmp) goto cleanup;
        const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) goto cleanup;
        if (fd >= 0 && !(fp = fdopen(fd, "w"))) {
            close(fd);
            unlink(tmp);
            goto cleanup;
        }
    }
    if (!fp) goto cleanup;
    fprintf(fp, "%s\n", CACHE_HEADER);
    /* At most MAX_SECTIONS with this machine's: the oldest others go. */
    int others = f.count - (old >= 0), skip = others - (MAX_SECTIONS - 1);
    for (int i = 0; i < f.count; ++i) {
        if (i == old || skip-- > 0) continue;
        fprintf(fp, "machine %s\n%s", f.s[i].key, f.s[i].body ? f.s[i].body : "");
    }
    fprintf(fp, "machine %s\n%s", mine.key, mine.body ? mine.body : "");
    if (fclose(fp) != 0) {
        fp = NULL;
        unlink(tmp);
        goto cleanup;
    }
    fp = NULL;
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(mine.body);
    cache_file_free(&f);
    return rc;
}

int oc_cost_cache_store(const char *path, const char *key, const oc_cost_rates *r, unsigned fields_mask)
{
    return store(path, key, r, fields_mask, NULL);
}

double oc_cost_cache_value(const char *path, const char *key, const char *name)
{
    cache_file f;
    char why[256];
    if (cache_file_read(path, &f, why, sizeof why) <= 0) return 0;
    double v = 0;
    for (int i = 0; i < f.count; ++i) {
        const char *l = strcmp(f.s[i].key, key) == 0 ? section_line(&f.s[i], name) : NULL;
        if (l) v = oc_strtod(l + strlen(name) + 1, NULL);
    }
    cache_file_free(&f);
    return v > 0 && isfinite(v) ? v : 0;
}

int oc_cost_cache_store_value(const char *path, const char *key, const char *name, double value)
{
    char line[LINE_MAX_LEN];
    if (!(value > 0) || !isfinite(value) ||
        oc_snprintf(line, sizeof line, "%s %.6g", name, value) >= (int)sizeof line) {
        errno = EINVAL;
        return -1;
    }
    const oc_cost_rates none = {0};
    return store(path, key, &none, 0, line);
}
