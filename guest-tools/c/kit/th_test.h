/*
 * th_test: a minimal test harness for native unit tests of C tools.
 *
 *     #include "th_test.h"
 *     static void test_x(void) { CHECK(1 + 1 == 2); CHECK_STR(s, "abc"); }
 *     int main(void) { RUN(test_x); return th_test_summary(); }
 *
 * Every CHECK counts as one passed or failed check; failures print
 * file:line and the expression. th_test_summary prints the closing line
 * "N passed, N failed" and returns the exit status.
 */
#ifndef TH_TEST_H
#define TH_TEST_H

#include <stdio.h>
#include <string.h>

static int th_test_passed, th_test_failed;
static const char *th_test_current = "";

#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        if (cond) {                                                            \
            th_test_passed++;                                                  \
        } else {                                                               \
            th_test_failed++;                                                  \
            fprintf(stderr, "FAIL %s (%s:%d): ", th_test_current, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

#define CHECK(cond) CHECK_MSG((cond), "%s", #cond)

#define CHECK_STR(actual, expected)                                            \
    do {                                                                       \
        const char *th_a_ = (actual), *th_e_ = (expected);                     \
        CHECK_MSG(th_a_ != NULL && strcmp(th_a_, th_e_) == 0, "%s: got \"%s\", expected \"%s\"", #actual, \
                  th_a_ ? th_a_ : "(null)", th_e_);                            \
    } while (0)

#define RUN(fn)                                                                \
    do {                                                                       \
        th_test_current = #fn;                                                 \
        int th_before_ = th_test_failed;                                       \
        fn();                                                                  \
        fprintf(stderr, "%s %s\n", th_test_failed == th_before_ ? "ok  " : "FAIL", #fn); \
    } while (0)

static int th_test_summary(void) {
    printf("%d passed, %d failed\n", th_test_passed, th_test_failed);
    return th_test_failed ? 1 : 0;
}

#endif
