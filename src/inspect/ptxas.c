/*
 * ptxas.c - kernel resources of PTX from the toolkit's own assembler, without a GPU.
 *
 * `ptxas -arch=sm_XX -v` prints, per function (CUDA 12 and 13 wording):
 *
 *     ptxas info    : Compiling entry function 'regs96' for 'sm_90'
 *     ptxas info    : Function properties for regs96
 *         1080 bytes stack frame, 2416 bytes spill stores, 2416 bytes spill loads
 *     ptxas info    : Used 96 registers, used 0 barriers, 4000 bytes smem, 360 bytes cmem[0]
 *
 * "Function properties" also appears for non-inlined device functions, which are not
 * kernels: only names announced by "Compiling entry function" become entries. ptxas is
 * found through $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin and then PATH.
 *
 * The PTX is untrusted input and ptxas bounds neither its time nor its memory: it runs in a
 * forked child with RLIMIT_AS and RLIMIT_CPU set, and is killed at a wall-clock deadline
 * (OUTCORE_PTXAS_TIMEOUT, OUTCORE_PTXAS_MEMORY; docs/environment.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "inspect/ptxas.h"
#include "core/env.h"
#include "core/process/fork_locks.h"

extern char **environ;

static int executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static int find_ptxas(char *path, size_t size)
{
    static const char *const homes[] = {"CUDA_HOME", "CUDA_PATH"};
    for (size_t i = 0; i < 2; i++) {
        const char *home = getenv(homes[i]);
        if (home && *home && (size_t)snprintf(path, size, "%s/bin/ptxas", home) < size && executable(path)) return 1;
    }
    if ((size_t)snprintf(path, size, "/usr/local/cuda/bin/ptxas") < size && executable(path)) return 1;
    const char *env_path = getenv("PATH");
    while (env_path && *env_path) {
        const char *colon = strchr(env_path, ':');
        size_t len = colon ? (size_t)(colon - env_path) : strlen(env_path);
        if (len > 0 && (size_t)snprintf(path, size, "%.*s/ptxas", (int)len, env_path) < size && executable(path))
            return 1;
        env_path += len + (colon ? 1 : 0);
    }
    return 0;
}

/* What one ptxas run may take: PTX is untrusted input, and ptxas has no bound of its own. */
typedef struct run_limits {
    int seconds;   /* wall-clock and CPU time; 0: none */
    int64_t bytes; /* address space; 0: none */
} run_limits;

#define PTXAS_DEFAULT_SECONDS 120
#define PTXAS_DEFAULT_BYTES (8LL << 30)

/* The limits from OUTCORE_PTXAS_TIMEOUT (seconds) and OUTCORE_PTXAS_MEMORY (a size such as
 * 8G), else the defaults; 0 turns a limit off. */
static oc_status ptxas_limits(oc_context *ctx, run_limits *lim)
{
    lim->seconds = PTXAS_DEFAULT_SECONDS;
    lim->bytes = PTXAS_DEFAULT_BYTES;
    const char *t = getenv("OUTCORE_PTXAS_TIMEOUT"), *m = getenv("OUTCORE_PTXAS_MEMORY");
    int64_t seconds = 0;
    const int set = oc_env_whole("OUTCORE_PTXAS_TIMEOUT", 0, 86400, &seconds); /* as every whole-number variable */
    if (set < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "OUTCORE_PTXAS_TIMEOUT=%s: expected whole seconds from 0 (no limit) to 86400", t);
    if (set > 0) lim->seconds = (int)seconds;
    if (m && *m) {
        int64_t bytes = 0;
        double fraction = 0;
        if (strcmp(m, "0") != 0 && (oc_size_parse(m, &bytes, &fraction) != OC_OK || fraction > 0 || bytes <= 0))
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "OUTCORE_PTXAS_MEMORY=%s: expected a size such as 8G, or 0 for no limit", m);
        lim->bytes = bytes;
    }
    return OC_OK;
}

/* How a run ended. */
typedef struct run_end {
    int exit_code; /* 128 + signal when killed */
    int signal;    /* the signal that ended it, else 0 */
    int timed_out; /* killed at the wall-clock limit */
} run_end;

/* In the forked child: only async-signal-safe calls until execve. */
static void child_exec(char *const argv[], int out_fd, int err_fd, const run_limits *lim)
{
    /* A group of its own: the deadline kills whatever it started too. */
    setpgid(0, 0);
    if (lim->bytes > 0) {
        struct rlimit as = {(rlim_t)lim->bytes, (rlim_t)lim->bytes};
        setrlimit(RLIMIT_AS, &as);
    }
    if (lim->seconds > 0) {
        /* The soft limit sends SIGXCPU, the hard one a second later SIGKILL. */
        struct rlimit cpu = {(rlim_t)lim->seconds, (rlim_t)lim->seconds + 1};
        setrlimit(RLIMIT_CPU, &cpu);
    }
    if (dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0) _exit(127);
    execve(argv[0], argv, environ);
    int err = errno;
    ssize_t w = write(err_fd, &err, sizeof err);
    (void)w;
    _exit(127);
}

