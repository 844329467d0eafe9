/*
 * The GPU queries and the CUDA call wrapper's errors. In a build with the CUDA backend each
 * message class is provoked through the wrapper's fault injection (no driver, no device, a
 * launch failure, a cuBLAS failure) or the refusal functions (capability too old, not enough
 * memory), and the real runtime is asked too: on a machine without a driver or GPU it must say
 * so, on one with a GPU it must count it. In a build without CUDA every query refuses.
 */
#include "config.h"

#include "fixtures.h"

#include "dllm.h"

#ifdef DLLM_HAVE_CUDA
#include "backend.h"
#include "call.h"
#include "model.h"
#include "probe.h"
#endif

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A forward context of the model at fixture path rel on backend, or its refusal in err. */
static enum dllm_status forward_on(const char *rel, const char *backend, struct dllm_error *err)
{
    char *path = fixture_path(rel);
    struct dllm_model *m = NULL;
    ck_assert_int_eq(dllm_model_open(path, NULL, &m, err), DLLM_OK);
    struct dllm_threadpool *pool = NULL;
    ck_assert_int_eq(dllm_threadpool_new(1, &pool, err), DLLM_OK);
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = 16;
    fp.max_rows = 4;
    fp.pool = pool;
    fp.backend = backend;
    struct dllm_forward *fwd = NULL;
    enum dllm_status st = dllm_forward_new(m, &fp, &fwd, err);
    if (st)
        ck_assert_ptr_null(fwd);
    dllm_forward_free(fwd);
    dllm_threadpool_free(pool);
    dllm_model_close(m);
    free(path);
    return st;
}

