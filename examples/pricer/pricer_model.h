/*
 * pricer_model.h - the Monte Carlo European call of the pricer example: the model, one path
 * step, and the payoff, shared by the CUDA kernel (pricer.cu) and the CPU check
 * (pricer_check.c), so both follow the same arithmetic on the same random numbers.
 *
 *   S_0 = S0,  S_{t+1} = S_t * exp((r - sigma^2 / 2) dt + sigma sqrt(dt) z_t),  dt = T / steps
 *   payoff = max(S_steps - K, 0),  price = exp(-r T) * mean(payoff)
 *   standard error = exp(-r T) * std(payoff) / sqrt(paths)
 *
 * z_t of path p is philox_normal_pair(p, t / 2, seed) (examples/common/philox.h).
 */
#ifndef OC_EXAMPLE_PRICER_MODEL_H
#define OC_EXAMPLE_PRICER_MODEL_H

#include "../common/philox.h"

typedef struct pricer_model {
    double s0, strike, sigma, rate, maturity;
    int steps;
    uint64_t seed;
} pricer_model;

/* The parameters: S0 = 20.83, K = 21.50, sigma = 0.021, r = 0.20, T = 5/12, 200 steps. */
#define PRICER_MODEL_DEFAULT {20.83, 21.50, 0.021, 0.20, 5.0 / 12.0, 200, 42}

/* Drift and volatility of one step, computed once. */
typedef struct pricer_step {
    double drift, vol;
} pricer_step;

PHILOX_FN pricer_step pricer_step_of(const pricer_model *m)
{
    double dt = m->maturity / m->steps;
    pricer_step s = {(m->rate - 0.5 * m->sigma * m->sigma) * dt, m->sigma * sqrt(dt)};
    return s;
}

/* Simulates path p; when out is not NULL, writes S_t to out[t * stride] for t = 0..steps (the
 * paths matrix is (steps + 1) x paths, one row per time step, so a warp's stores are
 * contiguous). Returns the payoff. */
PHILOX_FN double pricer_path(const pricer_model *m, pricer_step st, uint64_t p, double *out, int64_t stride)
{
    double s = m->s0, z0 = 0, z1 = 0;
    if (out) out[0] = s;
    for (int t = 0; t < m->steps; ++t) {
        if ((t & 1) == 0) philox_normal_pair(p, (uint32_t)(t >> 1), m->seed, &z0, &z1);
        s *= exp(st.drift + st.vol * ((t & 1) ? z1 : z0));
        if (out) out[(int64_t)(t + 1) * stride] = s;
    }
    return s > m->strike ? s - m->strike : 0.0;
}

#endif
