/*
 * libdllm-hub: models from the Hugging Face hub, in the cache huggingface_hub and llama.cpp
 * share. A library of its own beside libdllm (which it uses for its status and error types):
 * it links libcurl, OpenSSL's libcrypto and jansson, libdllm does not.
 */
#ifndef DLLM_DLLM_HUB_H
#define DLLM_DLLM_HUB_H

#include "dllm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- models from the Hugging Face hub --------------------------------------------------- */

/*
 * A model reference, as programs take it with -m:
 *   PATH                 a local file: anything that exists, or starts with '/', './', '../'
 *                        or '~'
 *   org/repo             the repo's Q4_K_M GGUF, else its Q8_0, else its first model GGUF
 *   org/repo:QUANT       the first GGUF whose path has QUANT followed by '.' or '-', ignoring
 *                        case (llama.cpp's rule): Q5_K_M, q8_0, ...
 *   org/repo:FILE.gguf   that file of the repo (a tag ending in .gguf names a file)
 * Hub files are downloaded into the cache huggingface_hub and llama.cpp share, verified
 * against the hub's SHA-256 and linked into snapshots/<commit>/. A split GGUF
 * (NAME-00001-of-0000N.gguf) is downloaded whole, every part, and loaded from part 1.
 *
 * The hub functions read no environment variable: their params say everything, and
 * dllm_hub_params_from_env fills the params from huggingface_hub's variables (libcurl still
 * reads its proxy variables, https_proxy, no_proxy, ...). The token is sent to the hub only,
 * never to the host a download redirects to, and never appears in error text.
 *
 * Statuses: DLLM_ERR_ARG a malformed reference; DLLM_ERR_MISSING no such repo, revision,
 * file or quant (the text lists the repo's GGUF files), or not in the cache when offline;
 * DLLM_ERR_IO network, permission (401/403: gated or private) and disk errors, including a
 * full disk; DLLM_ERR_FORMAT a download or cached file whose size or SHA-256 is wrong (it is
 * deleted), or malformed JSON from the hub; DLLM_ERR_CANCELLED cancelled (a partial download
 * is kept and the next call resumes it).
 */

/*
 * Writes the versions of the libraries libdllm-hub runs with into buf (size bytes):
 * "libcurl 7.88.1 (OpenSSL/3.0.11), OpenSSL 3.0.11 19 Sep 2023, jansson 2.14".
 */
DLLM_API void dllm_hub_library_versions(char *buf, size_t size);

/* The default model: LLaDA-8B-Instruct, Q4_K_M, as converted by llama.cpp. */
#define DLLM_HUB_DEFAULT_MODEL "mradermacher/LLaDA-8B-Instruct-GGUF:Q4_K_M"

#define DLLM_HUB_REPO_MAX 194  /* "org/name": 96 + 1 + 96 characters, and the NUL */
#define DLLM_HUB_TAG_MAX  1025 /* a quant tag or a path inside the repo, and the NUL */
#define DLLM_HUB_PATH_MAX 4096 /* a local path, and the NUL */

struct dllm_hub_params;

/* A parsed model reference. */
struct dllm_hub_ref {
    bool local;                   /* a local path rather than a hub model */
    char path[DLLM_HUB_PATH_MAX]; /* local: the path, with a leading ~ expanded */
    char repo[DLLM_HUB_REPO_MAX]; /* hub: "org/name" */
    char tag[DLLM_HUB_TAG_MAX];   /* hub: "" (default quant), a quant, or a file path */
    bool tag_is_file;             /* hub: tag names a file (it ends in .gguf) */
};

/*
 * Parses a model reference without touching the network; a leading ~ is the home folder of
 * the params (which may be NULL: then the password database's). Errors (DLLM_ERR_ARG) name what is
 * wrong: "'org' is neither an existing file nor a hub model (org/repo[:QUANT])",
 * "invalid hub repo id 'a/b/c': ...", "unsafe file name in 'org/repo:../x.gguf'"; for a hub
 * model, a params revision that cannot name a branch, tag or commit ("invalid revision ...").
 */
DLLM_API enum dllm_status dllm_hub_ref_parse(const char *text, const struct dllm_hub_params *params,
                                             struct dllm_hub_ref *out, struct dllm_error *err);

/* What a download is doing: the phase of its struct dllm_progress reports. */
enum dllm_hub_phase {
    DLLM_HUB_PHASE_CHECK,    /* hashing a cached file, or the partial download to resume */
    DLLM_HUB_PHASE_WAIT,     /* waiting for another process downloading the same file */
    DLLM_HUB_PHASE_DOWNLOAD, /* receiving bytes */
    DLLM_HUB_PHASE_RETRY,    /* waiting retry_in seconds before another attempt */
    DLLM_HUB_PHASE_DONE,     /* the file is verified and linked */
};

