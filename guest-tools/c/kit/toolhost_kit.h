/*
 * toolhost_kit: the C authoring kit for toolhost tool components
 * (contract toolhost:tool@0.2.0, world tool-provider).
 *
 * A tool is a `th_tool` value: its name, descriptions, JSON Schemas, path
 * declarations and two functions, `execute` (arguments -> canonical JSON
 * value, or a th_error) and optionally `render` (arguments + value -> text
 * for the model). A component lists its tools once, at file scope:
 *
 *     TH_TOOLSET(&COUNT_LINES, &OTHER_TOOL);
 *
 * kit/component.c (linked only into the component) implements the WIT
 * exports on top of that table; natively, tests call th_execute() and
 * th_render(), the same dispatch the component runs.
 *
 * Memory: execute and render write into a th_buf (a growable byte buffer);
 * the kit owns every buffer and frees it. Nothing is kept between calls
 * (every call runs in a fresh instance anyway).
 */
#ifndef TOOLHOST_KIT_H
#define TOOLHOST_KIT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "th_json.h"

/* ── output buffer and JSON writer ──────────────────────────────────── */

typedef struct th_buf {
    char *data; /* NUL-terminated while not failed */
    size_t len, cap;
    bool failed; /* an allocation failed: the content is incomplete */
} th_buf;

void th_buf_init(th_buf *b);
void th_buf_free(th_buf *b);
void th_buf_append(th_buf *b, const void *data, size_t len);
void th_buf_puts(th_buf *b, const char *s);
void th_buf_putc(th_buf *b, char c);
void th_buf_printf(th_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes the bytes out of the buffer (the caller frees them with free());
 * NULL when the buffer failed. The buffer is empty afterwards. */
char *th_buf_take(th_buf *b, size_t *len);

/* JSON writing: a string literal (quoted, escaped; invalid UTF-8 bytes
 * become U+FFFD, so the output is always valid JSON), a number, a bool. */
void th_json_write_string(th_buf *b, const char *s, size_t len);
void th_json_write_cstr(th_buf *b, const char *s);
void th_json_write_u64(th_buf *b, uint64_t v);
void th_json_write_bool(th_buf *b, bool v);

/* ── failures ───────────────────────────────────────────────────────── */

typedef struct th_error {
    char code[64];     /* snake_case */
    char message[1024];
    th_buf info;       /* optional JSON document (empty: none) */
} th_error;

void th_error_init(th_error *err);
void th_error_free(th_error *err);
/* Sets the code and a printf-style message; returns false, so tools can
 * write `return th_fail(err, "not_found", "no file %s", path);`. */
bool th_fail(th_error *err, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Maps an errno value from an operation on `path` to a stable code:
 * not_found, is_directory, not_a_directory, permission_denied,
 * name_too_long, too_many_links, io_error. */
bool th_fail_errno(th_error *err, int errnum, const char *what, const char *path);
const char *th_errno_code(int errnum);

/* ── tools ──────────────────────────────────────────────────────────── */

typedef enum th_path_access {
    TH_ACCESS_READ = 0,      /* reads a file */
    TH_ACCESS_LIST = 1,      /* lists or walks a directory */
    TH_ACCESS_CREATE = 2,    /* creates a file that must not exist */
    TH_ACCESS_OVERWRITE = 3, /* replaces an existing file */
    TH_ACCESS_PATCH = 4,     /* edits part of an existing file */
    TH_ACCESS_WRITE = 5,     /* creates or overwrites */
} th_path_access;

typedef struct th_path_param {
    const char *pointer; /* JSON Pointer into the arguments, e.g. "/path" */
    th_path_access access;
} th_path_param;

typedef struct th_annotations {
    bool read_only, destructive, idempotent, open_world;
} th_annotations;

typedef struct th_tool {
    const char *name;        /* [a-z][a-z0-9_]*, at most 64 bytes */
    const char *title;       /* may be NULL */
    const char *description;
    const char *input_schema;  /* JSON Schema document (draft 2020-12) */
    const char *output_schema; /* JSON Schema document of the value */
    th_annotations annotations;
    const th_path_param *paths; /* `n_paths` entries */
    size_t n_paths;
    const char *const *urls; /* JSON Pointers of URL arguments */
    size_t n_urls;
    /* Writes the canonical value (one JSON document) into `out` and returns
     * true, or fills `err` and returns false. `args` is the parsed
     * arguments object. */
    bool (*execute)(const th_json *args, th_buf *out, th_error *err);
    /* Writes text for the model into `out` and returns true; false (or a
     * NULL function) leaves rendering to the host. Must be pure. */
    bool (*render)(const th_json *args, const th_json *value, th_buf *out);
} th_tool;

/* The component's tools, defined once with TH_TOOLSET. */
extern const th_tool *const th_toolset[];
extern const size_t th_toolset_len;

#define TH_TOOLSET(...)                                                        \
    const th_tool *const th_toolset[] = {__VA_ARGS__};                         \
    const size_t th_toolset_len = sizeof(th_toolset) / sizeof(th_toolset[0])

/* Limits on the arguments the kit parses: at most 4 MiB, 200,000 values,
 * nesting 64 deep. (Values, parsed again to check them and for render:
 * 64 MiB, 4,000,000 values, 64 deep.) */
extern const th_json_limits th_kit_json_limits;

/* Runs tool `name` on `arguments` (JSON text): parses them (an object, or
 * invalid_arguments), finds the tool (unknown_tool) and runs it. On success
 * `out` holds the value. */
bool th_execute(const th_tool *const *tools, size_t n_tools, const char *name, size_t name_len,
                const char *arguments, size_t arguments_len, th_buf *out, th_error *err);
/* Renders a value; false when the tool has no render or declines (or the
 * arguments or value do not parse: render is then the host's). */
bool th_render(const th_tool *const *tools, size_t n_tools, const char *name, size_t name_len,
               const char *arguments, size_t arguments_len, const char *value, size_t value_len,
               th_buf *out);
/* Checks a toolset the way the host will: names, uniqueness, schemas that
 * parse as JSON objects, path pointers. Writes the first problem into
 * `problem` and returns false. Tests call it. */
bool th_check_toolset(const th_tool *const *tools, size_t n_tools, char *problem, size_t cap);

/* ── paths ──────────────────────────────────────────────────────────── */

/* The initial working directory the host gives the component
 * (wasi:cli/environment.initial-cwd, the first granted directory, e.g.
 * /workspace), "/" when none; natively, the process's working directory.
 * The returned string is owned by the kit. */
const char *th_initial_cwd(void);
/* Resolves a path argument as the host's path checks do: relative paths
 * against th_initial_cwd(); `.` components and repeated or trailing
 * slashes dropped (`..` is kept: the host has checked the path, and WASI
 * refuses to leave a granted directory anyway). Returns a malloc'ed
 * absolute path, or NULL (out of memory, or `path` contains NUL). */
char *th_resolve_path(const char *path);

/* Implemented by kit/component.c in a component and by kit/native.c
 * natively: the raw initial working directory, or NULL. */
char *th_platform_initial_cwd(void);

#endif
