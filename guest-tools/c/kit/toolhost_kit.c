/* toolhost_kit: see toolhost_kit.h. Plain C11 + POSIX; no WIT types here. */
#include "toolhost_kit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ── th_buf ─────────────────────────────────────────────────────────── */

void th_buf_init(th_buf *b) { memset(b, 0, sizeof *b); }

void th_buf_free(th_buf *b) {
    free(b->data);
    th_buf_init(b);
}

static bool reserve(th_buf *b, size_t extra) {
    if (b->failed) return false;
    if (extra > SIZE_MAX - b->len - 1) {
        b->failed = true;
        return false;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void th_buf_append(th_buf *b, const void *data, size_t len) {
    if (!reserve(b, len)) return;
    if (len) memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void th_buf_puts(th_buf *b, const char *s) { th_buf_append(b, s, strlen(s)); }

void th_buf_putc(th_buf *b, char c) { th_buf_append(b, &c, 1); }

static void buf_vprintf(th_buf *b, const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0) {
        b->failed = true;
    } else if (reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
        b->len += (size_t)n;
    }
}

void th_buf_printf(th_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *th_buf_take(th_buf *b, size_t *len) {
    char *data = NULL;
    if (!b->failed) {
        if (!reserve(b, 0)) return NULL; /* make sure there is a (terminated) allocation */
        data = b->data;
        if (len) *len = b->len;
        b->data = NULL;
    }
    th_buf_free(b);
    return data;
}

/* ── JSON writing ───────────────────────────────────────────────────── */

void th_json_write_string(th_buf *b, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    th_buf_putc(b, '"');
    size_t run = 0; /* start of the pending run of bytes copied as they are */
    for (size_t i = 0; i < len;) {
        unsigned char c = u[i];
        const char *esc = NULL;
        char ubuf[7];
        size_t k = 1;
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c == '\b') esc = "\\b";
        else if (c == '\f') esc = "\\f";
        else if (c < 0x20) {
            ubuf[0] = '\\', ubuf[1] = 'u', ubuf[2] = '0', ubuf[3] = '0';
            ubuf[4] = hex[c >> 4], ubuf[5] = hex[c & 15], ubuf[6] = '\0';
            esc = ubuf;
        } else if (c >= 0x80) {
            k = th_utf8_seq(u + i, len - i);
            if (k == 0) {
                esc = "\xEF\xBF\xBD"; /* U+FFFD for an invalid byte */
                k = 1;
            }
        }
        if (esc) {
            th_buf_append(b, s + run, i - run);
            th_buf_puts(b, esc);
            i += k;
            run = i;
        } else {
            i += k;
        }
    }
    th_buf_append(b, s + run, len - run);
    th_buf_putc(b, '"');
}

void th_json_write_cstr(th_buf *b, const char *s) { th_json_write_string(b, s, strlen(s)); }

void th_json_write_u64(th_buf *b, uint64_t v) { th_buf_printf(b, "%llu", (unsigned long long)v); }

void th_json_write_bool(th_buf *b, bool v) { th_buf_puts(b, v ? "true" : "false"); }

/* ── UTF-8 and base64 ───────────────────────────────────────────────── */

bool th_utf8_valid(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t k = u[i] < 0x80 ? 1 : th_utf8_seq(u + i, len - i);
        if (k == 0) return false;
        i += k;
    }
    return true;
}

void th_buf_append_utf8(th_buf *b, const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0; /* start of the pending run of valid bytes */
    for (size_t i = 0; i < len;) {
        size_t k = u[i] < 0x80 ? 1 : th_utf8_seq(u + i, len - i);
        if (k == 0) {
            th_buf_append(b, s + run, i - run);
            th_buf_puts(b, "\xEF\xBF\xBD"); /* U+FFFD */
            run = ++i;
        } else {
            i += k;
        }
    }
    th_buf_append(b, s + run, len - run);
}

void th_base64_write(th_buf *b, const void *data, size_t len) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *u = data;
    if (len / 3 >= SIZE_MAX / 4 - 1) {
        b->failed = true;
        return;
    }
    if (!reserve(b, (len + 2) / 3 * 4)) return;
    char *o = b->data + b->len;
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)u[i] << 16 | (uint32_t)u[i + 1] << 8 | u[i + 2];
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        *o++ = alphabet[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)u[i] << 16 | (i + 1 < len ? (uint32_t)u[i + 1] << 8 : 0);
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
}

/* ── content blocks ─────────────────────────────────────────────────── */

void th_content_init(th_content *c) {
    memset(c, 0, sizeof *c);
    th_buf_init(&c->sink);
    c->sink.failed = true; /* drops what it is given */
}

