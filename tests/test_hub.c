/*
 * The hub client against a real HTTP server: tests/fake_hub.py on 127.0.0.1 (its CDN is
 * "localhost", another host name). Expected hashes come from the fake hub (Python hashlib)
 * and from OpenSSL here, never from the code under test.
 */
#define _GNU_SOURCE
#include "dllm-hub.h"
#include "dllm.h"
#include "fixtures.h"
#include "listing.h"
#include "ref.h"
#include "util.h"

#include <check.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

static char hub_url[64]; /* http://127.0.0.1:PORT */
static pid_t hub_pid;

#define TINY    "test/tiny-GGUF"
#define Q4      "tiny.Q4_K_M.gguf"
#define Q4_SIZE (256 * 1024)

/* Bounds for a listing of 100 000 files (the hub's paths and hashes are ~15 MB). */
#define HUGE_SECONDS 60.0
#define HUGE_PEAK_KB (256 * 1024)
/* Under AddressSanitizer freed memory waits in its quarantine (256 MB unless told otherwise). */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZER_HOLD_KB (256 * 1024)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZER_HOLD_KB (256 * 1024)
#endif
#endif
#ifndef SANITIZER_HOLD_KB
#define SANITIZER_HOLD_KB 0
#endif

/* ---- the fake hub ----------------------------------------------------------------------- */

static size_t collect(char *data, size_t size, size_t nmemb, void *user)
{
    char **buf = user;
    size_t old = *buf ? strlen(*buf) : 0, n = size * nmemb;
    *buf = realloc(*buf, old + n + 1);
    memcpy(*buf + old, data, n);
    (*buf)[old + n] = 0;
    return n;
}

