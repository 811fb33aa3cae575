/*
 * test_device_spec.c - parsing `--devices` and per-device `--gpu-mem` (engine/device_spec.h):
 * the logical devices and budgets they make, one-line errors naming the bad token, and the
 * physical devices a job opens (only those the options name, each once); budgets' text, and a
 * --host-mem percentage resolved to bytes (oc_host_mem_parse).
 */
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "engine/device_spec.h"

static oc_status parse(oc_context *ctx, const char *devices, const char *gpu_mem, int count, oc_device_list *out)
{
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.devices = devices;
    o.gpu_mem_devices = gpu_mem;
    return oc_device_list_parse(ctx, &o, count, out);
}

static void check_lists(oc_context *ctx)
{
    oc_device_list l;
    /* No list: the options' one device and budget. */
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.device = 2, o.gpu_mem_bytes = 1 << 30;
    CHECK(oc_device_list_parse(ctx, &o, 4, &l) == OC_OK);
    CHECK(l.count == 1 && l.dev[0].physical == 2 && l.dev[0].parts == 1 && l.dev[0].budget_bytes == 1 << 30);
    /* Without a size or a fraction: the default share, the one every options' INIT holds. */
    o.gpu_mem_bytes = 0, o.gpu_mem_fraction = 0;
    CHECK(oc_device_list_parse(ctx, &o, 4, &l) == OC_OK);
    CHECK(l.dev[0].budget_bytes == 0 && l.dev[0].budget_fraction == OC_GPU_MEM_FRACTION_DEFAULT);
    const oc_stream_options so = OC_STREAM_OPTIONS_INIT;
    const oc_matmul_options mo = OC_MATMUL_OPTIONS_INIT;
    CHECK(((oc_gram_options)OC_GRAM_OPTIONS_INIT).gpu_mem_fraction == OC_GPU_MEM_FRACTION_DEFAULT &&
          so.gpu_mem_fraction == OC_GPU_MEM_FRACTION_DEFAULT && mo.gpu_mem_fraction == OC_GPU_MEM_FRACTION_DEFAULT);

    CHECK(parse(ctx, "0,1,3", NULL, 4, &l) == OC_OK);
    CHECK(l.count == 3 && l.dev[0].physical == 0 && l.dev[1].physical == 1 && l.dev[2].physical == 3);
    CHECK(l.dev[2].budget_bytes == 0 && l.dev[2].budget_fraction == OC_GPU_MEM_FRACTION_DEFAULT);

    CHECK(parse(ctx, "all", NULL, 3, &l) == OC_OK);
    CHECK(l.count == 3 && l.dev[2].physical == 2);

    /* A split device: parts share its budget. */
    CHECK(parse(ctx, "0:2,1", "0=20G,1=40G", 2, &l) == OC_OK);
    CHECK_EQ_I64(l.count, 3);
    CHECK(l.dev[0].physical == 0 && l.dev[0].part == 0 && l.dev[0].parts == 2);
    CHECK(l.dev[1].physical == 0 && l.dev[1].part == 1 && l.dev[1].parts == 2);
    CHECK_EQ_I64(l.dev[0].budget_bytes, 10LL << 30);
    CHECK_EQ_I64(l.dev[1].budget_bytes, 10LL << 30);
    CHECK_EQ_I64(l.dev[2].budget_bytes, 40LL << 30);

    CHECK(parse(ctx, "0:3", "60%", 1, &l) == OC_OK);
    CHECK(l.count == 3 && l.dev[2].budget_bytes == 0 && l.dev[2].budget_fraction > 0.1999 &&
          l.dev[2].budget_fraction < 0.2001);

    /* A per-device budget for one device leaves the others the job's one budget. */
    o = (oc_gram_options)OC_GRAM_OPTIONS_INIT;
    o.devices = "0,1", o.gpu_mem_devices = "1=2G", o.gpu_mem_bytes = 1 << 30;
    CHECK(oc_device_list_parse(ctx, &o, 2, &l) == OC_OK);
    CHECK(l.dev[0].budget_bytes == 1 << 30 && l.dev[1].budget_bytes == 2LL << 30);

    char name[32];
    oc_logical_device_name(&(oc_logical_device){.physical = 0, .part = 1, .parts = 2}, name, sizeof name);
    CHECK(strcmp(name, "cuda:0.1/2") == 0);
    oc_logical_device_name(&(oc_logical_device){.physical = 3, .parts = 1}, name, sizeof name);
    CHECK(strcmp(name, "cuda:3") == 0);
}

