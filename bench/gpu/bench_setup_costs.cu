/* What a device part's set-up pays before its first upload (src/engine/cuda/engine_worker.c), on
 * every device of the host: pinning a 16 MB upload ring with cudaHostAlloc, or with an
 * allocation aligned to 2 MiB and cudaHostRegister (its pages touched by memset first; or
 * advised MADV_HUGEPAGE and faulted in by the registration; or advised and populated with
 * MADV_POPULATE_WRITE first), alone and on one thread a device at once; a large device allocation
 * (the resident panels) with peer access off and on, which maps it into every peer; and a
 * stream-ordered pool whose access is granted to one peer afterwards. And device allocations of
 * 4 B to 256 MiB (a resident matmul's cuBLASLt workspace and int8 packing:
 * src/matmul/cuda/matmul_resident.c), cudaMalloc and cudaFree, on an idle device and each
 * after a 5 ms kernel, as a job's allocations come after the work before them; and the other
 * CUDA calls a resident matmul makes around its product, the same two ways.
 *
 *   build/bench/bench_setup_costs [PANELS_GIB (default 24)]
 *
 * Three rounds of the pinning, two of each allocation; milliseconds. */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_check.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const size_t ring_bytes = (size_t)16 << 20;

/* Keeps the device busy for about `cycles` clock cycles. */
__global__ void spin(long long cycles)
{
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}

/* cudaMalloc and cudaFree of each size on device 0, ten times after two unmeasured: the mean
 * of each, on an idle device, and with a 5 ms kernel run (and awaited) before each. */
static void small_allocations(void)
{
    static const size_t sizes[] = {4, 131, 65536, (size_t)2 << 20, (size_t)16 << 20, (size_t)256 << 20};
    CK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int clock_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    const long long five_ms = (long long)clock_khz * 5;
    for (int busy = 0; busy < 2; ++busy)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
            double made = 0, freed = 0;
            for (int r = 0; r < 12; ++r) {
                void *p;
                if (busy) {
                    spin<<<prop.multiProcessorCount, 32>>>(five_ms);
                    CK(cudaDeviceSynchronize());
                }
                double t = now();
                CK(cudaMalloc(&p, sizes[i]));
                const double m = now() - t;
                if (busy) {
                    spin<<<prop.multiProcessorCount, 32>>>(five_ms);
                    CK(cudaDeviceSynchronize());
                }
                t = now();
                CK(cudaFree(p));
                if (r >= 2) made += m, freed += now() - t;
            }
            printf("device allocation %10zu B, %-18s cudaMalloc %7.1f us, cudaFree %7.1f us\n", sizes[i],
                   busy ? "after a 5 ms kernel" : "idle device", made / 10 * 1e6, freed / 10 * 1e6);
        }
}

/* The CUDA calls a resident matmul makes around its one product (src/matmul/cuda/
 * matmul_cuda.c, matmul_resident.c), each timed alone on device 0, twenty times after two
 * unmeasured: the mean and the least, on an idle device and after a 5 ms kernel. */
enum { CALL_MEM_INFO, CALL_POINTER, CALL_SYNC, CALL_STREAM, CALL_PRIORITY_STREAM, CALL_EVENTS, CALL_KINDS };
static const char *const call_names[CALL_KINDS] = {
    "cudaMemGetInfo",          "cudaPointerGetAttributes",         "cudaDeviceSynchronize",
    "stream create + destroy", "priority stream create + destroy", "2 events create + destroy"};

static void one_call(int kind, void *p)
{
    size_t f, t;
    cudaPointerAttributes attr;
    cudaStream_t s;
    cudaEvent_t e[2];
    switch (kind) {
    case CALL_MEM_INFO:
        CK(cudaMemGetInfo(&f, &t));
        break;
    case CALL_POINTER:
        CK(cudaPointerGetAttributes(&attr, p));
        break;
    case CALL_SYNC:
        CK(cudaDeviceSynchronize());
        break;
    case CALL_STREAM:
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CK(cudaStreamDestroy(s));
        break;
    case CALL_PRIORITY_STREAM: {
        int least, greatest;
        CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
        CK(cudaStreamDestroy(s));
        break;
    }
    default:
        for (int i = 0; i < 2; ++i) CK(cudaEventCreateWithFlags(&e[i], cudaEventDisableTiming));
        for (int i = 0; i < 2; ++i) CK(cudaEventDestroy(e[i]));
    }
}