#ifdef DLLM_HAVE_CUDA
START_TEST(test_no_driver)
{
    struct dllm_error err = {0};
    int n = -1;
    dllm_cuda_fault_inject(DLLM_CUDA_RUNTIME, "cudaGetDeviceCount", cudaErrorInsufficientDriver);
    ck_assert_int_eq(dllm_gpu_count(&n, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_int_eq(n, 0);
    ck_assert_str_eq(err.text, "no usable NVIDIA driver: cudaGetDeviceCount(&count) failed: CUDA "
                               "driver version is insufficient for CUDA runtime version "
                               "(cudaErrorInsufficientDriver)");
}
END_TEST

START_TEST(test_no_device)
{
    struct dllm_error err = {0};
    struct dllm_gpu_info gpu;
    dllm_cuda_fault_inject(DLLM_CUDA_RUNTIME, "cudaGetDeviceCount", cudaErrorNoDevice);
    ck_assert_int_eq(dllm_gpu_info(0, &gpu, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text, "no CUDA GPU: cudaGetDeviceCount(&count) failed: no CUDA-capable "
                               "device is detected (cudaErrorNoDevice)");
}
END_TEST

START_TEST(test_capability)
{
    struct dllm_error err = {0};
    struct dllm_gpu_info gpu = {.index = 1, .name = "Tesla T4", .major = 7, .minor = 5};
    ck_assert_int_eq(dllm_cuda_check_capability(&gpu, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text, "GPU 1 (Tesla T4) has compute capability 7.5; the CUDA backend "
                               "needs 8.0 or newer");
    gpu.major = 8;
    gpu.minor = 0;
    ck_assert_int_eq(dllm_cuda_check_capability(&gpu, &err), DLLM_OK);
}
END_TEST

START_TEST(test_memory)
{
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_cuda_check_memory(0, 20000000000u, 0, 4000000000u, &err), DLLM_ERR_NOMEM);
    ck_assert_str_eq(err.text, "the model needs 20.0 GB of GPU memory on GPU 0 but 4.0 GB is free");
    ck_assert_int_eq(dllm_cuda_check_memory(1, 20000000000u, 1000000000u, 4000000000u, &err),
                     DLLM_ERR_NOMEM);
    ck_assert_str_eq(err.text, "the model needs 20.0 GB of GPU memory with its K/V cache on GPU 1 "
                               "but 4.0 GB is free");
    ck_assert_int_eq(dllm_cuda_check_memory(0, 4000000000u, 0, 4000000000u, &err), DLLM_OK);
}
END_TEST

/* A launch failure, as a synchronisation after a kernel reports it, names the call. */
START_TEST(test_launch_failure)
{
    struct dllm_error err = {0};
    dllm_cuda_fault_inject(DLLM_CUDA_RUNTIME, "cudaStreamSynchronize", cudaErrorLaunchFailure);
    ck_assert_int_eq(DLLM_CUDA(&err, cudaStreamSynchronize(NULL)), DLLM_ERR_DEVICE);
    ck_assert_str_eq(err.text, "cudaStreamSynchronize(NULL) failed: unspecified launch failure "
                               "(cudaErrorLaunchFailure)");
}
END_TEST

/* A cuBLAS failure names the call and cuBLAS's words; the injected call does not run. */
START_TEST(test_cublas_failure)
{
    struct dllm_error err = {0};
    cublasHandle_t h = NULL;
    dllm_cuda_fault_inject(DLLM_CUDA_CUBLAS, "cublasSgemm", CUBLAS_STATUS_EXECUTION_FAILED);
    const float one = 1;
    ck_assert_int_eq(DLLM_CUBLAS(&err, cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, NULL,
                                                   1, NULL, 1, &one, NULL, 1)),
                     DLLM_ERR_DEVICE);
    ck_assert_msg(strncmp(err.text,
                          "cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, NULL, "
                          "1, NULL, 1, &one, NULL, 1) failed: ",
                          80) == 0,
                  "%s", err.text);
    ck_assert_msg(strstr(err.text, "(CUBLAS_STATUS_EXECUTION_FAILED)"), "%s", err.text);
    dllm_cuda_fault_inject(DLLM_CUDA_CUBLAS, "cublasCreate", CUBLAS_STATUS_ALLOC_FAILED);
    ck_assert_int_eq(DLLM_CUBLAS(&err, cublasCreate(&h)), DLLM_ERR_NOMEM);
    ck_assert_ptr_null(h);
}
END_TEST

/* An injected fault is taken once, by the first call whose text it starts. */
START_TEST(test_fault_once)
{
    struct dllm_error err = {0};
    int v = 0;
    dllm_cuda_fault_inject(DLLM_CUDA_RUNTIME, "cudaRuntimeGetVersion", cudaErrorUnknown);
    ck_assert_int_eq(DLLM_CUDA(&err, cudaDriverGetVersion(&v)), DLLM_OK);
    ck_assert_int_ne(DLLM_CUDA(&err, cudaRuntimeGetVersion(&v)), DLLM_OK);
    ck_assert_int_eq(DLLM_CUDA(&err, cudaRuntimeGetVersion(&v)), DLLM_OK);
    ck_assert_int_ge(v, 13000);
}
END_TEST

/*
 * The backend refuses a MoE model before it asks for a GPU, and on this machine a dense one
 * with the runtime's reason; on a machine with a GPU the dense one gets its context.
 */
START_TEST(test_backend_create)
{
    struct dllm_error err = {0};
    ck_assert_int_eq(forward_on("models/llada-moe-tiny-q4km.gguf", "cuda", &err),
                     DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text, "llada-moe is a mixture-of-experts model: the CUDA backend runs "
                               "dense models only (LLaDA, Dream)");
    int n;
    struct dllm_error count_err;
    if (dllm_gpu_count(&n, &count_err) == DLLM_OK) {
        ck_assert_int_eq(forward_on("models/llada-tiny-q4km.gguf", "cuda", &err), DLLM_OK);
    } else {
        ck_assert_int_eq(forward_on("models/llada-tiny-q4km.gguf", "cuda", &err),
                         DLLM_ERR_UNSUPPORTED);
        ck_assert_str_eq(err.text, count_err.text);
    }
}
END_TEST

/* A model at fixture path rel through dllm_gpu_check_model: its status, the reason in err. */
static enum dllm_status check_model_at(const char *rel, struct dllm_error *err)
{
    char *path = fixture_path(rel);
    struct dllm_model *m = NULL;
    ck_assert_int_eq(dllm_model_open(path, NULL, &m, err), DLLM_OK);
    enum dllm_status st = dllm_gpu_check_model(m, err);
    dllm_model_close(m);
    free(path);
    return st;
}

/*
 * dllm_gpu_check_model tells, with no GPU asked, what the backend would refuse: a MoE model
 * (with the refusal's text, so that --device auto falls back to the CPU saying why), not a
 * dense one.
 */
START_TEST(test_check_model)
{
    struct dllm_error err = {0};
    ck_assert_int_eq(check_model_at("models/llada-moe-tiny-q4km.gguf", &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text, "llada-moe is a mixture-of-experts model: the CUDA backend runs "
                               "dense models only (LLaDA, Dream)");
    ck_assert_int_eq(check_model_at("models/rnd1-tiny-q4km.gguf", &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_int_eq(check_model_at("models/llada-tiny-q4km.gguf", &err), DLLM_OK);
    ck_assert_int_eq(check_model_at("models/dream-tiny-q4km.gguf", &err), DLLM_OK);
}
END_TEST

/*
 * dllm_gpu_check of the model at fixture path rel on GPU 0 for 16 tokens and rows logits rows,
 * with 1 MB of K/V caches.
 */
static enum dllm_status check_at(const char *rel, int64_t rows, struct dllm_error *err)
{
    char *path = fixture_path(rel);
    struct dllm_model *m = NULL;
    ck_assert_int_eq(dllm_model_open(path, NULL, &m, err), DLLM_OK);
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = 16;
    fp.max_rows = rows;
    struct dllm_gpu_info gpu;
    enum dllm_status st = dllm_gpu_check(0, m, &fp, 1000000, &gpu, err);
    dllm_model_close(m);
    free(path);
    return st;
}

/*
 * dllm_gpu_check refuses sizes dllm_forward_new refuses and the model before it asks the
 * runtime (a MoE model is refused on a machine without a GPU for what it is), then gives the
 * runtime's refusal.
 */
START_TEST(test_check_order)
{
    struct dllm_error err = {0};
    dllm_cuda_fault_inject(DLLM_CUDA_RUNTIME, "cudaGetDeviceCount", cudaErrorNoDevice);
    ck_assert_int_eq(check_at("models/llada-moe-tiny-q4km.gguf", 17, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "17 logits rows for 16 tokens: ask for 1 to 16");
    ck_assert_int_eq(check_at("models/llada-moe-tiny-q4km.gguf", 4, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text, "llada-moe is a mixture-of-experts model: the CUDA backend runs "
                               "dense models only (LLaDA, Dream)");
    ck_assert_int_eq(check_at("models/llada-tiny-q4km.gguf", 4, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text, "no CUDA GPU: cudaGetDeviceCount(&count) failed: no CUDA-capable "
                               "device is detected (cudaErrorNoDevice)");
}
END_TEST

/*
 * The memory check counts the weights in host memory on the CPU backend, which keeps them
 * there, and not on the CUDA backend, whose weights live on the GPU (the file is read once to
 * upload them): a GPU machine with little free host memory still runs a model larger than it.
 * The same for K/V caches, which the CUDA backend checks against the GPU's free memory.
 */
START_TEST(test_host_memory)
{
    char *path = fixture_path("models/llada-tiny-q4km.gguf");
    struct dllm_model *m = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_model_open(path, NULL, &m, &err), DLLM_OK);
    struct dllm_threadpool *pool = NULL;
    ck_assert_int_eq(dllm_threadpool_new(2, &pool, &err), DLLM_OK);
    const struct dllm_backend_config cfg = {
        .model = m, .max_tokens = 64, .max_rows = 8, .pool = pool};
    const size_t cpu = dllm_backend_cpu.host_bytes(&cfg), gpu = dllm_backend_cuda.host_bytes(&cfg);
    ck_assert_uint_ge(cpu, m->weight_bytes);
    ck_assert_uint_lt(gpu, m->weight_bytes / 10);
    /* K/V caches likewise: host memory on the CPU, the GPU's on the CUDA backend */
    ck_assert(dllm_backend_cpu.kv_on_host && !dllm_backend_cuda.kv_on_host);
    dllm_threadpool_free(pool);
    dllm_model_close(m);
    free(path);
}
END_TEST

/* A forward context of the CUDA backend that runs dry (call.h): no call reaches a GPU. */
struct dry {
    struct dllm_model *model;
    struct dllm_threadpool *pool;
    struct dllm_forward *fwd;
    int32_t ids[8], rows[1];
    float *logits; /* [1, n_vocab] */
    struct dllm_pass pass;
};

static void dry_open(struct dry *d, int64_t n_rows)
{
    struct dllm_error err = {0};
    char *path = fixture_path("models/llada-tiny-q4km.gguf");
    dllm_cuda_fault_dry(true);
    ck_assert_int_eq(dllm_model_open(path, NULL, &d->model, &err), DLLM_OK);
    ck_assert_int_eq(dllm_threadpool_new(1, &d->pool, &err), DLLM_OK);
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = 8;
    fp.max_rows = 1;
    fp.pool = d->pool;
    fp.backend = "cuda";
    ck_assert_msg(dllm_forward_new(d->model, &fp, &d->fwd, &err) == DLLM_OK, "%s", err.text);
    for (int i = 0; i < 8; i++)
        d->ids[i] = 100 + i;
    d->rows[0] = 7;
    d->logits = calloc((size_t)dllm_model_n_vocab(d->model), sizeof *d->logits);
    d->pass = (struct dllm_pass){
        .ids = d->ids, .n_tokens = 8, .rows = d->rows, .n_rows = n_rows, .logits = d->logits};
    free(path);
}

static void dry_close(struct dry *d)
{
    dllm_forward_free(d->fwd);
    dllm_threadpool_free(d->pool);
    dllm_model_close(d->model);
    free(d->logits);
    dllm_cuda_fault_dry(false);
}

/*
 * A kernel launch that fails inside a pass ends that pass: dllm_forward_run returns the
 * failure naming the launch and the CUDA error string (not DLLM_OK with rows of NaN), and the
 * context refuses the next pass with the same error.
 */
START_TEST(test_pass_failure)
{
    struct dry d;
    dry_open(&d, 1);
    struct dllm_error err = {0}, again = {0};
    dllm_cuda_fault_inject(DLLM_CUDA_RUNTIME, "dllm_cuda_swiglu", cudaErrorLaunchFailure);
    ck_assert_int_eq(dllm_forward_run(d.fwd, &d.pass, &err), DLLM_ERR_DEVICE);
    ck_assert_msg(strncmp(err.text, "dllm_cuda_swiglu(", 17) == 0, "%s", err.text);
    ck_assert_msg(strstr(err.text, ") failed: unspecified launch failure (cudaErrorLaunchFailure)"),
                  "%s", err.text);
    ck_assert_int_eq(dllm_forward_run(d.fwd, &d.pass, &again), DLLM_ERR_DEVICE);
    ck_assert_str_eq(again.text, err.text);
    dry_close(&d);
}
END_TEST

/*
 * An error the GPU reports only at a synchronisation ends the pass it happened in, also a pass
 * that returns no rows (a cache-filling pass, which copies nothing back); a cuBLAS failure
 * names the cuBLAS call.
 */
START_TEST(test_pass_async_failure)
{
    struct dry d;
    dry_open(&d, 0);
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_forward_run(d.fwd, &d.pass, &err), DLLM_OK);
    dllm_cuda_fault_inject(DLLM_CUDA_RUNTIME, "cudaStreamSynchronize", cudaErrorIllegalAddress);
    ck_assert_int_eq(dllm_forward_run(d.fwd, &d.pass, &err), DLLM_ERR_DEVICE);
    ck_assert_str_eq(err.text, "cudaStreamSynchronize(c->stream) failed: an illegal memory access "
                               "was encountered (cudaErrorIllegalAddress)");
    dry_close(&d);
    dry_open(&d, 1);
    dllm_cuda_fault_inject(DLLM_CUDA_CUBLAS, "cublasGemmEx", CUBLAS_STATUS_EXECUTION_FAILED);
    ck_assert_int_eq(dllm_forward_run(d.fwd, &d.pass, &err), DLLM_ERR_DEVICE);
    ck_assert_msg(strncmp(err.text, "cublasGemmEx(", 13) == 0, "%s", err.text);
    ck_assert_msg(strstr(err.text, "(CUBLAS_STATUS_EXECUTION_FAILED)"), "%s", err.text);
    dry_close(&d);
}
END_TEST

/*
 * The attention's calls and the ordering of the dequantization stream fail as the backend's
 * others do: its batched cuBLAS product, its launches, a stream's wait for an event are named
 * in the pass's error.
 */
START_TEST(test_pass_call_failures)
{
    static const struct {
        enum dllm_cuda_lib lib;
        const char *call;
        int code;
        const char *text;
    } faults[] = {
        {DLLM_CUDA_CUBLAS, "cublasGemmBatchedEx", CUBLAS_STATUS_EXECUTION_FAILED,
         "(CUBLAS_STATUS_EXECUTION_FAILED)"},
        {DLLM_CUDA_RUNTIME, "dllm_cuda_softmax_rows", cudaErrorLaunchFailure,
         "(cudaErrorLaunchFailure)"},
        {DLLM_CUDA_RUNTIME, "dllm_cuda_attention_pointers", cudaErrorLaunchFailure,
         "(cudaErrorLaunchFailure)"},
        {DLLM_CUDA_RUNTIME, "cudaStreamWaitEvent", cudaErrorInvalidResourceHandle,
         "(cudaErrorInvalidResourceHandle)"},
    };
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        struct dry d;
        dry_open(&d, 1);
        struct dllm_error err = {0};
        dllm_cuda_fault_inject(faults[i].lib, faults[i].call, faults[i].code);
        ck_assert_int_eq(dllm_forward_run(d.fwd, &d.pass, &err), DLLM_ERR_DEVICE);
        ck_assert_msg(strncmp(err.text, faults[i].call, strlen(faults[i].call)) == 0 &&
                          err.text[strlen(faults[i].call)] == '(',
                      "%s", err.text);
        ck_assert_msg(strstr(err.text, faults[i].text), "%s", err.text);
        dry_close(&d);
    }
}
END_TEST

/*
 * A GPU fault sticks: once a launch has failed so, every later call fails too. The pass still
 * reports the first failure (later ops do nothing; the float16 cache's conversions of the next
 * layers neither run nor replace the error's text), and so does the next pass.
 */
START_TEST(test_pass_sticky_failure)
{
    struct dry d;
    dry_open(&d, 1);
    struct dllm_error err = {0}, again = {0};
    struct dllm_kv_cache *kv = NULL;
    ck_assert_msg(dllm_kv_cache_new(d.fwd, 8, DLLM_CACHE_F16, true, &kv, &err) == DLLM_OK, "%s",
                  err.text);
    d.pass.cache = kv;
    d.pass.begin = 0;
    d.pass.end = 8;
    dllm_cuda_fault_inject_sticky(DLLM_CUDA_RUNTIME, "dllm_cuda_swiglu", cudaErrorIllegalAddress);
    ck_assert_int_eq(dllm_forward_run(d.fwd, &d.pass, &err), DLLM_ERR_DEVICE);
    ck_assert_msg(strncmp(err.text, "dllm_cuda_swiglu(", 17) == 0 &&
                      strstr(err.text, "(cudaErrorIllegalAddress)"),
                  "%s", err.text);
    ck_assert_int_eq(dllm_forward_run(d.fwd, &d.pass, &again), DLLM_ERR_DEVICE);
    ck_assert_str_eq(again.text, err.text);
    dllm_cuda_fault_inject(DLLM_CUDA_RUNTIME, NULL, 0);
    dllm_kv_cache_free(kv);
    dry_close(&d);
}
END_TEST

/* What a request's events said: the error's message, whether it finished. */
struct outcome {
    bool failed, done;
    char message[512];
};

static void on_event(const struct dllm_event *ev, void *user)
{
    struct outcome *o = user;
    if (ev->kind == DLLM_EVENT_ERROR) {
        o->failed = true;
        snprintf(o->message, sizeof o->message, "%s", ev->message);
    }
    o->done |= ev->kind == DLLM_EVENT_DONE;
}

/* A pass that fails on the GPU ends the request with one error event naming the call. */
START_TEST(test_request_failure)
{
    struct dllm_error err = {0};
    char *path = fixture_path("models/llada-tiny-q4km.gguf");
    struct dllm_model *m = NULL;
    dllm_cuda_fault_dry(true);
    ck_assert_int_eq(dllm_model_open(path, NULL, &m, &err), DLLM_OK);
    struct dllm_session_params sp;
    dllm_session_params_init(&sp);
    sp.max_canvas = 64;
    sp.threads = 1;
    sp.backend = "cuda";
    struct dllm_session *s = NULL;
    ck_assert_msg(dllm_session_new(m, &sp, &s, &err) == DLLM_OK, "%s", err.text);
    struct dllm_request req = {.raw_prompt = "hello"};
    dllm_sampler_params_init(&req.sampler, DLLM_SAMPLER_LLADA);
    req.sampler.gen_length = 8;
    req.sampler.steps = 8;
    req.sampler.block_length = 8;
    struct outcome o = {0};
    dllm_cuda_fault_inject(DLLM_CUDA_RUNTIME, "dllm_cuda_rope", cudaErrorLaunchFailure);
    ck_assert_msg(dllm_session_generate(s, &req, on_event, &o, &err) == DLLM_OK, "%s", err.text);
    dllm_session_wait(s);
    ck_assert(o.failed);
    ck_assert(!o.done);
    ck_assert_msg(strstr(o.message, "dllm_cuda_rope(") &&
                      strstr(o.message, "failed: unspecified launch failure "
                                        "(cudaErrorLaunchFailure)"),
                  "%s", o.message);
    dllm_session_free(s);
    dllm_model_close(m);
    dllm_cuda_fault_dry(false);
    free(path);
}
END_TEST

/*
 * LLaDA-8B's shape (32 layers, d_model 4096, 32/32 heads of 128, ffn 12288, vocab 126464)
 * with every matrix and the embedding in Q4_K and the output in Q6_K, as a model the planner
 * reads (no file: the tensors have sizes but no data).
 */
struct shape8b {
    struct dllm_model model;
    struct dllm_layer layers[32];
    struct dllm_gguf_tensor attn[4], ffn_in[2], ffn_out, embd, output;
    float vector; /* a stand-in the norms point at: present, never read */
};

static struct dllm_gguf_tensor q_tensor(uint32_t type, int64_t k, int64_t n, const void *data)
{
    const size_t block = type == DLLM_TYPE_Q4_K ? 144 : 210; /* bytes per 256 weights */
    return (struct dllm_gguf_tensor){.type = type,
                                     .n_dims = 2,
                                     .ne = {k, n, 1, 1},
                                     .size = (size_t)(k * n / 256) * block,
                                     .data = data};
}

static void shape8b_init(struct shape8b *s)
{
    memset(s, 0, sizeof *s);
    s->model.arch = "llada";
    s->model.hp = (struct dllm_hparams){.n_layer = 32,
                                        .n_embd = 4096,
                                        .n_head = 32,
                                        .n_head_kv = 32,
                                        .head_dim = 128,
                                        .n_rot = 128,
                                        .n_ff = 12288,
                                        .n_vocab = 126464,
                                        .n_ctx = 4096};
    for (int i = 0; i < 4; i++)
        s->attn[i] = q_tensor(DLLM_TYPE_Q4_K, 4096, 4096, s);
    s->ffn_in[0] = s->ffn_in[1] = q_tensor(DLLM_TYPE_Q4_K, 4096, 12288, s);
    s->ffn_out = q_tensor(DLLM_TYPE_Q4_K, 12288, 4096, s);
    s->embd = q_tensor(DLLM_TYPE_Q4_K, 4096, 126464, &s->embd);
    s->output = q_tensor(DLLM_TYPE_Q6_K, 4096, 126464, &s->output);
    for (int il = 0; il < 32; il++)
        s->layers[il] = (struct dllm_layer){.attn_norm = &s->vector,
                                            .wq = &s->attn[0],
                                            .wk = &s->attn[1],
                                            .wv = &s->attn[2],
                                            .wo = &s->attn[3],
                                            .ffn_norm = &s->vector,
                                            .w_gate = &s->ffn_in[0],
                                            .w_up = &s->ffn_in[1],
                                            .w_down = &s->ffn_out};
    s->model.layers = s->layers;
    s->model.tok_embd = &s->embd;
    s->model.output = &s->output;
    s->model.output_norm = &s->vector;
}

/* dllm_gpu_bytes of the 8B shape for a canvas and logits rows (the default, scratch mode). */
static uint64_t plan_8b(const struct shape8b *s, int64_t canvas, int64_t rows)
{
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    fp.max_tokens = canvas;
    fp.max_rows = rows;
    return dllm_gpu_bytes(&s->model, &fp);
}

/*
 * The device memory planned for LLaDA-8B's shape, by hand. Weights: per layer 4 matrices of
 * 4096 x 4096 and 3 of 4096 x 12288 in Q4_K (144 bytes a 256), 122,683,392 bytes, times 32;
 * the embedding 291,373,056 (Q4_K) and the output 424,919,040 (Q6_K, 210 bytes a 256): in
 * all 4,642,160,640. Norms: (4096 + 32 * 2 * 4096) floats, 1,064,960 bytes. The runtime's
 * margin: 256 MiB. Per canvas position L: the activations X, XN, Q, K, V, ATT (4096 floats
 * each), GATE and UP (12288 each), 196,608 bytes, the FP16 copy of the widest input (12288
 * halves), 24,576 bytes, and the ids, rows and positions (4 bytes each, each part rounded up
 * to 256). Per logits row R: the final-normed row (16,384 bytes), the logits (126464
 * floats, 505,856 bytes; for 256 rows at most) and the row's statistics (32 bytes). The FP16
 * scratch for slices of a matrix: 64 Mi halves (no layer matrix is larger), 134,217,728 bytes.
 * The attention's scores: 32 heads x L x L floats up to its budget of 16 Mi floats (at L =
 * 4096, 128 query rows of 32 x 4096), and its 5 pointers a head, 1,280 bytes.
 */
START_TEST(test_plan_8b)
{
    static struct shape8b s;
    shape8b_init(&s);
    const uint64_t fixed = 4642160640u + 1064960u + 268435456u + 134217728u;
    /* Canvas 160 (a 32-token prompt and 128 to generate), 32 rows (a block of 32). */
    const uint64_t at160 = fixed + 160 * (196608u + 24576u) + 3 * 768 + 32 * (16384u + 505856u) +
                           1024 + 32 * 160 * 160 * 4u + 1280;
    ck_assert_uint_eq(plan_8b(&s, 160, 32), at160);
    ck_assert_uint_eq(at160, 5101261312u);
    /* Canvas 512, 32 rows. */
    const uint64_t at512 = fixed + 512 * (196608u + 24576u) + 3 * 2048 + 32 * (16384u + 505856u) +
                           1024 + 32 * 512 * 512 * 4u + 1280;
    ck_assert_uint_eq(plan_8b(&s, 512, 32), at512);
    /* The target: at canvas 512, at most the file's tensors plus 1.5 GB. */
    ck_assert_uint_le(at512 - 4642160640u - 1064960u, 1500000000u);
    /*
     * A default canvas of 4096 with a row for each position: the logits for 256 rows at a time
     * (the rest are computed in groups), the final-normed rows and statistics for all.
     */
    const uint64_t at4096 = fixed + 4096 * (196608u + 24576u) + 3 * 16384 + 4096 * 16384u +
                            256 * 505856u + 4096 * 32u + 128 * 32 * 4096 * 4u + 1280;
    ck_assert_uint_eq(plan_8b(&s, 4096, 4096), at4096);
    ck_assert_uint_eq(plan_8b(&s, 4096, 4096) - plan_8b(&s, 4096, 256), 3840 * (16384u + 32u));
}
END_TEST

/* The real runtime: without a driver or a GPU it says which; with a GPU it counts it. */
START_TEST(test_real_runtime)
{
    struct dllm_error err = {0};
    int n = -1;
    ck_assert(dllm_gpu_built());
    enum dllm_status st = dllm_gpu_count(&n, &err);
    if (st == DLLM_OK) {
        ck_assert_int_ge(n, 1);
        struct dllm_gpu_info gpu;
        ck_assert_int_eq(dllm_gpu_info(0, &gpu, &err), DLLM_OK);
        ck_assert_int_gt(gpu.total_bytes, 0);
        ck_assert_int_eq(dllm_gpu_info(n, &gpu, &err), DLLM_ERR_ARG);
    } else {
        ck_assert_int_eq(st, DLLM_ERR_UNSUPPORTED);
        ck_assert_int_eq(n, 0);
        ck_assert_msg(strncmp(err.text, "no usable NVIDIA driver: ", 25) == 0 ||
                          strncmp(err.text, "no CUDA GPU: ", 13) == 0,
                      "%s", err.text);
    }
}
END_TEST
#else
START_TEST(test_not_built)
{
    struct dllm_error err = {0};
    struct dllm_gpu_info gpu;
    int n = -1;
    ck_assert(!dllm_gpu_built());
    ck_assert_int_eq(dllm_gpu_count(&n, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_int_eq(n, 0);
    ck_assert_str_eq(err.text, "this libdllm was built without the CUDA backend");
    ck_assert_int_eq(dllm_gpu_info(0, &gpu, &err), DLLM_ERR_UNSUPPORTED);
    char *path = fixture_path("models/llada-tiny-q4km.gguf");
    struct dllm_model *m = NULL;
    ck_assert_int_eq(dllm_model_open(path, NULL, &m, &err), DLLM_OK);
    ck_assert_int_eq(dllm_gpu_check_model(m, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text, "this libdllm was built without the CUDA backend");
    struct dllm_forward_params fp;
    dllm_forward_params_init(&fp);
    ck_assert_int_eq(dllm_gpu_check(0, m, &fp, 0, &gpu, &err), DLLM_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.text, "this libdllm was built without the CUDA backend");
    dllm_model_close(m);
    free(path);
    ck_assert_int_eq(forward_on("models/llada-tiny-q4km.gguf", "cuda", &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "unknown backend 'cuda': this build has cpu");
}
END_TEST
#endif

static Suite *gpu_suite(void)
{
    Suite *s = suite_create("gpu");
    TCase *tc = tcase_create("errors");
#ifdef DLLM_HAVE_CUDA
    tcase_add_test(tc, test_no_driver);
    tcase_add_test(tc, test_no_device);
    tcase_add_test(tc, test_capability);
    tcase_add_test(tc, test_memory);
    tcase_add_test(tc, test_launch_failure);
    tcase_add_test(tc, test_cublas_failure);
    tcase_add_test(tc, test_fault_once);
    tcase_add_test(tc, test_real_runtime);
    tcase_add_test(tc, test_backend_create);
    tcase_add_test(tc, test_pass_failure);
    tcase_add_test(tc, test_pass_async_failure);
    tcase_add_test(tc, test_pass_call_failures);
    tcase_add_test(tc, test_host_memory);
    tcase_add_test(tc, test_check_model);
    tcase_add_test(tc, test_check_order);
    tcase_add_test(tc, test_pass_sticky_failure);
    tcase_add_test(tc, test_request_failure);
    tcase_add_test(tc, test_plan_8b);
#else
    tcase_add_test(tc, test_not_built);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run_suite(gpu_suite());
}
