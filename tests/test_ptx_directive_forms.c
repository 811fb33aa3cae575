/*
 * test_ptx_directive_forms.c - the written forms of the per-entry launch directives
 * (src/inspect/ptx_directives.c): comments of both kinds, also inside an argument list, PTX
 * integer literals (hex, octal, binary, a U suffix), lists over several lines, a directive
 * given twice, and where an entry's header begins and ends. Where ptxas -arch=sm_90 (CUDA
 * 13.0) compiles the text, the expected thread bound is what it put into the cubin
 * (EIATTR_MAX_THREADS, EIATTR_REQNTID) and a repeated .maxnreg or .minnctapersm the one
 * whose register count it gave; the malformed forms near the end are ones it refuses, read
 * here as absent. Every text is read from an exact-size heap copy so that AddressSanitizer
 * sees any read past it.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "inspect/ptx_directives.h"

/* The header of entry "k" as nvcc writes it, up to its directives. */
#define K ".visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u64 k_param_1\n)\n"
/* Its body, with a directive that belongs to nothing (only the header counts). */
#define BODY "{\n\t.reg .b32 %r<2>;\n.maxntid 512\n\tret;\n}\n"

static const struct form_case {
    const char *what;
    const char *text;
    int maxntid, reqntid, maxnreg, minnctapersm;
} cases[] = {
    /* Literal forms. */
    {"hex", K ".maxntid 0x40\n" BODY, 64, 0, 0, 0},
    {"hex, capital X and digits", K ".maxntid 0XA0\n" BODY, 160, 0, 0, 0},
    {"octal", K ".maxntid 0100\n" BODY, 64, 0, 0, 0},
    {"octal, not decimal", K ".maxntid 010\n" BODY, 8, 0, 0, 0},
    {"binary", K ".maxntid 0b1000000\n" BODY, 64, 0, 0, 0},
    {"binary, capital B", K ".maxntid 0B100000\n" BODY, 32, 0, 0, 0},
    {"U suffix", K ".maxntid 64U\n" BODY, 64, 0, 0, 0},
    {"U suffix on hex", K ".maxntid 0x40U\n" BODY, 64, 0, 0, 0},
    {"U suffix on octal", K ".maxntid 0100U\n" BODY, 64, 0, 0, 0},
    {"mixed forms in one list", K ".reqntid 32, 0x2, 0b1U\n" BODY, 0, 64, 0, 0},
    {"maxnreg and minnctapersm literals", K ".maxnreg 0b1000000U\n.minnctapersm 0x2\n" BODY, 0, 0, 64, 2},
    /* Comments. */
    {"commented out", K "/* .maxntid 32 */\n" BODY, 0, 0, 0, 0},
    {"commented out over lines", K "/*\n.maxntid 32\n*/\n" BODY, 0, 0, 0, 0},
    {"line comment", K "// .maxntid 32\n" BODY, 0, 0, 0, 0},
    {"block comment inside the list", K ".maxntid 64 /* x */, 2\n" BODY, 128, 0, 0, 0},
    {"block comment over lines inside the list", K ".maxntid 0x40 /* a\n b */ , 0b10\n" BODY, 128, 0, 0, 0},
    {"line comment inside the list", K ".maxntid 64 // , 4\n, 2\n" BODY, 128, 0, 0, 0},
    {"comment between the directive and its value", K ".maxntid/**/64\n.maxnreg /* 32 */ 64\n" BODY, 64, 0, 64, 0},
    {"comments after the values", K ".maxntid 64 // 1024\n.maxnreg 40 /* 255 */\n" BODY, 64, 0, 40, 0},
    {"brace in a block comment of the header", K "/* { */ .maxntid 64\n" BODY, 64, 0, 0, 0},
    {"brace in a line comment of the header", K "// {\n.maxntid 64\n" BODY, 64, 0, 0, 0},
    {"comment marks in a string", ".file 1 \"/src/*.cu\"\n" K ".maxntid 64 // */ 2\n" BODY, 64, 0, 0, 0},
    /* Layout. */
    {"list over lines", K ".maxntid 64,\n 2\n" BODY, 128, 0, 0, 0},
    {"one value a line", K ".maxntid 64,\n2\n,\n1\n" BODY, 128, 0, 0, 0},
    {"no blanks", K ".maxntid 64,2,1\n" BODY, 128, 0, 0, 0},
    {"two directives on a line", K ".maxntid 64 .maxnreg 32\n" BODY, 64, 0, 32, 0},
    {"directive right after the parameters", ".visible .entry k(\n\t.param .u64 p\n).maxntid 64\n" BODY, 64, 0, 0, 0},
    {".visible.entry", ".visible.entry k(\n)\n.maxntid 64\n" BODY, 64, 0, 0, 0},
    {"comment between .entry and the name", ".visible .entry/* x */k/**/(\n)\n.maxntid 64\n" BODY, 64, 0, 0, 0},
    {"pragma in the header", K ".pragma \"nounroll\";\n.maxntid 64\n" BODY, 64, 0, 0, 0},
    /* The last occurrence wins. */
    {"maxntid twice", K ".maxntid 128, 1, 1\n.maxntid 64\n" BODY, 64, 0, 0, 0},
    {"maxntid twice, the larger last", K ".maxntid 64\n.maxntid 128\n" BODY, 128, 0, 0, 0},
    {"maxntid twice on a line", K ".maxntid 64 .maxntid 32\n" BODY, 32, 0, 0, 0},
    {"reqntid twice", K ".reqntid 128\n.reqntid 64, 1\n" BODY, 0, 64, 0, 0},
    {"maxnreg twice", K ".maxnreg 128\n.maxnreg 0x40\n" BODY, 0, 0, 64, 0},
    {"minnctapersm twice", K ".maxntid 1024\n.minnctapersm 2\n.minnctapersm 1\n" BODY, 1024, 0, 0, 1},
    /* Which header is the entry's. */
    {"commented-out older header", "/* old\n" K ".maxntid 32\n{\n}\n*/\n" K ".maxntid 128, 1, 1\n" BODY, 128, 0, 0, 0},
    {"declaration before the definition",
     ".visible .entry k(\n\t.param .u64 a,\n\t.param .u64 b\n);\n.func f()\n{\n\tret;\n}\n" K ".maxntid 96\n" BODY, 96,
     0, 0, 0},
    /* A declaration has no directives: the next entry's are not its own. */
    {"declaration alone", ".extern .entry k(\n\t.param .u64 a\n);\n.visible .entry j()\n.maxntid 32\n{\n}\n", 0, 0, 0,
     0},
    {"entry name only in a comment", "// .entry k(\n.visible .entry j()\n.maxntid 32\n{\n}\n", 0, 0, 0, 0},
    /* Malformed: ptxas refuses each; read as absent, and nothing past the header counts. */
    {"8 in octal", K ".maxntid 08\n" BODY, 0, 0, 0, 0},
    {"hex without digits", K ".maxntid 0x\n" BODY, 0, 0, 0, 0},
    {"lower-case u", K ".maxntid 64u\n" BODY, 0, 0, 0, 0},
    {"digit separator", K ".maxntid 0x4_0\n" BODY, 0, 0, 0, 0},
    {"negative", K ".maxntid -64\n.maxnreg +32\n" BODY, 0, 0, 0, 0},
    {"four dimensions", K ".maxntid 64, 2, 2, 2\n" BODY, 0, 0, 0, 0},
    {"list on a register directive", K ".maxnreg 32, 2\n.minnctapersm 2, 1\n" BODY, 0, 0, 0, 0},
    {"trailing comma before the body", K ".maxntid 64,\n" BODY, 0, 0, 0, 0},
    {"no value before the body", K ".maxntid\n" BODY, 0, 0, 0, 0},
    {"past 32 bits", K ".maxntid 4294967297\n" BODY, 0, 0, 0, 0},
    {"past 64 bits", K ".maxntid 0xFFFFFFFFFFFFFFFFFFFF, 0x10, 0x10\n" BODY, 0, 0, 0, 0},
    {"zero in octal", K ".maxntid 00\n" BODY, 0, 0, 0, 0},
    {"bad value, then a good one", K ".maxntid 08\n.maxnreg 32\n" BODY, 0, 0, 32, 0},
    /* Cut off: no crash, no read past the text; the header runs to its end. */
    {"unclosed block comment", K ".maxntid 64 /* never closed", 64, 0, 0, 0},
    {"unclosed string", K ".maxntid 64\n.pragma \"nounroll", 64, 0, 0, 0},
    {"text ends in a slash", K ".maxntid 64 /", 64, 0, 0, 0},
    {"text ends after a comma", K ".maxntid 64,", 0, 0, 0, 0},
    {"text ends after the name", ".visible .entry k", 0, 0, 0, 0},
};