/*
 * Options of the hub functions. dllm_hub_params_init fills fixed defaults and reads nothing;
 * dllm_hub_params_from_env then sets what the environment says.
 */
struct dllm_hub_params {
    const char *endpoint;  /* the hub; NULL or "": https://huggingface.co */
    const char *cache_dir; /* the cache root; NULL or "": <home>/.cache/huggingface/hub */
    const char *token;     /* the access token; NULL or "": none */
    const char *revision;  /* a branch, tag or commit; default "main" */
    bool offline;          /* the cache only, no network */
    bool no_symlinks;      /* snapshots hold copies of the blobs rather than links to them */
    /* The home folder, for a leading ~ and the default paths; NULL or "": the password
     * database's entry of the user, else "/". */
    const char *home;
    const char *verified_path; /* NULL or "": <home>/.cache/dllm/verified.json */
    /*
     * Cancels when it becomes true (see dllm.h, "cancel and progress"): checked at least once
     * a second during transfers and between chunks when hashing.
     */
    const atomic_bool *cancel;
    /*
     * Called with progress_user as a file is checked, waited for and downloaded, at most about
     * ten times a second per file plus once at each change of phase: kind
     * DLLM_PROGRESS_DOWNLOAD, phase an enum dllm_hub_phase, done and total the bytes of the
     * file done (downloaded, or hashed when checking) and its size, fraction done/total (0
     * when the size is unknown), rate in bytes a second, and the download fields (repo, file,
     * file_index, n_files, attempt; retry_in and why in PHASE_RETRY).
     */
    dllm_progress_fn progress;
    void *progress_user;
    int max_retries;       /* failed attempts in a row (no new bytes) before giving up; 5 */
    int retry_base_ms;     /* first backoff, doubling; 1000 */
    int stall_seconds;     /* a transfer with no byte for this long is retried; 30 */
    int connect_timeout_s; /* 10 */
};

DLLM_API void dllm_hub_params_init(struct dllm_hub_params *params);

#define DLLM_HUB_TOKEN_MAX 4096 /* bytes of a token read from the environment, and the NUL */

/* Room for the strings dllm_hub_params_from_env sets: the params point into it. */
struct dllm_hub_env {
    char home[DLLM_HUB_PATH_MAX];
    char endpoint[DLLM_HUB_PATH_MAX];
    char cache_dir[DLLM_HUB_PATH_MAX];
    char verified_path[DLLM_HUB_PATH_MAX];
    char token[DLLM_HUB_TOKEN_MAX]; /* clear it when done if the memory may be seen later */
};

/*
 * The one place libdllm-hub reads the environment: sets the params from the variables
 * huggingface_hub reads (its constants.py; the "Environment variables" page of its docs),
 * each only when set and not empty, leaving the others as they are:
 *   HOME                      home (for ~ and the default paths)
 *   HF_ENDPOINT               endpoint
 *   HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
 *   $XDG_CACHE_HOME/huggingface/hub
 *                             cache_dir
 *   XDG_CACHE_HOME            verified_path: $XDG_CACHE_HOME/dllm/verified.json
 *   HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the content of the file $HF_TOKEN_PATH,
 *   else $HF_HOME/token, $XDG_CACHE_HOME/huggingface/token, <home>/.cache/huggingface/token
 *                             token (a missing file: no token)
 *   HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE = 1, ON, YES or TRUE (any case)
 *                             offline = true
 *   HF_HUB_DISABLE_SYMLINKS not "0" (dllm's own, in the same naming)
 *                             no_symlinks = true
 * The strings point into env, which must outlive the params' use. DLLM_ERR_ARG when a value
 * is longer than its room in env (the text never holds the token).
 */
DLLM_API enum dllm_status dllm_hub_params_from_env(struct dllm_hub_params *params,
                                                   struct dllm_hub_env *env,
                                                   struct dllm_error *err);

/* A resolved model: local paths of its file or files. */
struct dllm_hub_model;