/* GETs a control path of the fake hub and parses its JSON answer. */
static json_t *ctl(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *ctl(const char *fmt, ...)
{
    char path[512], url[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    snprintf(url, sizeof url, "%s%s", hub_url, path);
    CURL *c = curl_easy_init();
    char *body = NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_cleanup(c);
    ck_assert_msg(rc == CURLE_OK, "fake hub control %s: %s", path, curl_easy_strerror(rc));
    json_t *doc = json_loads(body, 0, NULL);
    free(body);
    ck_assert_ptr_nonnull(doc);
    return doc;
}

static void fault(const char *where, const char *kind, int times, const char *code)
{
    json_decref(
        ctl("/_fault?where=%s&kind=%s&times=%d&code=%s", where, kind, times, code ? code : ""));
}

/*
 * The SHA-256, size and etag (the SHA-256, or the git blob SHA-1 outside LFS) the fake hub
 * gives for a file of a repo at a revision.
 */
static void expected_etag(const char *repo, const char *rev, const char *path, char sha[65],
                          int64_t *size, char commit[41], char etag[65])
{
    json_t *doc = ctl("/_files?repo=%s&rev=%s", repo, rev);
    size_t i;
    json_t *f;
    sha[0] = 0;
    snprintf(commit, 41, "%s", json_string_value(json_object_get(doc, "commit")));
    json_array_foreach(json_object_get(doc, "files"), i, f)
    {
        if (strcmp(json_string_value(json_object_get(f, "path")), path) == 0) {
            snprintf(sha, 65, "%s", json_string_value(json_object_get(f, "sha256")));
            snprintf(etag, 65, "%s", json_string_value(json_object_get(f, "etag")));
            *size = json_integer_value(json_object_get(f, "size"));
        }
    }
    json_decref(doc);
    ck_assert_msg(sha[0], "fake hub has no %s in %s", path, repo);
}

static void expected(const char *repo, const char *rev, const char *path, char sha[65],
                     int64_t *size, char commit[41])
{
    char etag[65];
    expected_etag(repo, rev, path, sha, size, commit, etag);
}

/* Requests the fake hub logged whose path starts with prefix, with their Range headers. */
static int logged(const char *prefix, const char *ranges[], int max)
{
    json_t *log = ctl("/_log");
    size_t i;
    json_t *e;
    int n = 0;
    json_array_foreach(log, i, e)
    {
        const char *path = json_string_value(json_object_get(e, "path"));
        if (strncmp(path, prefix, strlen(prefix)) != 0)
            continue;
        if (ranges && n < max) {
            const char *r = json_string_value(json_object_get(e, "range"));
            ranges[n] = r ? strdup(r) : NULL;
        }
        n++;
    }
    json_decref(log);
    return n;
}

/* Starts the fake hub and waits for its port. */
static bool start_hub(const char *dir)
{
    const char *src = getenv("DLLM_TESTS_SRC");
    char script[4096], portfile[4096];
    snprintf(script, sizeof script, "%s/fake_hub.py", src && *src ? src : "tests");
    snprintf(portfile, sizeof portfile, "%s/port", dir);
    hub_pid = fork();
    if (hub_pid == 0) {
        execlp("python3", "python3", script, "--port-file", portfile, "--idle", "120",
               (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(portfile, "r");
        int port = 0;
        if (f && fscanf(f, "%d", &port) == 1 && port > 0) {
            fclose(f);
            snprintf(hub_url, sizeof hub_url, "http://127.0.0.1:%d", port);
            return true;
        }
        if (f)
            fclose(f);
        if (waitpid(hub_pid, NULL, WNOHANG) == hub_pid)
            return false;
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
    return false;
}

/* ---- per-test environment --------------------------------------------------------------- */

static char tmp[2048];  /* this test's folder: hf/ (HF_HOME), xdg/ (XDG_CACHE_HOME) */
static char root[2100]; /* the cache: tmp/hf/hub */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path) == 0 ? 0 : 0;
}

/* A fresh cache and environment for one test, and a fake hub without faults or log. */
static void setup(void)
{
    char *dir = test_tmpdir();
    snprintf(tmp, sizeof tmp, "%s", dir);
    free(dir);
    char hf[2100], xdg[2100];
    snprintf(hf, sizeof hf, "%s/hf", tmp);
    snprintf(xdg, sizeof xdg, "%s/xdg", tmp);
    snprintf(root, sizeof root, "%s/hf/hub", tmp);
    setenv("HF_HOME", hf, 1);
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HF_ENDPOINT", hub_url, 1);
    unsetenv("HF_HUB_CACHE");
    unsetenv("HUGGINGFACE_HUB_CACHE");
    unsetenv("HF_TOKEN");
    unsetenv("HUGGING_FACE_HUB_TOKEN");
    unsetenv("HF_TOKEN_PATH");
    unsetenv("HF_HUB_OFFLINE");
    unsetenv("TRANSFORMERS_OFFLINE");
    unsetenv("HF_HUB_DISABLE_SYMLINKS");
    json_decref(ctl("/_reset"));
}

static void teardown(void)
{
    nftw(tmp, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

/* What the progress callback saw; cancel_at > 0 cancels once that many bytes are in. */
struct seen {
    int events[DLLM_HUB_PHASE_DONE + 1];
    int64_t cancel_at;
    atomic_bool cancel;
};

/* Counts the events by phase, checks their shape and cancels at cancel_at bytes. */
static void on_progress(const struct dllm_progress *p, void *user)
{
    struct seen *s = user;
    ck_assert_int_eq(p->kind, DLLM_PROGRESS_DOWNLOAD);
    ck_assert(p->phase >= DLLM_HUB_PHASE_CHECK && p->phase <= DLLM_HUB_PHASE_DONE);
    s->events[p->phase]++;
    ck_assert_int_le(p->done, p->total > 0 ? p->total : p->done);
    ck_assert(p->total > 0 ? p->fraction == (double)p->done / (double)p->total : p->fraction == 0);
    ck_assert_ptr_nonnull(p->repo);
    ck_assert_ptr_nonnull(p->file);
    if (s->cancel_at > 0 && p->phase == DLLM_HUB_PHASE_DOWNLOAD && p->done >= s->cancel_at)
        atomic_store(&s->cancel, true);
}

/* Room for the strings dllm_hub_params_from_env sets in the params of params_for. */
static struct dllm_hub_env env;

/* The params a test uses: the defaults, the environment, quick retries, progress into s. */
static void params_for(struct dllm_hub_params *p, struct seen *s)
{
    dllm_hub_params_init(p);
    ck_assert_int_eq(dllm_hub_params_from_env(p, &env, NULL), DLLM_OK);
    p->max_retries = 3;
    p->retry_base_ms = 10;
    p->stall_seconds = 1;
    if (s) {
        *s = (struct seen){0};
        p->progress = on_progress;
        p->progress_user = s;
        p->cancel = &s->cancel;
    }
}

/* Resolves ref; on success returns the model, else NULL with *st and err set. */
static struct dllm_hub_model *resolve(const char *ref, const struct dllm_hub_params *p,
                                      enum dllm_status *st, struct dllm_error *err)
{
    struct dllm_hub_model *m = NULL;
    *err = (struct dllm_error){0};
    *st = dllm_hub_resolve(ref, p, &m, err);
    ck_assert(*st == DLLM_OK ? m != NULL : m == NULL);
    return m;
}

static struct dllm_hub_model *resolve_ok(const char *ref, const struct dllm_hub_params *p)
{
    enum dllm_status st;
    struct dllm_error err;
    struct dllm_hub_model *m = resolve(ref, p, &st, &err);
    ck_assert_msg(st == DLLM_OK, "%s: %s", ref, err.text);
    return m;
}

/* SHA-256 (or, for a 40-digit name, the git blob SHA-1) of a file, with OpenSSL. */
static void hash_file(const char *path, bool git, char hex[65])
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    struct stat sb;
    fstat(fileno(f), &sb);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, git ? EVP_sha1() : EVP_sha256(), NULL);
    if (git) {
        char head[32];
        int n = snprintf(head, sizeof head, "blob %lld", (long long)sb.st_size);
        EVP_DigestUpdate(ctx, head, (size_t)n + 1);
    }
    unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        EVP_DigestUpdate(ctx, buf, n);
    unsigned int len;
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    fclose(f);
    for (unsigned int i = 0; i < len; i++)
        sprintf(hex + 2 * i, "%02x", md[i]);
}

static int64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/* The path of a file inside the test's cache folder of a repo. */
static void repo_path(char *out, size_t n, const char *repo, const char *rel)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s", repo);
    char *slash = strchr(dir, '/');
    *slash = 0;
    snprintf(out, n, "%s/models--%s--%s/%s", root, dir, slash + 1, rel);
}

/*
 * The cache is valid: every blob hashes to its name, every snapshot entry is a relative link
 * to an existing blob of its repo, partial downloads are no longer than a file can be.
 */
static int check_blob(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    const char *base = path + ftw->base;
    char parent[4096];
    snprintf(parent, sizeof parent, "%.*s", ftw->base > 0 ? ftw->base - 1 : 0, path);
    const char *pbase = strrchr(parent, '/');
    if (flag == FTW_F && pbase && strcmp(pbase, "/blobs") == 0) {
        if (strstr(base, ".incomplete")) {
            ck_assert_int_le(sb->st_size, 300 * 1024);
            return 0;
        }
        char hex[65] = "";
        hash_file(path, strlen(base) == 40, hex);
        ck_assert_msg(strcmp(hex, base) == 0, "blob %s hashes to %s", path, hex);
    }
    if (flag == FTW_SL && strstr(path, "/snapshots/")) {
        char target[4096];
        ssize_t n = readlink(path, target, sizeof target - 1);
        ck_assert_int_gt(n, 0);
        target[n] = 0;
        ck_assert_msg(strncmp(target, "../../", 6) == 0 && strstr(target, "/blobs/"),
                      "link %s -> %s", path, target);
        struct stat tb;
        ck_assert_msg(stat(path, &tb) == 0, "link %s is broken", path);
    }
    ck_assert_msg(flag != FTW_F || !strstr(path, "/snapshots/"), "%s is not a link", path);
    return 0;
}

static void check_cache_valid(void)
{
    struct stat sb;
    if (stat(root, &sb) == 0)
        nftw(root, check_blob, 32, FTW_PHYS);
}

/* The model's file is the fake hub's content, linked where huggingface_hub would have it. */
static void check_file(const struct dllm_hub_model *m, const char *repo, const char *rev,
                       const char *file)
{
    char sha[65], commit[41], want[4400], hex[65], etag[65];
    int64_t size;
    expected_etag(repo, rev, file, sha, &size, commit, etag);
    char rel[512];
    snprintf(rel, sizeof rel, "snapshots/%s/%s", commit, file);
    repo_path(want, sizeof want, repo, rel);
    ck_assert_str_eq(dllm_hub_model_path(m), want);
    ck_assert_str_eq(dllm_hub_model_commit(m), commit);
    ck_assert_str_eq(dllm_hub_model_file(m), file);
    ck_assert_int_eq(file_size(want), size);
    hash_file(want, false, hex);
    ck_assert_str_eq(hex, sha);
    char target[4096], link_want[4096] = "";
    ssize_t n = readlink(want, target, sizeof target - 1);
    ck_assert_int_gt(n, 0);
    target[n] = 0;
    for (const char *p = file; *p; p++)
        if (*p == '/')
            strcat(link_want, "../");
    strcat(link_want, "../../blobs/");
    strcat(link_want, etag);
    ck_assert_str_eq(target, link_want);
}

/* ---- references, paths and selection (no network) --------------------------------------- */

struct ref_case {
    const char *text;
    enum dllm_status want;
    bool local;
    const char *repo, *tag;
    bool is_file;
};

static const struct ref_case ref_cases[] = {
    {"org/repo", DLLM_OK, false, "org/repo", "", false},
    {"org/repo:Q4_K_M", DLLM_OK, false, "org/repo", "Q4_K_M", false},
    {"org/repo:UD-Q4_K_XL", DLLM_OK, false, "org/repo", "UD-Q4_K_XL", false},
    {"org/repo:sub/x.GGUF", DLLM_OK, false, "org/repo", "sub/x.GGUF", true},
    {"a.b-c_d/E.f-1", DLLM_OK, false, "a.b-c_d/E.f-1", "", false},
    {"/abs/x.gguf", DLLM_OK, true, NULL, NULL, false},
    {"./x.gguf", DLLM_OK, true, NULL, NULL, false},
    {"../x:y/z.gguf", DLLM_OK, true, NULL, NULL, false},
    {"org", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a/b/c", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a//b", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"-a/b", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a/b-", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a--b/c", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a..b/c", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a/.b", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a b/c", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a/b:", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a/b:../x.gguf", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a/b:/abs.gguf", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a/b:sub//x.gguf", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a/b:Q4 K", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"a/b:Q4/K", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"", DLLM_ERR_ARG, false, NULL, NULL, false},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaa/b",
     DLLM_ERR_ARG, false, NULL, NULL, false},
};

START_TEST(ref_parse)
{
    const struct ref_case *c = &ref_cases[_i];
    struct dllm_hub_ref r;
    struct dllm_error err = {0};
    enum dllm_status st = dllm_hub_ref_parse(c->text, NULL, &r, &err);
    ck_assert_msg(st == c->want, "'%s': status %d (%s)", c->text, st, err.text);
    if (st != DLLM_OK) {
        ck_assert_msg(err.text[0], "'%s': no error text", c->text);
        return;
    }
    ck_assert_int_eq(r.local, c->local);
    if (c->local) {
        ck_assert_str_eq(r.path, c->text);
        return;
    }
    ck_assert_str_eq(r.repo, c->repo);
    ck_assert_str_eq(r.tag, c->tag);
    ck_assert_int_eq(r.tag_is_file, c->is_file);
}
END_TEST

START_TEST(ref_home)
{
    struct dllm_hub_params p;
    dllm_hub_params_init(&p);
    p.home = "/home/someone";
    struct dllm_hub_ref r;
    ck_assert_int_eq(dllm_hub_ref_parse("~/m/x.gguf", &p, &r, NULL), DLLM_OK);
    ck_assert(r.local);
    ck_assert_str_eq(r.path, "/home/someone/m/x.gguf");
    /* An existing file in the current folder is a path even without ./ */
    char *dir = test_tmpdir();
    ck_assert_int_eq(chdir(dir), 0);
    FILE *f = fopen("model.gguf", "w");
    fclose(f);
    ck_assert_int_eq(dllm_hub_ref_parse("model.gguf", &p, &r, NULL), DLLM_OK);
    ck_assert(r.local);
    unlink("model.gguf");
    rmdir(dir);
    free(dir);
}
END_TEST

/* dllm_hub_params_init reads nothing; dllm_hub_params_from_env maps huggingface_hub's variables. */
START_TEST(params_env)
{
    static const char *const names[] = {"HF_ENDPOINT",
                                        "HF_HUB_CACHE",
                                        "HUGGINGFACE_HUB_CACHE",
                                        "HF_HOME",
                                        "XDG_CACHE_HOME",
                                        "HF_TOKEN",
                                        "HUGGING_FACE_HUB_TOKEN",
                                        "HF_TOKEN_PATH",
                                        "HF_HUB_OFFLINE",
                                        "TRANSFORMERS_OFFLINE",
                                        "HF_HUB_DISABLE_SYMLINKS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        setenv(names[i], "1", 1);
    struct dllm_hub_params p;
    dllm_hub_params_init(&p);
    ck_assert(!p.endpoint && !p.cache_dir && !p.token && !p.home && !p.verified_path);
    ck_assert(!p.offline && !p.no_symlinks);
    ck_assert_str_eq(p.revision, "main");
    ck_assert_int_eq(p.retry_base_ms, 1000);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);

    struct dllm_hub_env e;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", "/home/someone", 1);
    setenv("HF_ENDPOINT", "http://hub.example", 1);
    setenv("HF_HUB_CACHE", "/c1", 1);
    setenv("HUGGINGFACE_HUB_CACHE", "/c2", 1);
    setenv("HF_HOME", "/h", 1);
    setenv("XDG_CACHE_HOME", "/x", 1);
    setenv("HF_TOKEN", "hf_a", 1);
    setenv("HUGGING_FACE_HUB_TOKEN", "hf_b", 1);
    setenv("HF_HUB_OFFLINE", "yes", 1);
    setenv("HF_HUB_DISABLE_SYMLINKS", "1", 1);
    dllm_hub_params_init(&p);
    ck_assert_int_eq(dllm_hub_params_from_env(&p, &e, NULL), DLLM_OK);
    ck_assert_str_eq(p.home, "/home/someone");
    ck_assert_str_eq(p.endpoint, "http://hub.example");
    ck_assert_str_eq(p.cache_dir, "/c1");
    ck_assert_str_eq(p.verified_path, "/x/dllm/verified.json");
    ck_assert_str_eq(p.token, "hf_a");
    ck_assert(p.offline && p.no_symlinks);
    /* The next variable in huggingface_hub's order when one is unset. */
    const char *order[][2] = {{"HF_HUB_CACHE", "/c2"},
                              {"HUGGINGFACE_HUB_CACHE", "/h/hub"},
                              {"HF_HOME", "/x/huggingface/hub"}};
    for (int i = 0; i < 3; i++) {
        unsetenv(order[i][0]);
        dllm_hub_params_init(&p);
        ck_assert_int_eq(dllm_hub_params_from_env(&p, &e, NULL), DLLM_OK);
        ck_assert_str_eq(p.cache_dir, order[i][1]);
    }
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HF_TOKEN");
    setenv("HF_HUB_OFFLINE", "0", 1);
    setenv("HF_HUB_DISABLE_SYMLINKS", "0", 1);
    dllm_hub_params_init(&p);
    ck_assert_int_eq(dllm_hub_params_from_env(&p, &e, NULL), DLLM_OK);
    ck_assert(!p.cache_dir && !p.verified_path && !p.offline && !p.no_symlinks);
    ck_assert_str_eq(p.token, "hf_b");
    unsetenv("HF_HUB_OFFLINE");
    setenv("TRANSFORMERS_OFFLINE", "TRUE", 1);
    /* Without a token variable, the token file; without the file, no token. */
    unsetenv("HUGGING_FACE_HUB_TOKEN");
    char *dir = test_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/token", dir);
    FILE *f = fopen(path, "w");
    fputs("hf_file\n", f);
    fclose(f);
    setenv("HF_TOKEN_PATH", path, 1);
    dllm_hub_params_init(&p);
    ck_assert_int_eq(dllm_hub_params_from_env(&p, &e, NULL), DLLM_OK);
    ck_assert_str_eq(p.token, "hf_file\n");
    ck_assert(p.offline);
    unlink(path);
    rmdir(dir);
    free(dir);
    dllm_hub_params_init(&p);
    ck_assert_int_eq(dllm_hub_params_from_env(&p, &e, NULL), DLLM_OK);
    ck_assert_ptr_null(p.token);
    /* A value too long for its room is an error that never shows a token. */
    char *big = malloc(DLLM_HUB_TOKEN_MAX + 2);
    memset(big, 'x', DLLM_HUB_TOKEN_MAX + 1);
    big[DLLM_HUB_TOKEN_MAX + 1] = 0;
    setenv("HF_TOKEN", big, 1);
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_hub_params_from_env(&p, &e, &err), DLLM_ERR_ARG);
    ck_assert_ptr_null(strstr(err.text, "xxxx"));
    free(big);
    unsetenv("HF_TOKEN");
    unsetenv("HF_TOKEN_PATH");
    unsetenv("TRANSFORMERS_OFFLINE");
    unsetenv("HF_ENDPOINT");
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_home);
}
END_TEST