static char *exact_copy(const char *text, size_t *size)
{
    *size = strlen(text);
    char *copy = malloc(*size ? *size : 1);
    memcpy(copy, text, *size);
    return copy;
}

static void test_forms(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct form_case *c = &cases[i];
        size_t size;
        char *text = exact_copy(c->text, &size);
        oc_kernel_list list = {0};
        oc_kernel_entry *e = NULL;
        CHECK(oc_kernel_list_add(NULL, &list, "k", 1, &e) == OC_OK);
        oc_ptx_entry_directives(text, size, &list, 0);
        e = &list.items[0];
        int bound = c->maxntid;
        if (c->reqntid > 0 && (bound == 0 || c->reqntid < bound)) bound = c->reqntid;
        CHECK_MSG(e->maxntid == c->maxntid, "%s: maxntid %d, expected %d", c->what, e->maxntid, c->maxntid);
        CHECK_MSG(e->reqntid == c->reqntid, "%s: reqntid %d, expected %d", c->what, e->reqntid, c->reqntid);
        CHECK_MSG(e->maxnreg == c->maxnreg, "%s: maxnreg %d, expected %d", c->what, e->maxnreg, c->maxnreg);
        CHECK_MSG(e->minnctapersm == c->minnctapersm, "%s: minnctapersm %d, expected %d", c->what, e->minnctapersm,
                  c->minnctapersm);
        CHECK_MSG(e->launch_bounds == bound && e->res.max_threads_per_block == bound,
                  "%s: launch bound %d, expected %d", c->what, e->launch_bounds, bound);
        oc_kernel_list_clear(&list);
        free(text);
    }
}

