/*
 * cli_names.h - the lists of names the library holds (metrics, dtypes, backends, algorithms,
 * GPU memory modes, map functions, operators, dtypes and reductions, matmul's result dtypes,
 * the input formats, the Gram result's file formats), as the help texts, the messages and `outcore --list` show
 * them: read from the library at run time, never copied into the CLI. Uses include/outcore.h only.
 */
#ifndef OC_TOOLS_CLI_NAMES_H
#define OC_TOOLS_CLI_NAMES_H

#include <stddef.h>

/* One list: its i-th name, NULL past the last. */
typedef const char *(*cli_name_at)(int i);
const char *cli_metric_at(int i);
const char *cli_dtype_at(int i); /* a Gram result's dtypes: "default" is not one */
const char *cli_backend_at(int i);
const char *cli_algorithm_at(int i);
const char *cli_gpu_mem_mode_at(int i);
const char *cli_map_function_at(int i);
const char *cli_map_operator_at(int i);
const char *cli_map_dtype_at(int i);
const char *cli_map_reduction_at(int i); /* "none" is not one */
const char *cli_matmul_dtype_at(int i);  /* matmul's --dtype: a result a .npy file holds */
/* The files a matrix is read from, by suffix ("npy", "mtx", ...). */
const char *cli_input_format_at(int i);
/* The Gram result's file formats by suffix ("npy"): all of them, and those that hold a dense,
 * a top-k, a threshold, or a top-k or threshold result. */
const char *cli_output_format_at(int i);
const char *cli_dense_format_at(int i);
const char *cli_topk_format_at(int i);
const char *cli_threshold_format_at(int i);
const char *cli_selection_format_at(int i);

/* "--OPTION VALUE: expected a, b or c" (the list's names) as a usage error; returns 2. */
int cli_expected(const char *option, const char *value, cli_name_at name);

/* The names joined into text (size bytes): sep between them, last before the final one
 * (", " and " or ": "a, b or c"), and " (default)" after the name equal to mark (NULL:
 * none). Returns text. */
const char *cli_join_names(char *text, size_t size, cli_name_at name, const char *sep, const char *last,
                           const char *mark);

/* The help texts' column of descriptions (counted from 0) and the width their lists keep to. */
#define CLI_HELP_COLUMN 25
#define CLI_HELP_WIDTH 88

/* A help line "  --OPTION VALUE          a (default), b, c" on stdout: the option and its value
 * name padded to the help texts' column, then the list's names with mark as the default,
 * going on in that column on the next lines past CLI_HELP_WIDTH. */
void cli_help_names(const char *option, cli_name_at name, const char *mark);

/* Words printed on stdout in lines of at most width bytes, a space between two words of a
 * line (greedy: a word goes to the next line when it would pass width). */
typedef struct cli_wrap {
    int width, column;
} cli_wrap;
/* Prints word followed by suffix ("" or a punctuation mark kept with it). */
void cli_wrap_word(cli_wrap *w, const char *word, const char *suffix);
/* Prints every name of the list, the last one followed by suffix. */
void cli_wrap_names(cli_wrap *w, cli_name_at name, const char *suffix);

/* `outcore --list WHAT` (metrics, dtypes, backends, algorithms, gpu-mem-modes, map-functions,
 * map-operators, map-dtypes, map-reductions, matmul-dtypes, input-formats, output-formats,
 * dense-formats, topk-formats, threshold-formats): the names, one a line, for the bash completion and the tests. Returns
 * the exit status. */
int cli_list_names(const char *what);

#endif
