/*
 * philox.h - Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as
 * 1, 2, 3", SC'11) and Box-Muller normals, for CUDA kernels and for the CPU code that checks
 * them: one header, so both draw exactly the same numbers.
 *
 * A counter-based generator: the output is a pure function of (counter, key), so path p's
 * normal at step t is computed wherever it is needed, with no state to carry between chunks,
 * threads or devices. The examples use counter = {t / 2, 0, p_lo, p_hi}, key = the seed: one
 * Philox call gives four 32-bit words, two 53-bit uniforms, one Box-Muller pair, the normals
 * of steps 2k and 2k+1.
 *
 * Checked against the known-answer vectors of Random123 (examples/pricer/pricer_check.c).
 */
#ifndef OC_EXAMPLE_PHILOX_H
#define OC_EXAMPLE_PHILOX_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define PHILOX_FN __host__ __device__ static inline
#else
#define PHILOX_FN static inline
#endif

typedef struct philox4x32 {
    uint32_t v[4];
} philox4x32;

PHILOX_FN void philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

/* Ten rounds of Philox4x32 on ctr with key (k0, k1). */
PHILOX_FN philox4x32 philox4x32_10(philox4x32 ctr, uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0, lo0, hi1, lo1;
        philox_mulhilo(0xD2511F53u, ctr.v[0], &hi0, &lo0);
        philox_mulhilo(0xCD9E8D57u, ctr.v[2], &hi1, &lo1);
        philox4x32 next = {{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
        ctr = next;
        k0 += 0x9E3779B9u; /* the Weyl sequence of the key schedule */
        k1 += 0xBB67AE85u;
    }
    return ctr;
}

/* A uniform double in (0, 1) from 53 random bits: never 0, so log() below is finite. */
PHILOX_FN double philox_uniform53(uint32_t hi, uint32_t lo)
{
    uint64_t bits = ((uint64_t)hi << 21) ^ (lo >> 11);
    return ((double)bits + 0.5) * (1.0 / 9007199254740992.0); /* 2^-53 */
}

/* The two standard normals of path `path`, steps 2*pair and 2*pair + 1, for seed. */
PHILOX_FN void philox_normal_pair(uint64_t path, uint32_t pair, uint64_t seed, double *z0, double *z1)
{
    philox4x32 ctr = {{pair, 0u, (uint32_t)path, (uint32_t)(path >> 32)}};
    philox4x32 r = philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
    double u1 = philox_uniform53(r.v[0], r.v[1]), u2 = philox_uniform53(r.v[2], r.v[3]);
    double radius = sqrt(-2.0 * log(u1)), angle = 6.283185307179586476925 * u2;
    *z0 = radius * cos(angle);
    *z1 = radius * sin(angle);
}

#endif