/* The entry asked for among several: each reads its own header, whatever comes between. */
static void test_several_entries(void)
{
    static const char ptx[] = ".version 9.0\n.target sm_90\n.address_size 64\n"
                              "/* .visible .entry b(\n)\n.maxntid 32\n{\n}\n */\n"
                              ".visible .entry a(\n\t.param .u64 p\n)\n.maxntid 0x100 // , 2\n{\n\tret;\n}\n"
                              ".visible .entry b(\n\t.param .u64 p\n)\n.reqntid 0b10000, /* y */ 010\n"
                              ".maxnreg 40\n.maxnreg 0x20U\n{\n\tret;\n}\n"
                              ".visible .entry c()\n{\n.maxntid 64\n}\n";
    size_t size;
    char *text = exact_copy(ptx, &size);
    oc_kernel_list list = {0};
    oc_kernel_entry *e = NULL;
    CHECK(oc_kernel_list_add(NULL, &list, "c", 1, &e) == OC_OK);
    CHECK(oc_kernel_list_add(NULL, &list, "b", 1, &e) == OC_OK);
    CHECK(oc_kernel_list_add(NULL, &list, "a", 1, &e) == OC_OK);
    oc_ptx_entry_directives(text, size, &list, 0);
    CHECK(list.items[0].launch_bounds == 0 && list.items[0].maxntid == 0);
    CHECK_MSG(list.items[1].reqntid == 128 && list.items[1].launch_bounds == 128 && list.items[1].maxnreg == 32,
              "b: reqntid %d, maxnreg %d", list.items[1].reqntid, list.items[1].maxnreg);
    CHECK_MSG(list.items[2].maxntid == 256 && list.items[2].launch_bounds == 256, "a: maxntid %d",
              list.items[2].maxntid);
    oc_kernel_list_clear(&list);

    /* `first` leaves the entries before it as they are. */
    CHECK(oc_kernel_list_add(NULL, &list, "a", 1, &e) == OC_OK);
    CHECK(oc_kernel_list_add(NULL, &list, "b", 1, &e) == OC_OK);
    oc_ptx_entry_directives(text, size, &list, 1);
    CHECK(list.items[0].maxntid == 0 && list.items[0].launch_bounds == 0);
    CHECK(list.items[1].reqntid == 128);
    oc_kernel_list_clear(&list);
    free(text);
}

/* .target and .version as tokens: a commented-out or quoted one declares nothing. */
static void test_target(void)
{
    static const struct {
        const char *text;
        int cc;
        char suffix;
    } targets[] = {
        {".version 8.5\n.target sm_90a\n", 90, 'a'},
        {"/* .target sm_80 */\n.version 8.5\n.target sm_90\n", 90, '\0'},
        {"// .target sm_80\n.target sm_86\n", 86, '\0'},
        {".file 1 \"/a/.target sm_70\"\n.target\tsm_89\n", 89, '\0'},
        {"/* .target sm_80 */\n", 0, '\0'},
        {".targets sm_80\n", 0, '\0'},
        {"/* .target sm_80", 0, '\0'},
    };
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; ++i) {
        const size_t n = strlen(targets[i].text);
        char *copy = malloc(n ? n : 1);
        memcpy(copy, targets[i].text, n);
        char suffix = 'x';
        CHECK_MSG(oc_ptx_target_cc(copy, n, &suffix) == targets[i].cc && suffix == targets[i].suffix, "target case %zu",
                  i);
        free(copy);
    }
    const char *text = "/* .version 8.5 */ .target sm_90";
    CHECK(oc_ptx_find_directive(text, strlen(text), ".version") == NULL);
}

int main(void)
{
    test_forms();
    test_several_entries();
    test_target();
    return oc_test_finish();
}