static void block_free(th_block *b) {
    th_buf_free(&b->body);
    free(b->uri);
    free(b->name);
    free(b->mime_type);
    free(b->description);
}

void th_content_free(th_content *c) {
    for (size_t i = 0; i < c->len; i++) block_free(&c->blocks[i]);
    free(c->blocks);
    th_content_init(c);
}

/* A copy of `s`; *ok turns false when it cannot be made. NULL stays NULL. */
static char *copy_str(const char *s, bool *ok) {
    if (s == NULL) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d == NULL) *ok = false;
    else memcpy(d, s, n);
    return d;
}

/* Adds a block of `kind` with copies of the strings; its body, or the
 * sink when an allocation failed. */
static th_buf *add_block(th_content *c, th_content_kind kind, const char *uri, const char *name,
                         const char *mime_type, const char *description, bool blob) {
    if (c->failed) return &c->sink;
    if (c->len == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4;
        th_block *blocks = cap < SIZE_MAX / sizeof *blocks ? realloc(c->blocks, cap * sizeof *blocks) : NULL;
        if (blocks == NULL) {
            c->failed = true;
            return &c->sink;
        }
        c->blocks = blocks;
        c->cap = cap;
    }
    th_block b = {.kind = kind, .blob = blob};
    th_buf_init(&b.body);
    bool ok = true;
    b.uri = copy_str(uri, &ok);
    b.name = copy_str(name, &ok);
    b.mime_type = copy_str(mime_type, &ok);
    b.description = copy_str(description, &ok);
    if (!ok) {
        block_free(&b);
        c->failed = true;
        return &c->sink;
    }
    c->blocks[c->len] = b;
    return &c->blocks[c->len++].body;
}

/* Required strings given as NULL are empty (the contract has no "none"
 * for them). */
static const char *or_empty(const char *s) { return s ? s : ""; }

th_buf *th_content_text(th_content *c) { return add_block(c, TH_CONTENT_TEXT, NULL, NULL, NULL, NULL, false); }

th_buf *th_content_image(th_content *c, const char *mime_type) {
    return add_block(c, TH_CONTENT_IMAGE, NULL, NULL, or_empty(mime_type), NULL, false);
}

th_buf *th_content_audio(th_content *c, const char *mime_type) {
    return add_block(c, TH_CONTENT_AUDIO, NULL, NULL, or_empty(mime_type), NULL, false);
}

th_buf *th_content_resource_text(th_content *c, const char *uri, const char *mime_type) {
    return add_block(c, TH_CONTENT_RESOURCE, or_empty(uri), NULL, mime_type, NULL, false);
}

th_buf *th_content_resource_blob(th_content *c, const char *uri, const char *mime_type) {
    return add_block(c, TH_CONTENT_RESOURCE, or_empty(uri), NULL, mime_type, NULL, true);
}

void th_content_resource_link(th_content *c, const char *uri, const char *name, const char *mime_type,
                              const char *description) {
    add_block(c, TH_CONTENT_RESOURCE_LINK, or_empty(uri), or_empty(name), mime_type, description, false);
}

/* ── failures ───────────────────────────────────────────────────────── */

void th_error_init(th_error *err) {
    err->code[0] = '\0';
    err->message[0] = '\0';
    th_buf_init(&err->info);
}

void th_error_free(th_error *err) { th_buf_free(&err->info); }

bool th_fail(th_error *err, const char *code, const char *fmt, ...) {
    snprintf(err->code, sizeof err->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return false;
}

const char *th_errno_code(int errnum) {
    switch (errnum) {
    case ENOENT: return "not_found";
    case EISDIR: return "is_directory";
    case ENOTDIR: return "not_a_directory";
    case EACCES:
    case EPERM:
#ifdef ENOTCAPABLE
    case ENOTCAPABLE:
#endif
        return "permission_denied";
    case ENAMETOOLONG: return "name_too_long";
    case ELOOP: return "too_many_links";
    default: return "io_error";
    }
}

bool th_fail_errno(th_error *err, int errnum, const char *what, const char *path) {
    const char *code = th_errno_code(errnum);
    if (strcmp(code, "not_found") == 0) return th_fail(err, code, "%s: no such file or directory", path);
    if (strcmp(code, "is_directory") == 0) return th_fail(err, code, "%s is a directory", path);
    if (strcmp(code, "not_a_directory") == 0) return th_fail(err, code, "%s: not a directory", path);
    return th_fail(err, code, "%s %s: %s", what, path, strerror(errnum));
}

/* ── dispatch ───────────────────────────────────────────────────────── */

const th_json_limits th_kit_json_limits = {
    .max_input_bytes = (size_t)4 << 20,
    .max_depth = 64,
    .max_nodes = 200000,
};

/* Values (the tool's own output, parsed again by th_execute's check and by
 * render) may be larger than arguments. */
static const th_json_limits value_limits = {
    .max_input_bytes = (size_t)64 << 20,
    .max_depth = 64,
    .max_nodes = 4000000,
};

static const th_tool *find_tool(const th_tool *const *tools, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++) {
        const char *t = tools[i]->name;
        if (strlen(t) == len && memcmp(t, name, len) == 0) return tools[i];
    }
    return NULL;
}

