/*
 * devices.c - oc_devices_query and oc_cuda_device_count: the GPUs outcore can use (through the
 * CUDA probe table in a CUDA build) and the CPU it falls back to, plus the JSON and text
 * renderings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/gpu_probe.h"
#include "core/text_buf.h"

int oc_cuda_device_count(void)
{
#ifdef OC_HAVE_CUDA
    int count = 0;
    while (count < 64 && oc_gpu_probe_cuda.usable(count)) count++;
    return count;
#else
    return 0;
#endif
}

/* "model name : Intel(R) Xeon(R) ..." from /proc/cpuinfo; "" where there is none (non-x86
 * kernels name the field differently, and that is not worth an error). */
void oc_cpu_model(char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        snprintf(buf, size, "%s", colon);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
}

oc_status oc_devices_query(oc_context *ctx, int bandwidth, oc_devices **out)
{
    if (!out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_devices_query: NULL argument");
    oc_devices *d = calloc(1, sizeof *d);
    if (!d) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory");
    oc_cpu_model(d->cpu_model, sizeof d->cpu_model);
    d->cpu_cores = oc_cpu_cores();
    snprintf(d->cpu_isa, sizeof d->cpu_isa, "%s", oc_cpu_isa());
#ifdef OC_HAVE_CUDA
    oc_status st = oc_gpu_probe_cuda.devices(ctx, bandwidth, d);
    if (st != OC_OK) {
        oc_devices_free(d);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
#else
    (void)bandwidth;
    snprintf(d->no_gpu_reason, sizeof d->no_gpu_reason, "this outcore was built without CUDA");
#endif
    *out = d;
    return OC_OK;
}

void oc_devices_free(oc_devices *devices)
{
    if (!devices) return;
    free(devices->devices);
    free(devices);
}

static void render_json(oc_text *t, const oc_devices *d)
{
    oc_text_printf(t, "{\"cpu\": {\"model\": ");
    oc_text_json_string(t, d->cpu_model);
    oc_text_printf(t, ", \"cores\": %d, \"isa\": \"%s\"}, \"no_gpu_reason\": ", d->cpu_cores, d->cpu_isa);
    if (d->count) oc_text_printf(t, "null");
    else oc_text_json_string(t, d->no_gpu_reason);
    oc_text_printf(t, ", \"gpus\": [");
    for (int i = 0; i < d->count; i++) {
        const oc_device_info *g = &d->devices[i];
        oc_text_printf(t, "%s\n  {\"index\": %d, \"name\": ", i ? "," : "", g->index);
        oc_text_json_string(t, g->name);
        oc_text_printf(
            t,
            ", \"compute_capability\": \"%d.%d\", \"sm_count\": %d, \"mem_total\": %lld, \"mem_free\": %lld, "
            "\"regs_per_sm\": %d, \"regs_per_block\": %d, \"smem_per_block\": %lld, \"smem_per_block_optin\": %lld, "
            "\"smem_per_sm\": %lld, \"max_threads_per_block\": %d, \"max_threads_per_sm\": %d, \"copy_engines\": %d, "
            "\"pci_bus_id\": ",
            g->cc / 10, g->cc % 10, g->sm_count, (long long)g->mem_total_bytes, (long long)g->mem_free_bytes,
            g->regs_per_sm, g->regs_per_block, (long long)g->smem_per_block, (long long)g->smem_per_block_optin,
            (long long)g->smem_per_sm, g->max_threads_per_block, g->max_threads_per_sm, g->copy_engines);
        oc_text_json_string(t, g->pci_bus_id);
        oc_text_printf(t, ", \"pcie_gen\": %d, \"pcie_width\": %d, \"pcie_gen_max\": %d, \"pcie_width_max\": %d",
                       g->pcie_gen, g->pcie_width, g->pcie_gen_max, g->pcie_width_max);
        if (g->bandwidth_bytes > 0)
            oc_text_printf(t,
                           ", \"bandwidth_gbps\": {\"bytes\": %lld, \"h2d_pageable\": %.2f, \"d2h_pageable\": %.2f, "
                           "\"h2d_pinned\": %.2f, \"d2h_pinned\": %.2f, \"bidirectional_pinned\": %.2f}",
                           (long long)g->bandwidth_bytes, g->h2d_pageable, g->d2h_pageable, g->h2d_pinned,
                           g->d2h_pinned, g->bidir_pinned);
        oc_text_printf(t, "}");
    }
    oc_text_printf(t, "%s]}\n", d->count ? "\n" : "");
}

static void render_text(oc_text *t, const oc_devices *d)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if (d->count == 0) oc_text_printf(t, "no usable GPU: %s\n", d->no_gpu_reason);
    for (int i = 0; i < d->count; i++) {
        const oc_device_info *g = &d->devices[i];
        oc_text_printf(t, "GPU %d: %s (sm_%d, compute capability %d.%d)\n", g->index, g->name, g->cc, g->cc / 10,
                       g->cc % 10);
        oc_text_printf(t, "  SMs                 %d\n", g->sm_count);
        oc_text_printf(t, "  memory              %.1f GiB total, %.1f GiB free\n", (double)g->mem_total_bytes / gib,
                       (double)g->mem_free_bytes / gib);
        oc_text_printf(t, "  registers           %d per SM, %d per block\n", g->regs_per_sm, g->regs_per_block);
        oc_text_printf(t, "  shared memory       %lld per block (%lld with opt-in), %lld per SM\n",
                       (long long)g->smem_per_block, (long long)g->smem_per_block_optin, (long long)g->smem_per_sm);
        oc_text_printf(t, "  threads             %d per block, %d per SM\n", g->max_threads_per_block,
                       g->max_threads_per_sm);
        oc_text_printf(t, "  copy engines        %d\n", g->copy_engines);
        if (g->pcie_gen > 0)
            oc_text_printf(t, "  PCIe                gen %d x%d (max gen %d x%d), bus %s\n", g->pcie_gen, g->pcie_width,
                           g->pcie_gen_max, g->pcie_width_max, g->pci_bus_id);
        else oc_text_printf(t, "  PCIe                bus %s (link generation and width need NVML)\n", g->pci_bus_id);
        if (g->bandwidth_bytes > 0) {
            oc_text_printf(t, "  bandwidth (GB/s, median of %lld MiB copies)\n", (long long)(g->bandwidth_bytes >> 20));
            oc_text_printf(t, "    host->device      pageable %6.2f   pinned %6.2f\n", g->h2d_pageable, g->h2d_pinned);
            oc_text_printf(t, "    device->host      pageable %6.2f   pinned %6.2f\n", g->d2h_pageable, g->d2h_pinned);
            oc_text_printf(t, "    both at once      pinned   %6.2f (total)\n", g->bidir_pinned);
        }
    }
    oc_text_printf(t, "CPU: %s, %d cores, outcore kernels: %s\n", d->cpu_model[0] ? d->cpu_model : "unknown model",
                   d->cpu_cores, d->cpu_isa);
}

oc_status oc_devices_render(oc_context *ctx, const oc_devices *devices, int json, char **out)
{
    if (!devices || !out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_devices_render: NULL argument");
    oc_text t = {0};
    if (json) render_json(&t, devices);
    else render_text(&t, devices);
    OC_CHECK(ctx, oc_text_finish(ctx, &t, out));
    return OC_OK;
}
