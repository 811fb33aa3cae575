/*
 * test_kernel_image.c - the fatbinary reader of the launch doctor (src/inspect/kernel_image.c) on
 * hand-made images: sizes that point past the end of the file, and compressed PTX entries;
 * and the launch bounds that the cubin and PTX readers multiply out of three dimensions.
 * Each case is an input the fuzz targets found (tests/fuzz); the images are built in heap
 * buffers of their exact size, so the sanitizer pass of `make test` sees any read past them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "inspect/elf_read.h"
#include "inspect/cubin.h"
#include "inspect/kernel_image.h"
#include "inspect/kernel_list.h"
#include "inspect/ptx_directives.h"
#include "inspect/ptxas.h"

static oc_context *ctx;

static void put16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v) { put16(p, (uint16_t)v), put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(unsigned char *p, uint64_t v) { put32(p, (uint32_t)v), put32(p + 4, (uint32_t)(v >> 32)); }

#define FATBIN_MAGIC 0xBA55ED50u
#define ENTRY_HEADER 64

/* The 16-byte header of a fatbinary whose entries take body bytes. */
static void fatbin_header(unsigned char *p, uint16_t header_size, uint64_t body)
{
    put32(p, FATBIN_MAGIC);
    put16(p + 4, 1);
    put16(p + 6, header_size);
    put64(p + 8, body);
}

/* An entry header (layout in kernel_image.c). */
static void entry_header(unsigned char *p, int kind, uint32_t header_size, uint64_t payload, int cc, uint64_t flags)
{
    memset(p, 0, ENTRY_HEADER);
    put16(p, (uint16_t)kind);
    put16(p + 2, 0x0101);
    put32(p + 4, header_size);
    put64(p + 8, payload);
    put32(p + 28, (uint32_t)cc);
    put64(p + 40, flags);
}

/* Runs the reader over size bytes of image as a fatbinary for target_cc; takes image. */
static oc_status resources(unsigned char *image, size_t size, int target_cc, oc_kernel_list *list)
{
    oc_kernel_image img = {.path = "case.fatbin", .format = OC_IMAGE_FATBIN, .data = image, .size = size};
    oc_status st = oc_kernel_image_resources(ctx, &img, target_cc, NULL, list);
    oc_kernel_image_release(&img);
    return st;
}

static int says(const char *part) { return strstr(oc_context_last_error(ctx), part) != NULL; }

/* Sizes read from the file are checked against what remains before they are subtracted from
 * it: a fatbinary header or an entry header larger than the rest of the file is malformed,
 * not a wrapped-around length that walks outside the buffer. */