/* Seconds left before lim's deadline for a run started at start (a large number without one). */
static double seconds_left(const run_limits *lim, const struct timespec *start)
{
    if (lim->seconds <= 0) return 1e9;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return lim->seconds - ((double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9);
}

/* Collects the child's output until it closes it or the deadline passes (then kills it). */
static char *collect(int fd, pid_t pid, const run_limits *lim, const struct timespec *start, int *timed_out)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf) {
        double left = seconds_left(lim, start);
        if (left <= 0) {
            kill(-pid, SIGKILL);
            *timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = poll(&p, 1, lim->seconds > 0 ? (int)(left * 1000) + 1 : -1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) break;
        if (ready == 0) continue; /* the deadline is checked above */
        if (cap - len < 1024) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                kill(-pid, SIGKILL);
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    if (buf) buf[len] = '\0';
    return buf;
}

/* Waits for the child, which may outlive its output: killed at the deadline as well. */
static int reap(pid_t pid, const run_limits *lim, const struct timespec *start, int *timed_out)
{
    int status = 0;
    for (;;) {
        pid_t got = waitpid(pid, &status, lim->seconds > 0 ? WNOHANG : 0);
        if (got == pid || (got < 0 && errno != EINTR)) return status;
        if (got == 0 && seconds_left(lim, start) <= 0) {
            kill(-pid, SIGKILL);
            *timed_out = 1;
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            return status;
        }
        if (got == 0) usleep(1000);
    }
}

/* Runs argv under lim with stdout and stderr into one malloc'ed, NUL-terminated buffer. */
static oc_status run_capture(oc_context *ctx, char *const argv[], const run_limits *lim, char **output, run_end *end)
{
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0)
        return oc_fail(ctx, OC_ERR_IO, "cannot run %s: pipe: %s", argv[0], strerror(errno));
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        int err = errno;
        close(out_pipe[0]), close(out_pipe[1]);
        return oc_fail(ctx, OC_ERR_IO, "cannot run %s: pipe: %s", argv[0], strerror(err));
    }
    pid_t pid = fork();
    if (pid == 0) child_exec(argv, out_pipe[1], err_pipe[1], lim);
    int fork_err = errno;
    if (pid > 0) setpgid(pid, pid); /* as the child does: whichever runs first */
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
        close(out_pipe[0]), close(err_pipe[0]);
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "cannot run %s: %s", argv[0], strerror(fork_err));
    }
    memset(end, 0, sizeof *end);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char *buf = collect(out_pipe[0], pid, lim, &start, &end->timed_out);
    close(out_pipe[0]);
    int exec_err = 0, status = reap(pid, lim, &start, &end->timed_out);
    /* execve succeeded when the close-on-exec pipe closed with nothing in it. */
    ssize_t got = read(err_pipe[0], &exec_err, sizeof exec_err);
    close(err_pipe[0]);
    if (got == (ssize_t)sizeof exec_err) {
        free(buf);
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "cannot run %s: %s", argv[0], strerror(exec_err));
    }
    if (!buf) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory reading %s's output", argv[0]);
    *output = buf;
    end->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    end->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + end->signal;
    return OC_OK;
}

/* "13.0" from `ptxas --version` into release (size bytes), "?" when it cannot be read. The
 * answer is kept per process for the ptxas it came from (a release read once is the same
 * later); a failed run is not kept, so a ptxas that failed once (a timeout on a loaded
 * machine) is asked again, and another ptxas (another PATH, or CUDA_HOME) is asked its own. */
static pthread_mutex_t release_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(release_lock, OC_FORK_RANK_PTXAS, NULL)

static const char *ptxas_release(const char *ptxas, char *release, size_t size)
{
    static char kept_path[PATH_MAX], kept[32];
    pthread_mutex_lock(&release_lock);
    const int have = kept[0] && strcmp(kept_path, ptxas) == 0;
    if (have) snprintf(release, size, "%s", kept);
    pthread_mutex_unlock(&release_lock);
    if (have) return release;
    char *argv[] = {(char *)ptxas, "--version", NULL};
    char *text = NULL, found[32] = "";
    run_end end;
    run_limits lim = {PTXAS_DEFAULT_SECONDS, PTXAS_DEFAULT_BYTES};
    if (run_capture(NULL, argv, &lim, &text, &end) == OC_OK) {
        const char *r = end.exit_code == 0 ? strstr(text, "release ") : NULL;
        if (r) sscanf(r + 8, "%31[0-9.]", found);
        free(text);
    }
    snprintf(release, size, "%s", found[0] ? found : "?");
    if (found[0] && strlen(ptxas) < sizeof kept_path) {
        pthread_mutex_lock(&release_lock);
        snprintf(kept_path, sizeof kept_path, "%s", ptxas);
        snprintf(kept, sizeof kept, "%s", found);
        pthread_mutex_unlock(&release_lock);
    }
    return release;
}