struct path_case {
    const char *path;
    bool valid;
};

static const struct path_case path_cases[] = {
    {"x.gguf", true},
    {"a/b/x.gguf", true},
    {"a.b/..x", true},
    {"", false},
    {"/x.gguf", false},
    {"../x", false},
    {"a/../x", false},
    {"a/./x", false},
    {"a//x", false},
    {"a/", false},
    {".", false},
    {"..", false},
    {"a\\..\\x", false},
    {"a\nb", false},
    {"a\x7f", false},
    {"a\xc2\x9b"
     "2Jb",
     false},
    {"caf\xc3\xa9/\xe6\x97\xa5.gguf", true},
};

START_TEST(path_valid)
{
    const struct path_case *c = &path_cases[_i];
    ck_assert_msg(dllm_hub_path_valid(c->path) == c->valid, "'%s'", c->path);
}
END_TEST

/* A name no file system takes (over 255 bytes) is refused; 255 bytes is a name. */
START_TEST(path_long)
{
    char path[600];
    memset(path, 'a', 255);
    strcpy(path + 255, "/x.gguf");
    ck_assert(dllm_hub_path_valid(path));
    memset(path, 'b', 256);
    strcpy(path + 256, "/x.gguf");
    ck_assert(!dllm_hub_path_valid(path));
    strcpy(path, "dir/");
    memset(path + 4, 'c', 256);
    path[260] = 0;
    ck_assert(!dllm_hub_path_valid(path));
}
END_TEST

struct select_case {
    const char *files; /* ';'-separated listing */
    const char *tag;
    bool is_file;
    const char *want; /* ';'-separated chosen files, or NULL for DLLM_ERR_MISSING */
};

static const struct select_case select_cases[] = {
    {"README.md;mmproj-x-Q4_K_M.gguf;x-F16.gguf;x-Q4_K_M.gguf;x-Q8_0.gguf", "", false,
     "x-Q4_K_M.gguf"},
    {"README.md;mmproj-x-Q4_K_M.gguf;x-F16.gguf;x-Q4_K_M.gguf;x-Q8_0.gguf", "q8_0", false,
     "x-Q8_0.gguf"},
    {"README.md;mmproj-x-Q4_K_M.gguf;x-F16.gguf;x-Q4_K_M.gguf;x-Q8_0.gguf", "F16", false,
     "x-F16.gguf"},
    {"README.md;mmproj-x-Q4_K_M.gguf;x-F16.gguf;x-Q4_K_M.gguf;x-Q8_0.gguf", "Q4_K", false, NULL},
    {"README.md;mmproj-x-Q4_K_M.gguf;x-F16.gguf;x-Q4_K_M.gguf;x-Q8_0.gguf", "Q2_K", false, NULL},
    {"a-F16.gguf;b-Q8_0.gguf", "", false, "b-Q8_0.gguf"},
    {"imatrix.gguf;z-BF16.gguf", "", false, "z-BF16.gguf"},
    {"mmproj-f16.gguf;README.md", "", false, NULL},
    {"m-Q4_K_M-00001-of-00002.gguf;m-Q4_K_M-00002-of-00002.gguf;m-Q8_0.gguf", "", false,
     "m-Q4_K_M-00001-of-00002.gguf;m-Q4_K_M-00002-of-00002.gguf"},
    {"m-Q4_K_M-00001-of-00002.gguf;m-Q4_K_M-00002-of-00002.gguf;m-Q8_0.gguf", "Q8_0", false,
     "m-Q8_0.gguf"},
    {"m-Q4_K_M-00001-of-00002.gguf;m-Q4_K_M-00002-of-00002.gguf", "m-Q4_K_M-00002-of-00002.gguf",
     true, "m-Q4_K_M-00001-of-00002.gguf;m-Q4_K_M-00002-of-00002.gguf"},
    {"m-Q4_K_M-00001-of-00003.gguf;m-Q4_K_M-00002-of-00003.gguf", "", false, NULL},
    {"sub/y.gguf;y.gguf", "sub/y.gguf", true, "sub/y.gguf"},
    {"sub/y.gguf;y.gguf", "y.gguf", true, "y.gguf"},
    {"a/y.gguf;z.gguf", "y.gguf", true, "a/y.gguf"},
    {"a/y.gguf;b/y.gguf", "y.gguf", true, NULL},
    {"a/y.gguf", "x.gguf", true, NULL},
    {"deep/dir/t.Q5_K_S.gguf;t.Q4_K_S.gguf", "q5_k_s", false, "deep/dir/t.Q5_K_S.gguf"},
};

