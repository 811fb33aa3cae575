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
 */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "inspect/ptxas.h"

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

/* Runs argv with stdout and stderr into one malloc'ed, NUL-terminated buffer. */
static oc_status run_capture(oc_context *ctx, char *const argv[], char **output, int *exit_code)
{
    int pipe_fd[2];
    if (pipe(pipe_fd) != 0) return oc_fail(ctx, OC_ERR_IO, "cannot run %s: pipe: %s", argv[0], strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], 1);
    posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], 2);
    posix_spawn_file_actions_addclose(&actions, pipe_fd[0]);
    pid_t pid;
    int err = posix_spawn(&pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fd[1]);
    if (err != 0) {
        close(pipe_fd[0]);
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "cannot run %s: %s", argv[0], strerror(err));
    }
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    ssize_t n = 0;
    while (buf) {
        if (cap - len < 1024) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        n = read(pipe_fd[0], buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(pipe_fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!buf) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory reading %s's output", argv[0]);
    buf[len] = '\0';
    *output = buf;
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return OC_OK;
}

/* "release 13.0" from `ptxas --version`, cached. */
static const char *ptxas_release(const char *ptxas)
{
    static char release[32];
    if (release[0]) return release;
    char *argv[] = {(char *)ptxas, "--version", NULL};
    char *text = NULL;
    int code = 0;
    snprintf(release, sizeof release, "?");
    if (run_capture(NULL, argv, &text, &code) == OC_OK) {
        const char *r = strstr(text, "release ");
        if (r) sscanf(r + 8, "%31[0-9.]", release);
        free(text);
    }
    return release;
}

/* The first error line of ptxas' output, without the "ptxas " prefix and trailing blanks. */
static void first_error(const char *text, char *line, size_t size)
{
    const char *at = strstr(text, "error");
    if (!at) at = strstr(text, "fatal");
    if (!at) at = text;
    const char *start = at;
    while (start > text && start[-1] != '\n') start--;
    const char *end = strchr(start, '\n');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    if (strncmp(start, "ptxas ", 6) == 0) start += 6, len -= 6;
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\r')) len--;
    snprintf(line, size, "%.*s", (int)len, start);
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

oc_status oc_ptxas_resources(oc_context *ctx, const char *ptx_path, const char *display, int cc, char suffix,
                             const oc_inspect_options *jit, oc_kernel_list *out)
{
    char ptxas[4096];
    if (!find_ptxas(ptxas, sizeof ptxas))
        return oc_fail(
            ctx, OC_ERR_UNSUPPORTED,
            "%s: reading PTX needs the CUDA toolkit's ptxas; none in $CUDA_HOME/bin, /usr/local/cuda/bin or PATH",
            display);
    char arch[32], opt[16] = "", cap[32] = "";
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
    argv[argc++] = (char *)ptx_path;
    argv[argc] = NULL;
    char *text = NULL;
    int code = 0;
    OC_CHECK(run_capture(ctx, argv, &text, &code));
    oc_status st = OC_OK;
    if (code != 0) {
        char line[512];
        first_error(text, line, sizeof line);
        if (strstr(text, "is not defined for option 'gpu-name'"))
            st = oc_fail(ctx, OC_ERR_UNSUPPORTED, "%s: ptxas %s cannot compile for sm_%d: %s", display,
                         ptxas_release(ptxas), cc, line);
        else st = oc_fail(ctx, OC_ERR_INPUT, "%s: ptxas: %s", display, line);
        free(text);
        return st;
    }
    oc_ptxas_parse_report(text, out, out->count);
    free(text);
    snprintf(out->source, sizeof out->source, "ptxas %s", ptxas_release(ptxas));
    snprintf(out->jit_compiler, sizeof out->jit_compiler, "ptxas %s", ptxas_release(ptxas));
    out->jit_opt_level = jit && jit->opt_level >= 0 ? jit->opt_level : OC_PTXAS_DEFAULT_OPT_LEVEL;
    return OC_OK;
}
