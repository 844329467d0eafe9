/*
 * Allocation-failure torture (curl's torture tests): each operation runs once to count its
 * allocations (the engine, ui/ and hub/ code here is built with tests/torture.h, PCRE2's
 * allocations go through the tokenizer's general context, jansson's through the hub's
 * wrapper (hub/json.c) and libcurl's through the hub's curl_global_init_mem), then once for every N
 * up to that count with the Nth failing, and must fail cleanly each time: DLLM_ERR_NOMEM (or false
 * with ENOMEM), nothing leaked (the sanitizer build's LeakSanitizer checks at exit), the object
 * still usable or freed. With the count plus one it succeeds.
 */
#include "config.h"

#include "cache.h"
#include "dllm.h"
#include "fixtures.h"
#include "http.h"
#include "json.h"
#include "listing.h"
#include "session.h"
#include "scrollback.h"
#include "torture.h"
#include "transcript.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An operation under torture: DLLM_OK, or the status it failed with (err says why). */
typedef enum dllm_status (*torture_op)(void *ctx, struct dllm_error *err);

/*
 * Counts op's allocations, then fails each in turn: every failure must be DLLM_ERR_NOMEM with
 * a message, and after each, check (when not NULL) sees the context still usable. Returns the
 * count.
 */
static long torture(const char *name, torture_op op, void (*check)(void *ctx), void *ctx)
{
    struct dllm_error err = {0};
    dllm_torture_start(0);
    enum dllm_status st = op(ctx, &err);
    long count = dllm_torture_stop();
    ck_assert_msg(st == DLLM_OK, "%s: %s", name, err.text);
    ck_assert_msg(count > 0, "%s made no allocation", name);
    for (long n = 1; n <= count; n++) {
        err = (struct dllm_error){0};
        dllm_torture_start(n);
        st = op(ctx, &err);
        dllm_torture_stop();
        ck_assert_msg(st == DLLM_ERR_NOMEM, "%s, allocation %ld of %ld failing: %s (%s)", name, n,
                      count, dllm_status_str(st), err.text);
        ck_assert_msg(strstr(err.text, "memory"), "%s, allocation %ld: message \"%s\"", name, n,
                      err.text);
        if (check)
            check(ctx);
    }
    dllm_torture_start(count + 1);
    st = op(ctx, &err);
    long again = dllm_torture_stop();
    ck_assert_msg(st == DLLM_OK, "%s with allocation %ld failing: %s", name, count + 1, err.text);
    ck_assert_int_eq(again, count);
    fprintf(stderr, "%s: %ld allocations, each failed in turn\n", name, count);
    return count;
}

/* ---- engine ------------------------------------------------------------------------------ */

#define MODEL "models/llada-tiny-q80.gguf"

static enum dllm_status op_model_open(void *ctx, struct dllm_error *err)
{
    struct dllm_model *model = (struct dllm_model *)&model; /* not NULL: must be reset */
    enum dllm_status st = dllm_model_open(ctx, NULL, &model, err);
    if (st != DLLM_OK) {
        ck_assert_ptr_null(model);
        return st;
    }
    dllm_model_close(model);
    return DLLM_OK;
}

START_TEST(model_open)
{
    char *path = fixture_path(MODEL);
    torture("opening a model", op_model_open, NULL, path);
    free(path);
}
END_TEST

/* A model and a thread pool that outlive the operations on them. */
struct engine_ctx {
    struct dllm_model *model;
    struct dllm_threadpool *pool;
    struct dllm_vocab *vocab;
    const char *text;
    int32_t *ids; /* [n_ids]: the text's encoding */
    int64_t n_ids;
};

static void engine_setup(struct engine_ctx *e, const char *rel)
{
    struct dllm_error err;
    char *path = fixture_path(rel);
    ck_assert_msg(dllm_model_open(path, NULL, &e->model, &err) == DLLM_OK, "%s", err.text);
    free(path);
    ck_assert(dllm_threadpool_new(1, &e->pool, &err) == DLLM_OK);
}

static void engine_teardown(struct engine_ctx *e)
{
    dllm_vocab_free(e->vocab);
    dllm_threadpool_free(e->pool);
    dllm_model_close(e->model);
}

