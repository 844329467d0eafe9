/*
 * Content hashes comparable with a hub etag: SHA-256 for files in LFS, the git blob SHA-1
 * ("blob <size>\0" then the content) for the others.
 */
#ifndef DLLM_HUB_HASH_H
#define DLLM_HUB_HASH_H

#include "dllm-hub.h"
#include "util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hashing a file's content so that the result compares with its etag. */
struct dllm_hubhash {
    void *ctx;    /* EVP_MD_CTX */
    bool git;     /* git blob SHA-1 rather than SHA-256 */
    int64_t size; /* the content's size, which the git blob header holds */
};

/* Starts a hash comparable with etag (40 hex digits: git blob of size bytes; else SHA-256). */
enum dllm_status dllm_hubhash_init(struct dllm_hubhash *h, const char *etag, int64_t size,
                                   struct dllm_error *err);
void dllm_hubhash_update(struct dllm_hubhash *h, const void *data, size_t n);
/* Finishes the hash into hex (65 bytes); h can be started again afterwards. */
void dllm_hubhash_final(struct dllm_hubhash *h, char hex[65]);
void dllm_hubhash_fini(struct dllm_hubhash *h);

/*
 * Feeds the first limit bytes of the file at path into h (all of it when limit < 0),
 * calling tick every few MiB. DLLM_ERR_CANCELLED when tick says so.
 */
enum dllm_status dllm_hubhash_file(struct dllm_hubhash *h, const char *path, int64_t limit,
                                   dllm_hub_tick tick, void *user, struct dllm_error *err);

#endif
