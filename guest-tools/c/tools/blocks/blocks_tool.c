/*
 * A test fixture, not a tool to copy: the `blocks` component, which
 * tests/languages.rs builds and runs through the host to check the kit's
 * lowering of contract 0.3.0 (kit/component.c, wit-bindgen-c's bindings)
 * end to end. The Go kit has the same fixture (guest-tools/go/tools/blocks/),
 * and the test expects the same content from both.
 *
 *   blocks {text, blob_bytes} -> {text, blob_bytes}
 *       renders one block of every kind, in this order: text (`text`);
 *       an image (a PNG signature); audio (a WAV header); an embedded
 *       resource with text and a media type; one with a blob of
 *       `blob_bytes` pattern bytes (byte i is i * 31 + 7, mod 256) and a
 *       media type; one with empty text and none; one with a small blob
 *       and none; a resource link with its optional fields set; one
 *       without them. Strings are non-ASCII where they can be.
 *   plain {text} -> {text, bytes}
 *       declares host_renders and has no render: the host renders it.
 */
#include <stdlib.h>
#include <string.h>

#include "toolhost_kit.h"

/* The pattern byte at index i of the large blob. */
static unsigned char pattern_byte(uint64_t i) { return (unsigned char)(i * 31u + 7u); }

/* The `text` argument or member: a string without NUL. */
static const char *text_of(const th_json *obj, size_t *len) {
    const th_json *t = th_json_get(obj, "text");
    return th_json_is_c_string(t) ? th_json_string(t, len) : NULL;
}

static bool blocks_execute(const th_json *args, th_buf *out, th_error *err) {
    size_t len = 0;
    const char *text = text_of(args, &len);
    uint64_t blob_bytes = 0;
    if (text == NULL) return th_fail(err, "invalid_arguments", "text must be a string without NUL characters");
    if (!th_json_u64(th_json_get(args, "blob_bytes"), &blob_bytes) || blob_bytes > 1000000)
        return th_fail(err, "invalid_arguments", "blob_bytes must be an integer from 0 to 1000000");
    th_buf_puts(out, "{\"text\":");
    th_json_write_string(out, text, len);
    th_buf_printf(out, ",\"blob_bytes\":%llu}", (unsigned long long)blob_bytes);
    return true;
}

static bool blocks_render(const th_json *args, const th_json *value, th_content *out) {
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char wav[] = {'R', 'I', 'F', 'F', 4, 0, 0, 0, 'W', 'A', 'V', 'E'};
    static const unsigned char tiny[] = {0x00, 0xff, 0x10};
    size_t len = 0;
    const char *text = text_of(value, &len);
    uint64_t blob_bytes = 0;
    if (text == NULL || !th_json_u64(th_json_get(value, "blob_bytes"), &blob_bytes)) return false;
    unsigned char *blob = malloc(blob_bytes ? blob_bytes : 1);
    if (blob == NULL) return false;
    for (uint64_t i = 0; i < blob_bytes; i++) blob[i] = pattern_byte(i);

    th_buf_append(th_content_text(out), text, len);
    th_base64_write(th_content_image(out, "image/png"), png, sizeof png);
    th_base64_write(th_content_audio(out, "audio/wav"), wav, sizeof wav);
    th_buf *notes = th_content_resource_text(out, "file:///workspace/notes/café.md", "text/markdown; charset=utf-8");
    th_buf_puts(notes, "# Notes ✓\n\n");
    th_buf_append(notes, text, len);
    th_base64_write(th_content_resource_blob(out, "blob://pattern", "application/octet-stream"), blob, blob_bytes);
    th_content_resource_text(out, "memo://empty", NULL); /* empty text, no media type */
    th_base64_write(th_content_resource_blob(out, "blob://tiny", NULL), tiny, sizeof tiny);
    th_content_resource_link(out, "https://example.com/ü/doc.md", "doc ✓", "text/markdown",
                             "A linked document — é€😀");
    th_content_resource_link(out, "file:///workspace/README", "README", NULL, NULL);
    free(blob);
    return true;
}

static bool plain_execute(const th_json *args, th_buf *out, th_error *err) {
    size_t len = 0;
    const char *text = text_of(args, &len);
    if (text == NULL) return th_fail(err, "invalid_arguments", "text must be a string without NUL characters");
    th_buf_puts(out, "{\"text\":");
    th_json_write_string(out, text, len);
    th_buf_printf(out, ",\"bytes\":%zu}", len);
    return true;
}

static const th_tool BLOCKS = {
    .name = "blocks",
    .title = "Every block ✓",
    .description = "Renders one content block of every kind (a test fixture): é€😀.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
                    "\"blob_bytes\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000000}},"
                    "\"required\":[\"text\",\"blob_bytes\"],\"additionalProperties\":false}",
    .output_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
                     "\"blob_bytes\":{\"type\":\"integer\",\"minimum\":0}},"
                     "\"required\":[\"text\",\"blob_bytes\"],\"additionalProperties\":false}",
    .annotations = {.read_only = true, .idempotent = true},
    .execute = blocks_execute,
    .render = blocks_render,
};

static const th_tool PLAIN = {
    .name = "plain",
    .description = "Echoes its text with its length in bytes; the host renders it (a test fixture).",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
                    "\"required\":[\"text\"],\"additionalProperties\":false}",
    .output_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
                     "\"bytes\":{\"type\":\"integer\",\"minimum\":0}},"
                     "\"required\":[\"text\",\"bytes\"],\"additionalProperties\":false}",
    .annotations = {.destructive = true, .open_world = true}, /* the other two hints than blocks' */
    .execute = plain_execute,
    .host_renders = true,
};

TH_TOOLSET(&BLOCKS, &PLAIN);
