/*
 * pricer_check.c - the CPU half of the pricer example, checked without a GPU (CTest
 * example_pricer_cpu):
 *   - Philox4x32-10 reproduces Random123's known-answer vectors;
 *   - the Box-Muller normals have mean 0 and variance 1 within five standard errors;
 *   - the Monte Carlo price of the CPU reference (the same code the GPU check uses) agrees
 *     with the Black-Scholes formula within four standard errors.
 * Usage: pricer_check [paths]   (default 200000). Exit 0 when every check holds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pricer_model.h"

static int failures;

static void expect(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    failures += !ok;
}

static void known_answers(void)
{
    /* Random123's kat_vectors for philox4x32 with 10 rounds: counter, key, result. */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
         0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
         0x24126ea1},
    };
    int ok = 1;
    for (int i = 0; i < 3; ++i) {
        philox4x32 c = {{kat[i][0], kat[i][1], kat[i][2], kat[i][3]}};
        philox4x32 r = philox4x32_10(c, kat[i][4], kat[i][5]);
        for (int k = 0; k < 4; ++k) ok &= r.v[k] == kat[i][6 + k];
    }
    expect(ok, "Philox4x32-10 matches Random123's known-answer vectors");
}

static void normal_moments(void)
{
    const int64_t n = 1000000;
    double sum = 0, sum2 = 0;
    for (int64_t i = 0; i < n / 2; ++i) {
        double z0, z1;
        philox_normal_pair((uint64_t)i, 3, 7, &z0, &z1);
        sum += z0 + z1, sum2 += z0 * z0 + z1 * z1;
    }
    double mean = sum / n, var = sum2 / n - mean * mean;
    printf("      normals: mean %.5f, variance %.5f over %lld\n", mean, var, (long long)n);
    expect(fabs(mean) < 5.0 / sqrt((double)n) && fabs(var - 1) < 5.0 * sqrt(2.0 / n),
           "normals have mean 0 and variance 1 within five standard errors");
}

static double normal_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

static void price_against_black_scholes(int64_t paths)
{
    pricer_model m = PRICER_MODEL_DEFAULT;
    pricer_step st = pricer_step_of(&m);
    double sum = 0, sum2 = 0;
    for (int64_t p = 0; p < paths; ++p) {
        double pay = pricer_path(&m, st, (uint64_t)p, NULL, 0);
        sum += pay, sum2 += pay * pay;
    }
    double disc = exp(-m.rate * m.maturity), mean = sum / paths;
    double price = disc * mean, se = disc * sqrt((sum2 / paths - mean * mean) / paths);
    double srt = m.sigma * sqrt(m.maturity);
    double d1 = (log(m.s0 / m.strike) + (m.rate + 0.5 * m.sigma * m.sigma) * m.maturity) / srt, d2 = d1 - srt;
    double bs = m.s0 * normal_cdf(d1) - m.strike * disc * normal_cdf(d2);
    printf("      %lld paths: price %.6f, standard error %.6f; Black-Scholes %.6f\n", (long long)paths, price, se, bs);
    expect(fabs(price - bs) < 4 * se, "the Monte Carlo price agrees with Black-Scholes within four standard errors");
}

int main(int argc, char **argv)
{
    int64_t paths = argc > 1 ? atoll(argv[1]) : 200000;
    if (paths < 1000) {
        fprintf(stderr, "pricer_check: paths must be at least 1000\n");
        return 2;
    }
    known_answers();
    normal_moments();
    price_against_black_scholes(paths);
    return failures ? 1 : 0;
}
