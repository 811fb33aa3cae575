/*
 * test_ptx_directives.c - reading .target and the per-entry launch directives of PTX text
 * (src/inspect/ptx_directives.c): a table of headers as nvcc and numba write them, each read
 * from an exact-size heap copy so that AddressSanitizer sees any read past the text.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "inspect/ptx_directives.h"

static const struct target_case {
    const char *text;
    int cc;
    char suffix;
} target_cases[] = {
    {".version 8.8\n.target sm_90\n.address_size 64\n", 90, '\0'},
    {".version 8.8\n.target sm_90a\n", 90, 'a'},
    {"\t.target\tsm_100f, debug\n", 100, 'f'},
    {".version 8.8\n.target compute_90\n", 0, '\0'}, /* not an SM target */
    {"// .target sm_80 in a comment\n.targets sm_70\n", 0, '\0'},
    {".version 8.8\n", 0, '\0'},
    {".target sm_", 0, '\0'}, /* cut off */
};

static char *exact_copy(const char *text, size_t *size)
{
    *size = strlen(text);
    char *copy = malloc(*size ? *size : 1);
    memcpy(copy, text, *size);
    return copy;
}

static void test_target(void)
{
    for (size_t i = 0; i < sizeof target_cases / sizeof target_cases[0]; i++) {
        const struct target_case *c = &target_cases[i];
        size_t size;
        char *text = exact_copy(c->text, &size);
        char suffix = 'x';
        CHECK_MSG(oc_ptx_target_cc(text, size, &suffix) == c->cc, "case %zu: cc", i);
        CHECK_MSG(suffix == c->suffix, "case %zu: suffix '%c'", i, suffix ? suffix : '0');
        CHECK(oc_ptx_target_cc(text, size, NULL) == c->cc);
        free(text);
    }
}

/* One entry header and the directives expected of it. */
static const struct entry_case {
    const char *name;
    const char *text;
    int maxntid, reqntid, maxnreg, minnctapersm, bound;
} entry_cases[] = {
    {"plain", ".visible .entry plain(\n\t.param .u64 plain_param_0\n)\n{\n\tret;\n}\n", 0, 0, 0, 0, 0},
    {"bounded", ".visible .entry bounded(\n\t.param .u64 p\n)\n.maxntid 256, 1, 1\n.minnctapersm 2\n{\n}\n", 256, 0, 0,
     2, 256},
    {"shaped", ".visible .entry shaped()\n.reqntid 16, 8, 2\n{\n}\n", 0, 256, 0, 0, 256},
    {"both", ".entry both()\n.maxntid 512\n.reqntid 128, 1\n.maxnreg 64\n{\n}\n", 512, 128, 64, 0, 128},
    /* A directive inside the body belongs to nothing: only the header counts. */
    {"late", ".entry late()\n{\n.maxntid 64, 1, 1\n}\n", 0, 0, 0, 0, 0},
    /* A name that only starts like another entry's is not that entry. */
    {"k", ".entry k_longer()\n.maxntid 32, 1, 1\n{\n}\n.entry k (\n)\n.maxnreg 40\n{\n}\n", 0, 0, 40, 0, 0},
    /* Cut off before the body: the header runs to the end of the text. */
    {"cut", ".entry cut()\n.maxntid 96, 1, 1", 96, 0, 0, 0, 96},
    {"malformed", ".entry malformed()\n.maxntid 0, 1, 1\n.maxnreg -3\n{\n}\n", 0, 0, 0, 0, 0},
};

static void test_entries(void)
{
    for (size_t i = 0; i < sizeof entry_cases / sizeof entry_cases[0]; i++) {
        const struct entry_case *c = &entry_cases[i];
        size_t size;
        char *text = exact_copy(c->text, &size);
        oc_kernel_list list = {0};
        oc_kernel_entry *e = NULL;
        CHECK(oc_kernel_list_add(NULL, &list, "absent", 6, &e) == OC_OK);
        CHECK(oc_kernel_list_add(NULL, &list, c->name, strlen(c->name), &e) == OC_OK);
        oc_ptx_entry_directives(text, size, &list, 0);
        e = &list.items[1];
        CHECK_MSG(e->maxntid == c->maxntid, "%s: maxntid %d", c->name, e->maxntid);
        CHECK_MSG(e->reqntid == c->reqntid, "%s: reqntid %d", c->name, e->reqntid);
        CHECK_MSG(e->maxnreg == c->maxnreg, "%s: maxnreg %d", c->name, e->maxnreg);
        CHECK_MSG(e->minnctapersm == c->minnctapersm, "%s: minnctapersm %d", c->name, e->minnctapersm);
        CHECK_MSG(e->launch_bounds == c->bound && e->res.max_threads_per_block == c->bound, "%s: bound %d", c->name,
                  e->launch_bounds);
        CHECK(list.items[0].launch_bounds == 0 && list.items[0].maxnreg == 0);
        oc_kernel_list_clear(&list);
        free(text);
    }
}

int main(void)
{
    test_target();
    test_entries();
    return oc_test_finish();
}
