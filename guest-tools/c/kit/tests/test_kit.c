/* Native unit tests of the kit: the JSON parser (edge cases and hostile
 * input), the JSON writer, UTF-8 and base64, dispatch, content blocks,
 * host_renders, the context (progress, log, cancellation, as kept
 * natively) and path resolution. */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "th_json.h"
#include "th_test.h"
#include "toolhost_kit.h"

/* ── a tiny toolset for the dispatch tests ──────────────────────────── */

static bool echo_execute(const th_json *args, th_buf *out, th_error *err) {
    const th_json *v = th_json_get(args, "text");
    if (!th_json_is(v, TH_JSON_STRING)) return th_fail(err, "invalid_arguments", "text must be a string");
    th_buf_puts(out, "{\"text\":");
    th_json_write_string(out, v->u.string.ptr, v->u.string.len);
    th_buf_puts(out, "}");
    return true;
}

static bool broken_execute(const th_json *args, th_buf *out, th_error *err) {
    th_buf_puts(out, "{\"unterminated\":");
    return true;
}

static bool echo_render(const th_json *args, const th_json *value, th_content *out) {
    th_buf_puts(th_content_text(out), th_json_string(th_json_get(value, "text"), NULL));
    return true;
}

/* Every kind of block, in an order other than the contract's. */
static bool media_render(const th_json *args, const th_json *value, th_content *out) {
    th_base64_write(th_content_audio(out, "audio/wav"), "RIFF", 4);
    th_buf_puts(th_content_resource_text(out, "file:///notes.md", "text/markdown"), "# Notes");
    th_base64_write(th_content_resource_blob(out, "file:///a.bin", NULL), "\x00\xff", 2);
    th_content_resource_link(out, "file:///b.txt", "b.txt", NULL, "the other file");
    th_base64_write(th_content_image(out, "image/png"), "\x89PNG", 4);
    th_buf_puts(th_content_text(out), "done");
    return true;
}

static bool empty_execute(const th_json *args, th_buf *out, th_error *err) {
    th_buf_puts(out, "{}");
    return true;
}

/* Reports while it runs: two progress updates and a log message, and
 * fails when cancelled. */
static bool busy_execute(const th_json *args, th_buf *out, th_error *err) {
    for (uint64_t i = 1; i <= 2; i++) {
        if (th_cancelled()) return th_fail(err, "cancelled", "cancelled after %llu steps", (unsigned long long)(i - 1));
        th_progress(i, 2, i == 2 ? "steps" : NULL);
    }
    th_log(TH_LOG_NOTICE, "%d steps done", 2);
    th_buf_puts(out, "{}");
    return true;
}

/* Both schemas of the test tools: any object. */
#define ANY_OBJECT .input_schema = "{\"type\":\"object\"}", .output_schema = "{\"type\":\"object\"}"

static const th_tool ECHO = {.name = "echo", .description = "Echoes text.", ANY_OBJECT,
                             .execute = echo_execute, .render = echo_render};
static const th_tool BROKEN = {.name = "broken", .description = "Produces invalid JSON.", ANY_OBJECT,
                               .execute = broken_execute};
static const th_tool MEDIA = {.name = "media", .description = "Renders every kind of block.", ANY_OBJECT,
                              .execute = empty_execute, .render = media_render};
static const th_tool PLAIN = {.name = "plain", .description = "Renders nothing itself.", ANY_OBJECT,
                              .execute = empty_execute, .host_renders = true};
static const th_tool BUSY = {.name = "busy", .description = "Reports progress and logs.", ANY_OBJECT,
                             .execute = busy_execute};
TH_TOOLSET(&ECHO, &BROKEN, &MEDIA, &PLAIN, &BUSY);

/* ── helpers ────────────────────────────────────────────────────────── */

static bool parses(const char *s, size_t len) {
    th_json_doc *d = th_json_parse(s, len, NULL, NULL, NULL, 0);
    th_json_free(d);
    return d != NULL;
}
#define OK(lit) CHECK_MSG(parses(lit, sizeof(lit) - 1), "should parse: %s", #lit)
#define BAD(lit) CHECK_MSG(!parses(lit, sizeof(lit) - 1), "should fail: %s", #lit)

/* ── JSON parser ────────────────────────────────────────────────────── */

