/*
 * dllm bench: the speed of the forward pass, the unit of every denoising step. Loads a model
 * and times passes over a canvas shaped like generation's: prompt ids, then 128 masks.
 */
#include "config.h"

#include "cli.h"
#include "device.h"
#include "commands.h"
#include "dllm.h"
#include "lines.h"
#include "model_ref.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The masks at the end of the canvas: dllm run's default generation length. */
enum { BENCH_MASKS = 128 };

const char cmd_bench_usage[] =
    "usage: dllm bench --model MODEL [--canvas L] [--rows R] [--reps N] [--threads N]\n"
    "                  [--threads-sweep LIST] [--json] [--offline] [--device D]\n"
    "                  [--gpu-resident]\n"
    "\n"
    "Loads the model, then times N forward passes over a canvas of L tokens shaped like a\n"
    "denoising step's: the first L-128 positions prompt ids, the last 128 (all of them when\n"
    "L <= 128) the mask token, with the logits of the last R rows. Prints the load time,\n"
    "each pass, its time by phase and the median, and the throughput: GOPS = 2 x\n"
    "(transformer weight parameters x L + output parameters x R) / median time, where a\n"
    "MoE model's experts count as many times as a token uses them (expert_used_count of\n"
    "the stack) and the last block's attention output and FFN count R times (the pass\n"
    "computes them for the logits rows alone).\n"
    "\n"
    "options:\n"
    "  -m, --model MODEL   a LLaDA, Dream, LLaDA-MoE or RND1 GGUF file, or a hub model\n"
    "                      org/repo[:QUANT|:FILE.gguf], downloaded if needed\n"
    "      --offline       hub models from the cache only, no network\n"
    "  -L, --canvas L      canvas length, 1 to the model's context (default 160)\n"
    "  -r, --rows R        logits rows, 1 to L (default 32, or L when L is smaller)\n"
    "  -n, --reps N        timed passes, 1 to 1000 (default 3)\n"
    "  -t, --threads N     worker threads, 1 to 1024 (default: one per core)\n"
    "      --threads-sweep LIST\n"
    "                      then the same passes again on each comma-separated number of\n"
    "                      threads (e.g. 1,2), each in a forward context of its own\n"
    "      --device D      auto (default), cpu or gpu[:N], as dllm run's\n"
    "      --gpu-resident  on a GPU, keep FP16 copies of the weights\n"
    "      --json          print one JSON document: load_ms, load_user_ms and load_sys_ms\n"
    "                      (the load's CPU time, user and system), pass_ms, median_ms,\n"
    "                      canvas, rows, threads, kernel, gops, peak_rss_mb, cpu_ms (each\n"
    "                      pass's CPU time, all threads), phases_ms (each pass's gemm,\n"
    "                      attention, norms_rope and output ms), the model's facts and\n"
    "                      with --threads-sweep threads_sweep (threads, pass_ms, cpu_ms,\n"
    "                      median_ms, phases_ms for each number of threads)\n"
    "  -h, --help          this help\n";

/* The passes of one forward context. */
struct timing {
    int threads;
    double median_ms;
    double *pass_ms;                 /* [reps] */
    double *cpu_ms;                  /* [reps] the process's CPU time in each pass, all threads */
    struct dllm_pass_phases *phases; /* [reps] */
};

