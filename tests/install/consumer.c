/* consumer.c - a program built against an installed outcore (tests/install/test_install.py
 * builds it through find_package and through pkg-config, shared and static, and as C++ from a
 * project that enables no C).
 *
 *   consumer 1101 0111 1000     rows of a 0/1 matrix, one argument each
 *
 * prints the library's version and the header's, then the Gram matrix A·Aᵀ as counts:
 *   library 0.1.0
 *   header 0.1.0
 *   3 3
 *   3 2 1
 *   ...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <outcore.h>

int main(int argc, char **argv)
{
    int64_t n = argc - 1, m = n > 0 ? (int64_t)strlen(argv[1]) : 0;
    if (n < 1 || m < 1) {
        fputs("usage: consumer ROW [ROW...]   (rows of 0 and 1, all of one length)\n", stderr);
        return 2;
    }
    uint8_t *a = (uint8_t *)malloc((size_t)(n * m));
    int32_t *c = (int32_t *)malloc((size_t)(n * n) * sizeof *c);
    oc_context *ctx = NULL;
    oc_matrix *mat = NULL;
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    oc_output out = OC_OUTPUT_INIT;
    oc_status st;
    int rc = 1;
    if (!a || !c) goto done;
    for (int64_t i = 0; i < n; ++i) {
        if ((int64_t)strlen(argv[i + 1]) != m) {
            fprintf(stderr, "consumer: row %lld has %zu columns, not %lld\n", (long long)i, strlen(argv[i + 1]),
                    (long long)m);
            rc = 2;
            goto done;
        }
        for (int64_t j = 0; j < m; ++j) a[i * m + j] = (uint8_t)(argv[i + 1][j] - '0');
    }
    printf("library %s\n", oc_version());
    printf("header %d.%d.%d\n", OC_VERSION_MAJOR, OC_VERSION_MINOR, OC_VERSION_PATCH);

    st = oc_context_create(&ctx);
    if (st == OC_OK) st = oc_matrix_from_dense(ctx, a, n, m, m, &mat);
    out.kind = OC_OUTPUT_MEMORY;
    out.data = c;
    if (st == OC_OK) st = oc_gram(ctx, mat, NULL, &opts, &out, NULL);
    if (st != OC_OK) {
        fprintf(stderr, "consumer: %s\n", ctx ? oc_context_last_error(ctx) : oc_status_string(st));
        goto done;
    }
    printf("%lld %lld\n", (long long)n, (long long)n);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) printf("%d%c", c[i * n + j], j + 1 < n ? ' ' : '\n');
    rc = 0;
done:
    oc_matrix_free(mat);
    oc_context_free(ctx);
    free(c);
    free(a);
    return rc;
}
