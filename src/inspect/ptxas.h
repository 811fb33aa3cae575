/*
 * ptxas.h - kernel resources of a PTX file from the toolkit's ptxas (-v report), without a GPU.
 */
#ifndef OC_INSPECT_PTXAS_H
#define OC_INSPECT_PTXAS_H

#include "inspect/kernel_list.h"
#include "outcore.h"

/* Compiles the PTX file ptx_path for sm_<cc><suffix> with -v (and jit's -maxrregcount and
 * -O when set) and adds each entry function's report to out; sets out->jit_compiler and
 * jit_opt_level. display_name names the code in messages. A PTX error fails with
 * OC_ERR_INPUT and ptxas' first error line. */
oc_status oc_ptxas_resources(oc_context *ctx, const char *ptx_path, const char *display_name, int cc, char suffix,
                             const oc_inspect_options *jit, oc_kernel_list *out);

/* Its report reader, on NUL-terminated text in memory (also a fuzz target's entry): adds an
 * entry per "Compiling entry function" and its figures to out (entries from first_new on). */
void oc_ptxas_parse_report(const char *text, oc_kernel_list *out, int first_new);

#endif
