/* crc32.c - CRC-32 of zip entries (crc32.h). */
#include "io/crc32.h"

#ifdef OC_HAVE_ZLIB
#include <zlib.h>
#else
#include <pthread.h>
static uint32_t crc_table[256];
static void crc_table_init(void)
{
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}
#endif

uint32_t oc_crc32_update(uint32_t crc, const void *buf, size_t len)
{
#ifdef OC_HAVE_ZLIB
    const unsigned char *p = buf;
    while (len > 0) { /* zlib takes uInt lengths */
        uInt part = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = (uint32_t)crc32(crc, p, part);
        p += part, len -= part;
    }
    return crc;
#else
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, crc_table_init);
    const unsigned char *p = buf;
    crc = ~crc;
    while (len--) crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
#endif
}

/* Polynomial arithmetic modulo the CRC polynomial (reflected), as in zlib 1.2.12's
 * crc32_combine: crc(A||B) = crc(A)·x^(8·len(B)) + crc(B). */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ 0xEDB88320u : b >> 1;
    }
    return p;
}

uint32_t oc_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    /* x^(2^k) mod p for k = 3, 4, ...: len_b bytes are 8·len_b bits, x^(8·len_b). */
    uint32_t x2k = 1u << 30; /* x^1 */
    for (int k = 0; k < 3; ++k) x2k = multmodp(x2k, x2k);
    uint32_t p = 1u << 31; /* x^0 */
    for (uint64_t n = len_b; n; n >>= 1) {
        if (n & 1) p = multmodp(x2k, p);
        x2k = multmodp(x2k, x2k);
    }
    return multmodp(p, crc_a) ^ crc_b;
}
