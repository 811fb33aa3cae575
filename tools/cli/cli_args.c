/*
 * cli_args.c - the walk over a command's arguments (cli_args.h): options and their values,
 * positional arguments, and the nearest option to one that is unknown.
 */
#include "cli/cli_args.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

const char *cli_next(cli_args *a)
{
    a->ntried = 0;
    while (++a->i < a->argc) {
        if (!a->options_done && strcmp(a->argv[a->i], "--") == 0) {
            a->options_done = 1;
            continue;
        }
        return a->argv[a->i];
    }
    return NULL;
}

int cli_positional(const cli_args *a)
{
    const char *arg = a->argv[a->i];
    return a->options_done || arg[0] != '-' || arg[1] == '\0';
}

/* The length of the form of spec (forms '|' apart) that arg starts with and that ends where
 * arg ends or at its '='; 0 when none does. */
static size_t match_form(const char *spec, const char *arg)
{
    while (*spec) {
        size_t len = strcspn(spec, "|");
        if (strncmp(arg, spec, len) == 0 && (arg[len] == '\0' || arg[len] == '=')) return len;
        spec += len;
        if (*spec == '|') spec++;
    }
    return 0;
}

/* Notes that the current argument was tried against spec (for cli_unknown_option). */
static void tried(cli_args *a, const char *spec, int value)
{
    if (a->ntried >= CLI_MAX_TRIED) return;
    a->tried_value[a->ntried] = (unsigned char)value;
    a->tried[a->ntried++] = spec;
}

int cli_flag(cli_args *a, const char *spec)
{
    const char *arg = a->argv[a->i];
    if (cli_positional(a)) return 0;
    tried(a, spec, 0);
    size_t len = match_form(spec, arg);
    return len > 0 && arg[len] == '\0';
}

int cli_take(cli_args *a, const char *spec, int flags)
{
    const char *arg = a->argv[a->i];
    if (!cli_positional(a)) tried(a, spec, 1);
    size_t len = cli_positional(a) ? 0 : match_form(spec, arg);
    if (len == 0) return 0;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)len, arg);
    if (!(flags & CLI_REPEATS)) {
        for (int k = 0; k < a->nseen; ++k)
            if (a->seen[k] == spec) {
                if (strchr(spec, '|'))
                    cli_usage_error("option %s given twice (%s: one option): give it once", name, spec);
                else cli_usage_error("option %s given twice: give it once", name);
                return -1;
            }
        if (a->nseen < CLI_MAX_SEEN) a->seen[a->nseen++] = spec;
    }
    if (arg[len] == '=') {
        a->value = arg + len + 1;
        return 1;
    }
    if (a->i + 1 >= a->argc) {
        cli_usage_error("option %s needs a value (see outcore %s --help)", name, a->argv[0]);
        return -1;
    }
    a->value = a->argv[++a->i];
    return 1;
}

/* The optimal string alignment distance of a[0..n) and b[0..m) (edits and swaps of two
 * neighbours); past `most` for names longer than any option, which are not compared. */
static int distance(const char *a, size_t n, const char *b, size_t m, int most)
{
    enum { LONGEST = 48 };
    if (n > LONGEST || m > LONGEST) return most + 1;
    int d[LONGEST + 1][LONGEST + 1];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

int cli_unknown_option(const cli_args *a, int positionals)
{
    const char *command = a->argv[0], *arg = a->argv[a->i];
    size_t arg_len = strcspn(arg, "=");
    /* A short option with its value glued on ("-oe.npy"). */
    for (int t = 0; t < a->ntried; t++) {
        if (!a->tried_value[t]) continue;
        for (const char *f = a->tried[t]; *f; f += *f == '|') {
            size_t len = strcspn(f, "|");
            if (len == 2 && f[1] != '-' && strncmp(arg, f, 2) == 0 && arg[2] != '\0')
                return cli_usage_error("%s: unknown option %s (did you mean %.2s %s? see outcore %s --help)", command,
                                       arg, f, arg + 2, command);
            f += len;
        }
    }
    /* The nearest long form within two edits, and a third of its length. */
    const char *near = NULL;
    size_t near_len = 0;
    int best = 3, near_takes_value = 0;
    for (int t = 0; t < a->ntried; t++)
        for (const char *f = a->tried[t]; *f; f += *f == '|') {
            size_t len = strcspn(f, "|");
            int most = (int)(len / 3) < 2 ? (int)(len / 3) : 2;
            if (len > 3 && f[1] == '-') {
                int d = distance(arg, arg_len, f, len, most);
                if (d <= most && d < best) {
                    best = d;
                    near = f;
                    near_len = len;
                    near_takes_value = a->tried_value[t];
                }
            }
            f += len;
        }
    /* A flag given a value (--json=true): the name is right, the value is not taken. */
    if (near && best == 0 && !near_takes_value && arg[arg_len] == '=')
        return cli_usage_error("%s: %.*s takes no value (give %.*s alone; see outcore %s --help)", command,
                               (int)arg_len, arg, (int)arg_len, arg, command);
    if (near)
        return cli_usage_error("%s: unknown option %.*s (did you mean %.*s? see outcore %s --help)", command,
                               (int)arg_len, arg, (int)near_len, near, command);
    if (!positionals) return cli_usage_error("%s: unknown option %s (see outcore %s --help)", command, arg, command);
    return cli_usage_error("%s: unknown option %s (see outcore %s --help; an argument that starts with '-' goes after "
                           "--: outcore %s [options] -- %s)",
                           command, arg, command, command, arg);
}
