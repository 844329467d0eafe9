/*
 * dllm doctor: what dllm will run on (CPU features, kernels, cores, memory, GPU), how it was
 * built, and the model cache, with the command that fixes each problem.
 */
#include "config.h"

#include "cli.h"
#include "commands.h"
#include "dllm-hub.h"
#include "dllm.h"
#include "model_ref.h"

#include <curses.h> /* NCURSES_VERSION: the version dllm-tui is built with */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

const char cmd_doctor_usage[] =
    "usage: dllm doctor\n"
    "\n"
    "Checks this machine and this build for dllm and prints one line per item: the CPU's\n"
    "instruction-set extensions and the kernel variant dllm runs, cores, memory, the GPU,\n"
    "the build's configuration and library versions, the Hugging Face cache with each GGUF\n"
    "model in it (size, verified or not), and the default model\n"
    "(" DLLM_HUB_DEFAULT_MODEL "): cached, verified against\n"
    "the hub's SHA-256 (a file not checked yet is hashed now) and loadable in the memory\n"
    "available. Each line starts with ok, warn or FAIL; a line that is not ok names the\n"
    "command that fixes it. Never uses the network.\n"
    "\n"
    "Exit status: 0 when everything the default model needs is in place, 1 otherwise.\n"
    "\n"
    "options:\n"
    "  -h, --help   this help\n";

enum level { LEVEL_OK, LEVEL_WARN, LEVEL_FAIL };

/* Prints one report line: level, topic, text; counts failures in *fails. */
static void report(int *fails, enum level level, const char *topic, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void report(int *fails, enum level level, const char *topic, const char *fmt, ...)
{
    static const char *const names[] = {"ok", "warn", "FAIL"};
    va_list ap;
    va_start(ap, fmt);
    printf("%-4s  %-9s  ", names[level], topic);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    if (level == LEVEL_FAIL)
        (*fails)++;
}

/* The value after "key:" on the first line of a /proc file that starts with key, or false. */
static bool proc_field(const char *file, const char *key, char *out, size_t size)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return false;
    char line[512];
    size_t n = strlen(key);
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, n) != 0)
            continue;
        const char *v = strchr(line + n, ':');
        if (!v)
            continue;
        v += 1 + strspn(v + 1, " \t");
        snprintf(out, size, "%.*s", (int)strcspn(v, "\n"), v);
        found = true;
    }
    fclose(f);
    return found;
}

/* A /proc/meminfo value in bytes ("MemTotal", "MemAvailable"), or -1. */
static double meminfo_bytes(const char *key)
{
    char v[64];
    return proc_field("/proc/meminfo", key, v, sizeof v) ? atof(v) * 1024 : -1;
}

static void check_cpu(int *fails)
{
    char model[256] = "", features[256];
    proc_field("/proc/cpuinfo", "model name", model, sizeof model);
    dllm_cpu_features_text(features, sizeof features);
    if (strstr(features, "AVX2"))
        report(fails, LEVEL_OK, "cpu", "%s%s%s", model, *model ? "; " : "", features);
    else
        report(fails, LEVEL_WARN, "cpu",
               "%s%slacks AVX2, so dllm runs its slow reference kernels; no command fixes "
               "this: a CPU with AVX2 (x86-64 since 2013) is several times faster",
               model, *model ? " " : "");

    const char *name;
    struct dllm_error err = {0};
    const char *forced = getenv("DLLM_KERNELS");
    if (dllm_kernels_name(forced, &name, &err) != DLLM_OK)
        report(fails, LEVEL_FAIL, "kernels", "DLLM_KERNELS: %s: run 'unset DLLM_KERNELS'",
               err.text);
    else if (forced && *forced)
        report(fails, LEVEL_OK, "kernels",
               "%s, forced by DLLM_KERNELS ('unset DLLM_KERNELS' lets dllm choose)", name);
    else
        report(fails, LEVEL_OK, "kernels", "%s, the fastest variant this CPU runs", name);

    report(fails, LEVEL_OK, "cores", "%ld online of %ld (dllm run uses them all; -t N to change)",
           sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF));
}