static void call_costs(void)
{
    CK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int clock_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    void *p;
    CK(cudaMalloc(&p, 1 << 20));
    for (int busy = 0; busy < 2; ++busy)
        for (int kind = 0; kind < CALL_KINDS; ++kind) {
            double sum = 0, least = 1e9;
            for (int r = 0; r < 22; ++r) {
                if (busy) {
                    spin<<<prop.multiProcessorCount, 32>>>((long long)clock_khz * 5);
                    CK(cudaDeviceSynchronize());
                }
                const double t = now();
                one_call(kind, p);
                const double d = now() - t;
                if (r >= 2) sum += d, least = d < least ? d : least;
            }
            printf("call %-34s %-19s mean %7.1f us, least %7.1f us\n", call_names[kind],
                   busy ? "after a 5 ms kernel" : "idle device", sum / 20 * 1e6, least * 1e6);
        }
    CK(cudaFree(p));
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* How a ring is pinned: cudaHostAlloc, or how after memset, after MADV_HUGEPAGE
 * alone, or after MADV_HUGEPAGE and MADV_POPULATE_WRITE. */
enum { PIN_HOST_ALLOC, PIN_MEMSET, PIN_HUGE, PIN_HUGE_POPULATE, PIN_KINDS };
static const char *const pin_names[PIN_KINDS] = {"cudaHostAlloc", "memset + register", "huge pages + register",
                                                 "huge, populated + register"};

typedef struct pin_arg {
    int device, how;
    double seconds;
    void *p;
} pin_arg;

static void *pin(void *v)
{
    pin_arg *a = (pin_arg *)v;
    CK(cudaSetDevice(a->device));
    double t = now();
    if (!a->how) {
        CK(cudaHostAlloc(&a->p, ring_bytes, cudaHostAllocPortable));
    } else {
        a->p = aligned_alloc((size_t)1 << 21, ring_bytes);
        if (!a->p) exit(1);
        if (a->how == PIN_MEMSET) memset(a->p, 0, ring_bytes);
        if (a->how >= PIN_HUGE) (void)madvise(a->p, ring_bytes, MADV_HUGEPAGE);
        if (a->how == PIN_HUGE_POPULATE) (void)madvise(a->p, ring_bytes, MADV_POPULATE_WRITE);
        CK(cudaHostRegister(a->p, ring_bytes, cudaHostRegisterPortable));
    }
    a->seconds = now() - t;
    return NULL;
}

static void unpin(pin_arg *a)
{
    if (!a->how) {
        CK(cudaFreeHost(a->p));
    } else {
        CK(cudaHostUnregister(a->p));
        free(a->p);
    }
}

int main(int argc, char **argv)
{
    int n;
    CK(cudaGetDeviceCount(&n));
    if (n > 16) n = 16;
    size_t big = (size_t)((argc > 1 ? atof(argv[1]) : 24.0) * 1073741824.0);
    for (int d = 0; d < n; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaFree(0));
    }
    for (int round = 0; round < 3; ++round)
        for (int how = 0; how < PIN_KINDS; ++how) {
            pin_arg one = {0, how, 0, NULL}, all[16];
            pthread_t th[16];
            pin(&one);
            unpin(&one);
            for (int d = 0; d < n; ++d) {
                all[d] = (pin_arg){d, how, 0, NULL};
                if (pthread_create(&th[d], NULL, pin, &all[d]) != 0) exit(1);
            }
            double slowest = 0;
            for (int d = 0; d < n; ++d) {
                pthread_join(th[d], NULL);
                if (all[d].seconds > slowest) slowest = all[d].seconds;
            }
            for (int d = 0; d < n; ++d) unpin(&all[d]);
            printf("pin 16 MB, %-27s alone %6.2f ms; on %d devices at once, the slowest %6.2f ms\n", pin_names[how],
                   one.seconds * 1e3, n, slowest * 1e3);
        }
    small_allocations();
    call_costs();
    if (n < 2) return 0;
    for (int peers = 0; peers < 2; ++peers) {
        if (peers)
            for (int d = 0; d < n; ++d) {
                CK(cudaSetDevice(d));
                for (int e = 0; e < n; ++e)
                    if (e != d) CK(cudaDeviceEnablePeerAccess(e, 0));
            }
        for (int round = 0; round < 2; ++round) {
            void *p;
            CK(cudaSetDevice(0));
            double t = now();
            CK(cudaMalloc(&p, big));
            double made = now() - t;
            t = now();
            CK(cudaFree(p));
            printf("cudaMalloc %.0f GiB on device 0, peer access %s (%d peers): %6.2f ms, cudaFree %6.2f ms\n",
                   (double)big / 1073741824.0, peers ? "on " : "off", n - 1, made * 1e3, (now() - t) * 1e3);
        }
    }
    cudaMemPool_t pool;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CK(cudaSetDevice(0));
    CK(cudaMemPoolCreate(&pool, &props));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (int round = 0; round < 2; ++round) {
        void *p;
        double t = now();
        CK(cudaMallocFromPoolAsync(&p, big, pool, s));
        CK(cudaStreamSynchronize(s));
        double made = now() - t;
        cudaMemAccessDesc access;
        memset(&access, 0, sizeof access);
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = 1;
        access.flags = cudaMemAccessFlagsProtReadWrite;
        t = now();
        CK(cudaMemPoolSetAccess(pool, &access, 1));
        double granted = now() - t;
        t = now();
        CK(cudaFreeAsync(p, s));
        CK(cudaStreamSynchronize(s));
        CK(cudaMemPoolTrimTo(pool, 0));
        printf("pool %.0f GiB on device 0: allocation %6.2f ms, access for device 1 %6.2f ms, free and trim %6.2f ms\n",
               (double)big / 1073741824.0, made * 1e3, granted * 1e3, (now() - t) * 1e3);
    }
    CK(cudaStreamDestroy(s));
    CK(cudaMemPoolDestroy(pool));
    return 0;
}