/* Each bad spec fails with one line that names its bad token. */
static void check_errors(oc_context *ctx)
{
    static const struct {
        const char *devices, *gpu_mem;
        int count;
        const char *token;
    } bad[] = {
        {"0,x", NULL, 2, "\"x\""},
        {"0,,1", NULL, 2, "\"\""},
        {"0:0", NULL, 1, "\"0:0\""},
        {"0:9", NULL, 1, "\"0:9\""},
        {"0:a", NULL, 1, "\"0:a\""},
        {"0,0", NULL, 1, "\"0\""},
        {"1", NULL, 1, "\"1\""},
        {"-1", NULL, 2, "\"-1\""},
        {"0", "0=", 1, "\"0=\""},
        {"0", "1=2G", 2, "\"1=2G\""},
        {"0", "x=2G", 1, "\"x=2G\""},
        {"0", "2Q", 1, "\"2Q\""},
        {"0", "0=200%", 1, "\"0=200%\""},
        {"0:8,1:8,2", NULL, 3, "\"2\""},
        /* a device given two budgets: the last would win unseen */
        {"0,1", "0=1G,1=2G,0=2G", 2, "\"0=2G\": device 0 is given a budget twice"},
        {"0:2", "0=1G,0=2G", 1, "device 0 is given a budget twice"},
        /* entries longer than any that parses: refused, not cut to a prefix that parses */
        {"0", "0=2.0000000000000000000000000000000000000000000000000000000000000000000junk", 1, "too long"},
        {"0000000000000000000000000000000000000000000000000000000000000000000001", NULL, 2, "too long"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        oc_device_list l;
        CHECK_MSG(parse(ctx, bad[i].devices, bad[i].gpu_mem, bad[i].count, &l) == OC_ERR_INVALID_ARGUMENT, "case %zu",
                  i);
        const char *msg = oc_context_last_error(ctx);
        CHECK_MSG(strstr(msg, bad[i].token) && !strchr(msg, '\n'), "case %zu: \"%s\" does not name %s", i, msg,
                  bad[i].token);
    }
    /* No usable CUDA device (a build without CUDA, a machine without a GPU): the list cannot
     * run, whatever it names. */
    oc_device_list none;
    CHECK(parse(ctx, "all", NULL, 0, &none) == OC_ERR_UNSUPPORTED && strstr(oc_context_last_error(ctx), "\"all\""));
    CHECK(parse(ctx, "0", NULL, 0, &none) == OC_ERR_UNSUPPORTED && strstr(oc_context_last_error(ctx), "\"0\""));
}

/* The devices a job opens: the one device of a job without a list (not device 0, not all of
 * the machine's), each physical device once however many parts it has, in the list's order. */
static void check_opened(oc_context *ctx)
{
    oc_device_list l;
    int open[OC_MAX_LOGICAL_DEVICES];
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.device = 3;
    CHECK(oc_device_list_parse(ctx, &o, 4, &l) == OC_OK);
    CHECK(oc_device_list_physical(&l, 4, open) == 1 && open[0] == 3);
    o.device = 0;
    CHECK(oc_device_list_parse(ctx, &o, 8, &l) == OC_OK);
    CHECK(oc_device_list_physical(&l, 8, open) == 1 && open[0] == 0);

    CHECK(parse(ctx, "2:3,0,1:2", NULL, 4, &l) == OC_OK && l.count == 6);
    CHECK(oc_device_list_physical(&l, 4, open) == 3);
    CHECK(open[0] == 2 && open[1] == 0 && open[2] == 1);

    CHECK(parse(ctx, "all", NULL, 4, &l) == OC_OK);
    CHECK(oc_device_list_physical(&l, 4, open) == 4 && open[3] == 3);

    /* A device past the machine's count (a list parsed with the count unknown) is not opened. */
    CHECK(parse(ctx, "1,5", NULL, -1, &l) == OC_OK);
    CHECK(oc_device_list_physical(&l, 2, open) == 1 && open[0] == 1);
    CHECK(oc_device_list_physical(&l, -1, open) == 2 && open[1] == 5);
    memset(&l, 0, sizeof l);
    CHECK(oc_device_list_physical(&l, 4, open) == 0);
}

static void check_sizes(void)
{
    int64_t b = 0;
    double f = 0;
    CHECK(oc_size_parse("2G", &b, &f) == OC_OK && b == 2LL << 30 && f == 0);
    CHECK(oc_size_parse("512MiB", &b, &f) == OC_OK && b == 512LL << 20);
    CHECK(oc_size_parse("50%", &b, &f) == OC_OK && b == 0 && f == 0.5);
    CHECK(oc_size_parse("0", &b, &f) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_size_parse("101%", &b, &f) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_size_parse("3X", &b, &f) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_size_parse(NULL, &b, &f) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_size_parse("0x10", &b, &f) == OC_ERR_INVALID_ARGUMENT); /* decimal only */
    CHECK(oc_size_parse(" 2G", &b, &f) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_size_parse("2 G", &b, &f) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_size_parse("inf", &b, &f) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_size_parse("1.5e3", &b, &f) == OC_OK && b == 1500);
    /* Plain digits exactly up to 2^63 - 1 (a double would round it up to 2^63); scaled sizes
     * below 2^63. */
    CHECK(oc_size_parse("9223372036854775807", &b, &f) == OC_OK && b == INT64_MAX);
    CHECK(oc_size_parse("9223372036854775806", &b, &f) == OC_OK && b == INT64_MAX - 1);
    CHECK(oc_size_parse("9223372036854775808", &b, &f) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_size_parse("9.2e18", &b, &f) == OC_OK && b == 9200000000000000000LL);
    CHECK(oc_size_parse("8388607T", &b, &f) == OC_OK && b == 8388607LL << 40);
    CHECK(oc_size_parse("8388608T", &b, &f) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_size_parse("1e19", &b, &f) == OC_ERR_INVALID_ARGUMENT);
}

/* A host budget: a size as oc_size_parse reads it, a percentage of the physical memory in
 * bytes; a refusal sets nothing. */
static void check_host_mem(void)
{
    const double memory = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    int64_t b = 7;
    CHECK(oc_host_mem_parse("4G", &b) == OC_OK && b == 4LL << 30);
    CHECK(oc_host_mem_parse("4096", &b) == OC_OK && b == 4096);
    CHECK(oc_host_mem_parse("25%", &b) == OC_OK && b == (int64_t)(memory * 0.25));
    CHECK(oc_host_mem_parse("100%", &b) == OC_OK && b == (int64_t)memory);
    b = 7;
    CHECK(oc_host_mem_parse("0%", &b) == OC_ERR_INVALID_ARGUMENT && b == 7);
    CHECK(oc_host_mem_parse("150%", &b) == OC_ERR_INVALID_ARGUMENT && b == 7);
    CHECK(oc_host_mem_parse("garbage", &b) == OC_ERR_INVALID_ARGUMENT && b == 7);
    CHECK(oc_host_mem_parse("1e-12%", &b) == OC_ERR_INVALID_ARGUMENT && b == 7); /* less than a byte */
    CHECK(oc_host_mem_parse(NULL, &b) == OC_ERR_INVALID_ARGUMENT && b == 7);
    CHECK(oc_host_mem_parse("4G", NULL) == OC_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    check_lists(ctx);
    check_errors(ctx);
    check_opened(ctx);
    check_sizes();
    check_host_mem();
    oc_context_free(ctx);
    return oc_test_finish();
}
