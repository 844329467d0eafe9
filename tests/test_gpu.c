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
#include "call.h"
#include "probe.h"
#endif

#include <check.h>
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
    ck_assert_int_eq(dllm_cuda_check_memory(0, 20000000000u, 4000000000u, &err), DLLM_ERR_NOMEM);
    ck_assert_str_eq(err.text, "the model needs 20.0 GB of GPU memory on GPU 0 but 4.0 GB is free");
    ck_assert_int_eq(dllm_cuda_check_memory(0, 4000000000u, 4000000000u, &err), DLLM_OK);
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
