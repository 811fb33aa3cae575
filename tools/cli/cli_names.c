/* cli_names.c - the library's lists of names in the CLI's help, messages and --list. */
#include "cli/cli_names.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "outcore.h"

const char *cli_metric_at(int i) { return i >= 0 ? oc_metric_name((oc_metric)i) : NULL; }
const char *cli_dtype_at(int i) { return i >= 0 ? oc_dtype_name((oc_dtype)(i + 1)) : NULL; }
const char *cli_backend_at(int i) { return i >= 0 ? oc_backend_name((oc_backend)i) : NULL; }
const char *cli_algorithm_at(int i) { return i >= 0 ? oc_algorithm_name((oc_algorithm)i) : NULL; }
const char *cli_gpu_mem_mode_at(int i) { return i >= 0 ? oc_gpu_mem_mode_name((oc_gpu_mem_mode)i) : NULL; }
const char *cli_map_function_at(int i) { return oc_map_function_name(i); }
const char *cli_map_operator_at(int i) { return oc_map_operator_name(i); }
const char *cli_map_dtype_at(int i) { return oc_map_dtype_name(i); }
const char *cli_map_reduction_at(int i) { return i >= 0 ? oc_map_reduce_name((oc_map_reduce)(i + 1)) : NULL; }

/* The i-th dtype of the library's table that --dtype takes: a result a .npy file holds. */
const char *cli_matmul_dtype_at(int i)
{
    const unsigned uses = OC_MATMUL_DTYPE_RESULT | OC_MATMUL_DTYPE_NPY;
    for (int d = 1; i >= 0 && oc_matmul_dtype_name((oc_matmul_dtype)d); ++d)
        if ((oc_matmul_dtype_uses((oc_matmul_dtype)d) & uses) == uses && i-- == 0)
            return oc_matmul_dtype_name((oc_matmul_dtype)d);
    return NULL;
}

/* The i-th format of the library's table that holds one of the results in mask. */
static const char *format_at(int i, unsigned mask)
{
    for (int f = 0; i >= 0 && oc_output_format_name((oc_output_format)f); ++f)
        if ((oc_output_format_results((oc_output_format)f) & mask) && i-- == 0)
            return oc_output_format_name((oc_output_format)f);
    return NULL;
}
const char *cli_input_format_at(int i) { return i >= 0 ? oc_input_format_name((oc_input_format)i) : NULL; }
const char *cli_output_format_at(int i) { return format_at(i, ~0u); }
const char *cli_dense_format_at(int i) { return format_at(i, OC_RESULT_DENSE); }
const char *cli_topk_format_at(int i) { return format_at(i, OC_RESULT_TOPK); }
const char *cli_threshold_format_at(int i) { return format_at(i, OC_RESULT_THRESHOLD); }
const char *cli_selection_format_at(int i) { return format_at(i, OC_RESULT_TOPK | OC_RESULT_THRESHOLD); }

static int count_names(cli_name_at name)
{
    int n = 0;
    while (name(n)) ++n;
    return n;
}

const char *cli_join_names(char *text, size_t size, cli_name_at name, const char *sep, const char *last,
                           const char *mark)
{
    size_t len = 0;
    const int n = count_names(name);
    text[0] = 0;
    for (int i = 0; i < n && len < size; ++i) {
        const char *s = name(i), *between = i == 0 ? "" : i == n - 1 ? last : sep;
        const int w =
            snprintf(text + len, size - len, "%s%s%s", between, s, mark && strcmp(s, mark) == 0 ? " (default)" : "");
        if (w < 0) break;
        len += (size_t)w;
    }
    return text;
}

void cli_help_names(const char *option, cli_name_at name, const char *mark)
{
    char names[512];
    cli_join_names(names, sizeof names, name, ", ", ", ", mark);
    printf("  %-22s", option);
    /* Word by word, a line that would pass CLI_HELP_WIDTH going on under the first. */
    int column = CLI_HELP_COLUMN - 1;
    for (char *word = strtok(names, " "); word; word = strtok(NULL, " ")) {
        const int n = (int)strlen(word);
        if (column > CLI_HELP_COLUMN - 1 && column + 1 + n > CLI_HELP_WIDTH) {
            printf("\n%*s", CLI_HELP_COLUMN - 1, "");
            column = CLI_HELP_COLUMN - 1;
        }
        printf(" %s", word);
        column += 1 + n;
    }
    putchar('\n');
}

int cli_expected(const char *option, const char *value, cli_name_at name)
{
    char names[512];
    return cli_usage_error("%s %s: expected %s", option, value,
                           cli_join_names(names, sizeof names, name, ", ", " or ", NULL));
}

void cli_wrap_word(cli_wrap *w, const char *word, const char *suffix)
{
    const int n = (int)(strlen(word) + strlen(suffix));
    if (w->column > 0 && w->column + 1 + n > w->width) {
        putchar('\n');
        w->column = 0;
    } else if (w->column > 0) {
        putchar(' ');
        w->column++;
    }
    printf("%s%s", word, suffix);
    w->column += n;
}

void cli_wrap_names(cli_wrap *w, cli_name_at name, const char *suffix)
{
    const int n = count_names(name);
    for (int i = 0; i < n; ++i) cli_wrap_word(w, name(i), i == n - 1 ? suffix : "");
}

static const struct {
    const char *what;
    cli_name_at name;
} lists[] = {
    {"metrics", cli_metric_at},
    {"dtypes", cli_dtype_at},
    {"backends", cli_backend_at},
    {"algorithms", cli_algorithm_at},
    {"gpu-mem-modes", cli_gpu_mem_mode_at},
    {"map-functions", cli_map_function_at},
    {"map-operators", cli_map_operator_at},
    {"map-dtypes", cli_map_dtype_at},
    {"map-reductions", cli_map_reduction_at},
    {"matmul-dtypes", cli_matmul_dtype_at},
    {"input-formats", cli_input_format_at},
    {"output-formats", cli_output_format_at},
    {"dense-formats", cli_dense_format_at},
    {"topk-formats", cli_topk_format_at},
    {"threshold-formats", cli_threshold_format_at},
};

static const char *list_at(int i) { return i >= 0 && i < (int)(sizeof lists / sizeof lists[0]) ? lists[i].what : NULL; }

int cli_list_names(const char *what)
{
    for (size_t k = 0; what && k < sizeof lists / sizeof lists[0]; ++k) {
        if (strcmp(what, lists[k].what) != 0) continue;
        for (int i = 0; lists[k].name(i); ++i) puts(lists[k].name(i));
        return OC_EXIT_OK;
    }
    return cli_expected("--list", what ? what : "(nothing)", list_at);
}
