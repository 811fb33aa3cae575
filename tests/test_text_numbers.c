/*
 * test_text_numbers.c - oc_shortest (core/text_buf.h), the way messages show a number: the
 * fewest significant digits that read back as the same double (or float), and no exponent
 * from 10^-4 to 10^16, as Python shows those; every value read back equal.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/text_buf.h"
#include "harness.h"

static void shows(double v, int single, const char *want)
{
    char buf[40];
    const char *got = oc_shortest(v, single, buf);
    CHECK_MSG(strcmp(got, want) == 0, "%.17g (%s): shown as %s, expected %s", v, single ? "float" : "double", got,
              want);
    if (isfinite(v))
        CHECK_MSG(single ? oc_strtof(got, NULL) == (float)v : oc_strtod(got, NULL) == v,
                  "%s does not read back as %.17g", got, v);
}

int main(void)
{
    shows(80, 0, "80");
    shows(-80, 0, "-80");
    shows(100, 0, "100");
    shows(0.5, 0, "0.5");
    shows(1.5e-3, 0, "0.0015");
    shows(1e-4, 0, "0.0001");
    shows(2.5e-5, 0, "2.5e-05");
    shows(1.0000001, 0, "1.0000001");
    shows(0.1, 1, "0.1");
    shows(0.1, 0, "0.1");
    shows(123456789012.0, 0, "123456789012");
    shows(1.25e15, 0, "1250000000000000");
    shows(1e16, 0, "1e+16");
    shows(3e300, 0, "3e+300");
    shows(0, 0, "0");
    shows(INFINITY, 0, "inf");
    shows(-INFINITY, 0, "-inf");
    shows(NAN, 0, "nan");
    /* Every power of ten and a few digits around it read back equal. */
    for (int e = -6; e <= 18; e++)
        for (int d = 1; d <= 9; d += 4) {
            char buf[40];
            double v = d * pow(10.0, e) + (e < 0 ? 0 : 0.25);
            oc_shortest(v, 0, buf);
            CHECK_MSG(oc_strtod(buf, NULL) == v, "%.17g shown as %s", v, buf);
        }
    return oc_test_finish();
}
