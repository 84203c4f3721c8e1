/*
 * th_json: a small, strict, bounded JSON parser (RFC 8259) for tool
 * arguments and values.
 *
 * The host has already validated the arguments against the tool's input
 * schema, but nothing here trusts that: the parser
 *
 *   - takes a pointer and a length (no NUL terminator needed; embedded NUL
 *     bytes are errors outside strings),
 *   - accepts exactly RFC 8259 JSON: no comments, no trailing commas, no
 *     leading zeros, no NaN/Infinity, no control characters in strings,
 *     only the four JSON whitespace characters, nothing after the value,
 *   - validates UTF-8 (no overlong forms, no surrogates, nothing above
 *     U+10FFFF) and \u escapes (surrogates must pair),
 *   - rejects duplicate object keys (a schema validator that keeps the last
 *     one and a tool that reads the first would disagree),
 *   - bounds nesting depth, input size and node count (th_json_limits), and
 *     never recurses deeper than the depth limit,
 *   - allocates every node and string from one arena, freed at once.
 *
 * Decoded strings are NUL-terminated for convenience but may contain NUL
 * (from \u0000): `len` is authoritative.
 */
#ifndef TH_JSON_H
#define TH_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum th_json_type {
    TH_JSON_NULL,
    TH_JSON_BOOL,
    TH_JSON_NUMBER,
    TH_JSON_STRING,
    TH_JSON_ARRAY,
    TH_JSON_OBJECT,
} th_json_type;

typedef struct th_json th_json;

struct th_json {
    th_json_type type;
    /* Object members: the key of this node inside its parent object. */
    const char *key;
    size_t key_len;
    /* Next element of the parent array or object (in document order). */
    th_json *next;
    union {
        bool boolean;
        struct {
            const char *ptr; /* NUL-terminated copy */
            size_t len;
        } string;
        struct {
            double value;     /* nearest double */
            const char *text; /* the literal, NUL-terminated */
            size_t text_len;
        } number;
        struct {
            th_json *first; /* elements / members, in order */
            size_t len;
        } children;
    } u;
};

typedef struct th_json_limits {
    size_t max_input_bytes; /* default 8 MiB */
    size_t max_depth;       /* default 64; arrays and objects nest at most this deep */
    size_t max_nodes;       /* default 1,000,000 values */
} th_json_limits;

typedef struct th_json_doc th_json_doc;

/* Parses `len` bytes at `text`. On success returns a document (free with
 * th_json_free) and sets *root. On failure returns NULL and, when `error` is
 * not NULL, writes a message ("offset 12: expected ':' after object key")
 * into error[0..error_cap). `limits` may be NULL for the defaults. */
th_json_doc *th_json_parse(const char *text, size_t len, const th_json_limits *limits,
                           const th_json **root, char *error, size_t error_cap);
void th_json_free(th_json_doc *doc);

/* Accessors; each accepts NULL and answers NULL/false. */
const th_json *th_json_get(const th_json *object, const char *key); /* member by key */
bool th_json_is(const th_json *v, th_json_type type);
/* The string value (NUL-terminated), or NULL when `v` is not a string.
 * `len` (may be NULL) receives the length. */
const char *th_json_string(const th_json *v, size_t *len);
/* True when `v` is a string without NUL bytes: safe as a C string. */
bool th_json_is_c_string(const th_json *v);
/* A number that is an exact integer in [0, 2^53] (1, 1.0 and 1e3 are;
 * 1.5, -1 and 1e300 are not) into *out. */
bool th_json_u64(const th_json *v, uint64_t *out);

/* Length of the valid UTF-8 sequence at s[0..avail) (1-4), or 0 when it is
 * not valid UTF-8 (overlong, surrogate, above U+10FFFF, truncated). */
size_t th_utf8_seq(const unsigned char *s, size_t avail);

#endif
