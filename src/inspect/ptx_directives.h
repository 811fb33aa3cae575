/*
 * ptx_directives.h - the PTX directives read from the text itself: where it compiles
 * (.target) and the per-entry launch directives that ptxas' -v report does not repeat.
 * The text need not be NUL-terminated; directives inside "//" comments do not count (nor,
 * for the entry directives, inside block comments).
 */
#ifndef OC_INSPECT_PTX_DIRECTIVES_H
#define OC_INSPECT_PTX_DIRECTIVES_H

#include <stddef.h>

#include "inspect/kernel_list.h"

/* The first `directive` (".target") of the text as a token, outside comments and strings,
 * pointing just after it; NULL when absent. */
const char *oc_ptx_find_directive(const char *text, size_t size, const char *directive);
/* The compute capability PTX text names in .target (x10), 0 when absent; *suffix (may be
 * NULL) gets its feature-set letter ('a' of sm_90a, 'f' of sm_100f) or '\0'. */
int oc_ptx_target_cc(const char *text, size_t size, char *suffix);
/* Reads .maxntid, .reqntid, .maxnreg and .minnctapersm of list entries [first, count) from
 * the PTX text as ptxas does: from each entry's own header (between its name and the '{' of
 * its body), past comments of both kinds, with PTX integer literals (decimal, 0x, 0b, 0
 * octal, a U suffix) and the last occurrence of a directive winning; a malformed one reads
 * as absent (0). The thread directives become the entry's launch bound. */
void oc_ptx_entry_directives(const char *text, size_t size, oc_kernel_list *list, int first);

#endif