START_TEST(select_files)
{
    const struct select_case c = select_cases[_i];
    struct dllm_hub_listing l = {0};
    char files[512];
    snprintf(files, sizeof files, "%s", c.files);
    for (char *save, *tok = strtok_r(files, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        struct dllm_hub_file f = {.path = tok, .size = 1};
        ck_assert_int_eq(dllm_hub_listing_add(&l, &f, NULL), DLLM_OK);
    }
    size_t idx[16], n = 0;
    struct dllm_error err = {0};
    enum dllm_status st = dllm_hub_select(&l, "org/repo", c.tag, c.is_file, idx, &n, &err);
    if (!c.want) {
        ck_assert_msg(st == DLLM_ERR_MISSING, "%s / '%s': status %d", c.files, c.tag, st);
        ck_assert_ptr_nonnull(strstr(err.text, "org/repo"));
    } else {
        ck_assert_msg(st == DLLM_OK, "%s / '%s': %s", c.files, c.tag, err.text);
        char got[512] = "";
        for (size_t i = 0; i < n; i++) {
            if (i)
                strcat(got, ";");
            strcat(got, l.files[idx[i]].path);
        }
        ck_assert_str_eq(got, c.want);
    }
    dllm_hub_listing_fini(&l);
}
END_TEST

/* No quant: the error names the repo's GGUF files. */
START_TEST(select_lists_files)
{
    struct dllm_hub_listing l = {0};
    const char *names[] = {"README.md", "x-Q4_K_M.gguf", "x-Q8_0.gguf"};
    for (int i = 0; i < 3; i++) {
        struct dllm_hub_file f = {.path = (char *)names[i]};
        dllm_hub_listing_add(&l, &f, NULL);
    }
    size_t idx[3], n;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_hub_select(&l, "o/r", "Q5_K_M", false, idx, &n, &err), DLLM_ERR_MISSING);
    ck_assert_ptr_nonnull(strstr(err.text, "Q5_K_M"));
    ck_assert_ptr_nonnull(strstr(err.text, "x-Q4_K_M.gguf, x-Q8_0.gguf"));
    ck_assert_ptr_null(strstr(err.text, "README"));
    dllm_hub_listing_fini(&l);
}
END_TEST

/* ---- downloads -------------------------------------------------------------------------- */

/* The default quant, linked as huggingface_hub links it, with refs, listing and memo kept. */
START_TEST(download_default)
{
    struct dllm_hub_params p;
    struct seen s;
    params_for(&p, &s);
    struct dllm_hub_model *m = resolve_ok(TINY, &p);
    check_file(m, TINY, "main", Q4);
    ck_assert_int_eq(dllm_hub_model_n_files(m), 1);
    ck_assert(!dllm_hub_model_split(m));
    ck_assert_int_eq(dllm_hub_model_size(m), Q4_SIZE);
    ck_assert_int_eq(dllm_hub_model_downloaded(m), Q4_SIZE);
    ck_assert_ptr_null(dllm_hub_model_warning(m));
    ck_assert_int_eq(s.events[DLLM_HUB_PHASE_DONE], 1);
    ck_assert_int_gt(s.events[DLLM_HUB_PHASE_DOWNLOAD], 0);
    char path[4400], text[64] = "";
    repo_path(path, sizeof path, TINY, "refs/main");
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(text, sizeof text, f));
    fclose(f);
    ck_assert_str_eq(text, dllm_hub_model_commit(m));
    /* The listing is kept, without the unsafe names the hub listed. */
    char rel[128];
    snprintf(rel, sizeof rel, "trees/%s.json", dllm_hub_model_commit(m));
    repo_path(path, sizeof path, TINY, rel);
    json_t *tree = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(tree);
    json_t *files = json_object_get(tree, "files");
    ck_assert_int_eq(json_integer_value(json_object_get(tree, "format_version")), 1);
    ck_assert_int_eq(json_object_size(files), 7);
    ck_assert_ptr_nonnull(json_object_get(files, "deep/dir/tiny.Q5_K_S.gguf"));
    ck_assert_ptr_null(json_object_get(files, "sub/../../../escape.Q2_K.gguf"));
    ck_assert_ptr_null(json_object_get(files, "/abs.Q3_K_S.gguf"));
    json_decref(tree);
    /* Several listing pages were followed; the partial file is gone. */
    ck_assert_int_ge(logged("/api/models/" TINY "/tree/", NULL, 0), 3);
    char sha[65], commit[41];
    int64_t size;
    expected(TINY, "main", Q4, sha, &size, commit);
    snprintf(rel, sizeof rel, "blobs/%s.incomplete", sha);
    repo_path(path, sizeof path, TINY, rel);
    ck_assert_int_eq(file_size(path), -1);
    /* The verified memo holds the blob. */
    snprintf(path, sizeof path, "%s/xdg/dllm/verified.json", tmp);
    json_t *memo = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(memo);
    ck_assert_int_ge(json_object_size(json_object_get(memo, "files")), 1);
    json_decref(memo);
    check_cache_valid();
    dllm_hub_model_free(m);

    /* A second run finds it verified: no hashing, no download, one revision request. */
    json_decref(ctl("/_reset"));
    m = resolve_ok(TINY, &p);
    ck_assert_int_eq(s.events[DLLM_HUB_PHASE_CHECK], 0);
    ck_assert_int_eq(dllm_hub_model_downloaded(m), 0);
    ck_assert_int_eq(logged("/cdn/", NULL, 0), 0);
    ck_assert_int_eq(logged("/api/models/" TINY "/revision/", NULL, 0), 1);
    dllm_hub_model_free(m);
}
END_TEST

struct pick_case {
    const char *ref, *repo, *file;
};

static const struct pick_case pick_cases[] = {
    {TINY ":Q8_0", TINY, "tiny.Q8_0.gguf"},
    {TINY ":q5_k_s", TINY, "deep/dir/tiny.Q5_K_S.gguf"},
    {TINY ":tiny-F16.gguf", TINY, "tiny-F16.gguf"},
    {TINY ":F16", TINY, "tiny-F16.gguf"},
    {TINY ":IQ1_S", TINY, "plain.IQ1_S.gguf"}, /* outside LFS: its etag is a git blob SHA-1 */
    {"test/q8-only", "test/q8-only", "m-Q8_0.gguf"},
    {"test/f16-only", "test/f16-only", "a-BF16.gguf"},
};

/* Quant selection against the hub, and links for files in sub-folders. */
START_TEST(download_pick)
{
    const struct pick_case *c = &pick_cases[_i];
    struct dllm_hub_params p;
    params_for(&p, NULL);
    struct dllm_hub_model *m = resolve_ok(c->ref, &p);
    check_file(m, c->repo, "main", c->file);
    check_cache_valid();
    dllm_hub_model_free(m);
}
END_TEST

/* A renamed repo answers /resolve with a relative redirect, which is followed. */
START_TEST(download_renamed)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    struct dllm_hub_model *m = resolve_ok("test/renamed:Q8_0", &p);
    ck_assert_int_eq(file_size(dllm_hub_model_path(m)), 128 * 1024);
    ck_assert_int_eq(logged("/" TINY "/resolve/", NULL, 0), 1);
    check_cache_valid();
    dllm_hub_model_free(m);
}
END_TEST

/*
 * Names that would leave the cache, or carry control characters, are never chosen or created;
 * the error lists the other files.
 */
START_TEST(download_no_traversal)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    const char *refs[] = {TINY ":Q2_K", TINY ":Q3_K_S", TINY ":escape.Q2_K.gguf", TINY ":IQ4_XS"};
    for (int i = 0; i < 4; i++) {
        enum dllm_status st;
        struct dllm_error err;
        ck_assert_ptr_null(resolve(refs[i], &p, &st, &err));
        ck_assert_msg(st == DLLM_ERR_MISSING, "%s: %s", refs[i], err.text);
        const char *files = strstr(err.text, "its GGUF files: ");
        ck_assert_msg(files && strstr(files, "tiny.Q4_K_M.gguf"), "%s", err.text);
        ck_assert_msg(!strstr(files, "escape") && !strstr(files, "abs."), "%s", err.text);
        for (const char *c = err.text; *c; c++)
            ck_assert_msg((unsigned char)*c >= 0x20 && *c != 0x7f, "control character: %s",
                          err.text);
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/escape.Q2_K.gguf", tmp);
    ck_assert_int_eq(file_size(path), -1);
    snprintf(path, sizeof path, "%s/hf/escape.Q2_K.gguf", tmp);
    ck_assert_int_eq(file_size(path), -1);
    ck_assert_int_eq(file_size("/abs.Q3_K_S.gguf"), -1);
    ck_assert_int_eq(logged("/cdn/", NULL, 0), 0);
}
END_TEST

/* Writes n bytes of data to path, which must not exist. */
static void write_new(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wx");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* The number of entries in a folder, "." and ".." left out. */
static int folder_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "%s: %s", dir, strerror(errno));
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/*
 * Links out of the cache are never followed: a snapshot entry linking to a file outside (with
 * the right bytes, even) and a snapshot folder linking to a folder outside are listed as
 * broken or not at all, refused by a resolve online and offline, and a remove deletes neither
 * what they point at nor anything through them.
 */
