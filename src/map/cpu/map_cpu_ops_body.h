/*
 * map_cpu_ops_body.h - the typed loops of the map interpreter (contract in map_cpu_ops.h),
 * written once and compiled once per instruction set: src/map/cpu/kernels/{ref,avx2,avx512}/
 * map_ops_*.c define OC_MAP_ISA and include this file with their ISA's flags, and
 * map_cpu_ops.c picks the set the CPU kernel path in use names (core/isa.h). Every loop
 * computes one operation, so no flag can fuse two roundings into one (no a * b + c to
 * contract): each instruction set gives the same bits.
 *
 * Each loop is a plain counted loop over arrays, written once as an element function per
 * type and instantiated per (op, type) by the LOOP macros below, which name only types and
 * functions: the compiler vectorises the loops it can (arithmetic, comparisons, casts) and
 * calls libm per element for the transcendental ones.
 * Signed integer arithmetic runs in uint64_t and is truncated back, which is numpy's
 * wrap-around without C's undefined behaviour on overflow.
 */
#include "map/cpu/map_cpu_ops.h"

#define OC_MAP_NAME2(a, b) a##_##b
#define OC_MAP_NAME(a, b) OC_MAP_NAME2(a, b)

#include <math.h>
#include <stdint.h>
#include <string.h>

/* name suffix, C type, unsigned counterpart, minimum */
#define SINTS(X) \
    X(i8, int8_t, INT8_MIN) X(i16, int16_t, INT16_MIN) X(i32, int32_t, INT32_MIN) X(i64, int64_t, INT64_MIN)
#define UINTS(X) X(u8, uint8_t) X(u16, uint16_t) X(u32, uint32_t) X(u64, uint64_t)
#define FLOATS(X) X(f32, float) X(f64, double)

typedef uint8_t bool8;

#define IS_NEG(x) ((x) < 0)
#define NEVER_NEG(x) 0

/* ---------------------------------------------------------------- element functions */

#define WRAP_FUNCS(S, T, NEG)                                                    \
    static inline T add_##S(T a, T b) { return (T)((uint64_t)a + (uint64_t)b); } \
    static inline T sub_##S(T a, T b) { return (T)((uint64_t)a - (uint64_t)b); } \
    static inline T mul_##S(T a, T b) { return (T)((uint64_t)a * (uint64_t)b); } \
    static inline T neg_##S(T a) { return (T)(0 - (uint64_t)a); }                \
    static inline T and_##S(T a, T b) { return (T)(a & b); }                     \
    static inline T or_##S(T a, T b) { return (T)(a | b); }                      \
    static inline T xor_##S(T a, T b) { return (T)(a ^ b); }                     \
    static inline T inv_##S(T a) { return (T)~a; }                               \
    static inline T same_##S(T a) { return a; }                                  \
    static inline T max_##S(T a, T b) { return a >= b ? a : b; }                 \
    static inline T min_##S(T a, T b) { return a <= b ? a : b; }                 \
    static inline T pow_##S(T a, T b, int *err)                                  \
    {                                                                            \
        if (NEG(b)) {                                                            \
            *err = 1;                                                            \
            return 0;                                                            \
        }                                                                        \
        uint64_t r = 1, base = (uint64_t)a;                                      \
        for (uint64_t e = (uint64_t)b; e; e >>= 1) {                             \
            if (e & 1) r *= base;                                                \
            base *= base;                                                        \
        }                                                                        \
        return (T)r;                                                             \
    }

/* An X-macro list, laid out by hand: */
/* clang-format off */
#define SINT_FUNCS(S, T, MIN)                                                                             \
    WRAP_FUNCS(S, T, IS_NEG)                                                                              \
    static inline T fdiv_##S(T a, T b)                                                                    \
    {                                                                                                     \
        if (b == 0) return 0;                                                                             \
        if (a == MIN && b == -1) return MIN;                                                              \
        T q = (T)(a / b);                                                                                 \
        return ((a > 0) != (b > 0)) && (T)(a % b) != 0 ? (T)(q - 1) : q;                                  \
    }                                                                                                     \
    static inline T mod_##S(T a, T b)                                                                     \
    {                                                                                                     \
        if (b == 0 || (a == MIN && b == -1)) return 0;                                                    \
        T r = (T)(a % b);                                                                                 \
        return r != 0 && ((r < 0) != (b < 0)) ? (T)(r + b) : r;                                           \
    }                                                                                                     \
    static inline T abs_##S(T a) { return a < 0 ? neg_##S(a) : a; }