static void test_sizes_past_the_end(void)
{
    static const struct {
        const char *what;
        uint16_t header_size;  /* of the fatbinary */
        uint32_t entry_header; /* 0: no entry */
        uint64_t entry_payload;
        const char *part;
    } cases[] = {
        {"fatbinary header larger than the file", 0xFFFF, 0, 0, "truncated fatbinary at offset 0"},
        /* The entry's header and payload sizes add up to minus 8 bytes: a pointer that wraps
         * back inside the buffer and loops, or leaves it. */
        {"entry header larger than the rest", 16, 0x1000, (uint64_t)0 - 0x1000 - 8,
         "malformed fatbinary entry at offset 16"},
        {"entry payload larger than the rest", 16, ENTRY_HEADER, 1, "malformed fatbinary entry at offset 16"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t size = 16 + ENTRY_HEADER;
        unsigned char *image = calloc(1, size);
        if (!image) return;
        fatbin_header(image, cases[k].header_size, ENTRY_HEADER);
        if (cases[k].entry_header) entry_header(image + 16, 2, cases[k].entry_header, cases[k].entry_payload, 90, 0x11);
        oc_kernel_list list = {0};
        oc_status st = resources(image, size, 90, &list);
        CHECK_MSG(st == OC_ERR_INPUT && says("case.fatbin") && says(cases[k].part), "%s: status %d, message '%s'",
                  cases[k].what, (int)st, oc_context_last_error(ctx));
        oc_kernel_list_clear(&list);
    }
}

/* An LZ4 block that holds text as literals only (the last sequence of a block has no match). */
static size_t lz4_literals(const char *text, unsigned char *out)
{
    size_t len = strlen(text), n = 0;
    out[n++] = (unsigned char)((len < 15 ? len : 15) << 4);
    if (len >= 15) {
        size_t rest = len - 15;
        for (; rest >= 255; rest -= 255) out[n++] = 255;
        out[n++] = (unsigned char)rest;
    }
    memcpy(out + n, text, len);
    return n + len;
}

/* A fatbinary of one LZ4-compressed PTX entry for sm_80 holding ptx, which states plain_size
 * as its uncompressed size; *size is set. A compressed PTX entry keeps other data in the 4
 * bytes after its 32-bit compressed size (nvcc 13 writes 0x40 there). */
static unsigned char *lz4_ptx_fatbin(const char *ptx, uint64_t plain_size, size_t *size)
{
    unsigned char block[256];
    size_t packed = lz4_literals(ptx, block), padded = (packed + 7) / 8 * 8;
    *size = 16 + ENTRY_HEADER + padded;
    unsigned char *image = calloc(1, *size);
    if (!image) return NULL;
    fatbin_header(image, 16, ENTRY_HEADER + padded);
    unsigned char *e = image + 16;
    entry_header(e, 1, ENTRY_HEADER, padded, 80, 0x2011); /* PTX, LZ4 */
    put32(e + 16, (uint32_t)packed);
    put32(e + 20, 0x40);
    put64(e + 56, plain_size);
    memcpy(e + ENTRY_HEADER, block, packed);
    return image;
}

/* Read as a 64-bit size, the compressed size of a PTX entry took in the 0x40 after it and the
 * entry did not decompress: `inspect --arch` of any architecture that only the PTX serves
 * failed. A stated uncompressed size of 2^64 - 1 wrapped the buffer size to 0; one of 2^40
 * (more than 255 times the stored bytes, which no LZ4 block decodes to) sized an allocation
 * that aborted an ASan build (finding_zstd_stated_size_unbounded.fatbin, the zstd form). */
static void test_compressed_ptx_entry(void)
{
    static const char ptx[] = ".version 7.0\n.target sm_80\n.address_size 64\n\n"
                              ".visible .entry fuzz_found()\n{\n\tret;\n}\n";
    const struct {
        uint64_t plain_size;
        const char *part; /* NULL: it decompresses */
    } cases[] = {{strlen(ptx), NULL},
                 {strlen(ptx) + 1, "does not decompress"},
                 {UINT64_MAX, "uncompressed size"},
                 {1ULL << 40, "cannot hold"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t size;
        unsigned char *image = lz4_ptx_fatbin(ptx, cases[k].plain_size, &size);
        if (!image) return;
        oc_kernel_list list = {0};
        oc_status st = resources(image, size, 80, &list);
        if (cases[k].part) {
            CHECK_MSG(st == OC_ERR_INPUT && says("case.fatbin") && says(cases[k].part), "size %llu: status %d: %s",
                      (unsigned long long)cases[k].plain_size, (int)st, oc_context_last_error(ctx));
        } else {
            /* With the toolkit's ptxas the kernel is listed; without it, ptxas is what is missing. */
            CHECK_MSG(st == OC_OK || st == OC_ERR_UNSUPPORTED, "status %d: %s", (int)st, oc_context_last_error(ctx));
            if (st == OC_OK) CHECK(oc_kernel_list_find(&list, "fuzz_found", strlen("fuzz_found")) != NULL);
        }
        oc_kernel_list_clear(&list);
    }
}

/* A zstd frame may state any size: a 16-byte frame stating 1 GiB (a bomb: a gigabyte of zeros
 * compresses to a few dozen bytes) is refused before anything is allocated or decompressed. */
static void test_zstd_bomb(void)
{
    static const unsigned char frame[16] = {0x28, 0xB5, 0x2F, 0xFD,             /* magic */
                                            0xE0,                               /* 8-byte content size, one segment */
                                            0,    0,    0,    0x40, 0, 0, 0, 0, /* 2^30 */
                                            0x01, 0,    0};                     /* the last block: raw, empty */
    const size_t size = 16 + ENTRY_HEADER + sizeof frame;
    unsigned char *image = calloc(1, size);
    if (!image) return;
    fatbin_header(image, 16, ENTRY_HEADER + sizeof frame);
    unsigned char *e = image + 16;
    entry_header(e, 2, ENTRY_HEADER, sizeof frame, 80, 0x8011); /* cubin, zstd */
    put32(e + 16, (uint32_t)sizeof frame);                      /* the compressed size */
    put64(e + 56, 1ULL << 30);
    memcpy(e + ENTRY_HEADER, frame, sizeof frame);
    oc_kernel_list list = {0};
    oc_status st = resources(image, size, 80, &list);
    /* Without libzstd the entry is refused as one that cannot be read here. */
    CHECK_MSG((st == OC_ERR_INPUT && says("states 1073741824 bytes from 16 stored")) ||
                  (st == OC_ERR_UNSUPPORTED && says("libzstd")),
              "status %d: %s", (int)st, oc_context_last_error(ctx));
    oc_kernel_list_clear(&list);
}

/* A PTX entry whose architecture field no GPU has went to ptxas as -arch=sm_12345, which
 * refused it as a toolkit that cannot compile it (exit 1): it is bad input, as a PTX file's
 * unknown .target is (finding_ptx_entry_unknown_arch.fatbin). */
static void test_ptx_entry_unknown_arch(void)
{
    static const char ptx[] = ".version 7.0\n.target sm_80\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n";
    size_t size;
    unsigned char *image = lz4_ptx_fatbin(ptx, strlen(ptx), &size);
    if (!image) return;
    put32(image + 16 + 28, 12345);
    oc_kernel_list list = {0};
    oc_status st = resources(image, size, 0, &list);
    CHECK_MSG(st == OC_ERR_INVALID_ARGUMENT && says("compute_12345") && says("pass --arch"), "status %d: %s", (int)st,
              oc_context_last_error(ctx));
    oc_kernel_list_clear(&list);
}

/* .maxntid x, y, z whose product overflows int is no launch bound (it was signed overflow). */
static void test_ptx_launch_bounds(void)
{
    static const struct {
        const char *dims;
        int bound;
    } cases[] = {{"128, 2, 1", 256}, {"1024", 1024}, {"128, 2147483647, 1", 0}, {"65536, 65536, 2", 0}, {"0, 4, 4", 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char ptx[256];
        snprintf(ptx, sizeof ptx, ".visible .entry k(\n\t.param .u64 p\n)\n.maxntid %s\n{\n\tret;\n}\n", cases[k].dims);
        oc_kernel_list list = {0};
        oc_kernel_entry *e = NULL;
        CHECK(oc_kernel_list_add(ctx, &list, "k", 1, &e) == OC_OK);
        oc_ptx_entry_directives(ptx, strlen(ptx), &list, 0);
        CHECK_MSG(list.items[0].launch_bounds == cases[k].bound, ".maxntid %s: bound %d, expected %d", cases[k].dims,
                  list.items[0].launch_bounds, cases[k].bound);
        oc_kernel_list_clear(&list);
    }
}

/* ptxas' report: a register figure past int is no count (it read as -1). */
static void test_ptxas_report_registers(void)
{
    static const struct {
        const char *figure;
        int regs;
    } cases[] = {{"40", 40}, {"2147483647", 2147483647}, {"2147483648", 0}, {"66666666666666666666666666", 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char report[256];
        snprintf(report, sizeof report,
                 "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
                 "ptxas info    : Used %s registers, used 0 barriers\n",
                 cases[k].figure);
        oc_kernel_list list = {0};
        oc_ptxas_parse_report(report, &list, 0);
        CHECK_EQ_I64(list.count, 1);
        if (list.count == 1)
            CHECK_MSG(list.items[0].res.regs_per_thread == cases[k].regs, "'Used %s registers' read as %d",
                      cases[k].figure, list.items[0].res.regs_per_thread);
        oc_kernel_list_clear(&list);
    }
}

/* The committed seed cubin (nvcc -cubin -arch=sm_90, tests/fuzz/make_corpus.py); NULL when the
 * source tree is not at hand. */
static unsigned char *read_seed_cubin(size_t *size)
{
    const char *src = getenv("OUTCORE_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/cubin/sm_90.cubin", src ? src : ".");
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *data = malloc(1 << 16);
    *size = data ? fread(data, 1, 1 << 16, f) : 0;
    fclose(f);
    /* Exactly the file's size, so that a read past its end is a read past the allocation. */
    unsigned char *exact = data && *size ? realloc(data, *size) : NULL;
    if (!exact) free(data);
    return exact;
}

/* The value of the first attribute attr of `len` bytes in the .nv.info section `name` (layout
 * in cubin.c), or NULL. */
static unsigned char *nv_info_attribute(unsigned char *cubin, size_t size, const char *name, int attr, size_t len)
{
    const unsigned char *s;
    size_t n;
    if (!oc_elf_find_section(cubin, size, name, &s, &n)) return NULL;
    for (size_t at = 0; at + 4 <= n;) {
        size_t value = s[at] == 4 ? (size_t)(s[at + 2] | s[at + 3] << 8) : 0;
        if (s[at] == 4 && s[at + 1] == attr && value == len) return cubin + (s - cubin) + at + 4;
        at += 4 + value;
    }
    return NULL;
}

/* __launch_bounds__ dimensions whose product wraps in 32 bits (2 x (2^31 + 64) = 2^32 + 128)
 * read as no bound, not as 128 threads. */
static void test_cubin_launch_bounds(void)
{
    size_t size = 0;
    unsigned char *cubin = read_seed_cubin(&size);
    unsigned char *dims = cubin ? nv_info_attribute(cubin, size, ".nv.info.bounded", 0x05, 12) : NULL; /* MAX_THREADS */
    CHECK_MSG(dims != NULL, "the seed cubin or its kernel 'bounded' with __launch_bounds__(128) is missing");
    if (!dims) {
        free(cubin);
        return;
    }
    static const struct {
        uint32_t x, y, z;
        int bound;
    } cases[] = {{128, 1, 1, 128}, {2, 0x80000040u, 1, 0}, {0x10000, 0x10000, 1, 0}, {4, 8, 16, 512}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        put32(dims, cases[k].x), put32(dims + 4, cases[k].y), put32(dims + 8, cases[k].z);
        oc_kernel_list list = {0};
        CHECK(oc_cubin_resources(ctx, "seed.cubin", cubin, size, &list) == OC_OK);
        oc_kernel_entry *e = oc_kernel_list_find(&list, "bounded", strlen("bounded"));
        CHECK_MSG(e && e->launch_bounds == cases[k].bound, "{%u, %u, %u}: bound %d, expected %d", cases[k].x,
                  cases[k].y, cases[k].z, e ? e->launch_bounds : -1, cases[k].bound);
        oc_kernel_list_clear(&list);
    }
    free(cubin);
}

/* A register count past what any GPU gives a thread is bad input (it overflowed the launch
 * arithmetic, registers x 32 x warps, in int). */
static void test_cubin_register_count(void)
{
    size_t size = 0;
    unsigned char *cubin = read_seed_cubin(&size);
    /* EIATTR_REGCOUNT {symbol, count}: the first kernel's. */
    unsigned char *regcount = cubin ? nv_info_attribute(cubin, size, ".nv.info", 0x2f, 8) : NULL;
    CHECK_MSG(regcount != NULL, "the seed cubin or its register counts are missing");
    if (!regcount) {
        free(cubin);
        return;
    }
    int max_regs = 0;
    for (int a = 0; oc_gpu_arch_at(a); a++)
        if (oc_gpu_arch_at(a)->max_regs_per_thread > max_regs) max_regs = oc_gpu_arch_at(a)->max_regs_per_thread;
    const struct {
        uint32_t count;
        int good;
    } cases[] = {{1, 1}, {(uint32_t)max_regs, 1}, {(uint32_t)max_regs + 1, 0}, {0, 0}, {0x7DFFFFF0u, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        put32(regcount + 4, cases[k].count);
        oc_kernel_list list = {0};
        oc_status st = oc_cubin_resources(ctx, "seed.cubin", cubin, size, &list);
        CHECK_MSG(cases[k].good ? st == OC_OK : st == OC_ERR_INPUT && says("seed.cubin") && says("register"),
                  "%u registers: status %d, message '%s'", cases[k].count, (int)st, oc_context_last_error(ctx));
        oc_kernel_list_clear(&list);
    }
    free(cubin);
}

int main(void)
{
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_sizes_past_the_end();
    test_compressed_ptx_entry();
    test_zstd_bomb();
    test_ptx_entry_unknown_arch();
    test_ptx_launch_bounds();
    test_ptxas_report_registers();
    test_cubin_launch_bounds();
    test_cubin_register_count();
    oc_context_free(ctx);
    return oc_test_finish();
}