START_TEST(links_out_of_cache)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    struct dllm_hub_model *m = resolve_ok(TINY, &p);
    char snap[4400], outside[4400], copy[4500], deep[4500], precious[4600], link[4500];
    snprintf(snap, sizeof snap, "%s", dllm_hub_model_path(m));
    dllm_hub_model_free(m);
    /* outside/copy.gguf: the Q4 file's own bytes, outside the cache. */
    snprintf(outside, sizeof outside, "%s/outside", tmp);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    FILE *f = fopen(snap, "rb");
    ck_assert_ptr_nonnull(f);
    char *bytes = malloc(Q4_SIZE);
    ck_assert_uint_eq(fread(bytes, 1, Q4_SIZE, f), Q4_SIZE);
    fclose(f);
    snprintf(copy, sizeof copy, "%s/copy.gguf", outside);
    write_new(copy, bytes, Q4_SIZE);
    free(bytes);
    ck_assert_int_eq(unlink(snap), 0);
    ck_assert_int_eq(symlink(copy, snap), 0);
    /* snapshots/<commit>/deep -> outside/deep, where deep/dir/tiny.Q5_K_S.gguf is not the hub's. */
    snprintf(deep, sizeof deep, "%s/deep", outside);
    ck_assert_int_eq(mkdir(deep, 0755), 0);
    snprintf(precious, sizeof precious, "%s/dir", deep);
    ck_assert_int_eq(mkdir(precious, 0755), 0);
    snprintf(precious, sizeof precious, "%s/dir/tiny.Q5_K_S.gguf", deep);
    write_new(precious, "precious", 8);
    snprintf(link, sizeof link, "%s", snap);
    snprintf(strrchr(link, '/'), sizeof link - (size_t)(strrchr(link, '/') - link), "/deep");
    ck_assert_int_eq(symlink(deep, link), 0);

    struct dllm_error err;
    struct dllm_hub_list *list;
    ck_assert_int_eq(dllm_hub_list(&p, &list, &err), DLLM_OK);
    int q4 = 0;
    for (int64_t i = 0; i < dllm_hub_list_count(list); i++) {
        const struct dllm_hub_entry *e = dllm_hub_list_get(list, i);
        ck_assert_msg(!strstr(e->file, "deep"), "listed through a link: %s", e->file);
        if (strcmp(e->file, Q4) == 0) {
            q4++;
            ck_assert_int_eq(e->state, DLLM_HUB_STATE_BROKEN);
            ck_assert_int_eq(e->size, -1);
        }
    }
    ck_assert_int_eq(q4, 1);
    dllm_hub_list_free(list);

    static const char *const refs[] = {TINY ":Q4_K_M", TINY ":Q5_K_S"};
    for (int offline = 0; offline < 2; offline++) {
        p.offline = offline;
        for (int i = 0; i < 2; i++) {
            enum dllm_status st;
            ck_assert_ptr_null(resolve(refs[i], &p, &st, &err));
            ck_assert_msg(st == DLLM_ERR_IO && strstr(err.text, "leads out of the cache"),
                          "%s%s: %s", refs[i], offline ? " offline" : "", err.text);
        }
    }
    p.offline = false;
    int64_t n_files, bytes_freed;
    /* The linked folder's file is not the cache's: not found, and left alone. */
    enum dllm_status st = dllm_hub_remove(refs[1], &p, &n_files, &bytes_freed, &err);
    ck_assert_msg(st == DLLM_ERR_MISSING, "rm %s: %s", refs[1], err.text);
    st = dllm_hub_remove(refs[0], &p, &n_files, &bytes_freed, &err);
    ck_assert_msg(st == DLLM_OK, "rm %s: %s", refs[0], err.text);
    ck_assert_int_eq(n_files, 1);
    ck_assert_int_eq(dllm_hub_remove(TINY, &p, &n_files, &bytes_freed, &err), DLLM_OK);
    ck_assert_int_eq(file_size(copy), Q4_SIZE);
    ck_assert_int_eq(file_size(precious), 8);
    ck_assert_int_eq(folder_entries(outside), 2);
    ck_assert_int_eq(folder_entries(deep), 1);
    snprintf(precious, sizeof precious, "%s/dir", deep);
    ck_assert_int_eq(folder_entries(precious), 1);
}
END_TEST

/* The peak resident memory of this process so far (VmHWM), in kB. */
static long peak_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    ck_assert_int_gt(kb, 0);
    return kb;
}

/*
 * A repo of 100 000 files (test/huge), listed as the hub pages it (1 000 an answer, Link
 * rel="next": 101 answers) and in one answer: the model resolves, in bounded time and memory.
 */
START_TEST(huge_listing)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    p.stall_seconds = 30; /* the fake hub takes a few seconds to write 10 MB of JSON */
    if (_i == 1)
        fault("tree", "onebody", 1, NULL);
    long before = peak_kb();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct dllm_hub_model *m = resolve_ok("test/huge:Q4_K_M", &p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    long grew = peak_kb() - before;
    ck_assert_ptr_nonnull(strstr(dllm_hub_model_path(m), "/huge.Q4_K_M.gguf"));
    dllm_hub_model_free(m);
    int answers = logged("/api/models/test/huge/tree/", NULL, 0);
    fprintf(stderr, "100 000 files %s: %d answers, %.1f s, peak memory +%ld kB\n",
            _i ? "in one answer" : "paged", answers, secs, grew);
    ck_assert_int_eq(answers, (_i ? 1 : 101));
    ck_assert_msg(secs < HUGE_SECONDS, "%.1f s", secs);
    ck_assert_msg(grew < HUGE_PEAK_KB + SANITIZER_HOLD_KB, "+%ld kB", grew);
    check_cache_valid();
}
END_TEST

/* Every part of a split model is downloaded; the path is part 1. */
START_TEST(download_split)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    struct dllm_hub_model *m = resolve_ok("test/split-GGUF", &p);
    ck_assert(dllm_hub_model_split(m));
    ck_assert_int_eq(dllm_hub_model_n_files(m), 3);
    ck_assert_ptr_nonnull(strstr(dllm_hub_model_path(m), "big-Q4_K_M-00001-of-00003.gguf"));
    for (int i = 0; i < 3; i++) {
        char name[64], sha[65], commit[41], hex[65];
        int64_t size;
        snprintf(name, sizeof name, "big-Q4_K_M-%05d-of-00003.gguf", i + 1);
        expected("test/split-GGUF", "main", name, sha, &size, commit);
        ck_assert_ptr_nonnull(strstr(dllm_hub_model_file_path(m, i), name));
        hash_file(dllm_hub_model_file_path(m, i), false, hex);
        ck_assert_str_eq(hex, sha);
    }
    ck_assert_int_eq(dllm_hub_model_size(m), 150000);
    check_cache_valid();
    dllm_hub_model_free(m);
}
END_TEST

/* A dropped connection is resumed with a Range request from where it stopped. */
START_TEST(resume_after_drop)
{
    fault("cdn", "drop", 1, NULL);
    struct dllm_hub_params p;
    struct seen s;
    params_for(&p, &s);
    struct dllm_hub_model *m = resolve_ok(TINY, &p);
    check_file(m, TINY, "main", Q4);
    const char *ranges[4] = {0};
    ck_assert_int_eq(logged("/cdn/", ranges, 4), 2);
    ck_assert_ptr_null(ranges[0]);
    ck_assert_ptr_nonnull(ranges[1]);
    ck_assert_str_eq(ranges[1], "bytes=131072-");
    ck_assert_int_eq(s.events[DLLM_HUB_PHASE_RETRY], 1);
    free((char *)ranges[1]);
    check_cache_valid();
    dllm_hub_model_free(m);
}
END_TEST

/* Cancels a slow download part way; returns the partial file's size. */
static int64_t cancel_part_way(void)
{
    fault("cdn", "trickle", 1, NULL);
    struct dllm_hub_params p;
    struct seen s;
    params_for(&p, &s);
    s.cancel_at = 64 * 1024;
    enum dllm_status st;
    struct dllm_error err;
    ck_assert_ptr_null(resolve(TINY, &p, &st, &err));
    ck_assert_int_eq(st, DLLM_ERR_CANCELLED);
    char sha[65], commit[41], rel[128], path[4400];
    int64_t size;
    expected(TINY, "main", Q4, sha, &size, commit);
    snprintf(rel, sizeof rel, "blobs/%s.incomplete", sha);
    repo_path(path, sizeof path, TINY, rel);
    int64_t have = file_size(path);
    ck_assert_int_ge(have, 64 * 1024);
    ck_assert_int_lt(have, size);
    snprintf(rel, sizeof rel, "snapshots/%s/%s", commit, Q4);
    repo_path(path, sizeof path, TINY, rel);
    ck_assert_int_eq(file_size(path), -1);
    check_cache_valid();
    json_decref(ctl("/_reset"));
    return have;
}

/* Cancel keeps a valid partial download; the next run hashes it and asks for the rest. */
START_TEST(cancel_then_resume)
{
    int64_t have = cancel_part_way();
    struct dllm_hub_params p;
    struct seen s;
    params_for(&p, &s);
    struct dllm_hub_model *m = resolve_ok(TINY, &p);
    check_file(m, TINY, "main", Q4);
    ck_assert_int_gt(s.events[DLLM_HUB_PHASE_CHECK], 0);
    ck_assert_int_eq(dllm_hub_model_downloaded(m), Q4_SIZE - have);
    const char *ranges[2] = {0};
    ck_assert_int_eq(logged("/cdn/", ranges, 2), 1);
    char want[64];
    snprintf(want, sizeof want, "bytes=%lld-", (long long)have);
    ck_assert_str_eq(ranges[0], want);
    free((char *)ranges[0]);
    dllm_hub_model_free(m);
}
END_TEST