/* clang-format on */
SINTS(SINT_FUNCS)

/* An X-macro list, laid out by hand: */
/* clang-format off */
#define UINT_FUNCS(S, T)                                                                                  \
    WRAP_FUNCS(S, T, NEVER_NEG)                                                                           \
    static inline T fdiv_##S(T a, T b) { return b == 0 ? 0 : (T)(a / b); }                               \
    static inline T mod_##S(T a, T b) { return b == 0 ? 0 : (T)(a % b); }                                \
    static inline T abs_##S(T a) { return a; }
/* clang-format on */
UINTS(UINT_FUNCS)

static inline bool8 add_b(bool8 a, bool8 b) { return a | b; }
static inline bool8 mul_b(bool8 a, bool8 b) { return a & b; }
static inline bool8 and_b(bool8 a, bool8 b) { return a & b; }
static inline bool8 or_b(bool8 a, bool8 b) { return a | b; }
static inline bool8 xor_b(bool8 a, bool8 b) { return a ^ b; }
static inline bool8 inv_b(bool8 a) { return !a; }
static inline bool8 same_b(bool8 a) { return a; }
static inline bool8 max_b(bool8 a, bool8 b) { return a | b; }
static inline bool8 min_b(bool8 a, bool8 b) { return a & b; }

/* numpy's npy_divmod (npymath): floor division and Python's modulo for floats. */
#define FLOAT_FUNCS(S, T, SUF)                                              \
    static inline T add_##S(T a, T b) { return a + b; }                     \
    static inline T sub_##S(T a, T b) { return a - b; }                     \
    static inline T mul_##S(T a, T b) { return a * b; }                     \
    static inline T div_##S(T a, T b) { return a / b; }                     \
    static inline T neg_##S(T a) { return -a; }                             \
    static inline T max_##S(T a, T b) { return a > b || isnan(a) ? a : b; } \
    static inline T min_##S(T a, T b) { return a < b || isnan(a) ? a : b; } \
    static inline T divmod_##S(T a, T b, T *modulus)                        \
    {                                                                       \
        T mod = fmod##SUF(a, b);                                            \
        if (b == 0) {                                                       \
            *modulus = mod;                                                 \
            return a / b;                                                   \
        }                                                                   \
        T div = (a - mod) / b;                                              \
        if (mod != 0) {                                                     \
            if ((b < 0) != (mod < 0)) {                                     \
                mod += b;                                                   \
                div -= (T)1;                                                \
            }                                                               \
        } else {                                                            \
            mod = copysign##SUF((T)0, b);                                   \
        }                                                                   \
        T fl;                                                               \
        if (div != 0) {                                                     \
            fl = floor##SUF(div);                                           \
            if (div - fl > (T)0.5) fl += (T)1;                              \
        } else {                                                            \
            fl = copysign##SUF((T)0, a / b);                                \
        }                                                                   \
        *modulus = mod;                                                     \
        return fl;                                                          \
    }                                                                       \
    static inline T fdiv_##S(T a, T b)                                      \
    {                                                                       \
        T m;                                                                \
        return b == 0 ? a / b : divmod_##S(a, b, &m);                       \
    }                                                                       \
    static inline T mod_##S(T a, T b)                                       \
    {                                                                       \
        T m;                                                                \
        if (b == 0) return fmod##SUF(a, b);                                 \
        divmod_##S(a, b, &m);                                               \
        return m;                                                           \
    }                                                                       \
    static inline T pow_##S(T a, T b, int *err) { return pow##SUF(a, b); }  \
    static inline T abs_##S(T a) { return fabs##SUF(a); }                   \
    static inline T sqrt_##S(T a) { return sqrt##SUF(a); }                  \
    static inline T exp_##S(T a) { return exp##SUF(a); }                    \
    static inline T log_##S(T a) { return log##SUF(a); }                    \
    static inline T log1p_##S(T a) { return log1p##SUF(a); }                \
    static inline T expm1_##S(T a) { return expm1##SUF(a); }                \
    static inline T sin_##S(T a) { return sin##SUF(a); }                    \
    static inline T cos_##S(T a) { return cos##SUF(a); }                    \
    static inline T tan_##S(T a) { return tan##SUF(a); }                    \
    static inline T tanh_##S(T a) { return tanh##SUF(a); }                  \
    static inline T floor_##S(T a) { return floor##SUF(a); }                \
    static inline T ceil_##S(T a) { return ceil##SUF(a); }                  \
    static inline T atan2_##S(T a, T b) { return atan2##SUF(a, b); }
