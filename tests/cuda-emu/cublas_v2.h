/*
 * A stand-in for cuBLAS (tests/cuda-emu/cuda_runtime.h says why): the handle calls and the
 * products dllm makes, cublasGemmEx with binary16 inputs and cublasGemmBatchedEx with float
 * ones, float output and float accumulation, done on the host (cublas.c). The codes are the
 * real library's.
 */
#ifndef DLLM_CUDA_EMU_CUBLAS_H
#define DLLM_CUDA_EMU_CUBLAS_H

#include "cuda_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dllm_emu_blas *cublasHandle_t;
typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUDA_R_32F = 0, CUDA_R_16F = 2 } cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t s);

/*
 * C = alpha op(A) op(B) + beta C in the handle's stream (cublasSetStream; the legacy one
 * before), column-major: op(A) m x k, op(B) k x n, C m x n; A and B binary16, C float
 * (CUDA_R_32F), alpha and beta floats on the host. Other types are
 * CUBLAS_STATUS_NOT_SUPPORTED; a matrix that is not wholly device memory, or a leading
 * dimension shorter than its rows, CUBLAS_STATUS_INVALID_VALUE; a stream that may not take work
 * (dllm_emu_enqueue) CUBLAS_STATUS_EXECUTION_FAILED.
 */
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo);

/*
 * For i < batchCount, the product above with Aarray[i], Barray[i] and Carray[i] (arrays in
 * device memory), all three float (CUDA_R_32F); the same refusals, and
 * CUBLAS_STATUS_INVALID_VALUE for a pointer array that is not device memory.
 */
cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                   cublasOperation_t transb, int m, int n, int k, const void *alpha,
                                   const void *const Aarray[], cudaDataType Atype, int lda,
                                   const void *const Barray[], cudaDataType Btype, int ldb,
                                   const void *beta, void *const Carray[], cudaDataType Ctype,
                                   int ldc, int batchCount, cublasComputeType_t compute,
                                   cublasGemmAlgo_t algo);

const char *cublasGetStatusName(cublasStatus_t s);
const char *cublasGetStatusString(cublasStatus_t s);

#ifdef __cplusplus
}
#endif

#endif
