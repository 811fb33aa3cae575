#include "generate.h"

#include <stdlib.h>
#include <string.h>

/* xoshiro256** (Blackman and Vigna): fast, and good enough for test matrices. */
typedef struct rng { uint64_t s[4]; } rng;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static void rng_seed(rng *r, uint64_t seed)
{
    for (int k = 0; k < 4; ++k) { /* splitmix64 expands the seed */
        seed += 0x9E3779B97F4A7C15ull;
        uint64_t z = seed;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        r->s[k] = z ^ (z >> 31);
    }
}

#define DENSITY_BITS 12

/* A word whose bits are independently 1 with probability q / 2^DENSITY_BITS: walking q's
 * binary digits from the least significant, OR with a fresh random word for a 1 digit and
 * AND for a 0 digit halves-and-shifts the probability exactly. Trailing zero digits are
 * skipped, so density 0.5 costs one random word. */
static uint64_t random_word(rng *r, unsigned q)
{
    if (q == 0) return 0;
    if (q >= (1u << DENSITY_BITS)) return ~0ull;
    int low = __builtin_ctz(q);
    uint64_t x = 0;
    for (int bit = low; bit < DENSITY_BITS; ++bit) x = ((q >> bit) & 1) ? (x | rng_next(r)) : (x & rng_next(r));
    return x;
}

static uint64_t bound(rng *r, uint64_t n) { return rng_next(r) % n; }

oc_status gen_matrix(oc_context *ctx, const gen_params *p, oc_matrix **out, int64_t *pairs)
{
    int64_t bytes_per_row = (p->cols + 7) / 8, words = (bytes_per_row + 7) / 8;
    unsigned char *buf = malloc((size_t)(p->rows * words * 8));
    if (!buf) return OC_ERR_NO_MEMORY;
    rng r;
    rng_seed(&r, p->seed);
    unsigned q = (unsigned)(p->density * (1 << DENSITY_BITS) + 0.5);
    for (int64_t i = 0; i < p->rows * words; ++i) {
        uint64_t w = random_word(&r, q);
        memcpy(buf + 8 * i, &w, 8);
    }
    /* Plant pairs on distinct rows: row 2k+1 of a random permutation becomes a copy of row
     * 2k with a fraction `flip` of its bits flipped. */
    int64_t plant = p->plant < p->rows / 2 ? p->plant : p->rows / 2;
    int64_t *perm = plant ? malloc((size_t)p->rows * sizeof *perm) : NULL;
    if (plant && !perm) {
        free(buf);
        return OC_ERR_NO_MEMORY;
    }
    for (int64_t i = 0; plant && i < p->rows; ++i) perm[i] = i;
    for (int64_t i = 0; i < 2 * plant; ++i) { /* partial Fisher-Yates */
        int64_t j = i + (int64_t)bound(&r, (uint64_t)(p->rows - i)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int64_t flips = (int64_t)(p->flip * (double)p->cols + 0.5);
    for (int64_t k = 0; k < plant; ++k) {
        int64_t src = perm[2 * k], dst = perm[2 * k + 1];
        unsigned char *d = buf + dst * words * 8;
        memcpy(d, buf + src * words * 8, (size_t)bytes_per_row);
        for (int64_t f = 0; f < flips; ++f) {
            int64_t c = (int64_t)bound(&r, (uint64_t)p->cols);
            d[c >> 3] ^= (unsigned char)(0x80u >> (c & 7));
        }
        if (pairs) {
            pairs[2 * k] = dst;
            pairs[2 * k + 1] = src;
        }
    }
    free(perm);
    oc_status st = oc_matrix_from_bits(ctx, buf, p->rows, p->cols, words * 8, OC_BITS_MSB_FIRST, out);
    free(buf);
    if (st == OC_OK) st = oc_matrix_set_name(ctx, *out, "generated");
    return st;
}
