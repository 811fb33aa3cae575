/*
 * test_cli_visible.c - the CUDA_VISIBLE_DEVICES the CLI sets before its first CUDA call
 * (tools/cli/cli_visible.c): devices 0..M of the job's list, every index kept; "all", unknown
 * spellings and a list shorter than the job names leave the environment alone.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli_visible.h"
#include "harness.h"

/* cli_visible_prefix's answer and value, "-" when it leaves the environment alone. */
static const char *prefix(const char *devices, int device, const char *current)
{
    static char out[256];
    if (!cli_visible_prefix(devices, device, current, out, sizeof out)) return "-";
    return out;
}

static void expect(const char *devices, int device, const char *current, const char *want)
{
    const char *got = prefix(devices, device, current);
    CHECK_MSG(strcmp(got, want) == 0, "devices %s, device %d, CUDA_VISIBLE_DEVICES %s: got %s, want %s",
              devices ? devices : "(none)", device, current ? current : "(unset)", got, want);
}

int main(void)
{
    /* Unset: devices 0..M. */
    expect(NULL, 0, NULL, "0");
    expect("", 2, NULL, "0,1,2");
    expect("0,1", 0, NULL, "0,1");
    expect("1,3", 0, NULL, "0,1,2,3");
    expect("0:2", 0, NULL, "0");
    expect(" 2 , 0:4", 0, NULL, "0,1,2");
    /* Set: its first M+1 entries, whatever they are. */
    expect(NULL, 0, "2,3", "2");
    expect("1", 0, "GPU-aaaa,GPU-bbbb,GPU-cccc", "GPU-aaaa,GPU-bbbb");
    expect(NULL, 1, " 3, 1 ,0", "3,1 ");
    /* Left alone. */
    expect("all", 0, NULL, "-");
    expect("ALL", 0, "0,1", "-");
    expect("0,x", 0, NULL, "-");
    expect("0,,1", 0, NULL, "-");
    expect("-1", 0, NULL, "-");
    expect(NULL, -1, NULL, "-");
    expect(NULL, 2, "0,1", "-");  /* shorter than the job names: the job reports it */
    expect(NULL, 0, "", "-");     /* nothing visible */
    expect(NULL, 0, "0", "-");    /* already the one device */
    expect("0,1", 0, "0,1", "-"); /* already those */
    expect("99999999", 0, NULL, "-");
    /* The environment itself: narrowed once, and not by OUTCORE_ALL_DEVICES=1. */
    unsetenv("CUDA_VISIBLE_DEVICES");
    setenv("OUTCORE_ALL_DEVICES", "1", 1);
    cli_limit_visible_devices("0,1", 0);
    CHECK(getenv("CUDA_VISIBLE_DEVICES") == NULL);
    unsetenv("OUTCORE_ALL_DEVICES");
    cli_limit_visible_devices("0,1", 0);
    CHECK(getenv("CUDA_VISIBLE_DEVICES") && strcmp(getenv("CUDA_VISIBLE_DEVICES"), "0,1") == 0);
    cli_limit_visible_devices(NULL, 0);
    CHECK(getenv("CUDA_VISIBLE_DEVICES") && strcmp(getenv("CUDA_VISIBLE_DEVICES"), "0") == 0);
    return oc_test_finish();
}