/* A 200 to a ranged request restarts cleanly; a 416 is handled by starting over. */
START_TEST(range_refused)
{
    const char *kinds[] = {"ignore_range", "r416"};
    for (int k = 0; k < 2; k++) {
        cancel_part_way();
        fault("cdn", kinds[k], 1, NULL);
        struct dllm_hub_params p;
        params_for(&p, NULL);
        struct dllm_hub_model *m = resolve_ok(TINY, &p);
        check_file(m, TINY, "main", Q4);
        const char *ranges[3] = {0};
        int n = logged("/cdn/", ranges, 3);
        ck_assert_int_eq(n, k == 0 ? 1 : 2);
        ck_assert_ptr_nonnull(ranges[0]);
        for (int i = 0; i < n && i < 3; i++)
            free((char *)ranges[i]);
        check_cache_valid();
        dllm_hub_model_free(m);
        teardown();
        setup();
    }
}
END_TEST

/* A stale partial file (other content, or longer than the file) is detected and replaced. */
START_TEST(stale_partial)
{
    char sha[65], commit[41], rel[128], blobs[4400], partial[4400];
    int64_t size;
    expected(TINY, "main", Q4, sha, &size, commit);
    repo_path(blobs, sizeof blobs, TINY, "blobs");
    snprintf(rel, sizeof rel, "blobs/%s.incomplete", sha);
    repo_path(partial, sizeof partial, TINY, rel);
    const int64_t lengths[] = {1000, Q4_SIZE + 5};
    for (int k = 0; k < 2; k++) {
        char cmd[4600];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", blobs);
        ck_assert_int_eq(system(cmd), 0);
        FILE *f = fopen(partial, "wb");
        for (int64_t i = 0; i < lengths[k]; i++)
            fputc((int)(i * 7 % 251), f);
        fclose(f);
        struct dllm_hub_params p;
        struct seen s;
        params_for(&p, &s);
        struct dllm_hub_model *m = resolve_ok(TINY, &p);
        check_file(m, TINY, "main", Q4);
        ck_assert_int_eq(s.events[DLLM_HUB_PHASE_RETRY], k == 0 ? 1 : 0);
        dllm_hub_model_free(m);
        check_cache_valid();
        teardown();
        setup();
    }
}
END_TEST

struct fault_case {
    const char *where, *kind, *code;
    int times;
    enum dllm_status want;
    const char *text; /* in the error */
};

static const struct fault_case fault_cases[] = {
    {"cdn", "drop", NULL, 2, DLLM_OK, NULL},
    {"cdn", "trickle", NULL, 1, DLLM_OK, NULL},
    {"cdn", "stall", NULL, 1, DLLM_OK, NULL},
    {"cdn", "500", NULL, 2, DLLM_OK, NULL},
    {"cdn", "429", NULL, 1, DLLM_OK, NULL},
    {"cdn", "badsha", NULL, -1, DLLM_ERR_FORMAT, "SHA-256 mismatch"},
    {"cdn", "badsize", NULL, -1, DLLM_ERR_FORMAT, "different size"},
    {"cdn", "drop", NULL, -1, DLLM_ERR_IO, "the next attempt resumes it"},
    {"cdn", "500", NULL, -1, DLLM_ERR_IO, "HTTP 500"},
    {"head", "500", NULL, 2, DLLM_OK, NULL},
    {"head", "401", NULL, 1, DLLM_ERR_IO, "set HF_TOKEN"},
    {"head", "403", NULL, 1, DLLM_ERR_IO, "gated"},
    {"head", "404", "EntryNotFound", 1, DLLM_ERR_MISSING, "does not exist"},
    {"api", "404", "RepoNotFound", 1, DLLM_ERR_MISSING, "no such repo"},
    {"api", "404", "RevisionNotFound", 1, DLLM_ERR_MISSING, "no revision 'main'"},
    {"api", "401", NULL, 1, DLLM_ERR_IO, "private or gated"},
    {"api", "429", NULL, 1, DLLM_OK, NULL},
    {"api", "500", NULL, -1, DLLM_ERR_IO, "HTTP 500"},
    {"tree", "500", NULL, 1, DLLM_OK, NULL},
    {"cdn", "hang", NULL, 1, DLLM_OK, NULL},
    {"cdn", "hang", NULL, -1, DLLM_ERR_IO, "stalled: no data for 1 s"},
    {"cdn", "longlen", NULL, 1, DLLM_ERR_FORMAT, "a different size than the 262144 bytes"},
    {"cdn", "loop", NULL, -1, DLLM_ERR_IO, "Maximum (10) redirects followed"},
    {"head", "loop", NULL, -1, DLLM_ERR_IO, "too many redirects for tiny.Q4_K_M.gguf"},
    {"head", "badurl", NULL, 1, DLLM_ERR_FORMAT, "malformed URL in a redirect (Location)"},
    {"tree", "badurl", NULL, 1, DLLM_ERR_FORMAT, "malformed URL in the hub's Link header"},
};

/*
 * Each fault either is survived or gives its error; either way the cache stays valid (nothing
 * unverified is linked) and, with the fault gone, the next run completes.
 */
START_TEST(faults)
{
    const struct fault_case *c = &fault_cases[_i];
    fault(c->where, c->kind, c->times, c->code);
    struct dllm_hub_params p;
    params_for(&p, NULL);
    enum dllm_status st;
    struct dllm_error err;
    struct dllm_hub_model *m = resolve(TINY, &p, &st, &err);
    ck_assert_msg(st == c->want, "%s %s: status %d: %s", c->where, c->kind, st, err.text);
    if (m)
        check_file(m, TINY, "main", Q4);
    else
        ck_assert_msg(strstr(err.text, c->text), "%s %s: '%s' lacks '%s'", c->where, c->kind,
                      err.text, c->text);
    dllm_hub_model_free(m);
    check_cache_valid();
    json_decref(ctl("/_reset"));
    m = resolve_ok(TINY, &p);
    check_file(m, TINY, "main", Q4);
    dllm_hub_model_free(m);
    check_cache_valid();
}
END_TEST

/* A full disk mid-download is a clear error, the partial stays valid and resumes. */
START_TEST(disk_full)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 100000;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    struct dllm_hub_params p;
    params_for(&p, NULL);
    enum dllm_status st;
    struct dllm_error err;
    ck_assert_ptr_null(resolve(TINY, &p, &st, &err));
    ck_assert_int_eq(st, DLLM_ERR_IO);
    ck_assert_msg(strstr(err.text, "is full"), "%s", err.text);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    check_cache_valid();
    struct dllm_hub_model *m = resolve_ok(TINY, &p);
    check_file(m, TINY, "main", Q4);
    const char *ranges[3] = {0};
    int n = logged("/cdn/", ranges, 3);
    ck_assert_int_eq(n, 2);
    ck_assert_ptr_nonnull(ranges[1]);
    free((char *)ranges[1]);
    dllm_hub_model_free(m);
}
END_TEST

/* Two processes pulling one file: the second waits for the first's lock, then uses its blob. */
START_TEST(concurrent_pulls)
{
    fault("cdn", "trickle", 1, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        struct dllm_hub_params p;
        params_for(&p, NULL);
        struct dllm_hub_model *m = NULL;
        _exit(dllm_hub_resolve(TINY, &p, &m, NULL) == DLLM_OK ? 0 : 1);
    }
    char sha[65], commit[41], rel[128], partial[4400];
    int64_t size;
    expected(TINY, "main", Q4, sha, &size, commit);
    snprintf(rel, sizeof rel, "blobs/%s.incomplete", sha);
    repo_path(partial, sizeof partial, TINY, rel);
    for (int i = 0; i < 250 && file_size(partial) <= 0; i++)
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    ck_assert_int_gt(file_size(partial), 0);
    struct dllm_hub_params p;
    struct seen s;
    params_for(&p, &s);
    struct dllm_hub_model *m = resolve_ok(TINY, &p);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_gt(s.events[DLLM_HUB_PHASE_WAIT], 0);
    ck_assert_int_eq(dllm_hub_model_downloaded(m), 0);
    ck_assert_int_eq(logged("/cdn/", NULL, 0), 1);
    check_file(m, TINY, "main", Q4);
    dllm_hub_model_free(m);
    check_cache_valid();
}
END_TEST

