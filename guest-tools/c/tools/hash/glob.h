/*
 * Glob patterns for hash_tree, matched against a file's path relative to
 * the walked directory ("src/main.c"):
 *
 *   *        any run of characters except '/'
 *   **       any run of characters, '/' included ("**" + "/" also matches
 *            no directory at all: "**" "/" "*.c" matches "a.c" and "x/y/a.c")
 *   ?        one character except '/'
 *   [abc] [a-z] [!a-z] [^a-z]   one character (not '/') in / not in the set
 *   \x       the character x itself
 *
 * A pattern without '/' is matched against the file name alone, at any
 * depth ("*.c" matches "a.c" and "src/a.c"); a pattern with '/' against the
 * whole relative path. Characters are UTF-8 code points.
 *
 * Matching simulates the pattern as an NFA over the path's characters:
 * O(pattern states x path length), never exponential backtracking.
 */
#ifndef HASH_GLOB_H
#define HASH_GLOB_H

#include <stdbool.h>
#include <stddef.h>

#define GLOB_MAX_PATTERN 256 /* bytes */

typedef struct glob_pattern glob_pattern;

/* Compiles a pattern; NULL with a message in `error` when it is invalid
 * (too long, unterminated '[', bad range, invalid UTF-8, trailing '\'). */
glob_pattern *glob_compile(const char *pattern, char *error, size_t error_cap);
void glob_free(glob_pattern *g);
/* Matches a relative path (UTF-8; invalid bytes match only '?', '*', '**'
 * and negated classes, as single characters). */
bool glob_match(const glob_pattern *g, const char *path);

#endif
