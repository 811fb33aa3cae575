// register_pressure.cu - kernels with known register counts for `outcore inspect` and the
// launch-limit test. Each keeps LIVE values live at once (more than its cap), so ptxas needs
// every register __maxnreg__ grants and spills the rest: the cap decides the count exactly.
// On an H100 (sm_90) the largest block for 64/72/96/128/168/255 registers is
// 1024/896/640/512/384/256 threads; one warp more fails with cudaErrorLaunchOutOfResources.
//
// Each thread reads LIVE floats at in[thread * LIVE ...] and writes one float to out[thread].

template <int LIVE> __device__ __forceinline__ void keep_live(const float *in, float *out)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v[LIVE];
#pragma unroll
    for (int k = 0; k < LIVE; k++) v[k] = in[t * LIVE + k];
        // Every value feeds two others in each round, so none can be retired early.
#pragma unroll
    for (int round = 0; round < 2; round++) {
#pragma unroll
        for (int k = 0; k < LIVE; k++) v[k] = v[k] * v[(k + 1) % LIVE] + v[(k + 7) % LIVE];
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < LIVE; k++) s += v[k] * (float)(k + 1);
    out[t] = s;
}

#define PRESSURE_KERNEL(REGS, LIVE) \
    extern "C" __global__ void __maxnreg__(REGS) regs##REGS(const float *in, float *out) { keep_live<LIVE>(in, out); }

PRESSURE_KERNEL(64, 96)
PRESSURE_KERNEL(72, 104)
PRESSURE_KERNEL(96, 128)
PRESSURE_KERNEL(128, 160)
PRESSURE_KERNEL(168, 200)
PRESSURE_KERNEL(255, 288)

// The largest LIVE above: the buffer a launch needs per thread.
#define PRESSURE_MAX_LIVE 288
