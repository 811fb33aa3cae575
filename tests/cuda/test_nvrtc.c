/*
 * test_nvrtc.c - NVRTC loaded at run time: compilation, the one-line error of a program that
 * does not compile, and the disk cache (hit, miss on a changed option, a corrupt file, off).
 * NVRTC needs no GPU, so this runs on any machine of a CUDA build; it skips where libnvrtc
 * is absent.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "core/context.h"
#include "map/cuda/nvrtc.h"
#include "map/cuda/nvrtc_cache.h"

static const char *good = "extern \"C\" __global__ void scale(double *x, double a, long long n)\n"
                          "{\n"
                          "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                          "    if (i < n) x[i] *= a;\n"
                          "}\n";

static const char *bad = "extern \"C\" __global__ void broken(float *x)\n"
                         "{\n"
                         "    x[0] = undefined_name;\n"
                         "}\n";

static int is_elf(const oc_nvrtc_image *img)
{
    return img->size > 4 && memcmp(img->data,
                                   "\x7f"
                                   "ELF",
                                   4) == 0;
}

int main(void)
{
    char why[300];
    if (!oc_nvrtc_available(why, sizeof why)) {
        oc_test_skip(why);
        return oc_test_finish();
    }
    if (!oc_test_tmp_create("oc_nvrtc")) return 1;
    setenv("OUTCORE_NVRTC_CACHE", oc_test_tmp_path("cache"), 1);
    CHECK(oc_nvrtc_version() >= 11020);

    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    char dir[512];
    CHECK(oc_nvrtc_cache_dir(dir, sizeof dir) && strcmp(dir, oc_test_tmp_path("cache")) == 0);

    /* First compilation: NVRTC; second: the disk cache, the same bytes. */
    oc_nvrtc_source src = {"scale.cu", good, NULL, 0};
    oc_nvrtc_image a, b;
    CHECK(oc_nvrtc_compile(ctx, &src, 80, &a) == OC_OK);
    CHECK(a.is_cubin && a.target == 80 && !a.from_cache && is_elf(&a));
    CHECK(oc_test_dir_entries(dir) == 1);
    CHECK(oc_nvrtc_compile(ctx, &src, 80, &b) == OC_OK);
    CHECK(b.from_cache && b.size == a.size && memcmp(a.data, b.data, a.size) == 0);
    oc_nvrtc_image_free(&b);

    /* Another target or another option is another program. */
    CHECK(oc_nvrtc_compile(ctx, &src, 90, &b) == OC_OK);
    CHECK(!b.from_cache && b.target == 90 && is_elf(&b));
    oc_nvrtc_image_free(&b);
    const char *opts[] = {"-DUNUSED=1"};
    oc_nvrtc_source src2 = {"scale.cu", good, opts, 1};
    CHECK(oc_nvrtc_compile(ctx, &src2, 80, &b) == OC_OK);
    CHECK(!b.from_cache);
    oc_nvrtc_image_free(&b);
    CHECK(oc_test_dir_entries(dir) == 3);

    /* A damaged cache file is a miss, and compiling rewrites it. */
    char path[700];
    snprintf(path, sizeof path, "%s", dir);
    {
        FILE *ls = NULL;
        char cmd[800];
        snprintf(cmd, sizeof cmd, "ls %s/*-sm_80.bin", dir);
        ls = popen(cmd, "r");
        CHECK(ls && fgets(path, sizeof path, ls));
        if (ls) pclose(ls);
        path[strcspn(path, "\n")] = '\0';
    }
    size_t len = 0;
    unsigned char *bytes = oc_test_read_file(path, &len);
    CHECK(bytes && len > 64);
    if (bytes) {
        bytes[len - 1] ^= 0xff; /* a truncated or changed image: drop the last byte */
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(bytes, len - 1, 1, f) == 1);
        if (f) fclose(f);
        free(bytes);
    }
    int hits = 0;
    for (int i = 0; i < 2; ++i) {
        CHECK(oc_nvrtc_compile(ctx, &src, 80, &b) == OC_OK);
        hits += b.from_cache;
        CHECK(b.size == a.size && memcmp(a.data, b.data, a.size) == 0);
        oc_nvrtc_image_free(&b);
    }
    CHECK_EQ_I64(hits, 1); /* the damaged file missed, its rewrite hit */

    /* A program that does not compile: one line naming the program and NVRTC's error. */
    oc_nvrtc_source broken = {"broken.cu", bad, NULL, 0};
    CHECK(oc_nvrtc_compile(ctx, &broken, 80, &b) == OC_ERR_INVALID_ARGUMENT);
    const char *msg = oc_context_last_error(ctx);
    CHECK_MSG(msg && strstr(msg, "broken.cu") && strstr(msg, "line 3: error") && strstr(msg, "undefined_name") &&
                  !strchr(msg, '\n'),
              "message: %s", msg ? msg : "(none)");
    CHECK(b.data == NULL);
    printf("compile error: %s\n", msg ? msg : "");

    /* No disk cache: compiled each time, nothing written. */
    setenv("OUTCORE_NVRTC_CACHE", "off", 1);
    CHECK(!oc_nvrtc_cache_dir(dir, sizeof dir));
    CHECK(oc_nvrtc_compile(ctx, &src, 80, &b) == OC_OK && !b.from_cache);
    oc_nvrtc_image_free(&b);

    oc_nvrtc_image_free(&a);
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