/* The GPUs nvidia-smi reports, one line each (what the driver sees, whatever dllm's build). */
static void check_gpu(int *fails)
{
    FILE *p = popen("nvidia-smi --query-gpu=name,memory.total,driver_version "
                    "--format=csv,noheader,nounits 2>&1",
                    "r");
    char line[256], first[256] = "";
    int n = 0;
    while (p && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        if (!*first)
            snprintf(first, sizeof first, "%s", line);
        char name[128];
        double mib;
        char driver[64];
        if (sscanf(line, "%127[^,], %lf, %63s", name, &mib, driver) == 3) {
            char size[16];
            report(fails, LEVEL_OK, "gpu", "%s, %s, driver %s", name,
                   model_ref_bytes(size, mib * 1048576.0), driver);
            n++;
        }
    }
    int status = p ? pclose(p) : -1;
    if (n > 0)
        return;
    bool absent = !p || !WIFEXITED(status) || WEXITSTATUS(status) == 127;
    if (absent || !*first)
        report(fails, LEVEL_OK, "gpu",
               "no NVIDIA GPU found (nvidia-smi is not installed); dllm computes on the CPU");
    else
        report(fails, LEVEL_OK, "gpu",
               "no NVIDIA GPU found (nvidia-smi: %s); dllm computes on the CPU", first);
}

/*
 * Whether this build has the CUDA backend and, if so, each GPU as the CUDA runtime reports it:
 * capability, free memory, the driver's and the runtime's CUDA versions, and whether
 * --device auto would use it.
 */
static void check_cuda(int *fails)
{
    if (!dllm_gpu_built()) {
        report(fails, LEVEL_OK, "cuda",
               "this build has no CUDA backend (configure --with-cuda); dllm computes on the CPU");
        return;
    }
    struct dllm_error err;
    int n;
    if (dllm_gpu_count(&n, &err) != DLLM_OK) {
        report(fails, LEVEL_OK, "cuda",
               "the CUDA backend is built but finds no GPU: %s; dllm computes on the CPU",
               err.text);
        return;
    }
    for (int i = 0; i < n; i++) {
        struct dllm_gpu_info g;
        if (dllm_gpu_info(i, &g, &err) != DLLM_OK) {
            report(fails, LEVEL_OK, "cuda", "GPU %d: %s", i, err.text);
            continue;
        }
        char free_s[16], total_s[16];
        model_ref_bytes(free_s, (double)g.free_bytes);
        model_ref_bytes(total_s, (double)g.total_bytes);
        report(fails, LEVEL_OK, "cuda",
               "GPU %d: %s, compute capability %d.%d, %s free of %s, CUDA driver %d.%d, "
               "runtime %d.%d: %s",
               i, g.name, g.major, g.minor, free_s, total_s, g.driver_version / 1000,
               g.driver_version % 1000 / 10, g.runtime_version / 1000,
               g.runtime_version % 1000 / 10,
               g.major >= DLLM_GPU_MIN_MAJOR ? "dllm runs on it (--device gpu:N)"
                                             : "below 8.0, dllm computes on the CPU");
    }
}

static void check_build(int *fails)
{
    const char *config = DLLM_BUILD_CONFIG;
    if (strstr(config, "debug=yes") || strstr(config, "sanitizers=yes"))
        report(fails, LEVEL_WARN, "build",
               "dllm %s, %s: a debug or sanitizer build runs several times slower; build "
               "without --enable-debug and --enable-sanitizers ('rm -rf build && ./dllm setup' "
               "in the checkout)",
               dllm_version(), config);
    else
        report(fails, LEVEL_OK, "build", "dllm %s, %s", dllm_version(), config);
    char hub[384], core[128];
    dllm_hub_library_versions(hub, sizeof hub);
    dllm_library_versions(core, sizeof core);
    report(fails, LEVEL_OK, "libraries", "%s, %s, ncurses %s", hub, core, NCURSES_VERSION);
}

/* The default model, as far as the cache goes: resolved offline, its state and its load. */
struct default_model {
    enum dllm_status status; /* of the offline resolve */
    struct dllm_error err;
    struct dllm_hub_model *model;
    enum dllm_hub_state state; /* of its file, from the cache listing */
    bool listed;
    bool tried_load; /* cached and verified, so loading was tried */
    enum dllm_status load_status;
    struct dllm_error load_err;
    char arch[16];
    int64_t n_layer;
};

/* The cache folder, or the nearest folder above it that exists, is writable by this user. */
static bool writable(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    while (access(path, F_OK) != 0) {
        char *slash = strrchr(path, '/');
        if (!slash || slash == path)
            return access("/", W_OK) == 0;
        *slash = 0;
    }
    return access(path, W_OK) == 0;
}

/* The state of the default model's file in the cache listing. */
static void find_default(const struct dllm_hub_list *list, struct default_model *d)
{
    for (int64_t i = 0; list && d->model && i < dllm_hub_list_count(list); i++) {
        const struct dllm_hub_entry *e = dllm_hub_list_get(list, i);
        if (strcmp(e->path, dllm_hub_model_path(d->model)) == 0) {
            d->state = e->state;
            d->listed = true;
        }
    }
}

