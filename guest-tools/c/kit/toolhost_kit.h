/*
 * toolhost_kit: the C authoring kit for toolhost tool components
 * (contract toolhost:tool@0.3.0, world tool-provider).
 *
 * A tool is a `th_tool` value: its name, descriptions, JSON Schemas, path
 * declarations and two functions, `execute` (arguments -> canonical JSON
 * value, or a th_error) and optionally `render` (arguments + value ->
 * content blocks for the model: text, images, audio, resource links,
 * embedded resources). A component lists its tools once, at file scope:
 *
 *     TH_TOOLSET(&COUNT_LINES, &OTHER_TOOL);
 *
 * While `execute` runs, a tool may report progress (th_progress), log
 * (th_log) and ask whether its caller cancelled (th_cancelled): the
 * contract's `context` import.
 *
 * kit/component.c (linked only into the component) implements the WIT
 * exports on top of that table, and the context functions on the import;
 * natively, tests call th_execute() and th_render(), the same dispatch the
 * component runs, and kit/native.c keeps the reports for th_take_reports().
 *
 * Memory: execute and render write into th_bufs (growable byte buffers);
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

/* UTF-8: every string the host receives must be valid UTF-8 (the kit
 * replaces invalid bytes with U+FFFD in everything it hands over). */
bool th_utf8_valid(const char *s, size_t len);
/* Appends s[0..len), each byte that does not start a valid UTF-8 sequence
 * replaced with U+FFFD. */
void th_buf_append_utf8(th_buf *b, const char *s, size_t len);
/* Appends the base64 (RFC 4648, with padding) of data[0..len): the
 * encoding of image, audio and blob content. */
void th_base64_write(th_buf *b, const void *data, size_t len);

/* ── content blocks: what render returns ────────────────────────────── */

/* The kinds of block, in the contract's order (`content-block`). */
typedef enum th_content_kind {
    TH_CONTENT_TEXT = 0,
    TH_CONTENT_IMAGE = 1,
    TH_CONTENT_RESOURCE_LINK = 2,
    TH_CONTENT_AUDIO = 3,
    TH_CONTENT_RESOURCE = 4, /* an embedded resource */
} th_content_kind;

/* One block. Make blocks with the th_content_* functions below, which
 * copy the strings they are given; the kit frees everything. */
typedef struct th_block {
    th_content_kind kind;
    /* text: the text; image, audio: base64 of the bytes; resource: its
     * text, or base64 of its bytes when `blob`. */
    th_buf body;
    char *uri;         /* resource link, resource */
    char *name;        /* resource link */
    char *mime_type;   /* image, audio; resource link and resource: NULL for none */
    char *description; /* resource link: NULL for none */
    bool blob;         /* resource: `body` is base64 of binary content */
} th_block;

/* The blocks render writes, in order. */
typedef struct th_content {
    th_block *blocks;
    size_t len, cap;
    bool failed; /* an allocation failed: render then falls to the host */
    th_buf sink; /* what the th_content_* functions return after a failure */
} th_content;

void th_content_init(th_content *c);
void th_content_free(th_content *c);
/* Each adds a block and returns the buffer of its body, to write into
 * (never NULL: after an allocation failure, a buffer that drops what it
 * is given). A text block: */
th_buf *th_content_text(th_content *c);
/* An image or audio block of type `mime_type` (e.g. "image/png",
 * "audio/wav"); write base64 into the body (th_base64_write). */
th_buf *th_content_image(th_content *c, const char *mime_type);
th_buf *th_content_audio(th_content *c, const char *mime_type);
/* An embedded resource: its URI, its media type (NULL when unknown) and
 * its contents, the body: text, or (resource_blob) base64 of bytes. */
th_buf *th_content_resource_text(th_content *c, const char *uri, const char *mime_type);
th_buf *th_content_resource_blob(th_content *c, const char *uri, const char *mime_type);
/* A link to a resource the model can ask for separately; `mime_type` and
 * `description` may be NULL. */