FLOAT_FUNCS(f32, float, f)
FLOAT_FUNCS(f64, double, )

/* ---------------------------------------------------------------- loops */

#define LOOP1(NAME, T, R, F)                                                                       \
    static void NAME(void *d_, const void *a_, const void *b_, const void *c_, size_t n, int *err) \
    {                                                                                              \
        R *d = d_;                                                                                 \
        const T *a = a_;                                                                           \
        for (size_t i = 0; i < n; i++) d[i] = F(a[i]);                                             \
    }
/* A binary loop and its two scalar forms: NAME##_sb with b one value (a constant: `a * 2`),
 * NAME##_sa with a one value (`2 - a`), which keep the value in a register instead of
 * reading a block of copies of it (oc_map_cpu_loop_scalar). */
#define LOOP2(NAME, T, R, F)                                                                            \
    static void NAME(void *d_, const void *a_, const void *b_, const void *c_, size_t n, int *err)      \
    {                                                                                                   \
        R *d = d_;                                                                                      \
        const T *a = a_, *b = b_;                                                                       \
        for (size_t i = 0; i < n; i++) d[i] = F(a[i], b[i]);                                            \
    }                                                                                                   \
    static void NAME##_sb(void *d_, const void *a_, const void *b_, const void *c_, size_t n, int *err) \
    {                                                                                                   \
        R *d = d_;                                                                                      \
        const T *a = a_, s = *(const T *)b_;                                                            \
        for (size_t i = 0; i < n; i++) d[i] = F(a[i], s);                                               \
    }                                                                                                   \
    static void NAME##_sa(void *d_, const void *a_, const void *b_, const void *c_, size_t n, int *err) \
    {                                                                                                   \
        R *d = d_;                                                                                      \
        const T s = *(const T *)a_, *b = b_;                                                            \
        for (size_t i = 0; i < n; i++) d[i] = F(s, b[i]);                                               \
    }
/* Power reports a negative integer exponent through err; folded after the loop so that the
 * loop body stays branch-free. */
#define LOOP_POW(NAME, T, F)                                                                       \
    static void NAME(void *d_, const void *a_, const void *b_, const void *c_, size_t n, int *err) \
    {                                                                                              \
        T *d = d_;                                                                                 \
        const T *a = a_, *b = b_;                                                                  \
        int e = 0;                                                                                 \
        for (size_t i = 0; i < n; i++) d[i] = F(a[i], b[i], &e);                                   \
        if (e) *err = 1;                                                                           \
    }
#define LOOP_CMP(NAME, T, OP)                                                                           \
    static void NAME(void *d_, const void *a_, const void *b_, const void *c_, size_t n, int *err)      \
    {                                                                                                   \
        bool8 *d = d_;                                                                                  \
        const T *a = a_, *b = b_;                                                                       \
        for (size_t i = 0; i < n; i++) d[i] = a[i] OP b[i];                                             \
    }                                                                                                   \
    static void NAME##_sb(void *d_, const void *a_, const void *b_, const void *c_, size_t n, int *err) \
    {                                                                                                   \
        bool8 *d = d_;                                                                                  \
        const T *a = a_, s = *(const T *)b_;                                                            \
        for (size_t i = 0; i < n; i++) d[i] = a[i] OP s;                                                \
    }                                                                                                   \
    static void NAME##_sa(void *d_, const void *a_, const void *b_, const void *c_, size_t n, int *err) \
    {                                                                                                   \
        bool8 *d = d_;                                                                                  \
        const T s = *(const T *)a_, *b = b_;                                                            \
        for (size_t i = 0; i < n; i++) d[i] = s OP b[i];                                                \
    }
#define LOOP_WHERE(NAME, T)                                                                        \
    static void NAME(void *d_, const void *a_, const void *b_, const void *c_, size_t n, int *err) \
    {                                                                                              \
        T *d = d_;                                                                                 \
        const bool8 *c = a_;                                                                       \
        const T *x = b_, *y = c_;                                                                  \
        for (size_t i = 0; i < n; i++) d[i] = c[i] ? x[i] : y[i];                                  \
    }

/* where(p OP q, x, y) in one pass, the comparison in the result's type (map_cpu_ops.h:
 * oc_map_cpu_select): NAME over arrays, NAME##_sq with q one value. */