/* The cache's location, room and models (list NULL: it could not be read, err says why). */
static void check_cache(int *fails, const struct dllm_hub_list *list, const struct dllm_error *err)
{
    if (!list) {
        report(fails, LEVEL_WARN, "cache",
               "%s: fix its permissions, or set HF_HUB_CACHE to another folder", err->text);
        return;
    }
    const char *root = dllm_hub_list_cache_dir(list);
    int64_t n = dllm_hub_list_count(list);
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
        const struct dllm_hub_entry *e = dllm_hub_list_get(list, i);
        total += e->size > 0 ? (double)e->size : 0;
    }
    char size[16], room[16] = "?";
    struct statvfs vfs;
    char probe[4096];
    snprintf(probe, sizeof probe, "%s", root);
    while (statvfs(probe, &vfs) != 0 && strrchr(probe, '/') && strrchr(probe, '/') != probe)
        *strrchr(probe, '/') = 0;
    if (statvfs(probe, &vfs) == 0)
        model_ref_bytes(room, (double)vfs.f_bavail * (double)vfs.f_frsize);
    if (!writable(root))
        report(fails, LEVEL_WARN, "cache",
               "%s is not writable, so nothing can be downloaded: fix its permissions "
               "(chmod -R u+w %s) or set HF_HUB_CACHE to a writable folder",
               root, root);
    else
        report(fails, LEVEL_OK, "cache", "%s: %lld GGUF model%s, %s; %s free", root, (long long)n,
               n == 1 ? "" : "s", model_ref_bytes(size, total), room);
    for (int64_t i = 0; i < n; i++) {
        const struct dllm_hub_entry *e = dllm_hub_list_get(list, i);
        const char *state = model_ref_state_name(e->state);
        if (e->size >= 0)
            model_ref_bytes(size, (double)e->size);
        switch (e->state) {
        case DLLM_HUB_STATE_VERIFIED:
            report(fails, LEVEL_OK, "model", "%s:%s, %s, %s", e->repo, e->file, size, state);
            break;
        case DLLM_HUB_STATE_UNCHECKED:
            report(fails, LEVEL_WARN, "model",
                   "%s:%s, %s, %s: it is hashed on first use, or now with 'dllm pull %s:%s'",
                   e->repo, e->file, size, state, e->repo, e->file);
            break;
        case DLLM_HUB_STATE_NO_HASH:
            report(fails, LEVEL_WARN, "model",
                   "%s:%s, %s, %s: no hub hash is kept to verify it; 'dllm pull %s:%s' fetches "
                   "one and checks the file",
                   e->repo, e->file, size, state, e->repo, e->file);
            break;
        case DLLM_HUB_STATE_BROKEN:
            report(fails, LEVEL_WARN, "model",
                   "%s:%s, %s: its file (or a part of it) is gone; 'dllm pull %s:%s' "
                   "downloads it again, "
                   "'dllm rm %s:%s' forgets it",
                   e->repo, e->file, state, e->repo, e->file, e->repo, e->file);
            break;
        }
    }
}

/* Opens the default model when it is cached and verified: the memory check is the loader's. */
static void load_default(struct default_model *d)
{
    if (d->status != DLLM_OK || !d->listed || d->state != DLLM_HUB_STATE_VERIFIED)
        return;
    struct dllm_model *model;
    d->tried_load = true;
    d->load_status = dllm_model_open(dllm_hub_model_path(d->model), NULL, &model, &d->load_err);
    if (d->load_status != DLLM_OK)
        return;
    snprintf(d->arch, sizeof d->arch, "%s", dllm_model_arch(model));
    d->n_layer = dllm_model_n_layer(model);
    dllm_model_close(model);
}

/* Memory: total and available, and whether the default model fits. */
static void check_memory(int *fails, const struct default_model *d)
{
    char total[16] = "?", avail[16] = "?";
    double t = meminfo_bytes("MemTotal"), a = meminfo_bytes("MemAvailable");
    if (t >= 0)
        model_ref_bytes(total, t);
    if (a >= 0)
        model_ref_bytes(avail, a);
    if (d->tried_load && d->load_status == DLLM_ERR_NOMEM)
        report(fails, LEVEL_FAIL, "memory",
               "%s, %s available: %s; free memory (close other programs), then run 'dllm "
               "doctor' again",
               total, avail, d->load_err.text);
    else if (d->tried_load && d->load_status == DLLM_OK)
        report(fails, LEVEL_OK, "memory", "%s, %s available, enough for the default model", total,
               avail);
    else
        report(fails, LEVEL_OK, "memory", "%s, %s available", total, avail);
}

