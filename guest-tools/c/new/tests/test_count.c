/* Unit tests of the counting, natively (see README.md for the command).
 * Prints "N passed, N failed"; exits 1 on a failure. */
#define _DEFAULT_SOURCE 1 /* fileno under -std=c11 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../count.h"

static int passed, failed;

static void check(const char *text, size_t len, unsigned long long lines, unsigned long long bytes) {
    FILE *f = tmpfile();
    counts c = {0, 0};
    int e = f == NULL ? -1 : 0;
    if (f != NULL) {
        fwrite(text, 1, len, f);
        fflush(f);
        rewind(f); /* also moves the descriptor back to the start */
        e = count_fd(fileno(f), &c);
        fclose(f);
    }
    if (e == 0 && c.lines == lines && c.bytes == bytes) {
        passed++;
    } else {
        failed++;
        printf("FAIL %.20s...: error %d, %llu lines, %llu bytes; expected %llu, %llu\n", text, e, c.lines, c.bytes,
               lines, bytes);
    }
}

int main(void) {
    check("", 0, 0, 0);
    check("one\ntwo\n", 8, 2, 8);
    check("one\ntwo", 7, 2, 7); /* a last line without a newline */
    check("\n\n", 2, 2, 2);

    /* Across the 64 KiB reads. */
    static char big[200000];
    for (size_t i = 0; i < sizeof big; i += 2) memcpy(big + i, "x\n", 2);
    check(big, sizeof big, 100000, 200000);

    /* A directory: EISDIR, which the tool reports as is_directory. */
    counts c;
    int fd = open(".", O_RDONLY);
    if (fd >= 0 && count_fd(fd, &c) == EISDIR) {
        passed++;
    } else {
        failed++;
        printf("FAIL a directory: not EISDIR\n");
    }
    if (fd >= 0) close(fd);

    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
