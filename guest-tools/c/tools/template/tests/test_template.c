/* Native tests of the template tool, through the kit's dispatch (the
 * same code the component runs). test.sh runs them in a scratch
 * directory: the test writes its own files there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "th_test.h"
#include "toolhost_kit.h"

static bool call(const char *args, th_buf *out, th_error *err) {
    th_buf_init(out);
    th_error_init(err);
    return th_execute(th_toolset, th_toolset_len, "count_lines", 11, args, strlen(args), out, err);
}

static void write_file(const char *name, const char *content) {
    FILE *f = fopen(name, "wb");
    fputs(content, f);
    fclose(f);
}

static void test_toolset(void) {
    char problem[200];
    CHECK_MSG(th_check_toolset(th_toolset, th_toolset_len, problem, sizeof problem), "%s", problem);
}

static void test_count_lines(void) {
    write_file("three.txt", "a\nb\nc");
    th_buf out;
    th_error err;
    CHECK(call("{\"path\":\"three.txt\"}", &out, &err));
    CHECK_STR(out.data, "{\"path\":\"three.txt\",\"lines\":3,\"bytes\":5}");
    th_content content;
    th_content_init(&content);
    CHECK(th_render(th_toolset, th_toolset_len, "count_lines", 11, "{}", 2, out.data, out.len, &content));
    CHECK(content.len == 1 && content.blocks[0].kind == TH_CONTENT_TEXT);
    if (content.len == 1) CHECK_STR(content.blocks[0].body.data, "three.txt: 3 lines");
    th_content_free(&content);
    th_buf_free(&out);
    th_error_free(&err);
}

static void test_failures(void) {
    th_buf out;
    th_error err;
    CHECK(!call("{\"path\":\"missing.txt\"}", &out, &err));
    CHECK_STR(err.code, "not_found");
    th_buf_free(&out);
    mkdir("dir", 0755);
    CHECK(!call("{\"path\":\"dir\"}", &out, &err));
    CHECK_STR(err.code, "is_directory");
    th_buf_free(&out);
    CHECK(!call("{\"path\":3}", &out, &err));
    CHECK_STR(err.code, "invalid_arguments");
    th_buf_free(&out);
}

int main(void) {
    RUN(test_toolset);
    RUN(test_count_lines);
    RUN(test_failures);
    return th_test_summary();
}
