/*
 * A template for a C tool component: copy tools/template/ to
 * tools/<name>/, rename, and build with `guest-tools/c/build.sh
 * target/c-guests/tool_<name>.wasm <name>`.
 *
 * It provides one tool, `count_lines` {path} -> {path, lines, bytes}: it
 * counts the newline-terminated lines of a file (a last line without a
 * newline counts too), streaming it through a fixed buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "toolhost_kit.h"

static bool count_lines_execute(const th_json *args, th_buf *out, th_error *err) {
    /* The host validated the arguments against the input schema; check
     * what you use anyway. */
    const th_json *p = th_json_get(args, "path");
    if (!th_json_is_c_string(p) || p->u.string.len == 0)
        return th_fail(err, "invalid_arguments", "path must be a non-empty string");
    const char *path = p->u.string.ptr;

    /* Always resolve path arguments: wasi-libc starts in "/", where
     * nothing is granted; the kit resolves against the host's initial
     * working directory (/workspace), as the host's path checks do. */
    char *resolved = th_resolve_path(path);
    if (resolved == NULL) return th_fail(err, "out_of_memory", "cannot resolve %s", path);
    int fd = open(resolved, O_RDONLY);
    free(resolved);
    if (fd < 0) return th_fail_errno(err, errno, "cannot open", path); /* not_found, ... */
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return th_fail(err, "is_directory", "%s is a directory", path);
    }

    static char buf[64 * 1024];
    unsigned long long lines = 0, bytes = 0;
    char last = '\n';
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return th_fail_errno(err, e, "cannot read", path);
        }
        if (n == 0) break;
        for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
        bytes += (unsigned long long)n;
        last = buf[n - 1];
    }
    close(fd);
    if (last != '\n') lines++;

    /* The value: one JSON document matching the output schema. Strings go
     * through th_json_write_* (escaping); numbers through printf. */
    th_buf_puts(out, "{\"path\":");
    th_json_write_cstr(out, path);
    th_buf_printf(out, ",\"lines\":%llu,\"bytes\":%llu}", lines, bytes);
    return true;
}

/* What the model reads: content blocks (here one text block; also
 * th_content_image, _audio, _resource_text, _resource_blob,
 * _resource_link). Pure: it sees only the arguments and the value (in a
 * fresh instance). Return false to let the host render the value, or
 * declare `.host_renders = true` and no render at all. */
static bool count_lines_render(const th_json *args, const th_json *value, th_content *out) {
    const char *path = th_json_string(th_json_get(value, "path"), NULL);
    uint64_t lines = 0;
    if (path == NULL || !th_json_u64(th_json_get(value, "lines"), &lines)) return false;
    th_buf_printf(th_content_text(out), "%s: %llu line%s", path, (unsigned long long)lines, lines == 1 ? "" : "s");
    return true;
}

static const th_path_param COUNT_LINES_PATHS[] = {{"/path", TH_ACCESS_READ}};

static const th_tool COUNT_LINES = {
    .name = "count_lines", /* [a-z][a-z0-9_]*, at most 64 bytes */
    .title = "Count lines",
    .description = "Counts the lines of a file.",
    .input_schema = "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
                    "\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1,"
                    "\"description\":\"The file, relative to the working directory or absolute.\"}},"
                    "\"required\":[\"path\"],\"additionalProperties\":false}",
    .output_schema = "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
                     "\"properties\":{\"path\":{\"type\":\"string\"},\"lines\":{\"type\":\"integer\",\"minimum\":0},"
                     "\"bytes\":{\"type\":\"integer\",\"minimum\":0}},"
                     "\"required\":[\"path\",\"lines\",\"bytes\"],\"additionalProperties\":false}",
    .annotations = {.read_only = true, .idempotent = true},
    .paths = COUNT_LINES_PATHS, /* the host checks them against the policy first */
    .n_paths = 1,
    .execute = count_lines_execute,
    .render = count_lines_render,
};

/* Every tool of the component, once. */
TH_TOOLSET(&COUNT_LINES);
