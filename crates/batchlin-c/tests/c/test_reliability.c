/*
 * What happens around the numerics, through the real libraries (scripts/test-c links
 * this once against libbatchlin.so and once against libbatchlin.a; not under valgrind,
 * which does not mix with an address-space limit):
 *
 * - out of memory: under an address-space limit (a child process, setrlimit RLIMIT_AS),
 *   scratch that cannot be allocated is BATCHLIN_ERROR_OUT_OF_MEMORY with a message, not
 *   an abort, and the library computes correctly afterwards;
 * - fork(): a child forked after a parallel call computes the same bits as the parent
 *   (it hung for ever before), twice, and the parent's pool still works;
 * - argument checks: full_matrices must be 0 or 1; batchlin_backend_for refuses sizes
 *   whose product overflows.
 *
 * Prints "N passed, M failed" last and exits non-zero when any check failed.
 */
#define _GNU_SOURCE
#include "batchlin.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* A known answer: [[3, 0], [4, 5]] has A'A = [[25, 20], [20, 25]], singular values
 * sqrt(45) and sqrt(5). */
static void check_still_usable(void) {
    double a[4] = {3, 0, 4, 5}, s[2] = {0, 0};
    CHECK_STATUS(batchlin_dsvdvals(a, 1, 2, 2, s, NULL), BATCHLIN_OK);
    CHECK(fabs(s[0] - sqrt(45.0)) < 1e-14 && fabs(s[1] - sqrt(5.0)) < 1e-14,
          "svdvals after out of memory: %g %g", s[0], s[1]);
}

/* Limit the address space to what is mapped now plus `extra` bytes. */
static void limit_address_space(unsigned long long extra) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long vm_kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %llu kB", &vm_kb) == 1) break;
    if (f) fclose(f);
    struct rlimit lim = {(rlim_t)(vm_kb * 1024 + extra), RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &lim) != 0) {
        perror("setrlimit");
        _exit(2);
    }
}

/* In a child: every allocation the inputs' sizes call for fails cleanly. */
static int out_of_memory_child(void) {
    static float s[100000];
    static double sd[20000 * 8];
    float one = 1.0f;
    double oned = 1.0;
    limit_address_space(1ull << 30);
    /* The case: a zero-stride 100000 x 100000 view (40 GB of work matrix). */
    batchlin_layout zero = {1, 0, 0, 0};
    CHECK_STATUS(batchlin_ssvdvals_strided(&one, &zero, 100000, 100000, s, NULL, NULL,
                                           BATCHLIN_BACKEND_AUTO),
                 BATCHLIN_ERROR_OUT_OF_MEMORY);
    CHECK(strstr(batchlin_last_error(), "allocate") != NULL, "message: %s",
          batchlin_last_error());
    CHECK(strcmp(batchlin_status_name(BATCHLIN_ERROR_OUT_OF_MEMORY), "out of memory") == 0,
          "status name %s", batchlin_status_name(BATCHLIN_ERROR_OUT_OF_MEMORY));
    /* Each worker's scratch past the limit: the parallel path fails cleanly too. */
    batchlin_layout zero8 = {8, 0, 0, 0};
    CHECK_STATUS(batchlin_dsvdvals_strided(&oned, &zero8, 20000, 20000, sd, NULL, NULL,
                                           BATCHLIN_BACKEND_AUTO),
                 BATCHLIN_ERROR_OUT_OF_MEMORY);
    CHECK_STATUS(batchlin_deigvalsh_strided(&oned, &zero8, 20000, BATCHLIN_LOWER, sd, NULL,
                                            NULL, BATCHLIN_BACKEND_CPU_FAER),
                 BATCHLIN_ERROR_OUT_OF_MEMORY);
    check_still_usable();
    return failed == 0 ? 0 : 1;
}

static int run_child(int (*f)(void), const char *what) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        alarm(120); /* a hang is a failure */
        _exit(f());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    CHECK(ok, "%s: child status %#x (%s)", what, status,
          WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
    return ok;
}

