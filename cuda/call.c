/* The CUDA call wrapper's error text and its fault injection (call.h). */
#include "config.h"

#include "call.h"

#include <string.h>

static struct {
    enum dllm_cuda_lib lib;
    char prefix[128];
    int code;
    bool armed;
    bool sticky;  /* the armed fault sticks once it has struck */
    bool tripped; /* a sticky fault struck: every call fails */
    bool dry;
} fault;

static _Thread_local int last_code;

int dllm_cuda_last_code(void)
{
    return last_code;
}

void dllm_cuda_fault_inject(enum dllm_cuda_lib lib, const char *prefix, int code)
{
    fault.armed = prefix != NULL;
    fault.sticky = fault.tripped = false;
    if (!prefix)
        return;
    fault.lib = lib;
    fault.code = code;
    strncpy(fault.prefix, prefix, sizeof fault.prefix - 1);
    fault.prefix[sizeof fault.prefix - 1] = '\0';
}

void dllm_cuda_fault_inject_sticky(enum dllm_cuda_lib lib, const char *prefix, int code)
{
    dllm_cuda_fault_inject(lib, prefix, code);
    fault.sticky = prefix != NULL;
}

void dllm_cuda_fault_dry(bool dry)
{
    fault.dry = dry;
}

bool dllm_cuda_dry(void)
{
    return fault.dry;
}

bool dllm_cuda_fault_take(enum dllm_cuda_lib lib, const char *call, int *code)
{
    if (fault.tripped) {
        *code = lib == DLLM_CUDA_CUBLAS ? (int)CUBLAS_STATUS_EXECUTION_FAILED : fault.code;
        return true;
    }
    if (!fault.armed || fault.lib != lib || strncmp(call, fault.prefix, strlen(fault.prefix))) {
        *code = 0;
        return fault.dry;
    }
    fault.armed = false;
    fault.tripped = fault.sticky;
    *code = fault.code;
    return true;
}

/* The dllm status of a CUDA runtime error: memory, a missing driver or device, or the GPU's. */
static enum dllm_status runtime_status(cudaError_t e)
{
    switch (e) {
    case cudaErrorMemoryAllocation: return DLLM_ERR_NOMEM;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion: return DLLM_ERR_UNSUPPORTED;
    default: return DLLM_ERR_DEVICE;
    }
}

enum dllm_status dllm_cuda_result(enum dllm_cuda_lib lib, int code, const char *call,
                                  struct dllm_error *err)
{
    if (code == 0)
        return DLLM_OK;
    last_code = code;
    if (lib == DLLM_CUDA_CUBLAS) {
        const cublasStatus_t s = (cublasStatus_t)code;
        return dllm_error_set(
            err, s == CUBLAS_STATUS_ALLOC_FAILED ? DLLM_ERR_NOMEM : DLLM_ERR_DEVICE,
            "%s failed: %s (%s)", call, cublasGetStatusString(s), cublasGetStatusName(s));
    }
    const cudaError_t e = (cudaError_t)code;
    /* A failed call leaves its error as the thread's last one; clear it for the next call. */
    cudaGetLastError();
    return dllm_error_set(err, runtime_status(e), "%s failed: %s (%s)", call, cudaGetErrorString(e),
                          cudaGetErrorName(e));
}
