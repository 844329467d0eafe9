/*
 * libFuzzer target: the files dllm reads back from its caches, which other programs, crashes
 * and full disks may have written: refs/<revision> (a commit), trees/<commit>.json (a kept
 * listing) and verified.json (the verified memo). The first byte chooses the file, the rest is
 * its content. In verified.json, "@BLOB@" stands for the real path of a file of the target's
 * (5 bytes, modified at 1700000000 s), so that a seed can name a file the memo then vouches
 * for; a memo that loads must keep what is added to it through a save and a reload.
 */
#define _GNU_SOURCE /* memmem */
#include "cache.h"
#include "fuzz.h"
#include "memo.h"
#include "util.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COMMIT "0123456789abcdef0123456789abcdef01234567"

static char root[4096]; /* a temporary cache root, removed at exit */
static char blob[4200]; /* the file "@BLOB@" names */
static struct dllm_hubcache cache;

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void remove_root(void)
{
    dllm_hubcache_fini(&cache);
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/dllm-fuzz-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root) || dllm_hubcache_init(&cache, root, "org/name", NULL) != DLLM_OK)
        abort();
    atexit(remove_root);
    char *refs = dllm_hub_fmt("%s/refs", cache.dir), *trees = dllm_hub_fmt("%s/trees", cache.dir);
    if (!refs || !trees || dllm_hubcache_mkdirs(refs, NULL) != DLLM_OK ||
        dllm_hubcache_mkdirs(trees, NULL) != DLLM_OK)
        abort();
    free(refs);
    free(trees);
    snprintf(blob, sizeof blob, "%s/blob", root);
    int fd = open(blob, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    struct timespec t[2] = {{1700000000, 0}, {1700000000, 0}};
    if (fd < 0 || write(fd, "hello", 5) != 5 || futimens(fd, t) != 0 || close(fd) != 0)
        abort();
    return 0;
}

/* Writes n bytes to path, replacing "@BLOB@" with the blob's path when expand is set. */
static void put_file(const char *path, const uint8_t *data, size_t n, bool expand)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    while (n > 0) {
        const uint8_t *at = expand ? memmem(data, n, "@BLOB@", 6) : NULL;
        size_t k = at ? (size_t)(at - data) : n;
        fwrite(data, 1, k, f);
        if (at) {
            fputs(blob, f);
            k += 6;
        }
        data += k;
        n -= k;
    }
    if (fclose(f) != 0)
        abort();
}

/* verified.json: a loaded memo keeps an entry through a save and a reload. */
static void memo(const uint8_t *data, size_t size)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/verified.json", root);
    put_file(path, data, size, true);
    struct dllm_hub_params p;
    dllm_hub_params_init(&p);
    p.verified_path = path;
    struct dllm_hubmemo *m = dllm_hubmemo_load(&p);
    if (!m)
        return;
    if (dllm_hubmemo_check(m, blob, "abc"))
        fuzz_accepted++;
    dllm_hubmemo_prune(m);
    dllm_hubmemo_add(m, blob, "def");
    if (dllm_hubmemo_save(m, NULL) != DLLM_OK)
        abort();
    dllm_hubmemo_free(m);
    m = dllm_hubmemo_load(&p);
    if (!m || !dllm_hubmemo_check(m, blob, "def"))
        abort();
    dllm_hubmemo_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char path[8192];
    char commit[DLLM_HUB_COMMIT_LEN + 1];
    struct dllm_hub_listing l;
    switch (data[0] % 3) {
    case 0:
        snprintf(path, sizeof path, "%s/refs/main", cache.dir);
        put_file(path, data + 1, size - 1, false);
        if (dllm_hubcache_read_ref(&cache, "main", commit, NULL) == DLLM_OK) {
            fuzz_accepted++;
            if (!dllm_hub_is_hex(commit, DLLM_HUB_COMMIT_LEN))
                abort();
        }
        break;
    case 1:
        snprintf(path, sizeof path, "%s/trees/%s.json", cache.dir, COMMIT);
        put_file(path, data + 1, size - 1, false);
        if (dllm_hubcache_read_tree(&cache, COMMIT, &l, NULL) == DLLM_OK) {
            fuzz_accepted++;
            for (size_t i = 0; i < l.n; i++)
                if (!dllm_hub_path_valid(l.files[i].path) || l.files[i].size < 0)
                    abort();
            dllm_hub_listing_fini(&l);
        }
        break;
    default: memo(data + 1, size - 1);
    }
    return 0;
}