static enum dllm_status op_forward_new(void *ctx, struct dllm_error *err)
{
    struct engine_ctx *e = ctx;
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = 32;
    fp.max_rows = 32;
    fp.pool = e->pool;
    fp.skip_memory_check = true;
    struct dllm_forward *fwd = (struct dllm_forward *)&fwd;
    enum dllm_status st = dllm_forward_new(e->model, &fp, &fwd, err);
    if (st != DLLM_OK) {
        ck_assert_ptr_null(fwd);
        return st;
    }
    struct dllm_kv_cache *cache = NULL;
    st = dllm_kv_cache_new(fwd, 32, DLLM_CACHE_F16, true, &cache, err);
    dllm_kv_cache_free(cache);
    dllm_forward_free(fwd);
    return st;
}

START_TEST(forward_new)
{
    static const char *const models[] = {MODEL, "models/llada-tiny-q4km.gguf",
                                         "models/llada-moe-tiny-q4km.gguf"};
    struct engine_ctx e = {0};
    engine_setup(&e, models[_i]);
    torture(models[_i], op_forward_new, NULL, &e);
    engine_teardown(&e);
}
END_TEST

/* What a request's events said. */
struct gen_record {
    int n_done, n_error;
    char text[1024];
    char message[512];
};

static void on_event(const struct dllm_event *ev, void *user)
{
    struct gen_record *r = user;
    if (ev->kind == DLLM_EVENT_DONE) {
        r->n_done++;
        snprintf(r->text, sizeof r->text, "%s", ev->text);
    } else if (ev->kind == DLLM_EVENT_ERROR) {
        r->n_error++;
        snprintf(r->message, sizeof r->message, "%s", ev->message);
    }
}

/* Generates with session and the given prompt; the answer's text goes to r. */
static enum dllm_status generate(struct dllm_session *session, const struct dllm_model *model,
                                 struct gen_record *r, struct dllm_error *err)
{
    struct dllm_request req = {.raw_prompt = "The capital of France is"};
    dllm_sampler_params_init(&req.sampler, dllm_model_sampler_kind(model));
    req.sampler.gen_length = 8;
    req.sampler.steps = 4;
    req.sampler.block_length = 8;
    *r = (struct gen_record){0};
    enum dllm_status st = dllm_session_generate(session, &req, on_event, r, err);
    if (st != DLLM_OK)
        return st;
    dllm_session_wait(session);
    if (r->n_error)
        return dllm_error_set(err,
                              strstr(r->message, "out of memory") ? DLLM_ERR_NOMEM : DLLM_ERR_IO,
                              "%s", r->message);
    ck_assert_int_eq(r->n_done, 1);
    return DLLM_OK;
}

static enum dllm_status op_session(void *ctx, struct dllm_error *err)
{
    struct engine_ctx *e = ctx;
    struct dllm_session_params sp;
    dllm_session_params_init(&sp);
    sp.max_canvas = 64;
    sp.threads = 1;
    sp.skip_memory_check = true;
    struct dllm_session *session = (struct dllm_session *)&session;
    enum dllm_status st = dllm_session_new(e->model, &sp, &session, err);
    if (st != DLLM_OK) {
        ck_assert_ptr_null(session);
        return st;
    }
    struct gen_record r;
    st = generate(session, e->model, &r, err);
    if (st == DLLM_ERR_NOMEM && !dllm_torture_failed())
        st = DLLM_ERR_IO;
    /* The session stays usable after a failed request: the next one completes. */
    if (st != DLLM_OK) {
        struct dllm_error again;
        ck_assert_msg(generate(session, e->model, &r, &again) == DLLM_OK, "%s", again.text);
    }
    dllm_session_free(session);
    return st;
}

START_TEST(session)
{
    struct engine_ctx e = {0};
    engine_setup(&e, MODEL);
    torture("a session generating", op_session, NULL, &e);
    engine_teardown(&e);
}
END_TEST

static enum dllm_status op_vocab_load(void *ctx, struct dllm_error *err)
{
    struct engine_ctx *e = ctx;
    struct dllm_vocab *vocab = (struct dllm_vocab *)&vocab;
    enum dllm_status st = dllm_vocab_load(dllm_model_gguf(e->model), &vocab, err);
    if (st != DLLM_OK) {
        ck_assert_ptr_null(vocab);
        return st;
    }
    int32_t *ids = NULL;
    int64_t n = 0;
    st = dllm_vocab_encode(vocab, e->text, strlen(e->text), 0, &ids, &n, err);
    free(ids);
    dllm_vocab_free(vocab);
    return st;
}