/*
 * Resolves a model reference to local files. A local path is returned as it is (nothing is
 * checked). A hub model is looked up: the revision is resolved to a commit on the hub, the
 * file listing is fetched (and kept as trees/<commit>.json), the files are chosen, and each
 * is taken from the cache when present and verified, else downloaded: resumed from a partial
 * download, retried with backoff, hashed while it streams and compared in size and SHA-256
 * with the hub's before it is moved into blobs/ and linked. A cached file is hashed the first
 * time it is used and the result kept in the verified memo.
 * Offline (params->offline), or when the hub cannot be reached and the
 * cache has the model, only the cache is used: dllm_hub_model_warning says so, and names
 * files that could not be verified. params NULL: dllm_hub_params_init's defaults. On failure
 * *out is NULL.
 */
DLLM_API enum dllm_status dllm_hub_resolve(const char *ref, const struct dllm_hub_params *params,
                                           struct dllm_hub_model **out, struct dllm_error *err);

DLLM_API void dllm_hub_model_free(struct dllm_hub_model *model);

/* The path to load: the file, or part 1 of a split model. */
DLLM_API const char *dllm_hub_model_path(const struct dllm_hub_model *model);
/* The number of files (the parts of a split model; 1 otherwise) and the path of each. */
DLLM_API int dllm_hub_model_n_files(const struct dllm_hub_model *model);
DLLM_API const char *dllm_hub_model_file_path(const struct dllm_hub_model *model, int i);
/* Whether the model is a split GGUF. */
DLLM_API bool dllm_hub_model_split(const struct dllm_hub_model *model);
/* Hub models: "org/name", the chosen file's path in the repo and the commit; "" for paths. */
DLLM_API const char *dllm_hub_model_repo(const struct dllm_hub_model *model);
DLLM_API const char *dllm_hub_model_file(const struct dllm_hub_model *model);
DLLM_API const char *dllm_hub_model_commit(const struct dllm_hub_model *model);
/* Bytes of all the files, and bytes this call downloaded. */
DLLM_API int64_t dllm_hub_model_size(const struct dllm_hub_model *model);
DLLM_API int64_t dllm_hub_model_downloaded(const struct dllm_hub_model *model);
/* NULL, or one line to show the user: the cache was used offline, a file is unverifiable. */
DLLM_API const char *dllm_hub_model_warning(const struct dllm_hub_model *model);

/* Whether a cached file is known to match the hub's hash. */
enum dllm_hub_state {
    DLLM_HUB_STATE_VERIFIED,  /* hashed and matching, unchanged since (the verified memo) */
    DLLM_HUB_STATE_UNCHECKED, /* not hashed yet; it will be when first used */
    DLLM_HUB_STATE_NO_HASH,   /* no hash is known for it (no listing was kept) */
    DLLM_HUB_STATE_BROKEN,    /* the snapshot link's blob is missing */
};

/*
 * One GGUF model in the cache: a file, or a split model's parts as one entry, named by part 1,
 * with the bytes of all parts and the worst of their states (broken, no hash, unchecked).
 */
struct dllm_hub_entry {
    const char *repo;   /* "org/name" */
    const char *file;   /* the path inside the repo (part 1 of a split model) */
    const char *commit; /* the snapshot */
    const char *path;   /* the snapshot path, to give -m */
    int64_t size;       /* bytes; -1 when broken */
    enum dllm_hub_state state;
    int64_t parts; /* files: a split model's parts in the snapshot, else 1 */
};

struct dllm_hub_list;

/* Lists the GGUF models in the cache (params->cache_dir and verified_path matter), sorted. */
DLLM_API enum dllm_status dllm_hub_list(const struct dllm_hub_params *params,
                                        struct dllm_hub_list **out, struct dllm_error *err);
DLLM_API int64_t dllm_hub_list_count(const struct dllm_hub_list *list);
DLLM_API const struct dllm_hub_entry *dllm_hub_list_get(const struct dllm_hub_list *list,
                                                        int64_t i);
/* The cache root the list was read from. */
DLLM_API const char *dllm_hub_list_cache_dir(const struct dllm_hub_list *list);
DLLM_API void dllm_hub_list_free(struct dllm_hub_list *list);

/*
 * Removes a hub model from the cache: with a tag, the files it names (every part of a split
 * model) from every snapshot, then the blobs no remaining link uses; without one, the repo's
 * whole cache folder. *n_files (links removed) and *bytes (blob bytes freed) may be NULL.
 * DLLM_ERR_MISSING when the cache has nothing that matches.
 */
DLLM_API enum dllm_status dllm_hub_remove(const char *ref, const struct dllm_hub_params *params,
                                          int64_t *n_files, int64_t *bytes, struct dllm_error *err);

#ifdef __cplusplus
}
#endif

#endif /* DLLM_DLLM_HUB_H */
