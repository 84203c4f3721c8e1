/* Native unit tests of the hash tool: digests against published vectors,
 * streaming in pieces, glob matching, both tools run through the kit's
 * dispatch (th_execute/th_render, as the component runs them) on real
 * files, and what they report while they run (progress, cancellation).
 *
 * test.sh runs it inside a scratch directory it prepared (the working
 * directory, as /workspace is for the component), with a manifest
 * `expected.txt` of "<algorithm> <digest> <file> [<offset> <length>]"
 * lines computed by sha256sum and Python's hashlib/zlib. */
#define _DEFAULT_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "glob.h"
#include "th_test.h"
#include "toolhost_kit.h"

static void hex_of(hash_algorithm alg, const void *data, size_t len, char hex[65]) {
    hasher h;
    hasher_init(&h, alg);
    hasher_update(&h, data, len);
    hasher_final_hex(&h, hex);
}

#define CHECK_DIGEST(alg, data, len, expected)                                 \
    do {                                                                       \
        char hx_[65];                                                          \
        hex_of(alg, data, len, hx_);                                           \
        CHECK_STR(hx_, expected);                                              \
    } while (0)

/* ── vectors ────────────────────────────────────────────────────────── */

static void test_sha256_vectors(void) {
    /* FIPS 180-4 examples (NIST CSRC) */
    CHECK_DIGEST(HASH_SHA256, "", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK_DIGEST(HASH_SHA256, "abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    CHECK_DIGEST(HASH_SHA256, m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    CHECK_DIGEST(HASH_SHA256, m896, strlen(m896), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    char *million = malloc(1000000);
    memset(million, 'a', 1000000);
    CHECK_DIGEST(HASH_SHA256, million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
}

static void test_blake2s_vectors(void) {
    /* RFC 7693 appendix B ("abc") and the reference implementation (empty) */
    CHECK_DIGEST(HASH_BLAKE2S, "abc", 3, "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
    CHECK_DIGEST(HASH_BLAKE2S, "", 0, "69217a3079908094e11121d042354a7c1f55b6482ca1a51e1b250dfd1ed0eef9");
    CHECK_DIGEST(HASH_BLAKE2S, "The quick brown fox jumps over the lazy dog", 43,
                 "606beeec743ccbeff6cbcdf5d5302aa855c256c29b88c8ed331ea1a6bf3c8812");
}

static void test_crc32_vectors(void) {
    CHECK_DIGEST(HASH_CRC32, "123456789", 9, "cbf43926"); /* the CRC catalogue's check value */
    CHECK_DIGEST(HASH_CRC32, "", 0, "00000000");
    CHECK_DIGEST(HASH_CRC32, "The quick brown fox jumps over the lazy dog", 43, "414fa339");
    CHECK(crc32_update(crc32_update(0, "1234", 4), "56789", 5) == 0xCBF43926u);
}

/* Any split of the input gives the one-shot digest (block boundaries:
 * 63, 64, 65 bytes; BLAKE2s keeps its last full block until final). */
static void test_streaming_splits(void) {
    unsigned char data[1000];
    uint32_t x = 1;
    for (size_t i = 0; i < sizeof data; i++) x = x * 1664525u + 1013904223u, data[i] = (unsigned char)(x >> 24);
    const size_t lens[] = {0, 1, 55, 56, 63, 64, 65, 127, 128, 129, 1000};
    const hash_algorithm algs[] = {HASH_SHA256, HASH_BLAKE2S, HASH_CRC32};
    for (size_t a = 0; a < 3; a++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            size_t len = lens[l];
            char whole[65];
            hex_of(algs[a], data, len, whole);
            for (size_t step = 1; step <= 130; step += (step < 3 ? 1 : 21)) {
                hasher h;
                hasher_init(&h, algs[a]);
                for (size_t off = 0; off < len; off += step) hasher_update(&h, data + off, len - off < step ? len - off : step);
                char pieces[65];
                hasher_final_hex(&h, pieces);
                CHECK_MSG(strcmp(whole, pieces) == 0, "%s, %zu bytes in pieces of %zu", hash_algorithm_name(algs[a]), len, step);
            }
        }
    hash_algorithm alg;
    CHECK(hash_algorithm_parse("blake2s", &alg) && alg == HASH_BLAKE2S);
    CHECK(!hash_algorithm_parse("SHA256", &alg));
    CHECK(!hash_algorithm_parse("md5", &alg));
}

/* ── glob ───────────────────────────────────────────────────────────── */

static bool gm(const char *pattern, const char *path) {
    glob_pattern *g = glob_compile(pattern, NULL, 0);
    bool m = g && glob_match(g, path);
    glob_free(g);
    return m;
}

static void test_glob(void) {
    CHECK(gm("*.c", "a.c"));
    CHECK(gm("*.c", "src/deep/a.c")); /* no '/': the name at any depth */
    CHECK(!gm("*.c", "a.h"));
    CHECK(!gm("*.c", "a.c/x"));
    CHECK(gm("src/*.c", "src/a.c"));
    CHECK(!gm("src/*.c", "src/x/a.c")); /* '*' stops at '/' */
    CHECK(gm("src/**/*.c", "src/a.c"));  /* '**' + '/' may match nothing */
    CHECK(gm("src/**/*.c", "src/x/y/a.c"));
    CHECK(gm("**/*.c", "a.c"));
    CHECK(gm("**", "a/b/c"));
    CHECK(gm("src/**", "src/a/b"));
    CHECK(!gm("src/**", "lib/a"));
    CHECK(gm("a?c", "abc"));
    CHECK(!gm("a?c", "a/c"));
    CHECK(gm("a?c", "a\xc3\xa9" "c")); /* '?' is one character, not one byte */
    CHECK(gm("[a-c]x", "bx"));
    CHECK(!gm("[a-c]x", "dx"));
    CHECK(gm("[!a-c]x", "dx"));
    CHECK(gm("[^a-c]x", "dx"));
    CHECK(gm("[]]", "]"));
    CHECK(gm("\\*", "*"));
    CHECK(!gm("\\*", "a"));
    CHECK(gm("caf\xc3\xa9.txt", "caf\xc3\xa9.txt"));
    CHECK(gm("*", "")); /* an empty name (never passed in practice) */
    /* hostile: many stars against a long non-matching path stays linear */
    char path[2000];
    memset(path, 'a', sizeof path - 2);
    path[sizeof path - 2] = 'b';
    path[sizeof path - 1] = '\0';
    CHECK(!gm("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*c", path));
    CHECK(!gm("**a**a**a**a**a**a**a**a**a**a**a**a**a**c", path));
    /* invalid patterns */
    char err[128];
    CHECK(glob_compile("[abc", err, sizeof err) == NULL && strstr(err, "]") != NULL);
    CHECK(glob_compile("[z-a]", err, sizeof err) == NULL);
    CHECK(glob_compile("a\\", err, sizeof err) == NULL);
    CHECK(glob_compile("", err, sizeof err) == NULL);
    CHECK(glob_compile("\xff", err, sizeof err) == NULL);
    char longp[300];
    memset(longp, 'a', 299);
    longp[299] = '\0';
    CHECK(glob_compile(longp, err, sizeof err) == NULL);
}

/* ── the tools, through the kit's dispatch ──────────────────────────── */

typedef struct result {
    bool ok;
    th_buf out;
    th_error err;
    th_json_doc *doc;
    const th_json *value;
} result;

static result call(const char *tool, const char *args) {
    result r;
    th_buf_init(&r.out);
    th_error_init(&r.err);
    r.ok = th_execute(th_toolset, th_toolset_len, tool, strlen(tool), args, strlen(args), &r.out, &r.err);
    r.doc = r.ok ? th_json_parse(r.out.data, r.out.len, NULL, &r.value, NULL, 0) : NULL;
    if (!r.ok) r.value = NULL;
    return r;
}

static void done(result *r) {
    th_json_free(r->doc);
    th_buf_free(&r->out);
    th_error_free(&r->err);
}

static const char *str_of(const th_json *v, const char *key) { return th_json_string(th_json_get(v, key), NULL); }

static uint64_t u64_of(const th_json *v, const char *key) {
    uint64_t x = UINT64_MAX;
    th_json_u64(th_json_get(v, key), &x);
    return x;
}

/* The rendering: one text block, taken (NULL when there is none). */
static char *render(const char *tool, const char *args, const result *r) {
    th_content out;
    th_content_init(&out);
    char *text = NULL;
    if (th_render(th_toolset, th_toolset_len, tool, strlen(tool), args, strlen(args), r->out.data, r->out.len, &out)) {
        CHECK_MSG(out.len == 1 && out.blocks[0].kind == TH_CONTENT_TEXT, "%s: %zu blocks", tool, out.len);
        if (out.len == 1) text = th_buf_take(&out.blocks[0].body, NULL);
    }
    th_content_free(&out);
    return text;
}

static void test_toolset(void) {
    char problem[200];
    CHECK_MSG(th_check_toolset(th_toolset, th_toolset_len, problem, sizeof problem), "%s", problem);
    CHECK(th_toolset_len == 2);
}

/* Every line of expected.txt: the digest through hash_file. */
static void test_manifest(void) {
    FILE *f = fopen("expected.txt", "r");
    CHECK_MSG(f != NULL, "expected.txt is missing: run test.sh");
    if (!f) return;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char alg[16], digest[80], name[256];
        unsigned long long offset = 0, length = 0;
        int fields = sscanf(line, "%15s %79s %255s %llu %llu", alg, digest, name, &offset, &length);
        if (fields < 3) continue;
        char args[600];
        if (fields == 5)
            snprintf(args, sizeof args, "{\"path\":\"%s\",\"algorithm\":\"%s\",\"offset\":%llu,\"length\":%llu}", name, alg, offset, length);
        else
            snprintf(args, sizeof args, "{\"path\":\"%s\",\"algorithm\":\"%s\"}", name, alg);
        result r = call("hash_file", args);
        CHECK_MSG(r.ok, "%s: %s %s", args, r.err.code, r.err.message);
        if (r.ok) {
            CHECK_MSG(strcmp(str_of(r.value, "digest"), digest) == 0, "%s: got %s, expected %s", args, str_of(r.value, "digest"), digest);
            struct stat st;
            stat(name, &st);
            uint64_t size = (uint64_t)st.st_size, rest = size - offset; /* a range may run past the end */
            uint64_t expect_bytes = fields == 5 ? (length < rest ? length : rest) : size;
            CHECK_MSG(u64_of(r.value, "bytes") == expect_bytes, "%s: bytes", args);
            CHECK(u64_of(r.value, "size") == (uint64_t)st.st_size);
        }
        done(&r);
        n++;
    }
    fclose(f);
    CHECK_MSG(n >= 30, "only %d manifest lines", n);
}

static void expect_failure(const char *tool, const char *args, const char *code) {
    result r = call(tool, args);
    CHECK_MSG(!r.ok, "%s %s should fail", tool, args);
    CHECK_MSG(strcmp(r.err.code, code) == 0, "%s %s: code %s (%s), expected %s", tool, args, r.err.code, r.err.message, code);
    CHECK(r.err.message[0] != '\0');
    done(&r);
}

static void test_hash_file(void) {
    result r = call("hash_file", "{\"path\":\"tree/a.txt\"}");
    CHECK(r.ok);
    if (r.ok) {
        CHECK_STR(str_of(r.value, "path"), "tree/a.txt");
        CHECK_STR(str_of(r.value, "algorithm"), "sha256");
        CHECK_STR(str_of(r.value, "digest"), "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"); /* "hello\n" */
        char *text = render("hash_file", "{\"path\":\"tree/a.txt\"}", &r);
        CHECK_STR(text, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  tree/a.txt\n"
                        "(sha256 of the whole file, 6 bytes)");
        free(text);
    }
    done(&r);
    r = call("hash_file", "{\"path\":\"tree/a.txt\",\"algorithm\":\"crc32\",\"offset\":1,\"length\":3}");
    CHECK(r.ok && strcmp(str_of(r.value, "digest"), "3c11d901") == 0 && u64_of(r.value, "bytes") == 3); /* "ell" */
    char *text = r.ok ? render("hash_file", "{}", &r) : NULL;
    CHECK_STR(text, "3c11d901  tree/a.txt\n(crc32 of 3 bytes from offset 1; the file has 6 bytes)");
    free(text);
    done(&r);
    /* offset at the end: the empty range; length past the end: to the end */
    r = call("hash_file", "{\"path\":\"tree/a.txt\",\"offset\":6}");
    CHECK(r.ok && u64_of(r.value, "bytes") == 0);
    done(&r);
    r = call("hash_file", "{\"path\":\"tree/a.txt\",\"offset\":2,\"length\":1000}");
    CHECK(r.ok && u64_of(r.value, "bytes") == 4);
    done(&r);
    /* an absolute path */
    char *cwd = getcwd(NULL, 0), args[4300];
    snprintf(args, sizeof args, "{\"path\":\"%s/tree/a.txt\",\"algorithm\":\"blake2s\"}", cwd);
    r = call("hash_file", args);
    CHECK(r.ok);
    done(&r);
    free(cwd);
    /* a name needing sha256sum's escaping */
    r = call("hash_file", "{\"path\":\"tree/back\\\\slash.txt\"}");
    CHECK(r.ok);
    text = r.ok ? render("hash_file", "{}", &r) : NULL;
    CHECK(text && text[0] == '\\' && strstr(text, "  tree/back\\\\slash.txt\n") != NULL);
    free(text);
    done(&r);

    expect_failure("hash_file", "{\"path\":\"tree/missing.txt\"}", "not_found");
    expect_failure("hash_file", "{\"path\":\"tree\"}", "is_directory");
    expect_failure("hash_file", "{\"path\":\"tree/a.txt/x\"}", "not_a_directory");
    expect_failure("hash_file", "{\"path\":\"tree/a.txt\",\"algorithm\":\"md5\"}", "invalid_arguments");
    expect_failure("hash_file", "{\"path\":\"tree/a.txt\",\"offset\":7}", "invalid_arguments");
    expect_failure("hash_file", "{\"path\":\"tree/a.txt\",\"offset\":-1}", "invalid_arguments");
    expect_failure("hash_file", "{\"path\":\"tree/a.txt\",\"offset\":1.5}", "invalid_arguments");
    expect_failure("hash_file", "{\"path\":\"tree/a.txt\",\"length\":\"3\"}", "invalid_arguments");
    expect_failure("hash_file", "{\"path\":\"tree/a.txt\",\"extra\":1}", "invalid_arguments");
    expect_failure("hash_file", "{\"path\":\"\"}", "invalid_arguments");
    expect_failure("hash_file", "{\"path\":\"a\\u0000b\"}", "invalid_arguments");
    expect_failure("hash_file", "{\"path\":7}", "invalid_arguments");
    expect_failure("hash_file", "{}", "invalid_arguments");
    expect_failure("hash_file", "{\"path\":\"a\",\"path\":\"b\"}", "invalid_arguments");
    expect_failure("hash_file", "[\"tree/a.txt\"]", "invalid_arguments");
    expect_failure("hash_nothing", "{}", "unknown_tool");
}

static void test_hash_tree(void) {
    /* tree/: a.txt, a-b.txt, a.c, a/z.c, back\slash.txt, sub/b.c,
     * sub/deep/c.c, .hidden/h.txt, .dot.txt, link.txt -> a.txt */
    const char *args = "{\"path\":\"tree\"}";
    result r = call("hash_tree", args);
    CHECK_MSG(r.ok, "%s %s", r.err.code, r.err.message);
    if (!r.ok) return done(&r);
    const th_json *files = th_json_get(r.value, "files");
    const char *expect[] = {"a-b.txt", "a.c", "a.txt", "a/z.c", "back\\slash.txt", "sub/b.c", "sub/deep/c.c"};
    size_t n = 0;
    const char *prev = "";
    for (const th_json *f = files->u.children.first; f; f = f->next, n++) {
        const char *p = str_of(f, "path");
        CHECK_MSG(n < 7 && strcmp(p, expect[n]) == 0, "file %zu: %s", n, p);
        CHECK_MSG(strcmp(prev, p) < 0, "not sorted: %s after %s", p, prev);
        prev = p;
    }
    CHECK(n == 7);
    CHECK(u64_of(r.value, "file_count") == 7);
    CHECK(u64_of(r.value, "skipped") == 1); /* the symbolic link */
    CHECK(!th_json_get(r.value, "truncated")->u.boolean);
    CHECK(u64_of(r.value, "error_count") == 0);
    char *text = render("hash_tree", args, &r);
    CHECK(text != NULL && strstr(text, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  tree/a.txt\n") != NULL);
    CHECK(text != NULL && strstr(text, "(sha256: 7 files, ") != NULL);
    free(text);
    done(&r);

    /* "." renders bare relative paths */
    r = call("hash_tree", "{\"path\":\"./tree/sub/\",\"algorithm\":\"crc32\"}");
    CHECK(r.ok);
    text = r.ok ? render("hash_tree", "{\"path\":\"./tree/sub/\"}", &r) : NULL;
    CHECK_MSG(text && strncmp(text, "8cdc1683  ./tree/sub/b.c\n", 25) == 0, "%s", text); /* crc32("x") */
    free(text);
    done(&r);

    r = call("hash_tree", "{\"path\":\"tree\",\"glob\":\"*.c\"}");
    CHECK(r.ok && u64_of(r.value, "file_count") == 4);
    done(&r);
    r = call("hash_tree", "{\"path\":\"tree\",\"glob\":\"sub/**\"}");
    CHECK(r.ok && u64_of(r.value, "file_count") == 2);
    done(&r);
    r = call("hash_tree", "{\"path\":\"tree\",\"hidden\":true}");
    CHECK(r.ok && u64_of(r.value, "file_count") == 9);
    done(&r);
    r = call("hash_tree", "{\"path\":\"tree\",\"max_files\":2}");
    CHECK(r.ok && u64_of(r.value, "file_count") == 2 && th_json_get(r.value, "truncated")->u.boolean);
    if (r.ok) {
        CHECK_STR(str_of(th_json_get(r.value, "files")->u.children.first, "path"), "a-b.txt");
        text = render("hash_tree", "{\"path\":\"tree\"}", &r);
        CHECK(text && strstr(text, "truncated: more files match") != NULL);
        free(text);
    }
    done(&r);
    r = call("hash_tree", "{\"path\":\"tree\",\"max_files\":7}"); /* exactly all: not truncated */
    CHECK(r.ok && !th_json_get(r.value, "truncated")->u.boolean);
    done(&r);

    expect_failure("hash_tree", "{\"path\":\"tree/a.txt\"}", "not_a_directory");
    expect_failure("hash_tree", "{\"path\":\"nowhere\"}", "not_found");
    expect_failure("hash_tree", "{\"path\":\"tree\",\"glob\":\"[a\"}", "invalid_arguments");
    expect_failure("hash_tree", "{\"path\":\"tree\",\"max_files\":0}", "invalid_arguments");
    expect_failure("hash_tree", "{\"path\":\"tree\",\"max_files\":10001}", "invalid_arguments");
    expect_failure("hash_tree", "{\"path\":\"tree\",\"hidden\":1}", "invalid_arguments");
}

/* ── progress and cancellation (as the kit keeps them natively) ─────── */

/* Drops the reports made so far. */
static void forget_reports(void) {
    size_t n;
    th_report *r = th_take_reports(&n);
    th_reports_free(r, n);
}

/* Calls `tool` (which must succeed) and returns what it reported (*n
 * reports; free with th_reports_free). */
static th_report *reports_of(const char *tool, const char *args, size_t *n) {
    forget_reports();
    result r = call(tool, args);
    CHECK_MSG(r.ok, "%s %s: %s", tool, args, r.err.message);
    done(&r);
    return th_take_reports(n);
}

static void test_hash_tree_reports_progress_per_file(void) {
    size_t n;
    th_report *rep = reports_of("hash_tree", "{\"path\":\"tree\",\"glob\":\"*.c\"}", &n);
    const char *expect[] = {"a.c", "a/z.c", "sub/b.c", "sub/deep/c.c"};
    CHECK_MSG(n == 4, "%zu reports", n);
    for (size_t i = 0; i < n && i < 4; i++) {
        CHECK(rep[i].kind == TH_REPORT_PROGRESS && rep[i].done == i + 1 && rep[i].total == TH_TOTAL_UNKNOWN);
        CHECK_STR(rep[i].message, expect[i]);
    }
    th_reports_free(rep, n);
}

static void test_hash_file_reports_progress_per_mebibyte(void) {
    size_t n;
    th_report *rep = reports_of("hash_file", "{\"path\":\"f3145731.bin\"}", &n);
    CHECK_MSG(n == 3, "%zu reports", n); /* after 1, 2 and 3 MiB */
    for (size_t i = 0; i < n && i < 3; i++)
        CHECK(rep[i].kind == TH_REPORT_PROGRESS && rep[i].done == (i + 1) << 20 && rep[i].total == 3145731 &&
              rep[i].message == NULL);
    th_reports_free(rep, n);
    /* a range: the total is what is hashed */
    rep = reports_of("hash_file", "{\"path\":\"f3145731.bin\",\"offset\":100000,\"length\":3000000}", &n);
    CHECK_MSG(n == 2 && rep[0].total == 3000000 && rep[1].done == 2 << 20, "%zu reports", n);
    th_reports_free(rep, n);
    /* a small file: no report at all */
    rep = reports_of("hash_file", "{\"path\":\"tree/a.txt\"}", &n);
    CHECK(n == 0);
    th_reports_free(rep, n);
}

static void test_a_cancelled_hash_stops_before_the_next_file_or_chunk(void) {
    forget_reports();
    th_cancel_for_test(true);
    result r = call("hash_tree", "{\"path\":\"tree\"}");
    CHECK(!r.ok && strcmp(r.err.code, "cancelled") == 0);
    CHECK_MSG(strstr(r.err.message, "after 0 files") != NULL, "%s", r.err.message);
    done(&r);
    size_t n;
    th_report *rep = th_take_reports(&n);
    CHECK_MSG(n == 0, "%zu reports", n); /* it stopped before the first file */
    th_reports_free(rep, n);
    /* hash_file stops before its first chunk, as a range does */
    r = call("hash_file", "{\"path\":\"f3145731.bin\"}");
    CHECK(!r.ok && strcmp(r.err.code, "cancelled") == 0);
    CHECK_MSG(strstr(r.err.message, "after 0 of 3145731 bytes of f3145731.bin") != NULL, "%s", r.err.message);
    done(&r);
    r = call("hash_file", "{\"path\":\"f3145731.bin\",\"offset\":100000,\"length\":3000000}");
    CHECK_MSG(!r.ok && strstr(r.err.message, "after 0 of 3000000 bytes") != NULL, "%s", r.err.message);
    done(&r);
    rep = th_take_reports(&n);
    CHECK_MSG(n == 0, "%zu reports", n);
    th_reports_free(rep, n);
    th_cancel_for_test(false); /* and both run through again */
    r = call("hash_tree", "{\"path\":\"tree\"}");
    CHECK(r.ok);
    done(&r);
    r = call("hash_file", "{\"path\":\"f3145731.bin\"}");
    CHECK(r.ok);
    done(&r);
    forget_reports();
}

int main(void) {
    RUN(test_sha256_vectors);
    RUN(test_blake2s_vectors);
    RUN(test_crc32_vectors);
    RUN(test_streaming_splits);
    RUN(test_glob);
    RUN(test_toolset);
    RUN(test_manifest);
    RUN(test_hash_file);
    RUN(test_hash_tree);
    RUN(test_hash_tree_reports_progress_per_file);
    RUN(test_hash_file_reports_progress_per_mebibyte);
    RUN(test_a_cancelled_hash_stops_before_the_next_file_or_chunk);
    return th_test_summary();
}