/* The first line of ptxas' output that says an error or a fatal one, past its closing summary
 * ("fatal : Ptx assembly aborted due to errors", which names no cause: the line only when no
 * other says one); else its first line. */
static const char *error_line(const char *text)
{
    const char *summary = NULL;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        char copy[1024];
        snprintf(copy, sizeof copy, "%.*s", (int)(len < sizeof copy ? len : sizeof copy - 1), line);
        if (strstr(copy, "aborted due to errors")) {
            if (!summary) summary = line;
        } else if (strstr(copy, "error") || strstr(copy, "fatal")) {
            return line;
        }
        if (!end) break;
        line = end + 1;
    }
    return summary ? summary : text;
}

/* The first error line of ptxas' output, without the "ptxas " prefix and trailing blanks. */
static void first_error(const char *text, const char *ptx_path, const char *display, char *line, size_t size)
{
    const char *start = error_line(text);
    const char *end = strchr(start, '\n');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    if (strncmp(start, "ptxas ", 6) == 0) start += 6, len -= 6;
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\r')) len--;
    /* ptxas names the file it read, which for PTX held in memory is a temporary copy gone
     * by now: the line names what the caller called it instead. */
    const size_t plen = strlen(ptx_path);
    if (plen > 0 && len >= plen && strncmp(start, ptx_path, plen) == 0)
        snprintf(line, size, "%s%.*s", display, (int)(len - plen), start + plen);
    else snprintf(line, size, "%.*s", (int)len, start);
}

/* Reads the quoted name after `key` on a line: "... 'name' ...". */
static int quoted_name(const char *line, const char *key, const char **name, size_t *len)
{
    const char *k = strstr(line, key);
    if (!k) return 0;
    const char *open = strchr(k + strlen(key), '\'');
    if (!open) return 0;
    const char *close = strchr(open + 1, '\'');
    if (!close) return 0;
    *name = open + 1;
    *len = (size_t)(close - open - 1);
    return 1;
}

/* The number just before `unit` on the line ("4000 bytes smem"), -1 when absent. */
static long long figure_before(const char *line, const char *line_end, const char *unit)
{
    size_t n = strlen(unit);
    for (const char *p = line; p + n <= line_end; p++) {
        if (memcmp(p, unit, n) != 0) continue;
        const char *q = p;
        while (q > line && q[-1] == ' ') q--;
        const char *digits = q;
        while (digits > line && digits[-1] >= '0' && digits[-1] <= '9') digits--;
        if (digits < q) return strtoll(digits, NULL, 10);
    }
    return -1;
}

void oc_ptxas_parse_report(const char *text, oc_kernel_list *out, int first_new)
{
    oc_kernel_entry *entry = NULL; /* the entry "Used ... registers" applies to */
    char props_name[1024] = "";    /* the function the next properties line is about */
    char line[2048];
    for (const char *at = text; *at;) {
        /* One line at a time, copied so that every search stops at its end. */
        const char *nl = strchr(at, '\n');
        size_t len = nl ? (size_t)(nl - at) : strlen(at);
        snprintf(line, sizeof line, "%.*s", (int)len, at);
        at += len + (nl ? 1 : 0);
        const char *line_end = line + strlen(line);
        const char *name, *p;
        size_t name_len;
        if (quoted_name(line, "Compiling entry function", &name, &name_len)) {
            entry = NULL;
            oc_kernel_list_add(NULL, out, name, name_len, &entry);
        } else if ((p = strstr(line, "Function properties for "))) {
            snprintf(props_name, sizeof props_name, "%s", p + 24);
        } else if (strstr(line, "bytes stack frame") && props_name[0]) {
            oc_kernel_entry *e = oc_kernel_list_find(out, props_name, strlen(props_name));
            if (e && e - out->items >= first_new) {
                e->res.local_bytes = (size_t)figure_before(line, line_end, "bytes stack frame");
                e->spill_store_bytes = figure_before(line, line_end, "bytes spill stores");
                e->spill_load_bytes = figure_before(line, line_end, "bytes spill loads");
            }
            props_name[0] = '\0';
        } else if (entry && strstr(line, "Used ")) {
            long long regs = figure_before(line, line_end, "registers");
            long long smem = figure_before(line, line_end, "bytes smem");
            long long cmem = figure_before(line, line_end, "bytes cmem[0]");
            /* A figure past int is no register count (strtoll saturates a long run of digits). */
            if (regs >= 0 && regs <= INT_MAX) entry->res.regs_per_thread = (int)regs;
            entry->res.static_smem = smem > 0 ? (size_t)smem : 0;
            if (cmem >= 0) entry->const_bytes = cmem;
        }
    }
}

