/*
 * The hub functions' params: dllm_hub_params_init's fixed defaults, and
 * dllm_hub_params_from_env, the one place libdllm-hub reads the environment, with
 * the variables and meanings of huggingface_hub (its constants.py and the "Environment
 * variables" page of its documentation).
 */
#include "config.h"

#include "dllm-hub.h"

#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void dllm_hub_params_init(struct dllm_hub_params *params)
{
    *params = (struct dllm_hub_params){
        .revision = "main",
        .max_retries = 5,
        .retry_base_ms = 1000,
        .stall_seconds = 30,
        .connect_timeout_s = 10,
    };
}

/* v when it is set and not empty, else NULL. */
static const char *nonempty(const char *v)
{
    return v && *v ? v : NULL;
}

/* Whether v is a true value as huggingface_hub's _is_true reads it: 1, ON, YES or TRUE, in any
 * case. */
static bool is_true(const char *v)
{
    return v && (strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0 || strcasecmp(v, "yes") == 0 ||
                 strcasecmp(v, "true") == 0);
}

/* Formats into buf (n bytes); DLLM_ERR_ARG naming what when it does not fit. */
static enum dllm_status put(char *buf, size_t n, const char *what, struct dllm_error *err,
                            const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static enum dllm_status put(char *buf, size_t n, const char *what, struct dllm_error *err,
                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= n)
        return dllm_error_set(err, DLLM_ERR_ARG, "%s is too long (more than %zu bytes)", what,
                              n - 1);
    return DLLM_OK;
}

/* Reads the token file at path into buf (n bytes); a missing or unreadable file gives "". */
static void read_token_file(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(buf, 1, n - 1, f) : 0;
    buf[got] = 0;
    if (f)
        fclose(f);
}

enum dllm_status dllm_hub_params_from_env(struct dllm_hub_params *p, struct dllm_hub_env *env_out,
                                          struct dllm_error *err)
{
    struct dllm_hub_env *e = env_out;
    const char *v, *hf_home = nonempty(getenv("HF_HOME"));
    const char *xdg = nonempty(getenv("XDG_CACHE_HOME"));
    enum dllm_status st = DLLM_OK;
    *e = (struct dllm_hub_env){0};
    if ((v = nonempty(getenv("HOME")))) {
        if ((st = put(e->home, sizeof e->home, "HOME", err, "%s", v)) != DLLM_OK)
            return st;
        p->home = e->home;
    }
    if ((v = nonempty(getenv("HF_ENDPOINT")))) {
        if ((st = put(e->endpoint, sizeof e->endpoint, "HF_ENDPOINT", err, "%s", v)) != DLLM_OK)
            return st;
        p->endpoint = e->endpoint;
    }
    /* The cache: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, $HF_HOME/hub,
     * $XDG_CACHE_HOME/huggingface/hub; else the params' default under the home folder. */
    if ((v = nonempty(getenv("HF_HUB_CACHE"))) || (v = nonempty(getenv("HUGGINGFACE_HUB_CACHE"))))
        st = put(e->cache_dir, sizeof e->cache_dir, "the cache folder", err, "%s", v);
    else if (hf_home)
        st = put(e->cache_dir, sizeof e->cache_dir, "the cache folder", err, "%s/hub", hf_home);
    else if (xdg)
        st = put(e->cache_dir, sizeof e->cache_dir, "the cache folder", err, "%s/huggingface/hub",
                 xdg);
    if (st != DLLM_OK)
        return st;
    if (e->cache_dir[0])
        p->cache_dir = e->cache_dir;
    if (xdg) {
        if ((st = put(e->verified_path, sizeof e->verified_path, "the verified memo's path", err,
                      "%s/dllm/verified.json", xdg)) != DLLM_OK)
            return st;
        p->verified_path = e->verified_path;
    }
    /* The token: HF_TOKEN, HUGGING_FACE_HUB_TOKEN, else the file $HF_TOKEN_PATH, else
     * $HF_HOME/token, $XDG_CACHE_HOME/huggingface/token, ~/.cache/huggingface/token. */
    if ((v = nonempty(getenv("HF_TOKEN"))) || (v = nonempty(getenv("HUGGING_FACE_HUB_TOKEN")))) {
        if ((st = put(e->token, sizeof e->token, "the access token", err, "%s", v)) != DLLM_OK)
            return st;
    } else {
        char path[DLLM_HUB_PATH_MAX];
        if ((v = nonempty(getenv("HF_TOKEN_PATH"))))
            st = put(path, sizeof path, "HF_TOKEN_PATH", err, "%s", v);
        else if (hf_home)
            st = put(path, sizeof path, "the token file's path", err, "%s/token", hf_home);
        else if (xdg)
            st = put(path, sizeof path, "the token file's path", err, "%s/huggingface/token", xdg);
        else
            st = put(path, sizeof path, "the token file's path", err, "%s/.cache/huggingface/token",
                     dllm_hub_home(p->home));
        if (st != DLLM_OK)
            return st;
        read_token_file(path, e->token, sizeof e->token);
    }
    if (e->token[0])
        p->token = e->token;
    if (is_true(getenv("HF_HUB_OFFLINE")) || is_true(getenv("TRANSFORMERS_OFFLINE")))
        p->offline = true;
    if ((v = nonempty(getenv("HF_HUB_DISABLE_SYMLINKS"))) && strcmp(v, "0") != 0)
        p->no_symlinks = true;
    return DLLM_OK;
}
