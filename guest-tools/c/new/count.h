/* Counting lines and bytes: plain C11 + POSIX, no kit, so the unit tests
 * build with any C compiler (see README.md). */
#ifndef COUNT_H
#define COUNT_H

typedef struct {
    unsigned long long lines, bytes;
} counts;

/* Reads `fd` to its end, counting into `out`; a last line without a
 * newline counts too. Returns 0, or an errno: EISDIR for a directory, else that of the
 * failed read. */
int count_fd(int fd, counts *out);

#endif