static void test_json_valid(void) {
    OK("{}");
    OK("[]");
    OK(" \t\r\n{ \"a\" : [ 1 , 2 , { } ] } \n");
    OK("0");
    OK("-0");
    OK("1.5e10");
    OK("1E-2");
    OK("-12.25E+3");
    OK("\"\"");
    OK("true");
    OK("false");
    OK("null");
    OK("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\"");
    OK("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""); /* UTF-8 as is */
    OK("\"\x7f\"");                                      /* DEL is allowed */
    OK("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
}

static void test_json_invalid(void) {
    BAD("");
    BAD("   ");
    BAD("{");
    BAD("}");
    BAD("[1,]");
    BAD("[,1]");
    BAD("{\"a\":1,}");
    BAD("{\"a\" 1}");
    BAD("{a:1}");
    BAD("{'a':1}");
    BAD("{1:1}");
    BAD("01");
    BAD("1.");
    BAD(".5");
    BAD("-");
    BAD("+1");
    BAD("1e");
    BAD("1e+");
    BAD("0x10");
    BAD("NaN");
    BAD("Infinity");
    BAD("-Infinity");
    BAD("nul");
    BAD("truee");
    BAD("True");
    BAD("[1 2]");
    BAD("{} x");
    BAD("{}{}");
    BAD("/* c */ {}");
    BAD("{} // c");
    BAD("\"abc");
    BAD("\"abc\\\"");
    BAD("\"\\x\"");
    BAD("\"\\u12\"");
    BAD("\"\\u12g4\"");
    BAD("\"\\ud800\"");         /* lone high surrogate */
    BAD("\"\\udc00\"");         /* lone low surrogate */
    BAD("\"\\ud800\\u0041\""); /* high surrogate + non-surrogate */
    BAD("\"\\ud800\\ud800\"");
    BAD("\"a\nb\"");            /* raw control character */
    BAD("\"a\tb\"");
    BAD("\"\xc0\x80\"");         /* overlong NUL */
    BAD("\"\xe0\x80\xaf\"");     /* overlong '/' */
    BAD("\"\xed\xa0\x80\"");     /* UTF-8-encoded surrogate */
    BAD("\"\xf4\x90\x80\x80\""); /* above U+10FFFF */
    BAD("\"\x80\"");             /* lone continuation byte */
    BAD("\"\xe2\x82\"");         /* truncated sequence */
    BAD("\"\xff\"");
    BAD("\xef\xbb\xbf{}");       /* a BOM is not JSON whitespace */
    BAD("\f{}");
    BAD("{\"a\":1,\"a\":2}");    /* duplicate keys */
    BAD("{\"a\":1,\"b\":{\"c\":1,\"c\":1}}");
    CHECK(!parses("{\"a\":1}\0", 8)); /* embedded NUL after the value */
    CHECK(!parses("[\0]", 3));
    CHECK(!parses(NULL, 5));
}

static void test_json_values(void) {
    const char *s = "{\"s\":\"a\\u0000b\",\"n\":-1.25e2,\"t\":true,\"z\":null,\"a\":[1,\"x\"],\"e\":\"\\ud83d\\ude00\"}";
    const th_json *root;
    char err[128];
    th_json_doc *d = th_json_parse(s, strlen(s), NULL, &root, err, sizeof err);
    CHECK(d != NULL);
    if (!d) return;
    size_t len = 0;
    const char *str = th_json_string(th_json_get(root, "s"), &len);
    CHECK(str && len == 3 && memcmp(str, "a\0b", 3) == 0);
    CHECK(!th_json_is_c_string(th_json_get(root, "s")));
    CHECK(th_json_get(root, "n")->u.number.value == -125.0);
    CHECK(th_json_get(root, "t")->u.boolean);
    CHECK(th_json_is(th_json_get(root, "z"), TH_JSON_NULL));
    CHECK(th_json_get(root, "a")->u.children.len == 2);
    CHECK_STR(th_json_string(th_json_get(root, "e"), NULL), "\xf0\x9f\x98\x80");
    CHECK(th_json_get(root, "missing") == NULL);
    CHECK(th_json_get(NULL, "s") == NULL);
    CHECK(th_json_string(th_json_get(root, "n"), NULL) == NULL);
    th_json_free(d);
}

static void test_json_errors_have_offsets(void) {
    char err[128];
    CHECK(th_json_parse("{\"a\":1,}", 8, NULL, NULL, err, sizeof err) == NULL);
    CHECK_MSG(strncmp(err, "offset 7:", 9) == 0, "message: %s", err);
    CHECK(th_json_parse("[1,2", 4, NULL, NULL, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "unterminated") != NULL, "message: %s", err);
    /* a tiny buffer is never overrun */
    char tiny[8];
    CHECK(th_json_parse("nope", 4, NULL, NULL, tiny, sizeof tiny) == NULL);
    CHECK(strlen(tiny) < sizeof tiny);
}

static void test_json_u64(void) {
    struct { const char *text; bool ok; uint64_t v; } cases[] = {
        {"0", true, 0}, {"42", true, 42}, {"1.0", true, 1}, {"1e3", true, 1000}, {"-0", true, 0},
        {"18446744073709551615", true, UINT64_MAX}, {"18446744073709551616", false, 0},
        {"-1", false, 0}, {"1.5", false, 0}, {"1e300", false, 0}, {"9007199254740992.0", true, 9007199254740992ull},
        {"9007199254740994.0", false, 0}, {"\"1\"", false, 0}, {"true", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const th_json *v;
        th_json_doc *d = th_json_parse(cases[i].text, strlen(cases[i].text), NULL, &v, NULL, 0);
        uint64_t got = 0;
        bool ok = d && th_json_u64(v, &got);
        CHECK_MSG(ok == cases[i].ok && (!ok || got == cases[i].v), "th_json_u64(%s)", cases[i].text);
        th_json_free(d);
    }
}

static char *repeat(const char *unit, size_t n, const char *tail) {
    size_t u = strlen(unit), t = strlen(tail);
    char *s = malloc(u * n + t + 1);
    for (size_t i = 0; i < n; i++) memcpy(s + i * u, unit, u);
    memcpy(s + u * n, tail, t + 1);
    return s;
}

static void test_json_limits(void) {
    /* depth: 64 nested arrays parse, 65 do not (default limit) */
    char *s = repeat("[", 64, "");
    char *t = repeat("]", 64, "");
    char *ok = malloc(200), *deep = malloc(200);
    snprintf(ok, 200, "%s%s", s, t);
    snprintf(deep, 200, "[%s%s]", s, t);
    CHECK(parses(ok, strlen(ok)));
    CHECK(!parses(deep, strlen(deep)));
    free(s), free(t), free(ok), free(deep);
    /* a million '[' fails fast on depth and never recurses that deep */
    char *bomb = repeat("[", 1000000, "");
    CHECK(!parses(bomb, strlen(bomb)));
    free(bomb);
    /* a caller asking for more depth than the hard limit gets 512 */
    th_json_limits deep_limits = {.max_depth = 100000};
    char *d600 = repeat("[", 600, "");
    CHECK(th_json_parse(d600, 600, &deep_limits, NULL, NULL, 0) == NULL);
    free(d600);
    /* node count */
    th_json_limits few = {.max_nodes = 10};
    th_json_doc *nine = th_json_parse("[1,2,3,4,5,6,7,8]", 17, &few, NULL, NULL, 0); /* 9 values */
    CHECK(nine != NULL);
    th_json_free(nine);
    CHECK(th_json_parse("[1,2,3,4,5,6,7,8,9,10]", 22, &few, NULL, NULL, 0) == NULL);
    /* input size */
    th_json_limits small = {.max_input_bytes = 4};
    CHECK(th_json_parse("[1,2]", 5, &small, NULL, NULL, 0) == NULL);
}

static void test_json_large_objects(void) {
    /* 20,000 distinct keys: the duplicate check sorts (no O(n^2)) */
    size_t n = 20000;
    th_buf b;
    th_buf_init(&b);
    th_buf_putc(&b, '{');
    for (size_t i = 0; i < n; i++) th_buf_printf(&b, "%s\"k%zu\":%zu", i ? "," : "", i, i);
    th_buf_putc(&b, '}');
    const th_json *root;
    th_json_doc *d = th_json_parse(b.data, b.len, NULL, &root, NULL, 0);
    CHECK(d != NULL && root->u.children.len == n);
    uint64_t v = 0;
    CHECK(th_json_u64(th_json_get(root, "k19999"), &v) && v == 19999);
    th_json_free(d);
    /* the same with one duplicate at the end */
    b.len--;
    th_buf_puts(&b, ",\"k123\":0}");
    CHECK(!parses(b.data, b.len));
    th_buf_free(&b);
}

/* Random mutations of valid documents: nothing may crash, leak or read out
 * of bounds (run under AddressSanitizer by test.sh). */
static void test_json_fuzz(void) {
    const char *seeds[] = {
        "{\"path\":\"a/b.txt\",\"algorithm\":\"sha256\",\"offset\":10,\"length\":1e3}",
        "[1,-2.5e-3,true,false,null,\"\\u00e9\\ud83d\\ude00\",{\"a\":[[]]}]",
        "\"caf\xc3\xa9\"",
    };
    const char alphabet[] = "{}[]\",:\\u0123456789abcdefABCDEF.eE+- \t\n\x80\xc3\xed\xf4\xff\x00";
    uint32_t rng = 12345;
    int parsed = 0;
    for (int iter = 0; iter < 30000; iter++) {
        const char *seed = seeds[iter % 3];
        size_t len = strlen(seed);
        char buf[256];
        memcpy(buf, seed, len);
        int edits = 1 + iter % 4;
        for (int e = 0; e < edits; e++) {
            rng = rng * 1103515245u + 12345u;
            size_t pos = (rng >> 8) % (len + 1);
            rng = rng * 1103515245u + 12345u;
            char c = alphabet[(rng >> 8) % (sizeof alphabet - 1)];
            rng = rng * 1103515245u + 12345u;
            switch ((rng >> 8) % 3) {
            case 0: if (pos < len) buf[pos] = c; break;                            /* replace */
            case 1: if (len < sizeof buf - 1) { memmove(buf + pos + 1, buf + pos, len - pos); buf[pos] = c; len++; } break;
            case 2: if (pos < len) { memmove(buf + pos, buf + pos + 1, len - pos - 1); len--; } break; /* delete */
            }
        }
        /* parse from an exact-size heap copy: ASan sees any over-read */
        char *exact = malloc(len ? len : 1);
        memcpy(exact, buf, len);
        th_json_doc *d = th_json_parse(exact, len, NULL, NULL, NULL, 0);
        parsed += d != NULL;
        th_json_free(d);
        free(exact);
    }
    CHECK(parsed > 0 && parsed < 30000);
}

/* ── JSON writer ────────────────────────────────────────────────────── */

static void test_json_writer(void) {
    th_buf b;
    th_buf_init(&b);
    const char raw[] = "q\"b\\n\n\t\x01\x1f caf\xc3\xa9 \xff end";
    th_json_write_string(&b, raw, sizeof raw - 1);
    CHECK_STR(b.data, "\"q\\\"b\\\\n\\n\\t\\u0001\\u001f caf\xc3\xa9 \xef\xbf\xbd end\"");
    const th_json *v;
    th_json_doc *d = th_json_parse(b.data, b.len, NULL, &v, NULL, 0);
    CHECK(d != NULL && th_json_is(v, TH_JSON_STRING));
    th_json_free(d);
    th_buf_free(&b);
    th_json_write_u64(&b, UINT64_MAX);
    CHECK_STR(b.data, "18446744073709551615");
    size_t len;
    char *taken = th_buf_take(&b, &len);
    CHECK(taken && len == 20 && b.data == NULL);
    free(taken);
}

/* ── dispatch ───────────────────────────────────────────────────────── */

static bool run(const char *name, const char *args, th_buf *out, th_error *err) {
    th_buf_init(out);
    th_error_init(err);
    return th_execute(th_toolset, th_toolset_len, name, strlen(name), args, strlen(args), out, err);
}

static void test_dispatch(void) {
    th_buf out;
    th_error err;
    CHECK(run("echo", "{\"text\":\"hi\"}", &out, &err));
    CHECK_STR(out.data, "{\"text\":\"hi\"}");
    th_buf_free(&out);
    th_error_free(&err);

    struct { const char *name, *args, *code; } fails[] = {
        {"nope", "{}", "unknown_tool"},
        {"echo", "", "invalid_arguments"},
        {"echo", "[1]", "invalid_arguments"},
        {"echo", "{\"text\":1}", "invalid_arguments"},
        {"echo", "{\"text\":\"a\",\"text\":\"b\"}", "invalid_arguments"},
        {"broken", "{}", "internal_error"},
    };
    for (size_t i = 0; i < sizeof fails / sizeof fails[0]; i++) {
        CHECK(!run(fails[i].name, fails[i].args, &out, &err));
        CHECK_STR(err.code, fails[i].code);
        CHECK(err.message[0] != '\0');
        th_buf_free(&out);
        th_error_free(&err);
    }
    /* a name with NUL and quotes is quoted in the message, not cut */
    th_buf_init(&out);
    th_error_init(&err);
    CHECK(!th_execute(th_toolset, th_toolset_len, "ec\0ho\"", 6, "{}", 2, &out, &err));
    CHECK_STR(err.code, "unknown_tool");
    CHECK(strstr(err.message, "\\u0000") != NULL);
    th_buf_free(&out);

    th_content content;
    th_content_init(&content);
    CHECK(th_render(th_toolset, th_toolset_len, "echo", 4, "{}", 2, "{\"text\":\"shown\"}", 16, &content));
    CHECK(content.len == 1 && content.blocks[0].kind == TH_CONTENT_TEXT);
    if (content.len == 1) CHECK_STR(content.blocks[0].body.data, "shown");
    th_content_free(&content);
    CHECK(!th_render(th_toolset, th_toolset_len, "broken", 6, "{}", 2, "{}", 2, &content)); /* no render */
    CHECK(!th_render(th_toolset, th_toolset_len, "echo", 4, "{}", 2, "{bad", 4, &content));
    th_content_free(&content);

    char problem[160];
    CHECK_MSG(th_check_toolset(th_toolset, th_toolset_len, problem, sizeof problem), "%s", problem);
    th_tool bad = ECHO;
    bad.name = "Echo";
    const th_tool *bad_set[] = {&bad};
    CHECK(!th_check_toolset(bad_set, 1, problem, sizeof problem));
    const th_tool *dup_set[] = {&ECHO, &ECHO};
    CHECK(!th_check_toolset(dup_set, 2, problem, sizeof problem));
    bad = ECHO;
    bad.input_schema = "{\"type\":";
    CHECK(!th_check_toolset(bad_set, 1, problem, sizeof problem));
}

static void test_errno_codes(void) {
    CHECK_STR(th_errno_code(ENOENT), "not_found");
    CHECK_STR(th_errno_code(EISDIR), "is_directory");
    CHECK_STR(th_errno_code(ENOTDIR), "not_a_directory");
    CHECK_STR(th_errno_code(EACCES), "permission_denied");
    CHECK_STR(th_errno_code(EIO), "io_error");
}

/* ── UTF-8 and base64 ───────────────────────────────────────────────── */

static void test_utf8(void) {
    CHECK(th_utf8_valid("", 0));
    CHECK(th_utf8_valid("caf\xc3\xa9 \xf0\x9f\x98\x80", 10));
    CHECK(th_utf8_valid("a\0b", 3)); /* NUL is a character */
    CHECK(!th_utf8_valid("\xff", 1));
    CHECK(!th_utf8_valid("ab\xc3", 3));        /* truncated */
    CHECK(!th_utf8_valid("\xed\xa0\x80", 3)); /* a surrogate */
    th_buf b;
    th_buf_init(&b);
    th_buf_append_utf8(&b, "a\xff" "b\xc3\xa9\xe2\x82", 7);
    CHECK_STR(b.data, "a\xef\xbf\xbd" "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd");
    CHECK(th_utf8_valid(b.data, b.len));
    th_buf_free(&b);
}

static void test_base64(void) {
    /* RFC 4648, section 10 */
    const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        th_buf b;
        th_buf_init(&b);
        th_buf_puts(&b, "<");
        th_base64_write(&b, in[i], strlen(in[i]));
        th_buf_puts(&b, ">");
        char expect[16];
        snprintf(expect, sizeof expect, "<%s>", out[i]);
        CHECK_STR(b.data, expect);
        th_buf_free(&b);
    }
    th_buf b;
    th_buf_init(&b);
    th_base64_write(&b, "\x00\xff\xfe\x80", 4);
    CHECK_STR(b.data, "AP/+gA==");
    th_buf_free(&b);
}

/* ── content blocks and host_renders ────────────────────────────────── */

static void test_content_blocks(void) {
    th_content c;
    th_content_init(&c);
    CHECK(th_render(th_toolset, th_toolset_len, "media", 5, "{}", 2, "{}", 2, &c));
    CHECK(c.len == 6);
    if (c.len != 6) {
        th_content_free(&c);
        return;
    }
    const th_block *b = c.blocks;
    CHECK(b[0].kind == TH_CONTENT_AUDIO);
    CHECK_STR(b[0].body.data, "UklGRg==");
    CHECK_STR(b[0].mime_type, "audio/wav");
    CHECK(b[1].kind == TH_CONTENT_RESOURCE && !b[1].blob);
    CHECK_STR(b[1].uri, "file:///notes.md");
    CHECK_STR(b[1].mime_type, "text/markdown");
    CHECK_STR(b[1].body.data, "# Notes");
    CHECK(b[2].kind == TH_CONTENT_RESOURCE && b[2].blob && b[2].mime_type == NULL);
    CHECK_STR(b[2].body.data, "AP8=");
    CHECK(b[3].kind == TH_CONTENT_RESOURCE_LINK && b[3].mime_type == NULL);
    CHECK_STR(b[3].uri, "file:///b.txt");
    CHECK_STR(b[3].name, "b.txt");
    CHECK_STR(b[3].description, "the other file");
    CHECK(b[4].kind == TH_CONTENT_IMAGE);
    CHECK_STR(b[4].body.data, "iVBORw==");
    CHECK_STR(b[4].mime_type, "image/png");
    CHECK(b[5].kind == TH_CONTENT_TEXT);
    CHECK_STR(b[5].body.data, "done");
    th_content_free(&c);
    CHECK(c.len == 0 && c.blocks == NULL);
    /* the kinds are the contract's discriminants */
    CHECK(TH_CONTENT_TEXT == 0 && TH_CONTENT_IMAGE == 1 && TH_CONTENT_RESOURCE_LINK == 2 && TH_CONTENT_AUDIO == 3 &&
          TH_CONTENT_RESOURCE == 4);
    /* NULL for a required string is the empty string */
    th_content_init(&c);
    th_content_resource_link(&c, NULL, NULL, NULL, NULL);
    CHECK(c.len == 1 && c.blocks[0].uri && c.blocks[0].uri[0] == '\0' && c.blocks[0].name[0] == '\0');
    th_content_free(&c);
    /* after a failure every block lands in the sink, and render fails */
    th_content_init(&c);
    c.failed = true;
    th_buf *sink = th_content_text(&c);
    th_buf_puts(sink, "dropped");
    CHECK(sink == &c.sink && c.len == 0 && sink->data == NULL);
    th_content_free(&c);
}

static void test_host_renders(void) {
    char problem[160];
    /* the toolset has PLAIN, which declares host_renders */
    CHECK_MSG(th_check_toolset(th_toolset, th_toolset_len, problem, sizeof problem), "%s", problem);
    th_content c;
    th_content_init(&c);
    CHECK(!th_render(th_toolset, th_toolset_len, "plain", 5, "{}", 2, "{}", 2, &c));
    CHECK(c.len == 0);
    /* a tool declaring host_renders with a render function is refused, and
     * its render is never called */
    th_tool both = MEDIA;
    both.host_renders = true;
    const th_tool *set[] = {&both};
    CHECK(!th_check_toolset(set, 1, problem, sizeof problem));
    CHECK_MSG(strstr(problem, "host_renders") != NULL, "%s", problem);
    CHECK(!th_render(set, 1, "media", 5, "{}", 2, "{}", 2, &c));
    CHECK(c.len == 0);
    th_content_free(&c);
}

/* ── context ────────────────────────────────────────────────────────── */

/* Drops the reports made so far. */
static void forget_reports(void) {
    size_t n;
    th_report *r = th_take_reports(&n);
    th_reports_free(r, n);
}

static void test_context_reports(void) {
    forget_reports(); /* whatever came before */
    size_t n;
    th_progress(0, TH_TOTAL_UNKNOWN, NULL);
    th_progress(3, 10, "files");
    th_log(TH_LOG_WARNING, "%d of %s", 7, "ten");
    th_log((th_log_level)42, "odd level");
    th_progress(4, 10, "bad \xff byte");
    th_report *r = th_take_reports(&n);
    CHECK(n == 5);
    if (n == 5) {
        CHECK(r[0].kind == TH_REPORT_PROGRESS && r[0].done == 0 && r[0].total == TH_TOTAL_UNKNOWN && r[0].message == NULL);
        CHECK(r[1].kind == TH_REPORT_PROGRESS && r[1].done == 3 && r[1].total == 10);
        CHECK_STR(r[1].message, "files");
        CHECK(r[2].kind == TH_REPORT_LOG && r[2].level == TH_LOG_WARNING);
        CHECK_STR(r[2].message, "7 of ten");
        CHECK(r[3].kind == TH_REPORT_LOG && r[3].level == TH_LOG_ERROR); /* out of range */
        CHECK_STR(r[4].message, "bad \xef\xbf\xbd byte");
    }
    th_reports_free(r, n);
    r = th_take_reports(&n);
    CHECK(n == 0 && r == NULL); /* taken once */
    /* the levels are the contract's discriminants */
    CHECK(TH_LOG_DEBUG == 0 && TH_LOG_NOTICE == 2 && TH_LOG_ERROR == 4 && TH_LOG_EMERGENCY == 7);
}

static void test_context_through_dispatch(void) {
    forget_reports();
    size_t n;
    th_buf out;
    th_error err;
    CHECK(!th_cancelled());
    CHECK(run("busy", "{}", &out, &err));
    th_buf_free(&out);
    th_error_free(&err);
    th_report *r = th_take_reports(&n);
    CHECK(n == 3);
    if (n == 3) {
        CHECK(r[0].done == 1 && r[0].total == 2 && r[0].message == NULL);
        CHECK(r[1].done == 2 && r[1].total == 2);
        CHECK_STR(r[1].message, "steps");
        CHECK(r[2].kind == TH_REPORT_LOG && r[2].level == TH_LOG_NOTICE);
        CHECK_STR(r[2].message, "2 steps done");
    }
    th_reports_free(r, n);

    th_cancel_for_test(true);
    CHECK(th_cancelled());
    CHECK(!run("busy", "{}", &out, &err));
    CHECK_STR(err.code, "cancelled");
    th_buf_free(&out);
    th_error_free(&err);
    r = th_take_reports(&n);
    CHECK(n == 0); /* stopped before reporting */
    th_reports_free(r, n);
    th_cancel_for_test(false);
    CHECK(!th_cancelled());
}

/* ── paths ──────────────────────────────────────────────────────────── */

static void check_resolved(const char *in, const char *expected) {
    char *r = th_resolve_path(in);
    CHECK_MSG(r && strcmp(r, expected) == 0, "resolve(%s) = %s, expected %s", in, r ? r : "(null)", expected);
    free(r);
}

static void test_resolve_path(void) {
    char *cwd = getcwd(NULL, 0);
    CHECK_STR(th_initial_cwd(), cwd);
    char expect[4200];
    snprintf(expect, sizeof expect, "%s/a/b", strcmp(cwd, "/") ? cwd : "");
    check_resolved("a/b", expect);
    check_resolved("./a//b/", expect);
    check_resolved(".", cwd);
    check_resolved("/", "/");
    check_resolved("/workspace/./x//y/", "/workspace/x/y");
    check_resolved("/workspace/../etc", "/workspace/../etc"); /* kept: WASI refuses it */
    check_resolved("//x", "/x");
    free(cwd);
}

int main(void) {
    RUN(test_json_valid);
    RUN(test_json_invalid);
    RUN(test_json_values);
    RUN(test_json_errors_have_offsets);
    RUN(test_json_u64);
    RUN(test_json_limits);
    RUN(test_json_large_objects);
    RUN(test_json_fuzz);
    RUN(test_json_writer);
    RUN(test_utf8);
    RUN(test_base64);
    RUN(test_dispatch);
    RUN(test_content_blocks);
    RUN(test_host_renders);
    RUN(test_context_reports);
    RUN(test_context_through_dispatch);
    RUN(test_errno_codes);
    RUN(test_resolve_path);
    return th_test_summary();
}
