/*
 * The hub client's parsers of response headers, on the inputs the fuzz targets found wrong
 * (tests/fuzz/fuzz_hub_http.c; the inputs are also among its seeds).
 */
#include "fixtures.h"
#include "http.h"
#include "session.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/*
 * Hands the first n bytes of line to the callback as libcurl hands over a header line: not
 * NUL-terminated, and here followed by the rest of line, which must not be read.
 */
static void header(struct dllm_hubresp *r, const char *line, size_t n)
{
    char *copy = strdup(line);
    ck_assert(copy != NULL);
    ck_assert_uint_eq(dllm_hubresp_header(copy, 1, n, r), n);
    free(copy);
}

/* The status is read inside the line: it once ran on past its end (strtol). */
START_TEST(status_line)
{
    struct dllm_hubresp r = {0};
    header(&r, "HTTP/1.1 2009\r\n", 10); /* "HTTP/1.1 2" */
    ck_assert_int_eq(r.status, 2);
    header(&r, "HTTP/2o \r\n404", 10);
    ck_assert_int_eq(r.status, 0);
    header(&r, "HTTP/2 404\r\n", 12);
    ck_assert_int_eq(r.status, 404);
    header(&r, "HTTP/1.1 206 Partial Content\r\n", 30);
    ck_assert_int_eq(r.status, 206);
    header(&r, "ETag: W/\"abc\"\r\n", 15);
    char tag[16];
    dllm_hubfetch_etag_value(r.h[H_ETAG], tag, sizeof tag);
    ck_assert_str_eq(tag, "abc");
    header(&r, "HTTP/1.1 302 Found\r\n", 20);
    ck_assert_int_eq(r.status, 302);
    ck_assert_ptr_null(r.h[H_ETAG]);
    dllm_hubresp_fini(&r);
}
END_TEST

#define TREE "https://huggingface.co/api/models/org/name/tree/main"

/* A Link header, and the next URL RFC 8288 and RFC 3986 make of it (or the error). */
static const struct link_case {
    const char *link;
    enum dllm_status want;
    const char *next; /* or the error's text */
} link_cases[] = {
    {NULL, DLLM_OK, NULL},
    {"<https://huggingface.co/api/x?cursor=2>; rel=\"next\"", DLLM_OK,
     "https://huggingface.co/api/x?cursor=2"},
    {"</api/x?cursor=3>; rel=next", DLLM_OK, "https://huggingface.co/api/x?cursor=3"},
    {"<https://x/a>; rel=\"prev\", <b?c=1>; rel=\"next\"", DLLM_OK,
     "https://huggingface.co/api/models/org/name/tree/b?c=1"},
    {"<https://x/a>; rel=\"prev\"", DLLM_OK, NULL},
    {"<https://x/a; rel=\"next\"", DLLM_OK, NULL},
    {"<http://[::1/next>; rel=\"next\"", DLLM_ERR_FORMAT, "malformed URL in the hub's Link header"},
    {"<http://exa mple.com/x>; rel=\"next\"", DLLM_ERR_FORMAT,
     "malformed URL in the hub's Link header"},
};

/* A malformed next URL is a format error, not "out of memory" as it once was. */
START_TEST(link_next)
{
    const struct link_case *c = &link_cases[_i];
    struct dllm_error err = {0};
    char *next = (char *)&next;
    enum dllm_status st = dllm_hubhttp_link_next(c->link, TREE, &next, &err);
    ck_assert_msg(st == c->want, "%s: %s (%s)", c->link, dllm_status_str(st), err.text);
    if (st != DLLM_OK) {
        ck_assert_ptr_null(next);
        ck_assert_msg(strstr(err.text, c->next), "'%s' lacks '%s'", err.text, c->next);
    } else if (c->next) {
        ck_assert_str_eq(next, c->next);
    } else {
        ck_assert_ptr_null(next);
    }
    free(next);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hub_parse");
    TCase *tc = tcase_create("headers");
    tcase_add_test(tc, status_line);
    tcase_add_loop_test(tc, link_next, 0, sizeof link_cases / sizeof link_cases[0]);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