/* Where symlinks are off (HF_HUB_DISABLE_SYMLINKS), snapshots hold copies, verified too. */
START_TEST(copies_without_symlinks)
{
    setenv("HF_HUB_DISABLE_SYMLINKS", "1", 1);
    struct dllm_hub_params p;
    struct seen s;
    params_for(&p, &s);
    struct dllm_hub_model *m = resolve_ok(TINY ":Q8_0", &p);
    struct stat sb;
    ck_assert_int_eq(lstat(dllm_hub_model_path(m), &sb), 0);
    ck_assert(S_ISREG(sb.st_mode));
    char sha[65], commit[41], hex[65];
    int64_t size;
    expected(TINY, "main", "tiny.Q8_0.gguf", sha, &size, commit);
    hash_file(dllm_hub_model_path(m), false, hex);
    ck_assert_str_eq(hex, sha);
    dllm_hub_model_free(m);
    p.offline = true;
    m = resolve_ok(TINY ":Q8_0", &p);
    ck_assert_int_eq(s.events[DLLM_HUB_PHASE_CHECK], 0);
    dllm_hub_model_free(m);
    struct dllm_hub_list *list;
    ck_assert_int_eq(dllm_hub_list(&p, &list, NULL), DLLM_OK);
    ck_assert_int_eq(dllm_hub_list_count(list), 1);
    ck_assert_int_eq(dllm_hub_list_get(list, 0)->state, DLLM_HUB_STATE_VERIFIED);
    dllm_hub_list_free(list);
}
END_TEST

/* ---- tokens ----------------------------------------------------------------------------- */

/* The token reaches the hub's API and /resolve, never the CDN host. */
START_TEST(token_not_sent_to_cdn)
{
    setenv("HF_TOKEN", "hf_test_token_123", 1);
    struct dllm_hub_params p;
    params_for(&p, NULL);
    struct dllm_hub_model *m = resolve_ok("test/gated", &p);
    json_t *log = ctl("/_log");
    size_t i;
    json_t *e;
    int cdn = 0, hub = 0;
    json_array_foreach(log, i, e)
    {
        const char *path = json_string_value(json_object_get(e, "path"));
        const char *auth = json_string_value(json_object_get(e, "authorization"));
        const char *host = json_string_value(json_object_get(e, "host"));
        if (strncmp(path, "/cdn/", 5) == 0) {
            cdn++;
            ck_assert_msg(auth == NULL, "token sent to the CDN: %s", path);
            ck_assert_msg(strncmp(host, "localhost:", 10) == 0, "CDN host %s", host);
        } else if (strncmp(path, "/_", 2) != 0) {
            hub++;
            ck_assert_str_eq(auth, "Bearer hf_test_token_123");
            ck_assert_msg(strncmp(host, "127.0.0.1:", 10) == 0, "hub host %s", host);
        }
    }
    json_decref(log);
    ck_assert_int_ge(cdn, 1);
    ck_assert_int_ge(hub, 3);
    dllm_hub_model_free(m);
}
END_TEST

/* The token file under HF_HOME is used when HF_TOKEN is unset. */
START_TEST(token_file)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/hf", tmp);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/hf/token", tmp);
    FILE *f = fopen(path, "w");
    fputs("hf_test_token_123\n", f);
    fclose(f);
    struct dllm_hub_params p;
    params_for(&p, NULL);
    struct dllm_hub_model *m = resolve_ok("test/gated", &p);
    ck_assert_int_eq(file_size(dllm_hub_model_path(m)), 30000);
    dllm_hub_model_free(m);
}
END_TEST

/* Without a token, or with a wrong one, the error says what to do and never shows it. */
START_TEST(token_refused)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    enum dllm_status st;
    struct dllm_error err;
    ck_assert_ptr_null(resolve("test/gated", &p, &st, &err));
    ck_assert_int_eq(st, DLLM_ERR_IO);
    ck_assert_msg(strstr(err.text, "401") && strstr(err.text, "HF_TOKEN") &&
                      strstr(err.text, "licence"),
                  "%s", err.text);
    setenv("HF_TOKEN", "hf_wrong_secret_42", 1);
    params_for(&p, NULL);
    ck_assert_ptr_null(resolve("test/gated", &p, &st, &err));
    ck_assert_int_eq(st, DLLM_ERR_IO);
    ck_assert_msg(strstr(err.text, "refused the token"), "%s", err.text);
    ck_assert_ptr_null(strstr(err.text, "hf_wrong_secret_42"));
    setenv("HF_TOKEN", "hf_bad\ntoken", 1);
    params_for(&p, NULL);
    ck_assert_ptr_null(resolve("test/gated", &p, &st, &err));
    ck_assert_int_eq(st, DLLM_ERR_ARG);
    ck_assert_ptr_null(strstr(err.text, "hf_bad"));
}
END_TEST

/* ---- offline and the cache -------------------------------------------------------------- */

/* Offline (by flag or HF_HUB_OFFLINE) the cache answers without any request. */
START_TEST(offline_from_cache)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    struct dllm_hub_model *m = resolve_ok(TINY, &p);
    char want[4400];
    snprintf(want, sizeof want, "%s", dllm_hub_model_path(m));
    dllm_hub_model_free(m);
    json_decref(ctl("/_reset"));
    p.offline = true;
    p.endpoint = "http://127.0.0.1:9";
    m = resolve_ok(TINY, &p);
    ck_assert_str_eq(dllm_hub_model_path(m), want);
    dllm_hub_model_free(m);
    setenv("HF_HUB_OFFLINE", "1", 1);
    params_for(&p, NULL);
    ck_assert(p.offline);
    m = resolve_ok(TINY ":Q4_K_M", &p);
    ck_assert_str_eq(dllm_hub_model_path(m), want);
    dllm_hub_model_free(m);
    ck_assert_int_eq(logged("/", NULL, 0), 1); /* the /_log request itself */

    /* What is not cached fails, saying so without naming any command or flag. */
    enum dllm_status st;
    struct dllm_error err;
    ck_assert_ptr_null(resolve(TINY ":Q8_0", &p, &st, &err));
    ck_assert_int_eq(st, DLLM_ERR_MISSING);
    ck_assert_msg(strstr(err.text, "tiny.Q8_0.gguf of " TINY " is not in the cache") &&
                      strstr(err.text, "(offline)") && !strstr(err.text, "dllm pull"),
                  "%s", err.text);
    ck_assert_ptr_null(resolve("test/q8-only", &p, &st, &err));
    ck_assert_int_eq(st, DLLM_ERR_MISSING);
    ck_assert_msg(strstr(err.text, "test/q8-only is not in the cache") &&
                      !strstr(err.text, "dllm pull"),
                  "%s", err.text);
}
END_TEST

/* Online but the hub is unreachable: the cached snapshot is used, with a warning. */
START_TEST(unreachable_uses_cache)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    struct dllm_hub_model *m = resolve_ok(TINY, &p);
    dllm_hub_model_free(m);
    p.endpoint = "http://127.0.0.1:1";
    m = resolve_ok(TINY, &p);
    ck_assert_ptr_nonnull(dllm_hub_model_warning(m));
    ck_assert_msg(strstr(dllm_hub_model_warning(m), "cannot be reached"), "%s",
                  dllm_hub_model_warning(m));
    dllm_hub_model_free(m);
    /* Without a cached copy it is an error about the network. */
    enum dllm_status st;
    struct dllm_error err;
    ck_assert_ptr_null(resolve("test/q8-only", &p, &st, &err));
    ck_assert_int_eq(st, DLLM_ERR_IO);
    ck_assert_msg(strstr(err.text, "cannot reach"), "%s", err.text);
}
END_TEST

/* An endpoint that is not an http(s) URL libcurl can parse is the caller's error, named. */
START_TEST(endpoint_refused)
{
    static const struct {
        const char *endpoint, *says;
    } bad[] = {
        {"ftp://127.0.0.1:1", "is not an http:// or https:// URL"},
        {"http://[::1", "is not a usable URL"},
        {"http://127.0.0.1:99999", "is not a usable URL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct dllm_hub_params p;
        params_for(&p, NULL);
        p.endpoint = bad[i].endpoint;
        enum dllm_status st;
        struct dllm_error err;
        ck_assert_ptr_null(resolve("test/other", &p, &st, &err));
        ck_assert_int_eq(st, DLLM_ERR_ARG);
        ck_assert_msg(strstr(err.text, bad[i].says) && strstr(err.text, "HF_ENDPOINT"), "%s: %s",
                      bad[i].endpoint, err.text);
    }
}
END_TEST

/* A cached file that changed is hashed again; corrupt, it is fetched again (online). */
START_TEST(corrupt_cache)
{
    struct dllm_hub_params p;
    struct seen s;
    params_for(&p, &s);
    struct dllm_hub_model *m = resolve_ok(TINY, &p);
    char path[4400];
    snprintf(path, sizeof path, "%s", dllm_hub_model_path(m));
    dllm_hub_model_free(m);
    /* Touched, unchanged: checked once more, still fine. */
    struct utimbuf t = {1000000000, 1000000000};
    ck_assert_int_eq(utime(path, &t), 0);
    m = resolve_ok(TINY, &p);
    ck_assert_int_gt(s.events[DLLM_HUB_PHASE_CHECK], 0);
    ck_assert_ptr_null(dllm_hub_model_warning(m));
    dllm_hub_model_free(m);
    /* One byte changed: offline it is an error and the copy goes; online it is replaced. */
    FILE *f = fopen(path, "r+b");
    fseek(f, 1000, SEEK_SET);
    fputc('!', f);
    fclose(f);
    p.offline = true;
    enum dllm_status st;
    struct dllm_error err;
    ck_assert_ptr_null(resolve(TINY, &p, &st, &err));
    ck_assert_int_eq(st, DLLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "corrupt and is deleted") && !strstr(err.text, "dllm pull"),
                  "%s", err.text);
    ck_assert_int_eq(file_size(path), -1);
    check_cache_valid();
    p.offline = false;
    m = resolve_ok(TINY, &p);
    check_file(m, TINY, "main", Q4);
    dllm_hub_model_free(m);
    f = fopen(path, "r+b");
    fseek(f, 2000, SEEK_SET);
    fputc('!', f);
    fclose(f);
    m = resolve_ok(TINY, &p);
    ck_assert_msg(dllm_hub_model_warning(m) && strstr(dllm_hub_model_warning(m), "corrupt"),
                  "no warning");
    check_file(m, TINY, "main", Q4);
    dllm_hub_model_free(m);
    check_cache_valid();
}
END_TEST