/* What one bench run measured, for either output format. */
struct bench_result {
    const char *path, *arch, *file_type, *kernel;
    int64_t canvas, rows, n_prompt;
    int64_t weight_params; /* matrix elements of the transformer blocks but tail_params */
    int64_t tail_params;   /* those of the last block's attention output and FFN */
    int64_t output_params; /* elements of the output projection */
    double load_ms, gops, peak_rss_mb;
    double load_user_ms, load_sys_ms; /* the load's CPU time, all threads: user and system */
    int reps;
    struct timing base;
    struct timing *sweep; /* [n_sweep] the passes again on other numbers of threads */
    int64_t n_sweep;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n > 0 values: the middle one, or the mean of the middle two. */
static double median(const double *v, int n)
{
    double *s = malloc((size_t)n * sizeof *s);
    if (!s)
        cli_fail("out of memory");
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

/*
 * Counts the multiply-accumulate weights of a pass: the matrices (two or more dimensions) of
 * the blocks blk.*, applied to every canvas token (of a stack of experts, the n_used each
 * token is routed to), except that the last block's attention output and FFN (tail) serve only
 * the logits rows, and the output projection (output.weight, or the tied token_embd.weight),
 * applied to each logits row. Norms and biases are left out.
 */
static void count_params(const struct dllm_gguf *gguf, int64_t n_used, int64_t *weights,
                         int64_t *tail, int64_t *output)
{
    const struct dllm_gguf_tensor *out = dllm_gguf_find_tensor(gguf, "output.weight");
    if (!out)
        out = dllm_gguf_find_tensor(gguf, "token_embd.weight");
    *weights = *tail = 0;
    *output = out ? out->ne[0] * out->ne[1] : 0;
    long last = -1;
    for (int64_t i = 0; i < dllm_gguf_n_tensors(gguf); i++) {
        const char *name = dllm_gguf_tensor(gguf, i)->name;
        const long il = strncmp(name, "blk.", 4) == 0 ? strtol(name + 4, NULL, 10) : -1;
        last = il > last ? il : last;
    }
    for (int64_t i = 0; i < dllm_gguf_n_tensors(gguf); i++) {
        const struct dllm_gguf_tensor *t = dllm_gguf_tensor(gguf, i);
        if (t->n_dims < 2 || strncmp(t->name, "blk.", 4) != 0)
            continue;
        const int64_t n =
            t->ne[0] * t->ne[1] * (t->n_dims == 3 && n_used ? n_used : t->ne[2] * t->ne[3]);
        char *rest;
        const bool in_last = strtol(t->name + 4, &rest, 10) == last;
        if (in_last && (strncmp(rest, ".ffn_", 5) == 0 || strncmp(rest, ".attn_output.", 13) == 0))
            *tail += n;
        else
            *weights += n;
    }
}

/*
 * The context length a GGUF file declares (<arch>.context_length), read before loading so that
 * a canvas too long is a usage error; 0 when the file does not say, for the load to report.
 */
static int64_t context_length(const char *path)
{
    struct dllm_gguf *gguf;
    if (dllm_gguf_open(path, &gguf, NULL) != DLLM_OK)
        return 0;
    char *arch = NULL, key[96];
    uint32_t n_ctx = 0;
    if (dllm_gguf_get_str(gguf, "general.architecture", &arch, NULL) == DLLM_OK) {
        snprintf(key, sizeof key, "%.80s.context_length", arch);
        if (dllm_gguf_get_u32(gguf, key, &n_ctx, NULL) != DLLM_OK)
            n_ctx = 0;
    }
    free(arch);
    dllm_gguf_close(gguf);
    return n_ctx;
}

/* The canvas: ordinary ids cycling through the vocabulary (never the mask), then masks. */
static int32_t *make_canvas(const struct dllm_model *model, int64_t canvas, int64_t n_prompt)
{
    int32_t *ids = malloc((size_t)canvas * sizeof *ids);
    if (!ids)
        cli_fail("out of memory");
    const int32_t mask = dllm_model_mask_id(model);
    const int64_t n_vocab = dllm_model_n_vocab(model);
    for (int64_t i = 0; i < n_prompt; i++) {
        int32_t id = (int32_t)((1000 + 7919 * i) % n_vocab);
        ids[i] = id == mask ? (int32_t)((id + 1) % n_vocab) : id;
    }
    for (int64_t i = n_prompt; i < canvas; i++)
        ids[i] = mask;
    return ids;
}

/* The median pass's phases: each phase's median over the passes. */
static struct dllm_pass_phases median_phases(const struct timing *t, int reps)
{
    double *v = malloc((size_t)reps * sizeof *v);
    if (!v)
        cli_fail("out of memory");
    struct dllm_pass_phases m;
    double *out[] = {&m.gemm_ms, &m.attention_ms, &m.norms_rope_ms, &m.output_ms};
    for (size_t k = 0; k < sizeof out / sizeof out[0]; k++) {
        for (int i = 0; i < reps; i++) {
            const struct dllm_pass_phases *p = &t->phases[i];
            const double in[] = {p->gemm_ms, p->attention_ms, p->norms_rope_ms, p->output_ms};
            v[i] = in[k];
        }
        *out[k] = median(v, reps);
    }
    free(v);
    return m;
}

/* One line of a timing's median pass and phases, after the label. */
static void print_phases(const char *label, const struct timing *t, int reps)
{
    const struct dllm_pass_phases m = median_phases(t, reps);
    printf("%s: median %.1f ms; phases gemm %.1f, attention %.1f, norms_rope %.1f, output %.1f "
           "ms\n",
           label, t->median_ms, m.gemm_ms, m.attention_ms, m.norms_rope_ms, m.output_ms);
}

static void print_text(const struct bench_result *r)
{
    printf("model %s: %s %s, kernel %s, %d threads\n", r->path, r->arch, r->file_type, r->kernel,
           r->base.threads);
    printf("load: %.0f ms (CPU %.0f ms user, %.0f ms system)\n", r->load_ms, r->load_user_ms,
           r->load_sys_ms);
    printf("canvas %lld tokens (%lld prompt, %lld masks), logits for the last %lld rows\n",
           (long long)r->canvas, (long long)r->n_prompt, (long long)(r->canvas - r->n_prompt),
           (long long)r->rows);
    for (int i = 0; i < r->reps; i++)
        printf("pass %d: %.1f ms (CPU %.1f ms)\n", i + 1, r->base.pass_ms[i], r->base.cpu_ms[i]);
    printf("median: %.1f ms, %.1f GOPS, peak RSS %.0f MB\n", r->base.median_ms, r->gops,
           r->peak_rss_mb);
    print_phases("phases", &r->base, r->reps);
    for (int64_t i = 0; i < r->n_sweep; i++) {
        char label[32];
        snprintf(label, sizeof label, "threads %d", r->sweep[i].threads);
        print_phases(label, &r->sweep[i], r->reps);
    }
}

/* A timing's per-pass arrays into an object: pass_ms, cpu_ms, phases_ms. */
static void timing_json(json_t *obj, const struct timing *t, int reps)
{
    json_t *passes = json_array(), *cpu = json_array(), *phases = json_array();
    for (int i = 0; i < reps; i++) {
        const struct dllm_pass_phases *p = &t->phases[i];
        json_array_append_new(passes, json_real(t->pass_ms[i]));
        json_array_append_new(cpu, json_real(t->cpu_ms[i]));
        json_array_append_new(phases, json_pack("{s:f, s:f, s:f, s:f}", "gemm", p->gemm_ms,
                                                "attention", p->attention_ms, "norms_rope",
                                                p->norms_rope_ms, "output", p->output_ms));
    }
    json_object_set_new(obj, "pass_ms", passes);
    json_object_set_new(obj, "cpu_ms", cpu);
    json_object_set_new(obj, "phases_ms", phases);
}

static void print_json(const struct bench_result *r)
{
    json_t *doc = json_pack(
        "{s:f, s:n, s:f, s:I, s:I, s:i, s:s, s:f, s:f, s:s, s:s, s:s, s:I, s:I, s:I, s:I}",
        "load_ms", r->load_ms, "pass_ms", "median_ms", r->base.median_ms, "canvas",
        (json_int_t)r->canvas, "rows", (json_int_t)r->rows, "threads", r->base.threads, "kernel",
        r->kernel, "gops", r->gops, "peak_rss_mb", r->peak_rss_mb, "model", r->path, "arch",
        r->arch, "file_type", r->file_type, "prompt_tokens", (json_int_t)r->n_prompt,
        "weight_params", (json_int_t)r->weight_params, "tail_params", (json_int_t)r->tail_params,
        "output_params", (json_int_t)r->output_params);
    json_object_set_new(doc, "load_user_ms", json_real(r->load_user_ms));
    json_object_set_new(doc, "load_sys_ms", json_real(r->load_sys_ms));
    timing_json(doc, &r->base, r->reps);
    if (r->n_sweep) {
        json_t *sweep = json_array();
        for (int64_t i = 0; i < r->n_sweep; i++) {
            json_t *t = json_pack("{s:i, s:n, s:f}", "threads", r->sweep[i].threads, "pass_ms",
                                  "median_ms", r->sweep[i].median_ms);
            timing_json(t, &r->sweep[i], r->reps);
            json_array_append_new(sweep, t);
        }
        json_object_set_new(doc, "threads_sweep", sweep);
    }
    json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(doc);
}

/*
 * Runs reps passes of fwd, timing each (wall, CPU, phases) into t's arrays. On a GPU
 * (phases_apart), whose phases are timed by events the host records between the ops, each
 * timed pass runs without them and is followed by a pass that records the phases.
 */
static void time_passes(struct dllm_forward *fwd, const struct dllm_pass *pass, int reps,
                        bool phases_apart, struct timing *t)
{
    struct dllm_error err;
    t->pass_ms = malloc((size_t)reps * sizeof *t->pass_ms);
    t->cpu_ms = malloc((size_t)reps * sizeof *t->cpu_ms);
    t->phases = malloc((size_t)reps * sizeof *t->phases);
    if (!t->pass_ms || !t->cpu_ms || !t->phases)
        cli_fail("out of memory");
    for (int i = 0; i < reps; i++) {
        struct dllm_pass p = *pass;
        p.phases = phases_apart ? NULL : &t->phases[i];
        double wall = cli_now_ms(), cpu = cli_cpu_ms();
        if (dllm_forward_run(fwd, &p, &err) != DLLM_OK)
            cli_fail("%s", err.text);
        t->pass_ms[i] = cli_now_ms() - wall;
        t->cpu_ms[i] = cli_cpu_ms() - cpu;
        p.phases = &t->phases[i];
        if (phases_apart && dllm_forward_run(fwd, &p, &err) != DLLM_OK)
            cli_fail("%s", err.text);
    }
    t->median_ms = median(t->pass_ms, reps);
}

static void timing_free(struct timing *t)
{
    free(t->pass_ms);
    free(t->cpu_ms);
    free(t->phases);
}

/* The passes again in a forward context on a pool of t->threads threads, made for them. */
static void time_threads(const struct dllm_model *model, struct dllm_forward_params fp,
                         const struct dllm_pass *pass, int reps, struct timing *t)
{
    struct dllm_error err;
    struct dllm_forward *fwd;
    fp.progress = NULL;
    if (dllm_threadpool_new(t->threads, &fp.pool, &err) != DLLM_OK ||
        dllm_forward_new(model, &fp, &fwd, &err) != DLLM_OK)
        cli_fail("%s", err.text);
    time_passes(fwd, pass, reps, fp.backend != NULL, t);
    dllm_forward_free(fwd);
    dllm_threadpool_free(fp.pool);
}

int cmd_bench(const struct cli_command *cmd, int argc, char **argv)
{
    enum { OPT_JSON = 256, OPT_OFFLINE, OPT_DEVICE, OPT_GPU_RESIDENT, OPT_SWEEP };
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},
        {"canvas", required_argument, NULL, 'L'},
        {"rows", required_argument, NULL, 'r'},
        {"reps", required_argument, NULL, 'n'},
        {"threads", required_argument, NULL, 't'},
        {"threads-sweep", required_argument, NULL, OPT_SWEEP},
        {"json", no_argument, NULL, OPT_JSON},
        {"offline", no_argument, NULL, OPT_OFFLINE},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"gpu-resident", no_argument, NULL, OPT_GPU_RESIDENT},
        {0},
    };
    const char *model_ref = NULL;
    int64_t canvas = 160, rows = 0, n_sweep = 0;
    int32_t *sweep = NULL;
    int reps = 3, threads = (int)sysconf(_SC_NPROCESSORS_ONLN), c;
    bool json = false, offline = false;
    struct device_spec device = {0};
    while ((c = cli_getopt(cmd, argc, argv, "m:L:r:n:t:", opts)) != -1) {
        switch (c) {
        case 'm': model_ref = optarg; break;
        case 'L': canvas = cli_parse_int(cmd, "--canvas", optarg, 1, INT32_MAX); break;
        case 'r': rows = cli_parse_int(cmd, "--rows", optarg, 1, INT32_MAX); break;
        case 'n': reps = (int)cli_parse_int(cmd, "--reps", optarg, 1, 1000); break;
        case 't': threads = (int)cli_parse_int(cmd, "--threads", optarg, 1, 1024); break;
        case OPT_SWEEP:
            free(sweep);
            sweep = cli_parse_list(cmd, "--threads-sweep", optarg, 1, 1024, &n_sweep);
            break;
        case OPT_JSON: json = true; break;
        case OPT_OFFLINE: offline = true; break;
        case OPT_DEVICE: device_parse(cmd, optarg, &device); break;
        case OPT_GPU_RESIDENT: device.resident = true; break;
        }
    }
    if (optind != argc)
        cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!model_ref)
        cli_usage_error(cmd, "--model is missing");
    if (rows > canvas)
        cli_usage_error(cmd, "--rows %lld is more than the canvas: use 1 to %lld", (long long)rows,
                        (long long)canvas);
    if (!rows)
        rows = canvas < 32 ? canvas : 32;

    struct dllm_error err;
    struct bench_result r = {.canvas = canvas, .rows = rows, .reps = reps, .n_sweep = n_sweep};
    r.base.threads = threads;
    char *path = model_ref_path(model_ref, offline);
    const int64_t n_ctx = context_length(path);
    if (n_ctx > 0 && canvas > n_ctx)
        cli_usage_error(cmd, "--canvas %lld is longer than the model's context: use 1 to %lld",
                        (long long)canvas, (long long)n_ctx);

    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = canvas;
    fp.max_rows = rows;
    fp.kernels = cli_kernels();
    fp.progress = model_ref_progress;
    double t0 = cli_now_ms(), user0, sys0;
    cli_cpu_split_ms(&user0, &sys0);
    struct dllm_model *model = model_ref_open(path, false);
    struct dllm_forward *fwd;
    char label[300];
    device_choose(cmd, &device, model, canvas, rows, 0, &fp, label, sizeof label);
    if (dllm_threadpool_new(threads, &fp.pool, &err) != DLLM_OK ||
        dllm_forward_new(model, &fp, &fwd, &err) != DLLM_OK)
        cli_fail("%s%s", err.text, fp.backend ? ": use --device cpu" : "");
    r.kernel = dllm_forward_kernels(fwd);
    r.load_ms = cli_now_ms() - t0;
    cli_cpu_split_ms(&r.load_user_ms, &r.load_sys_ms);
    r.load_user_ms -= user0;
    r.load_sys_ms -= sys0;
    r.path = path;
    r.arch = dllm_model_arch(model);
    r.file_type = dllm_model_file_type(model);
    r.n_prompt = canvas > BENCH_MASKS ? canvas - BENCH_MASKS : 0;
    count_params(dllm_model_gguf(model), dllm_model_experts(model).n_used, &r.weight_params,
                 &r.tail_params, &r.output_params);

    int32_t *ids = make_canvas(model, canvas, r.n_prompt);
    int32_t *row_pos = malloc((size_t)rows * sizeof *row_pos);
    /* on whole cache lines and touched, as a session's are: the pass writes them in place */
    const size_t logits_bytes = (size_t)(rows * dllm_model_n_vocab(model)) * sizeof(float);
    float *logits = dllm_alloc_lines_touched(logits_bytes);
    r.sweep = calloc((size_t)n_sweep + 1, sizeof *r.sweep);
    if (!row_pos || !logits || !r.sweep)
        cli_fail("out of memory for %lld rows of logits", (long long)rows);
    for (int64_t i = 0; i < rows; i++)
        row_pos[i] = (int32_t)(canvas - rows + i);
    const struct dllm_pass pass = {
        .ids = ids, .n_tokens = canvas, .rows = row_pos, .n_rows = rows, .logits = logits};
    time_passes(fwd, &pass, reps, fp.backend != NULL, &r.base);
    /* the backends compute the last block's tail for the logits rows alone */
    r.gops = 2.0 *
             ((double)r.weight_params * canvas + (double)r.tail_params * rows +
              (double)r.output_params * rows) /
             (r.base.median_ms * 1e6);
    dllm_forward_free(fwd);
    dllm_threadpool_free(fp.pool);
    for (int64_t i = 0; i < n_sweep; i++) {
        r.sweep[i].threads = sweep[i];
        time_threads(model, fp, &pass, reps, &r.sweep[i]);
    }
    r.peak_rss_mb = cli_peak_rss_mb();
    if (json)
        print_json(&r);
    else
        print_text(&r);

    timing_free(&r.base);
    for (int64_t i = 0; i < n_sweep; i++)
        timing_free(&r.sweep[i]);
    free(r.sweep);
    free(sweep);
    free(logits);
    free(row_pos);
    free(ids);
    dllm_model_close(model);
    free(path);
    return CLI_EXIT_OK;
}
