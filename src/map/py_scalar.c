/* py_scalar.c - see py_scalar.h. */
#include "map/py_scalar.h"

#include <math.h>

double oc_py_floordiv(double a, double b, double *mod)
{
    double m = fmod(a, b);
    double div = (a - m) / b;
    if (m != 0) {
        if ((b < 0) != (m < 0)) m += b, div -= 1.0;
    } else {
        m = copysign(0.0, b);
    }
    double fl;
    if (div != 0) {
        fl = floor(div);
        if (div - fl > 0.5) fl += 1.0;
    } else {
        fl = copysign(0.0, a / b);
    }
    *mod = m;
    return fl;
}

void oc_py_compare_int_float(oc_py_int i, double f, int *lt, int *eq, int *gt)
{
    *lt = *eq = *gt = 0;
    if (isinf(f)) {
        *lt = f > 0, *gt = f < 0;
    } else if (!isnan(f)) {
        const double fl = floor(f);
        if (fl >= 0x1p100) *lt = 1; /* past every int here (|i| < 2^65) */
        else if (fl <= -0x1p100) *gt = 1;
        else {
            const oc_py_int fi = (oc_py_int)fl;
            *lt = i < fi || (i == fi && f > fl);
            *eq = i == fi && f == fl;
            *gt = i > fi;
        }
    }
}

static int bit_length(unsigned __int128 x)
{
    int n = 0;
    for (; x; x >>= 1) n++;
    return n;
}

double oc_py_true_divide(oc_py_int x, oc_py_int y)
{
    const int negative = (x < 0) != (y < 0);
    unsigned __int128 n = x < 0 ? -(unsigned __int128)x : (unsigned __int128)x;
    unsigned __int128 d = y < 0 ? -(unsigned __int128)y : (unsigned __int128)y;
    if (n == 0) return negative ? -0.0 : 0.0;
    const int s = 55 + bit_length(d) - bit_length(n); /* the quotient then has 55 or 56 bits */
    if (s >= 0) n <<= s;
    else d <<= -s;
    unsigned __int128 q = n / d;
    const int sticky = n % d != 0;
    const int drop = bit_length(q) - 53;
    const unsigned __int128 half = (unsigned __int128)1 << (drop - 1), rest = q & ((half << 1) - 1);
    q >>= drop;
    if (rest > half || (rest == half && (sticky || (q & 1)))) q++;
    const double r = ldexp((double)q, drop - s);
    return negative ? -r : r;
}