static enum dllm_status op_encode(void *ctx, struct dllm_error *err)
{
    struct engine_ctx *e = ctx;
    int32_t *ids = (int32_t *)&ids; /* not NULL: must be reset on failure */
    int64_t n = 0;
    enum dllm_status st = dllm_vocab_encode(e->vocab, e->text, strlen(e->text), 0, &ids, &n, err);
    if (st != DLLM_OK)
        ck_assert_ptr_null(ids);
    else
        free(ids);
    return st;
}

/* After a failed encoding the vocabulary encodes as before. */
static void check_encode(void *ctx)
{
    struct engine_ctx *e = ctx;
    int32_t *ids = NULL;
    int64_t n = 0;
    struct dllm_error err;
    ck_assert_msg(dllm_vocab_encode(e->vocab, e->text, strlen(e->text), 0, &ids, &n, &err) ==
                      DLLM_OK,
                  "%s", err.text);
    ck_assert_int_eq(n, e->n_ids);
    ck_assert_mem_eq(ids, e->ids, (size_t)n * sizeof *ids);
    free(ids);
}

START_TEST(vocab)
{
    static const char *const models[] = {MODEL, "models/dream-tiny-realvocab-q4km.gguf"};
    struct engine_ctx e = {.text = "Hello world! It's 2026, isn't it?\n\n  Ünïcødé 東京 <|mask|>"};
    engine_setup(&e, models[_i]);
    /* The real vocabulary's load makes 150 000 allocations: tortured on the small one. */
    if (_i == 0)
        torture("loading a vocabulary and encoding", op_vocab_load, NULL, &e);
    struct dllm_error err;
    ck_assert(dllm_vocab_load(dllm_model_gguf(e.model), &e.vocab, &err) == DLLM_OK);
    ck_assert(dllm_vocab_encode(e.vocab, e.text, strlen(e.text), 0, &e.ids, &e.n_ids, &err) ==
              DLLM_OK);
    ck_assert_int_gt(e.n_ids, 0);
    torture("encoding", op_encode, check_encode, &e);
    free(e.ids);
    engine_teardown(&e);
}
END_TEST

/* ---- hub: the cache's kept listing, written and read back ---------------------------------- */

struct listing_ctx {
    struct dllm_hubcache cache;
    struct dllm_hub_listing listing;
};

static enum dllm_status op_listing(void *ctx, struct dllm_error *err)
{
    struct listing_ctx *c = ctx;
    static const char commit[] = "0123456789abcdef0123456789abcdef01234567";
    enum dllm_status st = dllm_hubcache_write_tree(&c->cache, commit, &c->listing, err);
    if (st != DLLM_OK)
        return st;
    struct dllm_hub_listing back;
    if ((st = dllm_hubcache_read_tree(&c->cache, commit, &back, err)) != DLLM_OK) {
        ck_assert_ptr_null(back.files);
        return st;
    }
    /* What was written is what is read: every file with its size and hashes. */
    ck_assert_uint_eq(back.n, c->listing.n);
    for (size_t i = 0; i < back.n; i++) {
        const struct dllm_hub_file *f = dllm_hub_listing_find(&back, c->listing.files[i].path);
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(f->size, c->listing.files[i].size);
        ck_assert_str_eq(f->blob_id, c->listing.files[i].blob_id);
        ck_assert_str_eq(f->sha256, c->listing.files[i].sha256);
    }
    dllm_hub_listing_fini(&back);
    return DLLM_OK;
}

START_TEST(hub_listing)
{
    struct listing_ctx c = {0};
    struct dllm_error err;
    char *root = test_tmpdir();
    ck_assert(dllm_hubcache_init(&c.cache, root, "org/model", &err) == DLLM_OK);
    static const char *const paths[] = {"config.json", "model-q4_k_m.gguf", "sub/dir/README.md"};
    for (size_t i = 0; i < 3; i++) {
        struct dllm_hub_file f = {.path = (char *)paths[i], .size = 1000 * (int64_t)i};
        memset(f.blob_id, 'a' + (int)i, 40);
        if (i == 1)
            memset(f.sha256, 'b', 64);
        ck_assert(dllm_hub_listing_add(&c.listing, &f, &err) == DLLM_OK);
    }
    /* jansson's allocations, the writer's too, through the hub's wrapper (hub/json.h). */
    dllm_hubjson_init();
    torture("writing and parsing a kept hub listing", op_listing, NULL, &c);
    dllm_hub_listing_fini(&c.listing);
    dllm_hubcache_fini(&c.cache);
    free(root);
}
END_TEST

