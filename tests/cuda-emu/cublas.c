/* The stand-in cuBLAS (cublas_v2.h): its product on the host, over emulated device memory. */
#include "cublas_v2.h"

#include "gguf/quant.h"

#include <stdlib.h>

struct dllm_emu_blas {
    cudaStream_t stream;
};

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    *handle = calloc(1, sizeof **handle);
    return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t s)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

/*
 * Whether a column-major rows x cols matrix of elem-byte elements with leading dimension ld
 * (at least rows) lies wholly in device memory.
 */
static bool matrix_on_device(const void *p, int rows, int cols, int ld, size_t elem)
{
    return ld >= rows && ld >= 1 &&
           dllm_emu_on_device(p, ((size_t)ld * (size_t)(cols - 1) + (size_t)rows) * elem);
}

/*
 * op(M) as a row-major float matrix out[r][c] (r < rows, c < cols) from the binary16 column-major
 * M with leading dimension ld: out[r][c] = M[r + c ld], or M[c + r ld] when transposed.
 */
static void unpack(const uint16_t *M, bool transposed, int rows, int cols, int ld, float *out)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            out[(size_t)r * (size_t)cols + (size_t)c] =
                dllm_fp16_to_f32(transposed ? M[(size_t)c + (size_t)r * (size_t)ld]
                                            : M[(size_t)r + (size_t)c * (size_t)ld]);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
    (void)algo;
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (Atype != CUDA_R_16F || Btype != CUDA_R_16F || Ctype != CUDA_R_32F ||
        compute != CUBLAS_COMPUTE_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (m < 0 || n < 0 || k < 0 || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0)
        return CUBLAS_STATUS_SUCCESS;
    if (dllm_emu_enqueue(handle->stream) != cudaSuccess) /* a stream that is not dllm's one */
        return CUBLAS_STATUS_EXECUTION_FAILED;
    const bool ta = transa == CUBLAS_OP_T, tb = transb == CUBLAS_OP_T;
    if ((k > 0 && (!matrix_on_device(A, ta ? k : m, ta ? m : k, lda, 2) ||
                   !matrix_on_device(B, tb ? n : k, tb ? k : n, ldb, 2))) ||
        !matrix_on_device(C, m, n, ldc, 4))
        return CUBLAS_STATUS_INVALID_VALUE;
    float *a = malloc((size_t)m * (size_t)k * sizeof *a + 1),
          *b = malloc((size_t)n * (size_t)k * sizeof *b + 1);
    if (!a || !b) {
        free(a);
        free(b);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    unpack(A, ta, m, k, lda, a);  /* a[i][p] = op(A)(i, p) */
    unpack(B, !tb, n, k, ldb, b); /* b[j][p] = op(B)(p, j) */
    const float al = *(const float *)alpha, be = *(const float *)beta;
    float *c = C;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float s = 0;
            for (int p = 0; p < k; p++)
                s += a[(size_t)i * (size_t)k + (size_t)p] * b[(size_t)j * (size_t)k + (size_t)p];
            float *y = &c[(size_t)i + (size_t)j * (size_t)ldc];
            *y = be == 0 ? al * s : al * s + be * *y; /* beta 0: C is not read, as cuBLAS */
        }
    free(a);
    free(b);
    return CUBLAS_STATUS_SUCCESS;
}

/* The library's names and texts of the codes above. */
static const struct dllm_emu_code statuses[] = {
    {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS", "success"},
    {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED",
     "the library was not initialized"},
    {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"},
    {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE",
     "an invalid numeric value was used as an argument"},
    {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED",
     "the GPU program failed to execute"},
    {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED",
     "the functionality requested is not supported"},
};
#define N_STATUSES (sizeof statuses / sizeof statuses[0])

const char *cublasGetStatusName(cublasStatus_t s)
{
    return dllm_emu_code_word(statuses, N_STATUSES, s, false, "CUBLAS_STATUS_UNKNOWN");
}

const char *cublasGetStatusString(cublasStatus_t s)
{
    return dllm_emu_code_word(statuses, N_STATUSES, s, true, "unknown error");
}
