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
 * op(M) as a row-major float matrix out[r][c] (r < rows, c < cols) from the column-major M of
 * binary16 or float elements with leading dimension ld: out[r][c] = M[r + c ld], or
 * M[c + r ld] when transposed.
 */
static void unpack(const void *M, cudaDataType type, bool transposed, int rows, int cols, int ld,
                   float *out)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const size_t at = transposed ? (size_t)c + (size_t)r * (size_t)ld
                                         : (size_t)r + (size_t)c * (size_t)ld;
            out[(size_t)r * (size_t)cols + (size_t)c] =
                type == CUDA_R_16F ? dllm_fp16_to_f32(((const uint16_t *)M)[at])
                                   : ((const float *)M)[at];
        }
}

/* The shape of a product C = alpha op(A) op(B) + beta C (cublas_v2.h). */
struct gemm {
    bool ta, tb;
    int m, n, k, lda, ldb, ldc;
    cudaDataType atype; /* of A and B; C is float */
    float alpha, beta;
};

/* Whether A, B and C of product g lie wholly in device memory. */
static bool operands_on_device(const struct gemm *g, const void *A, const void *B, const void *C)
{
    const size_t e = g->atype == CUDA_R_16F ? 2 : 4;
    return (g->k == 0 ||
            (matrix_on_device(A, g->ta ? g->k : g->m, g->ta ? g->m : g->k, g->lda, e) &&
             matrix_on_device(B, g->tb ? g->n : g->k, g->tb ? g->k : g->n, g->ldb, e))) &&
           matrix_on_device(C, g->m, g->n, g->ldc, 4);
}

/* Product g, in float summed in order (the operands checked already). */
static cublasStatus_t multiply(const struct gemm *g, const void *A, const void *B, float *C)
{
    float *a = malloc((size_t)g->m * (size_t)g->k * sizeof *a + 1),
          *b = malloc((size_t)g->n * (size_t)g->k * sizeof *b + 1);
    if (!a || !b) {
        free(a);
        free(b);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    unpack(A, g->atype, g->ta, g->m, g->k, g->lda, a);  /* a[i][p] = op(A)(i, p) */
    unpack(B, g->atype, !g->tb, g->n, g->k, g->ldb, b); /* b[j][p] = op(B)(p, j) */
    for (int j = 0; j < g->n; j++)
        for (int i = 0; i < g->m; i++) {
            float s = 0;
            for (int p = 0; p < g->k; p++)
                s += a[(size_t)i * (size_t)g->k + (size_t)p] *
                     b[(size_t)j * (size_t)g->k + (size_t)p];
            float *y = &C[(size_t)i + (size_t)j * (size_t)g->ldc];
            *y = g->beta == 0 ? g->alpha * s : g->alpha * s + g->beta * *y; /* beta 0: C unread */
        }
    free(a);
    free(b);
    return CUBLAS_STATUS_SUCCESS;
}

/*
 * The checks every product call makes: the handle, the types (A and B of type atype, C float,
 * float accumulation), the sizes and scalars, and whether the handle's stream takes work;
 * CUBLAS_STATUS_SUCCESS and g filled in when the call may go on.
 */
static cublasStatus_t start(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            cudaDataType Atype, int lda, cudaDataType Btype, int ldb,
                            const void *beta, cudaDataType Ctype, int ldc,
                            cublasComputeType_t compute, cudaDataType atype, struct gemm *g)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (Atype != atype || Btype != atype || Ctype != CUDA_R_32F || compute != CUBLAS_COMPUTE_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (m < 0 || n < 0 || k < 0 || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m > 0 && n > 0 && dllm_emu_enqueue(handle->stream) != cudaSuccess) /* not dllm's stream */
        return CUBLAS_STATUS_EXECUTION_FAILED;
    *g = (struct gemm){transa == CUBLAS_OP_T, transb == CUBLAS_OP_T, m, n, k, lda, ldb, ldc, atype,
                       *(const float *)alpha, *(const float *)beta};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
    (void)algo;
    struct gemm g;
    const cublasStatus_t st = start(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb,
                                    beta, Ctype, ldc, compute, CUDA_R_16F, &g);
    if (st || m == 0 || n == 0)
        return st;
    if (!operands_on_device(&g, A, B, C))
        return CUBLAS_STATUS_INVALID_VALUE;
    return multiply(&g, A, B, C);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                   cublasOperation_t transb, int m, int n, int k, const void *alpha,
                                   const void *const Aarray[], cudaDataType Atype, int lda,
                                   const void *const Barray[], cudaDataType Btype, int ldb,
                                   const void *beta, void *const Carray[], cudaDataType Ctype,
                                   int ldc, int batchCount, cublasComputeType_t compute,
                                   cublasGemmAlgo_t algo)
{
    (void)algo;
    struct gemm g;
    cublasStatus_t st = start(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta,
                              Ctype, ldc, compute, CUDA_R_32F, &g);
    if (st || batchCount < 0)
        return st ? st : CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batchCount == 0)
        return CUBLAS_STATUS_SUCCESS;
    const size_t arrays = (size_t)batchCount * sizeof(void *);
    if (!dllm_emu_on_device(Aarray, arrays) || !dllm_emu_on_device(Barray, arrays) ||
        !dllm_emu_on_device(Carray, arrays))
        return CUBLAS_STATUS_INVALID_VALUE;
    for (int i = 0; i < batchCount; i++)
        if (!operands_on_device(&g, Aarray[i], Barray[i], Carray[i]))
            return CUBLAS_STATUS_INVALID_VALUE;
    for (int i = 0; i < batchCount && !st; i++)
        st = multiply(&g, Aarray[i], Barray[i], Carray[i]);
    return st;
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
