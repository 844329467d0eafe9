/*
 * Resolving a model reference to verified local files (dllm_hub_resolve) and the resolved
 * model's accessors; the download session that does the work is session.c.
 */
#include "config.h"

#include "dllm-hub.h"

#include "listing.h"
#include "ref.h"
#include "session.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct dllm_hub_model {
    char **paths;
    int n;
    bool split;
    char *repo, *file, *commit, *warning;
    int64_t size, downloaded;
};

void dllm_hub_model_free(struct dllm_hub_model *model)
{
    if (!model)
        return;
    for (int i = 0; i < model->n; i++)
        free(model->paths[i]);
    free(model->paths);
    free(model->repo);
    free(model->file);
    free(model->commit);
    free(model->warning);
    free(model);
}

/* A model of one local path. */
static enum dllm_status local_model(const char *path, struct dllm_hub_model **out,
                                    struct dllm_error *err)
{
    struct dllm_hub_model *m = calloc(1, sizeof *m);
    if (m) {
        m->paths = calloc(1, sizeof *m->paths);
        m->repo = strdup("");
        m->file = strdup("");
        m->commit = strdup("");
    }
    if (!m || !m->paths || !m->repo || !m->file || !m->commit || !(m->paths[0] = strdup(path))) {
        dllm_hub_model_free(m);
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
    }
    m->n = 1;
    struct stat sb;
    m->size = stat(path, &sb) == 0 ? sb.st_size : 0;
    *out = m;
    return DLLM_OK;
}

enum dllm_status dllm_hub_resolve(const char *ref, const struct dllm_hub_params *params,
                                  struct dllm_hub_model **out, struct dllm_error *err)
{
    struct dllm_hub_params defaults;
    if (!params) {
        dllm_hub_params_init(&defaults);
        params = &defaults;
    }
    *out = NULL;
    struct dllm_hub_ref r;
    enum dllm_status st = dllm_hub_ref_parse(ref, params, &r, err);
    if (st != DLLM_OK)
        return st;
    if (r.local)
        return local_model(r.path, out, err);
    struct dllm_hubfetch *hub = NULL;
    struct dllm_hub_listing l = {0};
    struct dllm_hub_model *m = NULL;
    size_t *idx = NULL, n_idx = 0;
    char commit[DLLM_HUB_COMMIT_LEN + 1];
    if ((st = dllm_hubfetch_open(r.repo, params, &hub, err)) != DLLM_OK)
        goto fail;
    if ((st = dllm_hubfetch_listing(hub, commit, &l, err)) != DLLM_OK)
        goto fail;
    idx = malloc((l.n ? l.n : 1) * sizeof *idx);
    m = calloc(1, sizeof *m);
    if (!idx || !m) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = dllm_hub_select(&l, r.repo, r.tag, r.tag_is_file, idx, &n_idx, err)) != DLLM_OK)
        goto fail;
    m->paths = calloc(n_idx, sizeof *m->paths);
    m->repo = strdup(r.repo);
    m->file = strdup(l.files[idx[0]].path);
    m->commit = strdup(commit);
    if (!m->paths || !m->repo || !m->file || !m->commit) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    m->split = n_idx > 1;
    for (size_t i = 0; i < n_idx; i++) {
        st = dllm_hubfetch_file(hub, &l.files[idx[i]], (int)i, (int)n_idx, commit, &m->paths[i],
                                err);
        if (st != DLLM_OK)
            goto fail;
        m->n++;
        m->size += l.files[idx[i]].size;
    }
    if ((st = dllm_hubfetch_finish(hub, commit, err)) != DLLM_OK)
        goto fail;
    m->downloaded = dllm_hubfetch_downloaded(hub);
    m->warning = dllm_hubfetch_take_warning(hub);
fail:
    if (st != DLLM_OK && st != DLLM_ERR_CANCELLED && err && !strstr(err->text, r.repo))
        dllm_error_prefix(err, "%s", ref);
    if (st == DLLM_OK) {
        *out = m;
        m = NULL;
    }
    dllm_hub_model_free(m);
    free(idx);
    dllm_hub_listing_fini(&l);
    dllm_hubfetch_close(hub);
    return st;
}

const char *dllm_hub_model_path(const struct dllm_hub_model *model)
{
    return model->paths[0];
}

int dllm_hub_model_n_files(const struct dllm_hub_model *model)
{
    return model->n;
}

const char *dllm_hub_model_file_path(const struct dllm_hub_model *model, int i)
{
    return i >= 0 && i < model->n ? model->paths[i] : NULL;
}

bool dllm_hub_model_split(const struct dllm_hub_model *model)
{
    return model->split;
}

const char *dllm_hub_model_repo(const struct dllm_hub_model *model)
{
    return model->repo;
}

const char *dllm_hub_model_file(const struct dllm_hub_model *model)
{
    return model->file;
}

const char *dllm_hub_model_commit(const struct dllm_hub_model *model)
{
    return model->commit;
}

int64_t dllm_hub_model_size(const struct dllm_hub_model *model)
{
    return model->size;
}

int64_t dllm_hub_model_downloaded(const struct dllm_hub_model *model)
{
    return model->downloaded;
}

const char *dllm_hub_model_warning(const struct dllm_hub_model *model)
{
    return model->warning;
}