#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"

/*
 * Transparent huge pages, which the CPU backend asks for (MADV_HUGEPAGE) for its repacked
 * weights and activations: the mode in brackets in THP_ENABLED ("always [madvise] never").
 * Without them a load faults in its memory 4 kB at a time (on a 2-core Xeon, touching 4 GB of
 * memory freed moments before took 4x as long) and the products ran 0-4% slower.
 */
static void check_pages(int *fails)
{
    char line[128] = "";
    FILE *f = fopen(THP_ENABLED, "r");
    if (f) {
        if (!fgets(line, sizeof line, f))
            line[0] = '\0';
        fclose(f);
    }
    const char *open = strchr(line, '['), *close = open ? strchr(open, ']') : NULL;
    if (!close) {
        report(fails, LEVEL_OK, "pages", "transparent huge pages unknown (no %s)", THP_ENABLED);
        return;
    }
    const int n = (int)(close - open - 1);
    if (n == 5 && strncmp(open + 1, "never", 5) == 0)
        report(fails, LEVEL_WARN, "pages",
               "transparent huge pages are off, so loads take longer and products run slower; "
               "as root: 'echo madvise > %s'",
               THP_ENABLED);
    else
        report(fails, LEVEL_OK, "pages",
               "transparent huge pages: %.*s (dllm asks for them for its weights and "
               "activations)",
               n, open + 1);
}

/* The default model's line: cached, verified and loadable, or the command that gets it. */
static void check_default(int *fails, const struct default_model *d)
{
    const char *ref = DLLM_HUB_DEFAULT_MODEL;
    if (d->status == DLLM_ERR_MISSING) {
        report(fails, LEVEL_FAIL, "default", "%s is not in the cache: run 'dllm pull'", ref);
        return;
    }
    if (d->status != DLLM_OK) {
        report(fails, LEVEL_FAIL, "default", "%s%s", d->err.text,
               strstr(d->err.text, "dllm pull") ? "" : ": run 'dllm pull'");
        return;
    }
    const char *file = dllm_hub_model_file(d->model);
    if (!d->tried_load) {
        report(fails, LEVEL_FAIL, "default",
               "%s (%s) is cached but %s: run 'dllm pull' while online to verify it", ref, file,
               d->listed ? model_ref_state_name(d->state) : "not verified");
        return;
    }
    char size[16];
    model_ref_bytes(size, (double)dllm_hub_model_size(d->model));
    if (d->load_status == DLLM_ERR_NOMEM)
        report(fails, LEVEL_OK, "default", "%s: %s, %s, verified (see memory)", ref, file, size);
    else if (d->load_status != DLLM_OK)
        report(fails, LEVEL_FAIL, "default",
               "%s: %s is verified but does not load: %s; no dllm command fixes this: report "
               "it with this line",
               ref, file, d->load_err.text);
    else
        report(fails, LEVEL_OK, "default", "%s: %s, %s, verified, loads (%s, %lld layers)", ref,
               file, size, d->arch, (long long)d->n_layer);
}

int cmd_doctor(const struct cli_command *cmd, int argc, char **argv)
{
    while (cli_getopt(cmd, argc, argv, "", NULL) != -1)
        ;
    if (optind < argc)
        cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    /* The default model first, so the list below shows what this check verified. */
    struct dllm_hub_params params;
    struct dllm_hub_env env;
    model_ref_params(&params, &env);
    params.offline = true;
    struct default_model d = {.status = DLLM_OK};
    d.status = model_ref_resolve(DLLM_HUB_DEFAULT_MODEL, &params, false, &d.model, &d.err);
    if (d.status == DLLM_ERR_CANCELLED)
        cli_fail("interrupted while checking the default model");
    struct dllm_error list_err = {0};
    struct dllm_hub_list *list = NULL;
    dllm_hub_list(&params, &list, &list_err);
    find_default(list, &d);
    load_default(&d);
    int fails = 0;
    check_cpu(&fails);
    check_memory(&fails, &d);
    check_pages(&fails);
    check_gpu(&fails);
    check_cuda(&fails);
    check_build(&fails);
    check_cache(&fails, list, &list_err);
    check_default(&fails, &d);
    dllm_hub_list_free(list);
    dllm_hub_model_free(d.model);
    if (fails)
        printf("\n%d problem%s: run the command%s named on the FAIL line%s, then 'dllm doctor' "
               "again\n",
               fails, fails == 1 ? "" : "s", fails == 1 ? "" : "s", fails == 1 ? "" : "s");
    else
        printf("\nready: dllm run -p 'Hello' answers with the default model\n");
    return fails ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
