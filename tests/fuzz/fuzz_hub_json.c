/*
 * libFuzzer target: the JSON answers of the hub's API, parsed as dllm_hubhttp_api_get does and
 * read as the answer about a revision (model info: its commit) and as a page of a tree
 * listing; a listing then goes through the choice of a model's files by tag. Error answers'
 * bodies are not read by dllm (the X-Error-Code header is: fuzz_hub_http).
 */
#include "fuzz.h"
#include "ref.h"
#include "session.h"
#include "util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *doc = json_loadb((const char *)data, size, 0, NULL);
    if (!doc)
        return 0;
    char commit[DLLM_HUB_COMMIT_LEN + 1];
    if (dllm_hubfetch_revision_commit(doc, "org/name revision main", commit, NULL) == DLLM_OK) {
        fuzz_accepted++;
        if (!dllm_hub_is_hex(commit, DLLM_HUB_COMMIT_LEN))
            abort();
    }
    struct dllm_hub_listing l = {0};
    if (dllm_hubfetch_tree_page("org/name", doc, &l, NULL) == DLLM_OK && l.n > 0) {
        fuzz_accepted++;
        dllm_hub_listing_sort(&l);
        size_t *idx = malloc(l.n * sizeof *idx), n;
        if (!idx)
            abort();
        static const char *const tags[] = {"", "Q8_0", "model-q4_k_m.gguf"};
        for (size_t t = 0; t < 3; t++)
            if (dllm_hub_select(&l, "org/name", tags[t], t == 2, idx, &n, NULL) == DLLM_OK)
                for (size_t k = 0; k < n; k++)
                    if (idx[k] >= l.n || !dllm_hub_path_valid(l.files[idx[k]].path))
                        abort();
        for (size_t i = 0; i < l.n; i++)
            if (dllm_hub_listing_find(&l, l.files[i].path) == NULL || l.files[i].size < 0)
                abort();
        free(idx);
    }
    dllm_hub_listing_fini(&l);
    json_decref(doc);
    return 0;
}
