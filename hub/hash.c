/*
 * Content hashes comparable with a hub etag: SHA-256 for files in LFS, the git blob SHA-1
 * ("blob <size>\0" then the content) for the others, with OpenSSL's libcrypto.
 */
#include "config.h"

#include "hash.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HASH_CHUNK (1 << 20) /* bytes read at a time when hashing */

/* Starts (or restarts) the digest, with the git blob header when hashing as git does. */
static void hash_start(struct dllm_hubhash *h, int64_t size)
{
    EVP_DigestInit_ex(h->ctx, h->git ? EVP_sha1() : EVP_sha256(), NULL);
    if (h->git) {
        char head[32];
        int n = snprintf(head, sizeof head, "blob %lld", (long long)size);
        EVP_DigestUpdate(h->ctx, head, (size_t)n + 1);
    }
}

enum dllm_status dllm_hubhash_init(struct dllm_hubhash *h, const char *etag, int64_t size,
                                   struct dllm_error *err)
{
    h->git = strlen(etag) == 40;
    h->size = size;
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx)
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a hash");
    hash_start(h, size);
    return DLLM_OK;
}

void dllm_hubhash_update(struct dllm_hubhash *h, const void *data, size_t n)
{
    EVP_DigestUpdate(h->ctx, data, n);
}

void dllm_hubhash_final(struct dllm_hubhash *h, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(h->ctx, md, &n);
    for (unsigned int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    hex[2 * n] = 0;
    hash_start(h, h->size);
}

void dllm_hubhash_fini(struct dllm_hubhash *h)
{
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
}

enum dllm_status dllm_hubhash_file(struct dllm_hubhash *h, const char *path, int64_t limit,
                                   dllm_hub_tick tick, void *user, struct dllm_error *err)
{
    enum dllm_status st = DLLM_OK;
    char *buf = malloc(HASH_CHUNK);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!buf || fd < 0) {
        st = buf ? dllm_error_set(err, DLLM_ERR_IO, "cannot open %s: %s", path, strerror(errno))
                 : dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    int64_t done = 0;
    while (limit < 0 || done < limit) {
        size_t want = HASH_CHUNK;
        if (limit >= 0 && (int64_t)want > limit - done)
            want = (size_t)(limit - done);
        ssize_t n = read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            st = dllm_error_set(err, DLLM_ERR_IO, "cannot read %s: %s", path, strerror(errno));
            goto fail;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(h->ctx, buf, (size_t)n);
        done += n;
        if (tick && done % (16 * HASH_CHUNK) < n && !tick(user, done)) {
            st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
            goto fail;
        }
    }
    if (tick && !tick(user, done))
        st = dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled");
fail:
    if (fd >= 0)
        close(fd);
    free(buf);
    return st;
}
