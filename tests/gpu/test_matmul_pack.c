/*
 * test_matmul_pack.c - the int8 layouts of the CUDA matmul backend (matmul_pack.cuh) against
 * layouts computed here: the transpose with its zero padding, by words where the rows allow
 * (columns a multiple of 4, word-aligned pointers) and by bytes where they do not (odd
 * columns, a source one byte off), on edges that are and are not multiples of the kernels'
 * tiles; and the rows re-strided with zeros. Every byte of the destination is compared, the
 * padding included, after the destination was filled with a non-zero byte. Exits 77 when no
 * GPU is usable.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "../harness.h"
#include "core/context.h"
#include "engine/cuda/device.h"
#include "matmul/cuda/kernels/matmul_pack.cuh"

static oc_context *ctx;
static oc_cuda_device dev;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int8_t next_byte(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (int8_t)(rng >> 24);
}

/* The last cols columns of src, rows x src_ld at byte offset `skew` of its allocation,
 * transposed into dst_rows x ld. */
static void check_transpose(int64_t rows, int64_t cols, int64_t src_ld, int64_t ld, int64_t dst_rows, int skew)
{
    const size_t src_bytes = (size_t)(rows * src_ld), dst_bytes = (size_t)(dst_rows * ld);
    const int64_t c0 = src_ld - cols;
    int8_t *src = malloc(src_bytes + 1), *want = malloc(dst_bytes), *got = malloc(dst_bytes);
    int8_t *d_src = NULL, *d_dst = NULL;
    CHECK(src && want && got);
    if (!src || !want || !got) goto done;
    for (size_t i = 0; i < src_bytes; ++i) src[i] = next_byte();
    for (int64_t c = 0; c < dst_rows; ++c)
        for (int64_t r = 0; r < ld; ++r) want[c * ld + r] = r < rows && c < cols ? src[r * src_ld + c0 + c] : 0;
    CHECK(cudaMalloc((void **)&d_src, src_bytes + 1) == cudaSuccess);
    CHECK(cudaMalloc((void **)&d_dst, dst_bytes) == cudaSuccess);
    CHECK(cudaMemcpy(d_src + skew, src, src_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemset(d_dst, 0x5a, dst_bytes) == cudaSuccess);
    CHECK(cudaDeviceSynchronize() == cudaSuccess); /* the kernels' stream does not wait for the legacy one */
    CHECK(oc_mm_transpose_i8(ctx, &dev, d_src + skew + c0, rows, cols, src_ld, d_dst, ld, dst_rows, dev.compute) ==
          OC_OK);
    CHECK(cudaStreamSynchronize(dev.compute) == cudaSuccess);
    CHECK(cudaMemcpy(got, d_dst, dst_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    int64_t bad = -1;
    for (size_t i = 0; i < dst_bytes && bad < 0; ++i)
        if (got[i] != want[i]) bad = (int64_t)i;
    CHECK_MSG(bad < 0,
              "transpose %lld x %lld (rows %lld apart) into %lld x %lld (skew %d): first wrong byte at row %lld "
              "column %lld",
              (long long)rows, (long long)cols, (long long)src_ld, (long long)dst_rows, (long long)ld, skew,
              (long long)(bad < 0 ? 0 : bad / ld), (long long)(bad < 0 ? 0 : bad % ld));
done:
    cudaFree(d_src), cudaFree(d_dst);
    free(src), free(want), free(got);
}

static void check_pack_rows(int64_t rows, int64_t cols, int64_t ld)
{
    const size_t src_bytes = (size_t)(rows * cols), dst_bytes = (size_t)(rows * ld);
    int8_t *src = malloc(src_bytes), *got = malloc(dst_bytes), *d_src = NULL, *d_dst = NULL;
    CHECK(src && got);
    if (!src || !got) goto done;
    for (size_t i = 0; i < src_bytes; ++i) src[i] = next_byte();
    CHECK(cudaMalloc((void **)&d_src, src_bytes) == cudaSuccess);
    CHECK(cudaMalloc((void **)&d_dst, dst_bytes) == cudaSuccess);
    CHECK(cudaMemcpy(d_src, src, src_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemset(d_dst, 0x5a, dst_bytes) == cudaSuccess);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(oc_mm_pack_rows_i8(ctx, &dev, d_src, rows, cols, d_dst, ld, dev.compute) == OC_OK);
    CHECK(cudaStreamSynchronize(dev.compute) == cudaSuccess);
    CHECK(cudaMemcpy(got, d_dst, dst_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    int wrong = 0;
    for (int64_t r = 0; r < rows && !wrong; ++r)
        for (int64_t c = 0; c < ld && !wrong; ++c) wrong = got[r * ld + c] != (c < cols ? src[r * cols + c] : 0);
    CHECK_MSG(!wrong, "rows %lld x %lld re-strided to %lld", (long long)rows, (long long)cols, (long long)ld);
done:
    cudaFree(d_src), cudaFree(d_dst);
    free(src), free(got);
}

int main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        printf("SKIPPED: no usable CUDA device\n");
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    if (oc_context_create(&ctx) != OC_OK || oc_cuda_device_open(ctx, 0, &dev) != OC_OK) return 1;
    /* rows, cols, ld, dst_rows: words (cols % 4 == 0) on whole tiles, partial tiles, K padded
     * to 16 and beyond, extra zero rows below; bytes (odd cols); single rows and columns. */
    static const int64_t shapes[][4] = {
        {64, 64, 64, 64},         {128, 256, 128, 256}, {100, 36, 112, 36}, {1000, 1028, 1008, 1040},
        {16, 4, 16, 4},           {3, 8, 16, 8},        {65, 132, 80, 200}, {1, 4, 16, 4},
        {257, 33, 272, 33},       {45, 7, 48, 9},       {1, 1, 16, 1},      {130, 1, 144, 3},
        {4096, 1024, 4096, 1024},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
        check_transpose(shapes[i][0], shapes[i][1], shapes[i][1], shapes[i][2], shapes[i][3], 0);
        check_transpose(shapes[i][0], shapes[i][1], shapes[i][1], shapes[i][2], shapes[i][3], 1); /* not word-aligned */
        /* A block of columns of a wider matrix (int8's B transposed in chunks), its rows 260
         * bytes apart: on words, and off them. */
        check_transpose(shapes[i][0], shapes[i][1], shapes[i][1] + 260, shapes[i][2], shapes[i][3], 0);
        check_transpose(shapes[i][0], shapes[i][1], shapes[i][1] + 261, shapes[i][2], shapes[i][3], 0);
    }
    check_pack_rows(37, 20, 32);
    check_pack_rows(1, 1, 16);
    check_pack_rows(300, 64, 64);
    oc_cuda_device_close(&dev);
    oc_context_free(ctx);
    return oc_test_finish();
}