static void quote_name(char *out, size_t cap, const char *name, size_t len) {
    th_buf b;
    th_buf_init(&b);
    th_json_write_string(&b, name, len > 64 ? 64 : len);
    snprintf(out, cap, "%s%s", b.failed ? "\"?\"" : b.data, len > 64 ? "..." : "");
    th_buf_free(&b);
}

bool th_execute(const th_tool *const *tools, size_t n_tools, const char *name, size_t name_len,
                const char *arguments, size_t arguments_len, th_buf *out, th_error *err) {
    const th_tool *tool = find_tool(tools, n_tools, name, name_len);
    if (tool == NULL) {
        char q[96];
        quote_name(q, sizeof q, name, name_len);
        return th_fail(err, "unknown_tool", "this component has no tool %s", q);
    }
    char perr[160];
    const th_json *args = NULL;
    th_json_doc *doc = th_json_parse(arguments, arguments_len, &th_kit_json_limits, &args, perr, sizeof perr);
    if (doc == NULL) return th_fail(err, "invalid_arguments", "the arguments are not valid JSON (%s)", perr);
    if (!th_json_is(args, TH_JSON_OBJECT)) {
        th_json_free(doc);
        return th_fail(err, "invalid_arguments", "the arguments must be a JSON object");
    }
    bool ok = tool->execute(args, out, err);
    th_json_free(doc);
    if (!ok) {
        if (err->code[0] == '\0') th_fail(err, "internal_error", "tool %s failed without a code", tool->name);
        return false;
    }
    if (out->failed) return th_fail(err, "out_of_memory", "the value of %s did not fit in memory", tool->name);
    /* The value must be one JSON document: a malformed one is a bug here,
     * better reported by the tool than as the host's output_invalid. */
    th_json_doc *check = th_json_parse(out->data, out->len, &value_limits, NULL, perr, sizeof perr);
    if (check == NULL) return th_fail(err, "internal_error", "tool %s produced invalid JSON (%s)", tool->name, perr);
    th_json_free(check);
    return true;
}

bool th_render(const th_tool *const *tools, size_t n_tools, const char *name, size_t name_len,
               const char *arguments, size_t arguments_len, const char *value, size_t value_len,
               th_content *out) {
    const th_tool *tool = find_tool(tools, n_tools, name, name_len);
    if (tool == NULL || tool->render == NULL || tool->host_renders) return false;
    const th_json *args = NULL, *val = NULL;
    th_json_doc *adoc = th_json_parse(arguments, arguments_len, &th_kit_json_limits, &args, NULL, 0);
    th_json_doc *vdoc = th_json_parse(value, value_len, &value_limits, &val, NULL, 0);
    bool ok = adoc && vdoc && th_json_is(args, TH_JSON_OBJECT) && tool->render(args, val, out) && !out->failed;
    for (size_t i = 0; ok && i < out->len; i++) ok = !out->blocks[i].body.failed;
    th_json_free(adoc);
    th_json_free(vdoc);
    return ok;
}

static bool valid_name(const char *n) {
    size_t len = strlen(n);
    if (len == 0 || len > 64 || !(n[0] >= 'a' && n[0] <= 'z')) return false;
    for (size_t i = 1; i < len; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '_')) return false;
    return true;
}

static bool schema_ok(const char *schema) {
    const th_json *root = NULL;
    th_json_doc *doc = th_json_parse(schema, strlen(schema), NULL, &root, NULL, 0);
    bool ok = doc && th_json_is(root, TH_JSON_OBJECT);
    th_json_free(doc);
    return ok;
}

