#include "count.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int count_fd(int fd, counts *out) {
    /* A directory opens, and under WASI its reads then fail with EBADF:
     * ask first, so that the caller gets is_directory. */
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) return EISDIR;
    /* A fixed buffer: a file of any size takes constant memory. */
    static char buf[64 * 1024];
    counts c = {0, 0};
    char last = '\n';
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) break;
        /* memchr is libc's (word at a time), cheaper than a byte loop. */
        for (const char *p = buf, *end = buf + n; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) c.lines++;
        c.bytes += (unsigned long long)n;
        last = buf[n - 1];
    }
    if (last != '\n') c.lines++;
    *out = c;
    return 0;
}
