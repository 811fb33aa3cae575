/* npy_header.c - the one writer of .npy headers (npy_header.h). */
#include "io/formats/npy_header.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "outcore.h"
#include "io/io.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NPY_NATIVE "<"
#else
#define NPY_NATIVE ">"
#endif

/* The descr of dtype's elements in this host's byte order (see the header's top comment):
 * "<i4", "|u1"; 0 for a code with no row. */
static int npy_descr(char descr[8], int dtype)
{
    const oc_element *e = oc_element_of(dtype);
    if (!e) return 0;
    snprintf(descr, 8, "%s%c%zu", e->size == 1 ? "|" : NPY_NATIVE, e->kind, e->size);
    return 1;
}

/* Magic, version 1.0, the header length, dict and the padding up to total bytes. */
static size_t npy_frame(unsigned char *h, const char *dict, size_t len, size_t total)
{
    const size_t prefix = 10, header_len = total - prefix;
    memcpy(h, "\x93NUMPY", 6);
    h[6] = 1, h[7] = 0;
    h[8] = (unsigned char)header_len, h[9] = (unsigned char)(header_len >> 8);
    memcpy(h + prefix, dict, len);
    memset(h + prefix + len, ' ', header_len - len - 1);
    h[total - 1] = '\n';
    return total;
}

size_t oc_npy_header(unsigned char *h, int dtype, int64_t d0, int64_t d1, size_t fixed)
{
    char descr[8];
    const int known = npy_descr(descr, dtype);
    assert(known);
    (void)known;
    char dict[160];
    int len = d1 < 0 ? snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRId64 ",), }",
                                descr, d0)
                     : snprintf(dict, sizeof dict,
                                "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRId64 ", %" PRId64 "), }", descr,
                                d0, d1);
    /* Version 1.0: its 2-byte header length holds any dict of at most two dimensions
     * (numpy moves to 2.0 only past 65535 bytes). */
    const size_t prefix = 10;
    const size_t total = fixed ? fixed : (prefix + (size_t)len + 1 + OC_NPY_ALIGN - 1) / OC_NPY_ALIGN * OC_NPY_ALIGN;
    assert(total <= OC_NPY_HEADER_MAX && total % OC_NPY_ALIGN == 0 && prefix + (size_t)len + 1 <= total);
    return npy_frame(h, dict, (size_t)len, total);
}

size_t oc_npy_header_nd(unsigned char *h, size_t cap, const char *descr, int ndim, const int64_t *shape,
                        int fortran_order)
{
    char dims[32 * 24 + 8];
    size_t n = 0;
    for (int i = 0; i < ndim; i++)
        n += (size_t)snprintf(dims + n, sizeof dims - n, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (ndim == 1) n += (size_t)snprintf(dims + n, sizeof dims - n, ",");
    dims[n] = '\0';
    char dict[sizeof dims + 96];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr,
                       fortran_order ? "True" : "False", dims);
    const size_t prefix = 10;
    const size_t total = (prefix + (size_t)len + 1 + OC_NPY_ALIGN - 1) / OC_NPY_ALIGN * OC_NPY_ALIGN;
    if (total > cap || total - prefix > 65535) return 0;
    return npy_frame(h, dict, (size_t)len, total);
}