/* ---- hub: a page of the hub's tree listing, parsed ---------------------------------------- */

/* A page as the hub's tree API sends it: a directory, a small file and an LFS file. */
static const char tree_page[] =
    "[{\"type\":\"directory\",\"oid\":\"1111111111111111111111111111111111111111\","
    "\"size\":0,\"path\":\"sub\"},"
    "{\"type\":\"file\",\"oid\":\"2222222222222222222222222222222222222222\",\"size\":1519,"
    "\"path\":\"config.json\"},"
    "{\"type\":\"file\",\"oid\":\"3333333333333333333333333333333333333333\",\"size\":135,"
    "\"lfs\":{\"oid\":\"4444444444444444444444444444444444444444444444444444444444444444\","
    "\"size\":4920733952,\"pointerSize\":135},\"path\":\"sub/model-q4_k_m.gguf\"}]";

/* The page's text parsed (hub/json.c) and its files added to a listing. */
static enum dllm_status op_tree_page(void *ctx, struct dllm_error *err)
{
    (void)ctx;
    json_error_t jerr;
    bool nomem;
    json_t *page = dllm_hubjson_loadb(tree_page, sizeof tree_page - 1, 0, &jerr, &nomem);
    if (!page) {
        ck_assert_msg(nomem, "the tree page is not JSON: %s", jerr.text);
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    }
    struct dllm_hub_listing l = {0};
    enum dllm_status st = dllm_hubfetch_tree_page("org/name", page, &l, err);
    json_decref(page);
    if (st == DLLM_OK) {
        ck_assert_uint_eq(l.n, 2);
        const struct dllm_hub_file *f = dllm_hub_listing_find(&l, "sub/model-q4_k_m.gguf");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(f->size, 4920733952);
        ck_assert_str_eq(f->blob_id, "3333333333333333333333333333333333333333");
        ck_assert_str_eq(f->sha256,
                         "4444444444444444444444444444444444444444444444444444444444444444");
        f = dllm_hub_listing_find(&l, "config.json");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(f->size, 1519);
        ck_assert_str_eq(f->blob_id, "2222222222222222222222222222222222222222");
    }
    dllm_hub_listing_fini(&l);
    return st;
}

START_TEST(hub_tree_page)
{
    dllm_hubjson_init();
    torture("parsing a page of the hub's tree listing", op_tree_page, NULL, NULL);
}
END_TEST

/* ---- hub: a Link header's next page, through libcurl's URL parser ---------------------- */

#define TREE "https://huggingface.co/api/models/org/name/tree/main"

/*
 * The next-page URL of a Link header with another entry before it, relative to the page:
 * dllm's copies and libcurl's URL parser allocate (libcurl through curl_global_init_mem).
 */
static enum dllm_status op_link_next(void *ctx, struct dllm_error *err)
{
    (void)ctx;
    char *next = (char *)&next; /* not NULL: must be reset */
    enum dllm_status st =
        dllm_hubhttp_link_next("<https://x/a?cursor=1>; rel=\"prev\", "
                               "<../tree/main?recursive=true&cursor=2>; rel=\"next\"",
                               TREE, &next, err);
    if (st != DLLM_OK) {
        ck_assert_ptr_null(next);
        return st;
    }
    ck_assert_str_eq(
        next, "https://huggingface.co/api/models/org/name/tree/main?recursive=true&cursor=2");
    free(next);
    return DLLM_OK;
}

