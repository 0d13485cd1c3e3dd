/*
 * The checks the C tests count: CHECK(cond, printf-style message) and CHECK_STATUS(call,
 * want), which shows the library's message when the status is not the one expected.
 * check_report() prints "N passed, M failed" and gives the exit status (non-zero when
 * any check failed).
 */
#ifndef BATCHLIN_TEST_CHECK_H
#define BATCHLIN_TEST_CHECK_H

#include "batchlin.h"

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond) {                                                          \
            passed++;                                                        \
        } else {                                                             \
            failed++;                                                        \
            fprintf(stderr, "FAIL %s:%d: (%s) ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

#define CHECK_STATUS(call, want)                                                   \
    do {                                                                           \
        batchlin_status st_ = (call);                                              \
        CHECK(st_ == (want), "%s gave %s (%d), expected %s: %s", #call,            \
              batchlin_status_name(st_), (int)st_, batchlin_status_name(want),     \
              batchlin_last_error());                                              \
    } while (0)

static inline int check_report(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

#endif
