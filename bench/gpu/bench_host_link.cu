/*
 * bench_host_link.cu - what the host can feed several GPUs: page-locked (registered) host
 * memory copied to 1 and to every device at once (up to 4), the cost of pinning (one whole
 * registration, and one per 768 MB panel on every device at once), pageable copies (the
 * driver's own staging), cudaHostAlloc, and a file mapping registered read-only.
 *
 *   bench_host_link [FILE]     (FILE: a file of at least 3 GB for the mapping's figures)
 *
 * Each device moves 8 panels of 768 MB (the panel of A·Aᵀ at 10^6 bits a row) from its own
 * share of a host buffer of 6 GB per device. No outcore code runs: these are the host's and
 * the driver's figures that issue 20's scaling runs against (bench/RESULTS.md).
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>

#include "bench_check.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
#define GB(x) ((double)(x) / 1e9)

static const size_t CH = 768ull << 20; // one panel
static int NDEV;
static int CHUNKS_PER_DEV = 8;
static unsigned char *buf;

typedef struct {
    unsigned char *p;
    size_t n;
} touch_arg;
static void *touch(void *a)
{
    touch_arg *t = (touch_arg *)a;
    for (size_t i = 0; i < t->n; i += 4096) t->p[i] = (unsigned char)i;
    return 0;
}
static void par_touch(unsigned char *p, size_t n, int th)
{
    pthread_t tid[64];
    touch_arg a[64];
    size_t per = n / th;
    for (int i = 0; i < th; i++) {
        a[i].p = p + i * per;
        a[i].n = i == th - 1 ? n - i * per : per;
        pthread_create(&tid[i], 0, touch, &a[i]);
    }
    for (int i = 0; i < th; i++) pthread_join(tid[i], 0);
}

typedef struct {
    int dev;
    int mode;
    double t_reg, t_dma, t_all, t_unreg;
} job;
// mode 0: register each chunk then DMA (pipelined: register i+1 while i copies); unregister after.
// mode 1: DMA only (already registered).
// mode 2: pageable cudaMemcpyAsync (driver staging).
static void *run(void *a)
{
    job *j = (job *)a;
    CK(cudaSetDevice(j->dev));
    void *d;
    CK(cudaMalloc(&d, CH * 2));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned char *base = buf + (size_t)j->dev * CHUNKS_PER_DEV * CH;
    CK(cudaDeviceSynchronize());
    double t0 = now();
    j->t_reg = 0;
    for (int c = 0; c < CHUNKS_PER_DEV; c++) {
        unsigned char *src = base + c * CH;
        if (j->mode == 0) {
            double r = now();
            CK(cudaHostRegister(src, CH, cudaHostRegisterPortable));
            j->t_reg += now() - r;
        }
        CK(cudaMemcpyAsync((char *)d + (c & 1) * CH, src, CH, cudaMemcpyHostToDevice, s));
        if (j->mode == 2) CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    j->t_all = now() - t0;
    if (j->mode == 0) {
        double r = now();
        for (int c = 0; c < CHUNKS_PER_DEV; c++) CK(cudaHostUnregister(base + c * CH));
        j->t_unreg = now() - r;
    }
    CK(cudaFree(d));
    CK(cudaStreamDestroy(s));
    return 0;
}

static void phase(const char *name, int ndev, int mode)
{
    pthread_t t[8];
    job j[8];
    double t0 = now();
    for (int i = 0; i < ndev; i++) {
        j[i] = (job){i, mode, 0, 0, 0, 0};
        pthread_create(&t[i], 0, run, &j[i]);
    }
    for (int i = 0; i < ndev; i++) pthread_join(t[i], 0);
    double w = now() - t0, bytes = (double)ndev * CHUNKS_PER_DEV * CH;
    printf("%-34s devs %d: wall %.3f s, aggregate %.1f GB/s;", name, ndev, w, GB(bytes) / w);
    for (int i = 0; i < ndev; i++)
        printf(" [d%d all %.3f reg %.3f unreg %.3f]", i, j[i].t_all, j[i].t_reg, j[i].t_unreg);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    CK(cudaGetDeviceCount(&NDEV));
    if (NDEV > 4) NDEV = 4;
    for (int i = 0; i < NDEV; i++) {
        CK(cudaSetDevice(i));
        CK(cudaFree(0));
    }
    size_t total = (size_t)NDEV * CHUNKS_PER_DEV * CH;
    double t0 = now();
    buf = (unsigned char *)aligned_alloc(4096, total);
    par_touch(buf, total, 32);
    printf("touch %.1f GB: %.3f s\n", GB(total), now() - t0);
    // register whole buffer once
    t0 = now();
    CK(cudaHostRegister(buf, total, cudaHostRegisterPortable));
    double reg = now() - t0;
    printf("register whole %.1f GB portable: %.3f s (%.1f GB/s)\n", GB(total), reg, GB(total) / reg);
    fflush(stdout);
    phase("DMA, registered", 1, 1);
    phase("DMA, registered", NDEV, 1);
    phase("DMA, registered (again)", NDEV, 1);
    t0 = now();
    CK(cudaHostUnregister(buf));
    printf("unregister whole: %.3f s\n", now() - t0);
    phase("register per chunk + DMA", 1, 0);
    phase("register per chunk + DMA", NDEV, 0);
    phase("pageable memcpy", 1, 2);
    phase("pageable memcpy", NDEV, 2);
    t0 = now();
    void *h;
    CK(cudaHostAlloc(&h, CH * 4, cudaHostAllocPortable));
    printf("cudaHostAlloc 3 GB: %.3f s\n", now() - t0);
    t0 = now();
    CK(cudaFreeHost(h));
    printf("cudaFreeHost 3 GB: %.3f s\n", now() - t0);
    // file-backed mapping, registered read-only
    if (argc > 1) {
        int fd = open(argv[1], O_RDONLY);
        if (fd < 0) {
            perror(argv[1]);
            return 0;
        }
        size_t n = 4 * CH;
        off_t off = 4096 * 1024;
        unsigned char *m = (unsigned char *)mmap(0, n, PROT_READ, MAP_SHARED, fd, off);
        if (m == MAP_FAILED) {
            perror("mmap");
            return 0;
        }
        volatile unsigned long s = 0;
        t0 = now();
        for (size_t i = 0; i < n; i += 4096) s += m[i];
        printf("fault in file map 3 GB: %.3f s\n", now() - t0);
        t0 = now();
        cudaError_t e = cudaHostRegister(m, n, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
        printf("register file map 3 GB read-only: %.3f s (%s)\n", now() - t0, cudaGetErrorString(e));
        if (e == cudaSuccess) {
            CK(cudaSetDevice(0));
            void *d;
            CK(cudaMalloc(&d, n));
            t0 = now();
            CK(cudaMemcpy(d, m, n, cudaMemcpyHostToDevice));
            printf("DMA file map 3 GB: %.3f s (%.1f GB/s)\n", now() - t0, GB(n) / (now() - t0));
            t0 = now();
            CK(cudaHostUnregister(m));
            printf("unregister file map: %.3f s\n", now() - t0);
            CK(cudaFree(d));
        } else (void)cudaGetLastError();
    }
    return 0;
}