/* ------------------------------------------------------------------------------------ */
/* fork() after a parallel call */

enum { B = 64, N = 8 };
static double fork_a[B * N * N], fork_want[B * N], fork_r_want[200 * 20 * 20];
static double qr_a[200 * 30 * 20];

static int same_answers(void) {
    double s[B * N], q[200 * 30 * 20], r[200 * 20 * 20];
    if (batchlin_dsvdvals(fork_a, B, N, N, s, NULL) != BATCHLIN_OK) return 1;
    if (memcmp(s, fork_want, sizeof s) != 0) return 2;
    if (batchlin_dqr_strided(qr_a, &(batchlin_layout){200, 600, 20, 1}, 30, 20,
                             BATCHLIN_QR_REDUCED, q, NULL, r, NULL, NULL,
                             BATCHLIN_BACKEND_CPU_FAER) != BATCHLIN_OK)
        return 3;
    if (memcmp(r, fork_r_want, sizeof r) != 0) return 4;
    return 0;
}

static void fork_tests(void) {
    unsigned long long x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < sizeof fork_a / sizeof *fork_a; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        fork_a[i] = (double)(x >> 11) / 9007199254740992.0 - 0.5;
    }
    for (size_t i = 0; i < sizeof qr_a / sizeof *qr_a; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        qr_a[i] = (double)(x >> 11) / 9007199254740992.0 - 0.5;
    }
    /* The parent's multi-matrix calls start the worker threads. */
    static double q[200 * 30 * 20];
    CHECK_STATUS(batchlin_dsvdvals(fork_a, B, N, N, fork_want, NULL), BATCHLIN_OK);
    CHECK_STATUS(batchlin_dqr_strided(qr_a, &(batchlin_layout){200, 600, 20, 1}, 30, 20,
                                      BATCHLIN_QR_REDUCED, q, NULL, fork_r_want, NULL, NULL,
                                      BATCHLIN_BACKEND_CPU_FAER),
                 BATCHLIN_OK);
    for (int round = 0; round < 2; round++) {
        run_child(same_answers, "forked child after a parallel call");
        CHECK(same_answers() == 0, "the parent after its child (round %d)", round);
    }
}

/* ------------------------------------------------------------------------------------ */
/* Argument checks */

static void argument_checks(void) {
    float a[4] = {3, 0, 4, 5}, u[4], s[2], vh[4];
    const int bad[] = {2, -1, 7};
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(batchlin_ssvd(a, 1, 2, 2, bad[i], u, s, vh, NULL), BATCHLIN_ERROR_ARGUMENT);
        CHECK(strstr(batchlin_last_error(), "full_matrices") != NULL, "message: %s",
              batchlin_last_error());
    }
    CHECK_STATUS(batchlin_ssvd(a, 1, 2, 2, 1, u, s, vh, NULL), BATCHLIN_OK);
    CHECK_STATUS(batchlin_ssvd(a, 1, 2, 2, 0, u, s, vh, NULL), BATCHLIN_OK);
    CHECK(fabsf(s[0] - sqrtf(45.0f)) < 1e-5f, "s[0] = %g", s[0]);
    const char *b = batchlin_backend_for(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 1ll << 40,
                                         1ll << 20, 1ll << 20);
    CHECK(b == NULL, "backend_for answered %s for an overflowing size", b ? b : "");
    CHECK(strstr(batchlin_last_error(), "too many elements") != NULL, "message: %s",
          batchlin_last_error());
    b = batchlin_backend_for(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 1 << 20, 8, 8);
    CHECK(b != NULL, "backend_for of a valid size: %s", batchlin_last_error());
}

int main(void) {
    /* First, before any call: the out-of-memory child (its limit is its own). */
    run_child(out_of_memory_child, "out of memory under an address-space limit");
    fork_tests();
    argument_checks();
    return check_report();
}