#define LOOP_SELECT(NAME, T, OP)                                                                              \
    static void NAME(void *d_, const void *p_, const void *q_, const void *x_, const void *y_, size_t n)      \
    {                                                                                                         \
        T *d = d_;                                                                                            \
        const T *p = p_, *q = q_, *x = x_, *y = y_;                                                           \
        for (size_t i = 0; i < n; i++) d[i] = p[i] OP q[i] ? x[i] : y[i];                                     \
    }                                                                                                         \
    static void NAME##_sq(void *d_, const void *p_, const void *q_, const void *x_, const void *y_, size_t n) \
    {                                                                                                         \
        T *d = d_;                                                                                            \
        const T *p = p_, s = *(const T *)q_, *x = x_, *y = y_;                                                \
        for (size_t i = 0; i < n; i++) d[i] = p[i] OP s ? x[i] : y[i];                                        \
    }
/* The loops come in two sets: those whose bits do not depend on the sign of the operand type
 * (equality, where, wrap-around arithmetic, bitwise), which an unsigned type shares with the
 * signed type of its width (the tables below name the signed loop for both: the same bits,
 * compiled once), and those that do (ordering, floor division, modulo, power, abs). */
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define EQ_LOOPS(S, T)                                                                                    \
    LOOP_SELECT(sel_eq_##S, T, ==) LOOP_SELECT(sel_ne_##S, T, !=)                                         \
    LOOP_CMP(eq_loop_##S, T, ==) LOOP_CMP(ne_loop_##S, T, !=) LOOP_WHERE(where_loop_##S, T)               \
    LOOP2(add_loop_##S, T, T, add_##S) LOOP2(mul_loop_##S, T, T, mul_##S)
/* clang-format on */
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define ORDER_LOOPS(S, T)                                                                                 \
    LOOP_SELECT(sel_lt_##S, T, <) LOOP_SELECT(sel_le_##S, T, <=)                                          \
    LOOP_SELECT(sel_gt_##S, T, >) LOOP_SELECT(sel_ge_##S, T, >=)                                          \
    LOOP_CMP(lt_loop_##S, T, <) LOOP_CMP(le_loop_##S, T, <=) LOOP_CMP(gt_loop_##S, T, >)                  \
    LOOP_CMP(ge_loop_##S, T, >=) LOOP2(max_loop_##S, T, T, max_##S) LOOP2(min_loop_##S, T, T, min_##S)
/* clang-format on */
#define CMP_LOOPS(S, T) EQ_LOOPS(S, T) ORDER_LOOPS(S, T) LOOP1(abs_loop_##S, T, T, abs_##S)
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define WRAP_LOOPS(S, T)                                                                                  \
    LOOP2(sub_loop_##S, T, T, sub_##S) LOOP1(neg_loop_##S, T, T, neg_##S)                                 \
    LOOP2(and_loop_##S, T, T, and_##S) LOOP2(or_loop_##S, T, T, or_##S) LOOP2(xor_loop_##S, T, T, xor_##S)  \
    LOOP1(inv_loop_##S, T, T, inv_##S) LOOP1(same_loop_##S, T, T, same_##S)
/* clang-format on */
#define SIGN_LOOPS(S, T) \
    LOOP2(fdiv_loop_##S, T, T, fdiv_##S) LOOP2(mod_loop_##S, T, T, mod_##S) LOOP_POW(pow_loop_##S, T, pow_##S)
#define SINT_LOOPS(S, T, MIN) CMP_LOOPS(S, T) WRAP_LOOPS(S, T) SIGN_LOOPS(S, T)
#define UINT_LOOPS(S, T) ORDER_LOOPS(S, T) SIGN_LOOPS(S, T)
SINTS(SINT_LOOPS)
UINTS(UINT_LOOPS)

static inline bool8 abs_b(bool8 a) { return a; }
CMP_LOOPS(b, bool8)
LOOP2(and_loop_b, bool8, bool8, and_b)
LOOP2(or_loop_b, bool8, bool8, or_b)
LOOP2(xor_loop_b, bool8, bool8, xor_b)
LOOP1(inv_loop_b, bool8, bool8, inv_b)
LOOP1(same_loop_b, bool8, bool8, same_b)

/* An X-macro list, laid out by hand: */
/* clang-format off */
#define FLOAT_LOOPS(S, T)                                                                                 \
    CMP_LOOPS(S, T)                                                                                       \
    LOOP2(sub_loop_##S, T, T, sub_##S) LOOP2(div_loop_##S, T, T, div_##S)                                 \
    LOOP2(fdiv_loop_##S, T, T, fdiv_##S) LOOP2(mod_loop_##S, T, T, mod_##S)                               \
    LOOP_POW(pow_loop_##S, T, pow_##S) LOOP1(neg_loop_##S, T, T, neg_##S)                                 \
    LOOP1(sqrt_loop_##S, T, T, sqrt_##S) LOOP1(exp_loop_##S, T, T, exp_##S)                               \
    LOOP1(log_loop_##S, T, T, log_##S) LOOP1(log1p_loop_##S, T, T, log1p_##S)                             \
    LOOP1(expm1_loop_##S, T, T, expm1_##S) LOOP1(sin_loop_##S, T, T, sin_##S)                             \
    LOOP1(cos_loop_##S, T, T, cos_##S) LOOP1(tan_loop_##S, T, T, tan_##S)                                 \
    LOOP1(tanh_loop_##S, T, T, tanh_##S) LOOP1(floor_loop_##S, T, T, floor_##S)                           \
    LOOP1(ceil_loop_##S, T, T, ceil_##S) LOOP2(atan2_loop_##S, T, T, atan2_##S)
/* clang-format on */
FLOATS(FLOAT_LOOPS)

/* ---------------------------------------------------------------- min and max folds */

/* The min (OP <) or max (OP >) of x[0..n) (map_cpu_ops.h: oc_map_cpu_minmax) in FOLD_LANES(T)
 * running values, one per vector lane (64 bytes of them: two AVX2 registers, one AVX-512
 * register), so that no element waits on the one before it; a NaN is kept apart, in a lane of
 * its own array (the same type, so that the loop stays in one type), and the lanes are folded in
 * order at the end, then the tail. The lanes' loop is kept a loop (unroll 1): fully unrolled, it
 * is no longer vectorised. The value is exact whatever the lanes; the element returned is the
 * first in index order of those equal to it: for floats (FLT) a NaN, or a zero (+0.0 and -0.0
 * tie), is looked up again in x. */
#define FOLD_LANES(T) (64 / sizeof(T))
#define LOOP_FOLD(NAME, T, OP, FLT)                                                                       \
    static void NAME(void *out, const void *x_, size_t n)                                                 \
    {                                                                                                     \
        const T *x = x_;                                                                                  \
        T r = x[0];                                                                                       \
        size_t i = 1;                                                                                     \
        int has_nan = r != r;                                                                             \
        if (n >= FOLD_LANES(T)) {                                                                         \
            T m[FOLD_LANES(T)], q[FOLD_LANES(T)];                                                         \
            for (size_t j = 0; j < FOLD_LANES(T); j++) m[j] = x[j], q[j] = 0;                             \
            for (i = 0; i + FOLD_LANES(T) <= n; i += FOLD_LANES(T)) {                                     \
                _Pragma("GCC unroll 1") for (size_t j = 0; j < FOLD_LANES(T); j++)                        \
                {                                                                                         \
                    T v = x[i + j];                                                                       \
                    m[j] = v OP m[j] ? v : m[j];                                                          \
                    q[j] = v != v ? v : q[j];                                                             \
                }                                                                                         \
            }                                                                                             \
            for (size_t j = 0; j < FOLD_LANES(T); j++) r = m[j] OP r ? m[j] : r, has_nan |= q[j] != q[j]; \
        }                                                                                                 \
        for (; i < n; i++) r = x[i] OP r ? x[i] : r, has_nan |= x[i] != x[i];                             \
        if (FLT && (has_nan || r == 0)) {                                                                 \
            for (i = 0; has_nan ? x[i] == x[i] : x[i] != 0; i++) continue;                                \
            r = x[i];                                                                                     \
        }                                                                                                 \
        memcpy(out, &r, sizeof r);                                                                        \
    }
#define FOLDS(S, T, FLT) LOOP_FOLD(fold_min_##S, T, <, FLT) LOOP_FOLD(fold_max_##S, T, >, FLT)
#define SINT_FOLDS(S, T, MIN) FOLDS(S, T, 0)
#define UINT_FOLDS(S, T) FOLDS(S, T, 0)
#define FLOAT_FOLDS(S, T) FOLDS(S, T, 1)
SINTS(SINT_FOLDS)
UINTS(UINT_FOLDS)
FLOATS(FLOAT_FOLDS)

/* ---------------------------------------------------------------- tables */

/* The binary ops' entries, X the form: empty (arrays), _sb or _sa (one operand a value); S names
 * the type's own loops, W those it shares (the signed type of its width, or S itself). */
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define CMP_BIN_ROW(S, W, M, X)                                                                           \
    [MOP_EQ][M] = eq_loop_##W##X, [MOP_NE][M] = ne_loop_##W##X, [MOP_LT][M] = lt_loop_##S##X,             \
    [MOP_LE][M] = le_loop_##S##X, [MOP_GT][M] = gt_loop_##S##X, [MOP_GE][M] = ge_loop_##S##X,             \
    [MOP_MAXIMUM][M] = max_loop_##S##X, [MOP_MINIMUM][M] = min_loop_##S##X, [MOP_ADD][M] = add_loop_##W##X, \
    [MOP_MUL][M] = mul_loop_##W##X
/* clang-format on */
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define INT_BIN_ROW(S, W, M, X)                                                                           \
    CMP_BIN_ROW(S, W, M, X), [MOP_SUB][M] = sub_loop_##W##X, [MOP_FLOORDIV][M] = fdiv_loop_##S##X,        \
    [MOP_MOD][M] = mod_loop_##S##X, [MOP_AND][M] = and_loop_##W##X, [MOP_OR][M] = or_loop_##W##X,         \
    [MOP_XOR][M] = xor_loop_##W##X
/* clang-format on */
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define FLOAT_BIN_ROW(S, M, X)                                                                            \
    CMP_BIN_ROW(S, S, M, X), [MOP_SUB][M] = sub_loop_##S##X, [MOP_DIV][M] = div_loop_##S##X,              \
    [MOP_FLOORDIV][M] = fdiv_loop_##S##X, [MOP_MOD][M] = mod_loop_##S##X, [MOP_ARCTAN2][M] = atan2_loop_##S##X
/* clang-format on */
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define BOOL_BIN_ROW(X)                                                                                   \
    CMP_BIN_ROW(b, b, MT_BOOL, X), [MOP_AND][MT_BOOL] = and_loop_b##X, [MOP_OR][MT_BOOL] = or_loop_b##X,  \
    [MOP_XOR][MT_BOOL] = xor_loop_b##X
/* clang-format on */
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define ALL_BIN_ROWS(X)                                                                                   \
    BOOL_BIN_ROW(X), INT_BIN_ROW(i8, i8, MT_I8, X), INT_BIN_ROW(i16, i16, MT_I16, X),                     \
    INT_BIN_ROW(i32, i32, MT_I32, X), INT_BIN_ROW(i64, i64, MT_I64, X), INT_BIN_ROW(u8, i8, MT_U8, X),    \
    INT_BIN_ROW(u16, i16, MT_U16, X), INT_BIN_ROW(u32, i32, MT_U32, X), INT_BIN_ROW(u64, i64, MT_U64, X), \
    FLOAT_BIN_ROW(f32, MT_F32, X), FLOAT_BIN_ROW(f64, MT_F64, X)
/* clang-format on */

/* The other ops' entries (unary, power, where); ABS the abs loop (an unsigned type's is the
 * identity, its width's same_loop). */
#define CMP_ROW(W, ABS, M) [MOP_WHERE][M] = where_loop_##W, [MOP_ABS][M] = ABS
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define INT_ROW(S, W, ABS, M)                                                                             \
    CMP_ROW(W, ABS, M), [MOP_POW][M] = pow_loop_##S, [MOP_NEG][M] = neg_loop_##W,                         \
    [MOP_INVERT][M] = inv_loop_##W, [MOP_FLOOR][M] = same_loop_##W, [MOP_CEIL][M] = same_loop_##W
/* clang-format on */
#define SINT_ROW(S, M) INT_ROW(S, S, abs_loop_##S, M)
#define UINT_ROW(S, W, M) INT_ROW(S, W, same_loop_##W, M)
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define FLOAT_ROW(S, M)                                                                                   \
    CMP_ROW(S, abs_loop_##S, M), [MOP_POW][M] = pow_loop_##S,                                             \
    [MOP_NEG][M] = neg_loop_##S, [MOP_SQRT][M] = sqrt_loop_##S, [MOP_EXP][M] = exp_loop_##S,              \
    [MOP_LOG][M] = log_loop_##S, [MOP_LOG1P][M] = log1p_loop_##S, [MOP_EXPM1][M] = expm1_loop_##S,        \
    [MOP_SIN][M] = sin_loop_##S, [MOP_COS][M] = cos_loop_##S, [MOP_TAN][M] = tan_loop_##S,                \
    [MOP_TANH][M] = tanh_loop_##S, [MOP_FLOOR][M] = floor_loop_##S, [MOP_CEIL][M] = ceil_loop_##S
/* clang-format on */

static const oc_map_loop loops[MOP_COUNT][OC_MT_COUNT] = {
    ALL_BIN_ROWS(),
    CMP_ROW(b, abs_loop_b, MT_BOOL),
    [MOP_INVERT][MT_BOOL] = inv_loop_b,
    [MOP_FLOOR][MT_BOOL] = same_loop_b,
    [MOP_CEIL][MT_BOOL] = same_loop_b,
    SINT_ROW(i8, MT_I8),
    SINT_ROW(i16, MT_I16),
    SINT_ROW(i32, MT_I32),
    SINT_ROW(i64, MT_I64),
    UINT_ROW(u8, i8, MT_U8),
    UINT_ROW(u16, i16, MT_U16),
    UINT_ROW(u32, i32, MT_U32),
    UINT_ROW(u64, i64, MT_U64),
    FLOAT_ROW(f32, MT_F32),
    FLOAT_ROW(f64, MT_F64),
};
static const oc_map_loop loops_sb[MOP_COUNT][OC_MT_COUNT] = {ALL_BIN_ROWS(_sb)};
static const oc_map_loop loops_sa[MOP_COUNT][OC_MT_COUNT] = {ALL_BIN_ROWS(_sa)};

/* An X-macro list, laid out by hand: */
/* clang-format off */
#define SELECT_ROW(S, W, M, X)                                                                            \
    [MOP_EQ - MOP_EQ][M] = sel_eq_##W##X, [MOP_NE - MOP_EQ][M] = sel_ne_##W##X,                           \
    [MOP_LT - MOP_EQ][M] = sel_lt_##S##X, [MOP_LE - MOP_EQ][M] = sel_le_##S##X,                           \
    [MOP_GT - MOP_EQ][M] = sel_gt_##S##X, [MOP_GE - MOP_EQ][M] = sel_ge_##S##X
/* clang-format on */
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define SELECT_ROWS(X)                                                                                    \
    SELECT_ROW(b, b, MT_BOOL, X), SELECT_ROW(i8, i8, MT_I8, X), SELECT_ROW(i16, i16, MT_I16, X),          \
    SELECT_ROW(i32, i32, MT_I32, X), SELECT_ROW(i64, i64, MT_I64, X), SELECT_ROW(u8, i8, MT_U8, X),       \
    SELECT_ROW(u16, i16, MT_U16, X), SELECT_ROW(u32, i32, MT_U32, X), SELECT_ROW(u64, i64, MT_U64, X),    \
    SELECT_ROW(f32, f32, MT_F32, X), SELECT_ROW(f64, f64, MT_F64, X)
/* clang-format on */
static const oc_map_select_loop selects[MOP_GE - MOP_EQ + 1][OC_MT_COUNT] = {SELECT_ROWS()};
static const oc_map_select_loop selects_sq[MOP_GE - MOP_EQ + 1][OC_MT_COUNT] = {SELECT_ROWS(_sq)};

/* folds[is_max][t]; bool's is uint8's (its bytes compared as numbers, any nonzero one true). */
/* An X-macro list, laid out by hand: */
/* clang-format off */
#define FOLD_ROW(P)                                                                                       \
    {                                                                                                     \
        fold_##P##_u8, fold_##P##_i8, fold_##P##_i16, fold_##P##_i32, fold_##P##_i64, fold_##P##_u8,      \
            fold_##P##_u16, fold_##P##_u32, fold_##P##_u64, fold_##P##_f32, fold_##P##_f64                \
    }
/* clang-format on */
static const oc_map_fold_loop folds[2][OC_MT_COUNT] = {FOLD_ROW(min), FOLD_ROW(max)};

oc_map_fold_loop OC_MAP_NAME(oc_map_cpu_minmax, OC_MAP_ISA)(int t, int is_max)
{
    return t >= 0 && t < OC_MT_COUNT ? folds[is_max != 0][t] : NULL;
}

oc_map_select_loop OC_MAP_NAME(oc_map_cpu_select, OC_MAP_ISA)(oc_map_op cmp, int t, int q_value)
{
    if (cmp < MOP_EQ || cmp > MOP_GE || t < 0 || t >= OC_MT_COUNT) return NULL;
    return q_value ? selects_sq[cmp - MOP_EQ][t] : selects[cmp - MOP_EQ][t];
}

oc_map_loop OC_MAP_NAME(oc_map_cpu_loop, OC_MAP_ISA)(oc_map_op op, int t)
{
    return op < MOP_COUNT && t >= 0 && t < OC_MT_COUNT ? loops[op][t] : NULL;
}

oc_map_loop OC_MAP_NAME(oc_map_cpu_loop_scalar, OC_MAP_ISA)(oc_map_op op, int t, int value_operand)
{
    if (op >= MOP_COUNT || t < 0 || t >= OC_MT_COUNT) return NULL;
    return value_operand == 0 ? loops_sa[op][t] : value_operand == 1 ? loops_sb[op][t] : NULL;
}

/* ---------------------------------------------------------------- casts */

/* A float's integer value as 64 bits, truncated toward zero; out of every integer range
 * (and NaN) it is the bit pattern x86's conversion gives, 0x8000000000000000. numpy leaves
 * such casts undefined; map only promises not to invoke C's undefined behaviour. */
static inline uint64_t float_bits(double x)
{
    if (x > -9223372036854775808.0 && x < 9223372036854775808.0) return (uint64_t)(int64_t)x;
    if (x >= 9223372036854775808.0 && x < 18446744073709551616.0) return (uint64_t)x;
    return UINT64_C(0x8000000000000000);
}
static inline uint64_t int_bits(uint64_t x) { return x; }

#define TO_INT(TT, x) ((TT) _Generic((x), float : float_bits, double : float_bits, default : int_bits)(x))

/* An X-macro list, laid out by hand: */
/* clang-format off */
#define ALL_TYPES(X, ...)                                                                                 \
    X(b, bool8, __VA_ARGS__) X(i8, int8_t, __VA_ARGS__) X(i16, int16_t, __VA_ARGS__)                      \
    X(i32, int32_t, __VA_ARGS__) X(i64, int64_t, __VA_ARGS__) X(u8, uint8_t, __VA_ARGS__)                 \
    X(u16, uint16_t, __VA_ARGS__) X(u32, uint32_t, __VA_ARGS__) X(u64, uint64_t, __VA_ARGS__)             \
    X(f32, float, __VA_ARGS__) X(f64, double, __VA_ARGS__)
/* clang-format on */

#define CAST_TO_BOOL(SS, ST, unused)                              \
    static void cast_##SS##_b(void *d_, const void *s_, size_t n) \
    {                                                             \
        bool8 *d = d_;                                            \
        const ST *s = s_;                                         \
        for (size_t i = 0; i < n; i++) d[i] = s[i] != 0;          \
    }
#define CAST_TO_FLOAT(SS, ST, TS, TT)                                \
    static void cast_##SS##_##TS(void *d_, const void *s_, size_t n) \
    {                                                                \
        TT *d = d_;                                                  \
        const ST *s = s_;                                            \
        for (size_t i = 0; i < n; i++) d[i] = (TT)s[i];              \
    }
#define CAST_TO_INT(SS, ST, TS, TT)                                  \
    static void cast_##SS##_##TS(void *d_, const void *s_, size_t n) \
    {                                                                \
        TT *d = d_;                                                  \
        const ST *s = s_;                                            \
        for (size_t i = 0; i < n; i++) d[i] = TO_INT(TT, s[i]);      \
    }
#define CASTS_INTO_INT(TS, TT) ALL_TYPES(CAST_TO_INT, TS, TT)
#define CASTS_INTO_FLOAT(TS, TT) ALL_TYPES(CAST_TO_FLOAT, TS, TT)
ALL_TYPES(CAST_TO_BOOL, 0)
CASTS_INTO_INT(i8, int8_t)
CASTS_INTO_INT(i16, int16_t)
CASTS_INTO_INT(i32, int32_t)
CASTS_INTO_INT(i64, int64_t)
CASTS_INTO_FLOAT(f32, float)
CASTS_INTO_FLOAT(f64, double)

#define CAST_ROW(TS)                                                                                         \
    {                                                                                                        \
        cast_b_##TS, cast_i8_##TS, cast_i16_##TS, cast_i32_##TS, cast_i64_##TS, cast_u8_##TS, cast_u16_##TS, \
            cast_u32_##TS, cast_u64_##TS, cast_f32_##TS, cast_f64_##TS                                       \
    }

/* casts[to][from], in the order of oc_map_dtype. A cast into an unsigned type is the cast into
 * the signed type of its width: both keep the same low bits of one 64-bit value. */
static const oc_map_cast_loop casts[OC_MT_COUNT][OC_MT_COUNT] = {
    CAST_ROW(b),   CAST_ROW(i8),  CAST_ROW(i16), CAST_ROW(i32), CAST_ROW(i64), CAST_ROW(i8),
    CAST_ROW(i16), CAST_ROW(i32), CAST_ROW(i64), CAST_ROW(f32), CAST_ROW(f64),
};

oc_map_cast_loop OC_MAP_NAME(oc_map_cpu_cast, OC_MAP_ISA)(int from, int to) { return casts[to][from]; }
