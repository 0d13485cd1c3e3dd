/*
 * A small example of batchlin's C API: the QR of a batch of matrices, the eigenvalues
 * of a batch of symmetric ones, and what an error looks like.
 *
 * Build (scripts/test-c does this; see the README's "Using it from C"):
 *   cargo build --release -p batchlin-c
 *   cc -std=c11 -Wall -Wextra -Icrates/batchlin-c/include examples/c/example.c \
 *      -Ltarget/release -lbatchlin -Wl,-rpath,$PWD/target/release -o example
 */
#include "batchlin.h"

#include <stdio.h>

int main(void) {
    printf("batchlin %s; routing: %s\n", batchlin_version(), batchlin_policy_source());

    /* Two 3x2 matrices, row-major, one after the other. */
    const double a[2 * 3 * 2] = {
        1, 2,  3, 4,  5, 6, /* matrix 0 */
        2, 0,  0, 1,  1, 1, /* matrix 1 */
    };
    double q[2 * 3 * 2], r[2 * 2 * 2];
    uint32_t info[2];
    if (batchlin_dqr(a, 2, 3, 2, BATCHLIN_QR_REDUCED, q, r, info) != BATCHLIN_OK) {
        fprintf(stderr, "qr failed: %s\n", batchlin_last_error());
        return 1;
    }
    for (int b = 0; b < 2; b++)
        printf("R[%d] = [[%7.4f %7.4f] [%7.4f %7.4f]]  info %#x\n", b, r[b * 4], r[b * 4 + 1],
               r[b * 4 + 2], r[b * 4 + 3], info[b]);

    /* Eigenvalues of two symmetric 2x2 matrices (only the lower triangle is read). */
    const float s[2 * 2 * 2] = {2, 0, 1, 2, /* [[2 1] [1 2]] */ 4, 0, 0, 9};
    float w[2 * 2];
    if (batchlin_seigvalsh(s, 2, 2, BATCHLIN_LOWER, w, NULL) != BATCHLIN_OK) {
        fprintf(stderr, "eigvalsh failed: %s\n", batchlin_last_error());
        return 1;
    }
    printf("eigenvalues: [%g %g] [%g %g]\n", w[0], w[1], w[2], w[3]);
    printf("a batch of 4096 16x16 float QRs runs on %s\n",
           batchlin_backend_for(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 4096, 16, 16));

    /* Errors are a status and a message, never a crash. */
    batchlin_status st = batchlin_dqr(NULL, 2, 3, 2, BATCHLIN_QR_R, NULL, r, NULL);
    printf("with a NULL input: status %s: %s\n", batchlin_status_name(st), batchlin_last_error());
    return st == BATCHLIN_ERROR_ARGUMENT ? 0 : 1;
}
