/* toolhost_kit, native side (tests): the initial working directory is the
 * process's; progress and log reports are kept for th_take_reports(), and
 * th_cancelled() answers what th_cancel_for_test() set. Not linked into a
 * component (kit/component.c is). */
#define _DEFAULT_SOURCE 1 /* strnlen, DT_* and fstatat with -std=c11 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "toolhost_kit.h"

char *th_platform_initial_cwd(void) { return getcwd(NULL, 0); }

static th_report *reports;
static size_t n_reports, cap_reports;
static bool cancelled;

/* Keeps `r`, its message copied from message[0..len) (NULL: none). A
 * report that does not fit in memory is dropped, as the host may drop
 * one. */
static void keep(th_report r, const char *message, size_t len) {
    if (n_reports == cap_reports) {
        size_t cap = cap_reports ? cap_reports * 2 : 16;
        th_report *grown = realloc(reports, cap * sizeof *grown);
        if (grown == NULL) return;
        reports = grown;
        cap_reports = cap;
    }
    r.message = NULL;
    if (message != NULL) {
        r.message = malloc(len + 1);
        if (r.message == NULL) return;
        memcpy(r.message, message, len);
        r.message[len] = '\0';
    }
    reports[n_reports++] = r;
}

void th_platform_progress(uint64_t done, uint64_t total, const char *message, size_t len) {
    keep((th_report){.kind = TH_REPORT_PROGRESS, .done = done, .total = total}, message, len);
}

void th_platform_log(th_log_level level, const char *message, size_t len) {
    keep((th_report){.kind = TH_REPORT_LOG, .level = level}, message, len);
}

bool th_platform_cancelled(void) { return cancelled; }

th_report *th_take_reports(size_t *n) {
    th_report *taken = reports;
    *n = n_reports;
    reports = NULL;
    n_reports = cap_reports = 0;
    return taken;
}

void th_cancel_for_test(bool on) { cancelled = on; }
