/*
 * bench_host_pin.cu - pinning host memory with and without transparent huge pages: 6 GB
 * faulted in by 32 threads (with MADV_NOHUGEPAGE, then MADV_HUGEPAGE, twice), 3 GB registered
 * whole and copied to device 0, then every device (up to 4) registering and copying two
 * panels of 768 MB at once.
 *
 *   bench_host_pin
 *
 * No outcore code runs (bench/RESULTS.md, issue 20: why panels are staged, not pinned).
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <stdint.h>

#include "bench_check.h"
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
static const size_t CH = 768ull << 20;
static const int NCH = 8; // 6 GB per buffer
typedef struct {
    unsigned char *p;
    size_t n;
} ta;
static void *touch(void *a)
{
    ta *t = (ta *)a;
    for (size_t i = 0; i < t->n; i += 4096) t->p[i] = 1;
    return 0;
}
static void par_touch(unsigned char *p, size_t n, int th)
{
    pthread_t tid[64];
    ta a[64];
    size_t per = n / th;
    for (int i = 0; i < th; i++) {
        a[i].p = p + i * per;
        a[i].n = per;
        pthread_create(&tid[i], 0, touch, &a[i]);
    }
    for (int i = 0; i < th; i++) pthread_join(tid[i], 0);
}
static long huge_kb(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char l[256];
    long v = -1;
    if (!f) return -1;
    while (fgets(l, sizeof l, f))
        if (!strncmp(l, "AnonHugePages:", 14)) v = atol(l + 14);
    fclose(f);
    return v;
}
typedef struct {
    unsigned char *p;
    int dev;
    double reg, all;
} rj;
static void *regdma(void *a)
{
    rj *j = (rj *)a;
    CK(cudaSetDevice(j->dev));
    void *d;
    CK(cudaMalloc(&d, CH));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    double t0 = now();
    for (int c = 0; c < 2; c++) {
        double r = now();
        CK(cudaHostRegister(j->p + c * CH, CH, cudaHostRegisterPortable));
        j->reg += now() - r;
        CK(cudaMemcpyAsync(d, j->p + c * CH, CH, cudaMemcpyHostToDevice, s));
    }
    CK(cudaStreamSynchronize(s));
    j->all = now() - t0;
    for (int c = 0; c < 2; c++) CK(cudaHostUnregister(j->p + c * CH));
    CK(cudaFree(d));
    return 0;
}
static void test(int huge)
{
    size_t n = CH * NCH;
    unsigned char *p =
        (unsigned char *)mmap(0, n + (2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p = (unsigned char *)(((uintptr_t)p + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
    int rc = madvise(p, n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    double t0 = now();
    par_touch(p, n, 32);
    double tt = now() - t0;
    printf("%s: madvise rc %d, touch 6 GB %.3f s, AnonHugePages %ld kB\n", huge ? "THP" : "4K ", rc, tt, huge_kb());
    t0 = now();
    CK(cudaHostRegister(p, 4 * CH, cudaHostRegisterPortable));
    double r = now() - t0;
    printf("  register 3 GB whole: %.3f s (%.1f GB/s)\n", r, 3.22 / r);
    CK(cudaSetDevice(0));
    void *d;
    CK(cudaMalloc(&d, 4 * CH));
    t0 = now();
    CK(cudaMemcpy(d, p, 4 * CH, cudaMemcpyHostToDevice));
    double m = now() - t0;
    printf("  DMA 3 GB to dev 0: %.3f s (%.1f GB/s)\n", m, 3.22 / m);
    CK(cudaFree(d));
    t0 = now();
    CK(cudaHostUnregister(p));
    printf("  unregister: %.3f s\n", now() - t0);
    int nd;
    CK(cudaGetDeviceCount(&nd));
    if (nd > 4) nd = 4;
    pthread_t th[4];
    rj j[4];
    t0 = now();
    for (int i = 0; i < nd; i++) {
        j[i] = (rj){p + (size_t)i * 2 * CH, i, 0, 0};
        pthread_create(&th[i], 0, regdma, &j[i]);
    }
    for (int i = 0; i < nd; i++) pthread_join(th[i], 0);
    double w = now() - t0;
    printf("  %d devices each register+DMA 2 chunks (1.5 GB): wall %.3f s, %.1f GB/s aggregate;", nd, w, nd * 1.61 / w);
    for (int i = 0; i < nd; i++) printf(" [reg %.3f all %.3f]", j[i].reg, j[i].all);
    printf("\n");
    munmap(p, n);
    fflush(stdout);
}
int main(void)
{
    int nd;
    CK(cudaGetDeviceCount(&nd));
    for (int i = 0; i < nd && i < 4; i++) {
        CK(cudaSetDevice(i));
        CK(cudaFree(0));
    }
    test(0);
    test(1);
    test(0);
    test(1);
    return 0;
}
