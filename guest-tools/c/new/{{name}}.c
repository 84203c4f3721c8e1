/*
 * {{name}}: counts the lines and bytes of a file. A toolhost tool component
 * (contract toolhost:tool@0.3.0); `toolhost build` builds every *.c here
 * with the kit (toolhost_kit.h) for wasm32-wasi.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "count.h"
#include "toolhost_kit.h"

static bool execute(const th_json *args, th_buf *out, th_error *err) {
    /* The host checked the arguments against the input schema; C checks
     * what it uses anyway. */
    const char *path = th_json_string(th_json_get(args, "path"), NULL);
    if (path == NULL) return th_fail(err, "invalid_arguments", "path must be a string");

    /* Resolve every path argument: wasi-libc starts in "/", where nothing
     * is granted; the kit resolves against the host's working directory
     * (/workspace), as the host's path checks did. */
    char *resolved = th_resolve_path(path);
    if (resolved == NULL) return th_fail(err, "invalid_arguments", "cannot resolve %s", path);
    int fd = open(resolved, O_RDONLY);
    free(resolved);
    /* not_found, is_directory, permission_denied, ...: stable codes. */
    if (fd < 0) return th_fail_errno(err, errno, "cannot open", path);
    counts c;
    int e = count_fd(fd, &c);
    close(fd);
    if (e != 0) return th_fail_errno(err, e, "cannot read", path);

    /* The value: one JSON document matching the output schema. Strings go
     * through the kit's writer (escaping); numbers through printf. */
    th_buf_puts(out, "{\"path\":");
    th_json_write_cstr(out, path);
    th_buf_printf(out, ",\"lines\":%llu,\"bytes\":%llu}", c.lines, c.bytes);
    return true;
}

/* What the model reads. Pure: it runs in a fresh instance, from the value.
 * Returning false lets the host render the value instead. */
static bool render(const th_json *args, const th_json *value, th_content *out) {
    const char *path = th_json_string(th_json_get(value, "path"), NULL);
    uint64_t lines, bytes;
    if (path == NULL || !th_json_u64(th_json_get(value, "lines"), &lines) ||
        !th_json_u64(th_json_get(value, "bytes"), &bytes))
        return false;
    th_buf_printf(th_content_text(out), "%llu lines, %llu bytes in %s", (unsigned long long)lines,
                  (unsigned long long)bytes, path);
    return true;
}

/* The host checks this argument against the policy's grants first. */
static const th_path_param PATHS[] = {{"/path", TH_ACCESS_READ}};

static const th_tool TOOL = {
    .name = "{{name}}",
    .description = "Counts the lines and bytes of a file.",
    /* The schemas the host checks calls and values against: change them
     * here. additionalProperties: false refuses misspelt arguments. */
    .input_schema = "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
                    "\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1,"
                    "\"description\":\"The file, relative to the working directory or absolute.\"}},"
                    "\"required\":[\"path\"],\"additionalProperties\":false}",
    .output_schema = "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
                     "\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"The file, as given.\"},"
                     "\"lines\":{\"type\":\"integer\",\"minimum\":0,"
                     "\"description\":\"Newline characters, plus a last line without one.\"},"
                     "\"bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Size in bytes.\"}},"
                     "\"required\":[\"path\",\"lines\",\"bytes\"],\"additionalProperties\":false}",
    /* It changes nothing, and the same file gives the same answer. */
    .annotations = {.read_only = true, .idempotent = true},
    .paths = PATHS,
    .n_paths = 1,
    .execute = execute,
    .render = render,
};

/* Every tool of the component, once. */
TH_TOOLSET(&TOOL);