/* Two revisions share one blob; a branch ref is written per revision. */
START_TEST(revisions_share_blobs)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    struct dllm_hub_model *a = resolve_ok(TINY, &p);
    p.revision = "v1";
    struct dllm_hub_model *b = resolve_ok(TINY, &p);
    ck_assert_str_ne(dllm_hub_model_commit(a), dllm_hub_model_commit(b));
    ck_assert_int_eq(logged("/cdn/", NULL, 0), 1);
    char ra[4096], rb[4096];
    ck_assert_ptr_nonnull(realpath(dllm_hub_model_path(a), ra));
    ck_assert_ptr_nonnull(realpath(dllm_hub_model_path(b), rb));
    ck_assert_str_eq(ra, rb);
    char path[4400];
    repo_path(path, sizeof path, TINY, "refs/v1");
    ck_assert_int_eq(file_size(path), 40);
    /* A commit as the revision needs no revision request. */
    json_decref(ctl("/_reset"));
    p.revision = dllm_hub_model_commit(a);
    struct dllm_hub_model *c = resolve_ok(TINY, &p);
    ck_assert_int_eq(logged("/api/", NULL, 0), 0);
    dllm_hub_model_free(c);
    dllm_hub_model_free(a);
    dllm_hub_model_free(b);
    check_cache_valid();
}
END_TEST

/* Listing and removing cached models; blobs still used by another snapshot stay. */
START_TEST(list_and_remove)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    dllm_hub_model_free(resolve_ok(TINY, &p));
    dllm_hub_model_free(resolve_ok(TINY ":Q8_0", &p));
    p.revision = "v1";
    dllm_hub_model_free(resolve_ok(TINY, &p));
    p.revision = "main";
    struct dllm_hub_list *list;
    ck_assert_int_eq(dllm_hub_list(&p, &list, NULL), DLLM_OK);
    ck_assert_str_eq(dllm_hub_list_cache_dir(list), root);
    ck_assert_int_eq(dllm_hub_list_count(list), 3);
    for (int64_t i = 0; i < 3; i++) {
        const struct dllm_hub_entry *e = dllm_hub_list_get(list, i);
        ck_assert_str_eq(e->repo, TINY);
        ck_assert_int_eq(e->state, DLLM_HUB_STATE_VERIFIED);
        ck_assert_int_eq(e->size, strcmp(e->file, Q4) == 0 ? Q4_SIZE : 128 * 1024);
    }
    ck_assert_str_eq(dllm_hub_list_get(list, 2)->file, "tiny.Q8_0.gguf");
    dllm_hub_list_free(list);

    int64_t files, bytes;
    ck_assert_int_eq(dllm_hub_remove(TINY ":Q8_0", &p, &files, &bytes, NULL), DLLM_OK);
    ck_assert_int_eq(files, 1);
    ck_assert_int_eq(bytes, 128 * 1024);
    ck_assert_int_eq(dllm_hub_list(&p, &list, NULL), DLLM_OK);
    ck_assert_int_eq(dllm_hub_list_count(list), 2);
    dllm_hub_list_free(list);
    check_cache_valid();
    struct dllm_error err;
    ck_assert_int_eq(dllm_hub_remove(TINY ":Q8_0", &p, &files, &bytes, &err), DLLM_ERR_MISSING);
    ck_assert_int_eq(dllm_hub_remove(TINY ":Q4_K_M", &p, &files, &bytes, NULL), DLLM_OK);
    ck_assert_int_eq(files, 2);
    ck_assert_int_eq(bytes, Q4_SIZE);
    char path[4400];
    repo_path(path, sizeof path, TINY, "");
    ck_assert_int_eq(file_size(path), -1);
    ck_assert_int_eq(dllm_hub_list(&p, &list, NULL), DLLM_OK);
    ck_assert_int_eq(dllm_hub_list_count(list), 0);
    dllm_hub_list_free(list);
    ck_assert_int_eq(dllm_hub_remove(TINY, &p, &files, &bytes, &err), DLLM_ERR_MISSING);
    ck_assert_msg(strstr(err.text, "not in the cache"), "%s", err.text);
    ck_assert_int_eq(dllm_hub_remove("./x.gguf", &p, &files, &bytes, &err), DLLM_ERR_ARG);

    /* Without a tag the whole repo goes, partial downloads too. */
    dllm_hub_model_free(resolve_ok("test/split-GGUF", &p));
    ck_assert_int_eq(dllm_hub_remove("test/split-GGUF", &p, &files, &bytes, NULL), DLLM_OK);
    ck_assert_int_eq(files, 3);
    ck_assert_int_eq(bytes, 150000);
}
END_TEST

/* A local path is returned as it is, without the network. */
START_TEST(local_path)
{
    struct dllm_hub_params p;
    params_for(&p, NULL);
    p.endpoint = "http://127.0.0.1:9";
    struct dllm_hub_model *m = resolve_ok("./some/model.gguf", &p);
    ck_assert_str_eq(dllm_hub_model_path(m), "./some/model.gguf");
    ck_assert_str_eq(dllm_hub_model_repo(m), "");
    ck_assert_int_eq(dllm_hub_model_n_files(m), 1);
    dllm_hub_model_free(m);
}
END_TEST

static Suite *hub_suite(void)
{
    Suite *s = suite_create("hub");
    TCase *tc = tcase_create("refs");
    tcase_add_loop_test(tc, ref_parse, 0, sizeof ref_cases / sizeof ref_cases[0]);
    tcase_add_test(tc, ref_home);
    tcase_add_test(tc, params_env);
    tcase_add_loop_test(tc, path_valid, 0, sizeof path_cases / sizeof path_cases[0]);
    tcase_add_test(tc, path_long);
    tcase_add_loop_test(tc, select_files, 0, sizeof select_cases / sizeof select_cases[0]);
    tcase_add_test(tc, select_lists_files);
    suite_add_tcase(s, tc);

    tc = tcase_create("download");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, download_default);
    tcase_add_loop_test(tc, download_pick, 0, sizeof pick_cases / sizeof pick_cases[0]);
    tcase_add_test(tc, download_renamed);
    tcase_add_test(tc, download_no_traversal);
    tcase_add_test(tc, links_out_of_cache);
    tcase_add_loop_test(tc, huge_listing, 0, 2);
    tcase_add_test(tc, download_split);
    tcase_add_test(tc, local_path);
    suite_add_tcase(s, tc);

    tc = tcase_create("faults");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, resume_after_drop);
    tcase_add_test(tc, cancel_then_resume);
    tcase_add_test(tc, range_refused);
    tcase_add_test(tc, stale_partial);
    tcase_add_loop_test(tc, faults, 0, sizeof fault_cases / sizeof fault_cases[0]);
    tcase_add_test(tc, disk_full);
    tcase_add_test(tc, concurrent_pulls);
    suite_add_tcase(s, tc);

    tc = tcase_create("auth");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, token_not_sent_to_cdn);
    tcase_add_test(tc, token_file);
    tcase_add_test(tc, token_refused);
    suite_add_tcase(s, tc);

    tc = tcase_create("cache");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, offline_from_cache);
    tcase_add_test(tc, unreachable_uses_cache);
    tcase_add_test(tc, endpoint_refused);
    tcase_add_test(tc, corrupt_cache);
    tcase_add_test(tc, revisions_share_blobs);
    tcase_add_test(tc, list_and_remove);
    tcase_add_test(tc, copies_without_symlinks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char *dir = test_tmpdir();
    if (!start_hub(dir)) {
        printf("SKIP: the fake hub did not start: it needs python3 and tests/fake_hub.py "
               "(DLLM_TESTS_SRC names the tests folder)\n");
        if (hub_pid > 0)
            kill(hub_pid, SIGTERM);
        const char *ci = getenv("CI");
        return ci && strcmp(ci, "true") == 0 ? 1 : 77;
    }
    int status = test_run_suite(hub_suite());
    kill(hub_pid, SIGTERM);
    waitpid(hub_pid, NULL, 0);
    char port[4200];
    snprintf(port, sizeof port, "%s/port", dir);
    unlink(port);
    rmdir(dir);
    free(dir);
    curl_global_cleanup();
    return status;
}
