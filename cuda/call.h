/*
 * The one way the CUDA backend calls the CUDA runtime, cuBLAS and its own kernel launchers:
 * DLLM_CUDA(err, call) and DLLM_CUBLAS(err, call) run the call and, when it fails, record in
 * err the call's text and the library's error string ("cudaMalloc(&p, bytes) failed: out of
 * memory (cudaErrorMemoryAllocation)"). A test may inject a failure into the next call whose
 * text starts with a given prefix (dllm_cuda_fault_inject); the call then does not run. A test
 * may also run dry (dllm_cuda_fault_dry): every call succeeds without running, so that a
 * context and its passes run on a machine without a GPU and the injected failure is the one.
 */
#ifndef DLLM_CUDA_CALL_H
#define DLLM_CUDA_CALL_H

#include "dllm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdbool.h>

/* The library a call belongs to, for its error string. */
enum dllm_cuda_lib { DLLM_CUDA_RUNTIME, DLLM_CUDA_CUBLAS };

/*
 * Tests only: the next call of lib whose text starts with prefix fails with code (a
 * cudaError_t or cublasStatus_t) without running; prefix NULL clears. Not thread-safe, not
 * exported from the shared library.
 */
void dllm_cuda_fault_inject(enum dllm_cuda_lib lib, const char *prefix, int code);

/*
 * Tests only: as dllm_cuda_fault_inject, but the failure sticks as a GPU fault does (an
 * illegal address, say): every later call fails too, a runtime call with code, a cuBLAS call
 * with CUBLAS_STATUS_EXECUTION_FAILED, until dllm_cuda_fault_inject clears it.
 */
void dllm_cuda_fault_inject_sticky(enum dllm_cuda_lib lib, const char *prefix, int code);

/*
 * Tests only: while dry, every call that no injected fault takes succeeds without running
 * (the runtime is never asked) and the backend does not look for a GPU; its device pointers
 * stay NULL and no result it copies out is written. Not thread-safe, not exported.
 */
void dllm_cuda_fault_dry(bool dry);

/* Whether calls run dry (dllm_cuda_fault_dry). */
bool dllm_cuda_dry(void);

/* Whether a fault is injected for this call (and *code, consuming it), or the call runs dry
 * (*code 0). */
bool dllm_cuda_fault_take(enum dllm_cuda_lib lib, const char *call, int *code);

/* DLLM_OK for a success (code 0), else the status of code with err naming call and code. */
enum dllm_status dllm_cuda_result(enum dllm_cuda_lib lib, int code, const char *call,
                                  struct dllm_error *err);

/* The code of the last call that failed on this thread (0 before any). */
int dllm_cuda_last_code(void);

/* Runs a CUDA runtime call (or a launcher returning cudaError_t): its enum dllm_status. */
#define DLLM_CUDA(err, call)                                                                       \
    __extension__({                                                                                \
        int dllm_code_;                                                                            \
        if (!dllm_cuda_fault_take(DLLM_CUDA_RUNTIME, #call, &dllm_code_))                          \
            dllm_code_ = (int)(call);                                                              \
        dllm_cuda_result(DLLM_CUDA_RUNTIME, dllm_code_, #call, err);                               \
    })

/* Runs a cuBLAS call: its enum dllm_status. */
#define DLLM_CUBLAS(err, call)                                                                     \
    __extension__({                                                                                \
        int dllm_code_;                                                                            \
        if (!dllm_cuda_fault_take(DLLM_CUDA_CUBLAS, #call, &dllm_code_))                           \
            dllm_code_ = (int)(call);                                                              \
        dllm_cuda_result(DLLM_CUDA_CUBLAS, dllm_code_, #call, err);                                \
    })

#endif
