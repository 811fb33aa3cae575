/*
 * gen_rng.h - the random streams of outcore gen: xoshiro256** (Blackman and Vigna), fast and
 * good enough for test matrices, seeded by splitmix64.
 *
 * Every stream is named by (seed, kind, index): the bits of row i come from
 * (seed, GEN_STREAM_ROW, i), the flips of a planted copy at row i from (seed, GEN_STREAM_FLIP, i),
 * the choice of planted pairs from (seed, GEN_STREAM_PAIRS, 0). So a row's bytes depend on
 * nothing but the parameters and its index: not on the threads, the block size, or the
 * order in which rows are made.
 */
#ifndef OC_TOOLS_GEN_RNG_H
#define OC_TOOLS_GEN_RNG_H

#include <stdint.h>

typedef struct gen_rng {
    uint64_t s[4];
} gen_rng;

enum { GEN_STREAM_ROW = 1, GEN_STREAM_FLIP = 2, GEN_STREAM_PAIRS = 3 };

static inline uint64_t gen_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* One splitmix64 step from state x: a bijective mix of all 64 bits. */
static inline uint64_t gen_splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t gen_rng_next(gen_rng *r)
{
    uint64_t *s = r->s, result = gen_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = gen_rotl(s[3], 45);
    return result;
}

/* The stream (seed, kind, index): the key mixes the three (rows next to each other get
 * unrelated keys), and splitmix64 expands the key into the four words of the state, as
 * xoshiro's authors advise. */
static inline void gen_rng_stream(gen_rng *r, uint64_t seed, uint64_t kind, uint64_t index)
{
    uint64_t key = gen_splitmix64(gen_splitmix64(gen_splitmix64(seed) ^ (kind << 56)) ^ index);
    for (int k = 0; k < 4; ++k) r->s[k] = gen_splitmix64(key + (uint64_t)k * 0x9E3779B97F4A7C15ull);
}

/* Uniform in [0, n) (modulo bias below 2^-40 for any n a matrix has). */
static inline uint64_t gen_rng_below(gen_rng *r, uint64_t n) { return gen_rng_next(r) % n; }

#endif