/* The one-line error of a run that a limit ended (OC_ERR_INPUT: the PTX asked for too much),
 * else OC_OK. A limit on memory shows as ptxas dying of a signal (its allocations fail) or
 * saying so. */
static oc_status limit_hit(oc_context *ctx, const char *display, const run_limits *lim, const run_end *end,
                           const char *text)
{
    if (end->timed_out || end->signal == SIGXCPU || (lim->seconds > 0 && end->signal == SIGKILL))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "ptxas exceeded its %d s limit on %s (OUTCORE_PTXAS_TIMEOUT sets it, 0 for none)", lim->seconds,
                       display);
    int says_memory = strstr(text, "out of memory") || strstr(text, "Memory allocation failure") ||
                      strstr(text, "bad_alloc") || strstr(text, "MemoryError");
    if (lim->bytes > 0 && (says_memory || end->signal == SIGSEGV || end->signal == SIGABRT || end->signal == SIGBUS))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "ptxas exceeded its %lld-byte memory limit on %s (it %s; OUTCORE_PTXAS_MEMORY sets the "
                       "limit, 0 for none)",
                       (long long)lim->bytes, display, says_memory ? "ran out of memory" : "crashed");
    return OC_OK;
}

oc_status oc_ptxas_resources(oc_context *ctx, const char *ptx_path, const char *display, int cc, char suffix,
                             const oc_inspect_options *jit, oc_kernel_list *out)
{
    char ptxas[4096];
    if (!find_ptxas(ptxas, sizeof ptxas))
        return oc_fail(
            ctx, OC_ERR_UNSUPPORTED,
            "%s: reading PTX needs the CUDA toolkit's ptxas; none in $CUDA_HOME/bin, /usr/local/cuda/bin or PATH",
            display);
    char arch[32], opt[16] = "", cap[32] = "", release[32];
    snprintf(arch, sizeof arch, "-arch=sm_%d%.1s", cc, suffix ? &suffix : "");
    char *argv[10] = {ptxas, arch, "-v"};
    int argc = 3;
    if (jit && jit->opt_level >= 0) {
        snprintf(opt, sizeof opt, "-O%d", jit->opt_level);
        argv[argc++] = opt;
    }
    if (jit && jit->maxrregcount > 0) {
        snprintf(cap, sizeof cap, "-maxrregcount=%d", jit->maxrregcount);
        argv[argc++] = cap;
    }
    argv[argc++] = "-o";
    argv[argc++] = "/dev/null";
    /* A name that begins with '-' would be read as an option: it goes as ./-name. */
    char path[4096];
    if (ptx_path[0] == '-' && (size_t)snprintf(path, sizeof path, "./%s", ptx_path) < sizeof path) ptx_path = path;
    argv[argc++] = (char *)ptx_path;
    argv[argc] = NULL;
    run_limits lim;
    OC_CHECK(ctx, ptxas_limits(ctx, &lim));
    char *text = NULL;
    run_end end;
    OC_CHECK(ctx, run_capture(ctx, argv, &lim, &text, &end));
    oc_status st = limit_hit(ctx, display, &lim, &end, text);
    if (st != OC_OK) {
        free(text);
        return st;
    }
    if (end.exit_code != 0) {
        char line[512];
        first_error(text, ptx_path, display, line, sizeof line);
        if (strstr(text, "is not defined for option 'gpu-name'"))
            st = oc_fail(ctx, OC_ERR_UNSUPPORTED, "%s: ptxas %s cannot compile for sm_%d: %s", display,
                         ptxas_release(ptxas, release, sizeof release), cc, line);
        else st = oc_fail(ctx, OC_ERR_INPUT, "%s: ptxas: %s", display, line);
        free(text);
        return st;
    }
    oc_ptxas_parse_report(text, out, out->count);
    free(text);
    ptxas_release(ptxas, release, sizeof release);
    snprintf(out->source, sizeof out->source, "ptxas %s", release);
    snprintf(out->jit_compiler, sizeof out->jit_compiler, "ptxas %s", release);
    out->jit_opt_level = jit && jit->opt_level >= 0 ? jit->opt_level : OC_PTXAS_DEFAULT_OPT_LEVEL;
    return OC_OK;
}
