/* Native tests of the blocks fixture, through the kit's dispatch. The
 * lowering of its blocks into the component model is what
 * tests/languages.rs checks; here, what render builds. */
#include <stdlib.h>
#include <string.h>

#include "th_test.h"
#include "toolhost_kit.h"

#define TEXT "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80" /* "héllo € 😀" */

static bool call(const char *tool, const char *args, th_buf *out, th_error *err) {
    th_buf_init(out);
    th_error_init(err);
    return th_execute(th_toolset, th_toolset_len, tool, strlen(tool), args, strlen(args), out, err);
}

/* Renders `value` (what `tool` returned) into `c`, which it initializes. */
static bool render(const char *tool, const th_buf *value, th_content *c) {
    th_content_init(c);
    return th_render(th_toolset, th_toolset_len, tool, strlen(tool), "{}", 2, value->data, value->len, c);
}

static void test_toolset(void) {
    char problem[200];
    CHECK_MSG(th_check_toolset(th_toolset, th_toolset_len, problem, sizeof problem), "%s", problem);
    CHECK(th_toolset_len == 2 && !th_toolset[0]->host_renders && th_toolset[1]->host_renders);
}

static void test_blocks_renders_every_kind(void) {
    th_buf out;
    th_error err;
    CHECK(call("blocks", "{\"text\":\"" TEXT "\",\"blob_bytes\":4}", &out, &err));
    CHECK_STR(out.data, "{\"text\":\"" TEXT "\",\"blob_bytes\":4}");
    th_content c;
    CHECK(render("blocks", &out, &c));
    static const th_content_kind kinds[] = {
        TH_CONTENT_TEXT,     TH_CONTENT_IMAGE,    TH_CONTENT_AUDIO,         TH_CONTENT_RESOURCE,      TH_CONTENT_RESOURCE,
        TH_CONTENT_RESOURCE, TH_CONTENT_RESOURCE, TH_CONTENT_RESOURCE_LINK, TH_CONTENT_RESOURCE_LINK,
    };
    CHECK_MSG(c.len == 9, "%zu blocks", c.len);
    for (size_t i = 0; i < c.len && i < 9; i++) CHECK_MSG(c.blocks[i].kind == kinds[i], "block %zu", i);
    if (c.len == 9) {
        const th_block *b = c.blocks;
        CHECK_STR(b[0].body.data, TEXT);
        CHECK_STR(b[1].body.data, "iVBORw0KGgo=");
        CHECK_STR(b[2].body.data, "UklGRgQAAABXQVZF");
        CHECK_STR(b[3].body.data, "# Notes \xe2\x9c\x93\n\n" TEXT);
        CHECK(!b[3].blob && b[4].blob && !b[5].blob && b[6].blob);
        CHECK_STR(b[4].body.data, "ByZFZA=="); /* 7, 38, 69, 100 */
        CHECK(b[5].body.len == 0 && b[5].mime_type == NULL);
        CHECK_STR(b[6].body.data, "AP8Q");
        CHECK(b[6].mime_type == NULL);
        CHECK_STR(b[7].description, "A linked document \xe2\x80\x94 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
        CHECK(b[8].mime_type == NULL && b[8].description == NULL);
    }
    th_content_free(&c);
    th_buf_free(&out);
    th_error_free(&err);
}

static void test_plain_is_left_to_the_host(void) {
    th_buf out;
    th_error err;
    CHECK(call("plain", "{\"text\":\"" TEXT "\"}", &out, &err));
    CHECK_STR(out.data, "{\"text\":\"" TEXT "\",\"bytes\":15}");
    th_content c;
    CHECK(!render("plain", &out, &c));
    th_content_free(&c);
    th_buf_free(&out);
    CHECK(!call("plain", "{\"text\":\"a\\u0000b\"}", &out, &err));
    CHECK_STR(err.code, "invalid_arguments");
    th_buf_free(&out);
    th_error_free(&err);
}

int main(void) {
    RUN(test_toolset);
    RUN(test_blocks_renders_every_kind);
    RUN(test_plain_is_left_to_the_host);
    return th_test_summary();
}