/* A session's network side: the endpoint's origin, a libcurl handle and the token copied. */
static enum dllm_status op_connect(void *ctx, struct dllm_error *err)
{
    (void)ctx;
    const struct dllm_hub_params p = {.endpoint = "https://HuggingFace.co/", .token = " hf_x "};
    struct dllm_hubhttp http;
    enum dllm_status st = dllm_hubhttp_init(&http, &p, "org/name", err);
    if (st == DLLM_OK && (st = dllm_hubhttp_connect(&http, err)) == DLLM_OK) {
        ck_assert_str_eq(http.origin, "https://huggingface.co:443");
        ck_assert_str_eq(http.token, "hf_x");
    }
    dllm_hubhttp_fini(&http);
    return st;
}

START_TEST(hub_connect)
{
    dllm_hubhttp_global_init();
    torture("a hub session connecting", op_connect, NULL, NULL);
}
END_TEST

START_TEST(hub_link_next)
{
    dllm_hubhttp_global_init();
    long count = torture("a Link header's next URL", op_link_next, NULL, NULL);
    ck_assert_int_gt(count, 4); /* dllm makes 4 (copies), libcurl the others */
}
END_TEST

/* ---- the TUI's transcript and its wrapped scrollback ------------------------------------ */

/* A ui/ function's false: DLLM_ERR_NOMEM when errno says memory ran out. */
static enum dllm_status ui_failed(struct dllm_error *err)
{
    ck_assert_int_eq(errno, ENOMEM);
    return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
}

static enum dllm_status op_transcript(void *ctx, struct dllm_error *err)
{
    (void)ctx;
    struct ui_transcript t;
    struct ui_scrollback sb;
    ui_transcript_init(&t);
    ui_scrollback_init(&sb);
    struct dllm_sampler_params sp;
    dllm_sampler_params_init(&sp, DLLM_SAMPLER_LLADA);
    struct ui_timing_totals totals = {0};
    static const char answer[] = "A long answer that wraps over several rows \u2026 and a gap";
    static const size_t gap[] = {42};
    enum dllm_status st = DLLM_OK;
    size_t n_before = 0;
    bool ok = ui_transcript_set_system(&t, "You are terse.");
    ok = ok && ui_transcript_add(&t, UI_ROLE_USER, "What is a diffusion language model?");
    ok = ok && (n_before = t.n, ui_transcript_answer(&t, answer, gap, 1, true, &sp, &totals));
    ok = ok && (n_before = t.n, ui_transcript_add(&t, UI_ROLE_NOTICE, "1 turn dropped"));
    ok = ok && (n_before = t.n, ui_transcript_add(&t, UI_ROLE_USER, "And then?"));
    ok = ok && (n_before = t.n, ui_transcript_answer(&t, answer, NULL, 0, false, &sp, &totals));
    if (!ok) {
        ck_assert_uint_eq(t.n, n_before); /* nothing changed */
        st = ui_failed(err);
        goto done;
    }
    char headers[8][UI_HEADER_MAX];
    struct ui_sb_block blocks[3 * 8];
    size_t n_blocks = ui_transcript_blocks(&t, true, headers, blocks);
    if (!ui_scrollback_layout(&sb, blocks, n_blocks, 12)) {
        ck_assert_uint_eq(sb.n_rows, 0);
        st = ui_failed(err);
        goto done;
    }
    size_t rows = sb.n_rows;
    if (!ui_scrollback_layout(&sb, blocks, n_blocks, 30)) {
        ck_assert_uint_eq(sb.n_rows, rows); /* the old layout stays */
        st = ui_failed(err);
        goto done;
    }
    ck_assert_uint_lt(sb.n_rows, rows);
done:
    ui_scrollback_fini(&sb);
    ui_transcript_fini(&t);
    return st;
}

START_TEST(transcript)
{
    torture("the TUI's transcript and wrap", op_transcript, NULL, NULL);
}
END_TEST

static Suite *torture_suite(void)
{
    Suite *s = suite_create("torture");
    TCase *tc = tcase_create("engine");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, model_open);
    tcase_add_loop_test(tc, forward_new, 0, 3);
    tcase_add_test(tc, session);
    tcase_add_loop_test(tc, vocab, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("hub");
    tcase_add_test(tc, hub_listing);
    tcase_add_test(tc, hub_tree_page);
    tcase_add_test(tc, hub_link_next);
    tcase_add_test(tc, hub_connect);
    suite_add_tcase(s, tc);
    tc = tcase_create("ui");
    tcase_add_test(tc, transcript);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run_suite(torture_suite());
}