bool th_check_toolset(const th_tool *const *tools, size_t n, char *problem, size_t cap) {
#define PROBLEM(...) (snprintf(problem, cap, __VA_ARGS__), false)
    if (n == 0) return PROBLEM("the toolset is empty");
    for (size_t i = 0; i < n; i++) {
        const th_tool *t = tools[i];
        if (t == NULL || t->name == NULL) return PROBLEM("tool %zu has no name", i);
        if (!valid_name(t->name)) return PROBLEM("tool name \"%s\" is not [a-z][a-z0-9_]* of at most 64 bytes", t->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(tools[j]->name, t->name) == 0) return PROBLEM("tool name %s is declared twice", t->name);
        if (t->description == NULL || t->description[0] == '\0') return PROBLEM("%s has no description", t->name);
        if (t->execute == NULL) return PROBLEM("%s has no execute function", t->name);
        if (t->input_schema == NULL || !schema_ok(t->input_schema)) return PROBLEM("%s: the input schema is not a JSON object", t->name);
        if (t->output_schema == NULL || !schema_ok(t->output_schema)) return PROBLEM("%s: the output schema is not a JSON object", t->name);
        if (t->host_renders && t->render != NULL)
            return PROBLEM("%s declares host_renders and has a render function (the host never calls it)", t->name);
        for (size_t k = 0; k < t->n_paths; k++) {
            if (t->paths[k].pointer == NULL || t->paths[k].pointer[0] != '/') return PROBLEM("%s: path pointer %zu is not a JSON Pointer", t->name, k);
            if ((unsigned)t->paths[k].access > TH_ACCESS_WRITE) return PROBLEM("%s: path %zu has an unknown access", t->name, k);
        }
        for (size_t k = 0; k < t->n_urls; k++)
            if (t->urls[k] == NULL || t->urls[k][0] != '/') return PROBLEM("%s: URL pointer %zu is not a JSON Pointer", t->name, k);
    }
    return true;
#undef PROBLEM
}

/* ── paths ──────────────────────────────────────────────────────────── */

const char *th_initial_cwd(void) {
    static char *cwd;
    if (cwd == NULL) {
        char *raw = th_platform_initial_cwd();
        if (raw != NULL && raw[0] == '/') {
            cwd = raw;
        } else if (raw != NULL && raw[0] != '\0') { /* relative: taken from / */
            size_t n = strlen(raw);
            cwd = malloc(n + 2);
            if (cwd) {
                cwd[0] = '/';
                memcpy(cwd + 1, raw, n + 1);
            }
            free(raw);
        } else {
            free(raw);
        }
        if (cwd == NULL) return "/";
    }
    return cwd;
}

char *th_resolve_path(const char *path) {
    if (path == NULL) return NULL;
    const char *base = path[0] == '/' ? "" : th_initial_cwd();
    size_t bl = strlen(base), pl = strlen(path);
    if (pl > SIZE_MAX - bl - 3) return NULL;
    char *joined = malloc(bl + pl + 2);
    char *out = malloc(bl + pl + 2);
    if (joined == NULL || out == NULL) {
        free(joined);
        free(out);
        return NULL;
    }
    memcpy(joined, base, bl);
    joined[bl] = '/';
    memcpy(joined + bl + 1, path, pl + 1);
    /* Copy component by component, dropping empty ones and `.`. */
    size_t o = 0;
    const char *s = joined;
    while (*s) {
        while (*s == '/') s++;
        const char *e = s;
        while (*e && *e != '/') e++;
        size_t n = (size_t)(e - s);
        if (n > 0 && !(n == 1 && s[0] == '.')) {
            out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
        }
        s = e;
    }
    if (o == 0) out[o++] = '/';
    out[o] = '\0';
    free(joined);
    return out;
}

/* ── context ────────────────────────────────────────────────────────── */

void th_progress(uint64_t done, uint64_t total, const char *message) {
    size_t len = message ? strlen(message) : 0;
    if (message == NULL || th_utf8_valid(message, len)) {
        th_platform_progress(done, total, message, len);
        return;
    }
    th_buf b;
    th_buf_init(&b);
    th_buf_append_utf8(&b, message, len);
    /* Out of memory: the progress without its message. */
    th_platform_progress(done, total, b.failed ? NULL : b.data, b.failed ? 0 : b.len);
    th_buf_free(&b);
}

void th_log(th_log_level level, const char *fmt, ...) {
    th_buf b;
    th_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if ((unsigned)level > TH_LOG_EMERGENCY) level = TH_LOG_ERROR;
    if (!b.failed && !th_utf8_valid(b.data ? b.data : "", b.len)) {
        th_buf clean;
        th_buf_init(&clean);
        th_buf_append_utf8(&clean, b.data, b.len);
        th_buf_free(&b);
        b = clean;
    }
    if (!b.failed) th_platform_log(level, b.data ? b.data : "", b.len); /* out of memory: dropped */
    th_buf_free(&b);
}

bool th_cancelled(void) { return th_platform_cancelled(); }

void th_reports_free(th_report *reports, size_t n) {
    for (size_t i = 0; i < n; i++) free(reports[i].message);
    free(reports);
}