void th_content_resource_link(th_content *c, const char *uri, const char *name, const char *mime_type,
                              const char *description);

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
    /* Adds content blocks for the model to `out` (th_content_text, ...)
     * and returns true; false (or a NULL function) leaves rendering to the
     * host. Must be pure. */
    bool (*render)(const th_json *args, const th_json *value, th_content *out);
    /* The tool renders nothing itself (`render` is NULL): the host renders
     * the value and never asks the component, so a call needs one instance
     * instead of two under the default policy. */
    bool host_renders;
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
/* Renders a value into `out` (initialized by the caller); false when the
 * tool has no render or declines (or the arguments or value do not parse,
 * or an allocation failed: render is then the host's). */
bool th_render(const th_tool *const *tools, size_t n_tools, const char *name, size_t name_len,
               const char *arguments, size_t arguments_len, const char *value, size_t value_len,
               th_content *out);
/* Checks a toolset the way the host will: names, uniqueness, schemas that
 * parse as JSON objects, path pointers; and that a tool declaring
 * host_renders has no render. Writes the first problem into `problem` and
 * returns false. Tests call it. */
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

/* ── while execute runs: progress, log messages, cancellation ─────── */

/* The severity of a log message, in the contract's order (`log-level`,
 * the syslog levels MCP uses). */
typedef enum th_log_level {
    TH_LOG_DEBUG = 0,
    TH_LOG_INFO = 1,
    TH_LOG_NOTICE = 2,
    TH_LOG_WARNING = 3,
    TH_LOG_ERROR = 4,
    TH_LOG_CRITICAL = 5,
    TH_LOG_ALERT = 6,
    TH_LOG_EMERGENCY = 7,
} th_log_level;

/* th_progress's `total` when the total is not known. (A total of
 * UINT64_MAX units cannot be reported: it reads as unknown.) */
#define TH_TOTAL_UNKNOWN UINT64_MAX

/* Reports progress: `done` units of `total` (TH_TOTAL_UNKNOWN when not
 * known), with an optional short message (NULL for none). `done` should
 * grow from call to call. Cheap, never fails; the host bounds what a call
 * reports (a rate and a byte budget), so report per file or per megabyte,
 * not in an inner loop. */
void th_progress(uint64_t done, uint64_t total, const char *message);
/* Logs a printf-style message for the person or agent at the client. A
 * level outside th_log_level is logged as TH_LOG_ERROR. */
void th_log(th_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether the caller cancelled the call: check it between units of work
 * and return early (e.g. th_fail(err, "cancelled", ...)). The host stops
 * the instance anyway; checking lets the tool stop where it chooses. */
bool th_cancelled(void);

/* A report, as kept natively for tests. */
typedef enum th_report_kind { TH_REPORT_PROGRESS, TH_REPORT_LOG } th_report_kind;
typedef struct th_report {
    th_report_kind kind;
    uint64_t done, total; /* progress (total: TH_TOTAL_UNKNOWN for none) */
    th_log_level level;   /* log */
    char *message;        /* NUL-terminated, valid UTF-8; NULL: a progress report without one */
} th_report;

/* Natively: the reports made since the last call, oldest first (*n of
 * them; free with th_reports_free), and forgets them. In a component the
 * reports went to the host: none. */
th_report *th_take_reports(size_t *n);
void th_reports_free(th_report *reports, size_t n);
/* Natively: makes th_cancelled() answer `cancelled` (until called again).
 * In a component it does nothing. */
void th_cancel_for_test(bool cancelled);

/* ── platform ───────────────────────────────────────────────────────── */

/* Implemented by kit/component.c in a component and by kit/native.c
 * natively: the raw initial working directory, or NULL. */
char *th_platform_initial_cwd(void);
/* Likewise: the context functions, with their strings already valid
 * UTF-8 (`message` NULL: none). */
void th_platform_progress(uint64_t done, uint64_t total, const char *message, size_t len);
void th_platform_log(th_log_level level, const char *message, size_t len);
bool th_platform_cancelled(void);

#endif
