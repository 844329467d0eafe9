/*
 * A stand-in for the CUDA runtime that runs dllm's CUDA code on the host, so that make check
 * runs it without a GPU: the kernels (cuda/kernels-*.cu, compiled as C++ with DLLM_CUDA_EMU)
 * and, through tests/libdllm-emu, the whole CUDA backend (the C files of cuda/). One emulated
 * GPU, device 0 of compute capability 9.0 with DLLM_EMU_GPU_BYTES of memory (DLLM_EMU_GPU_MB
 * megabytes where the environment sets it). Its "device" memory is host memory that runtime.c
 * keeps a list of, each allocation ending at a page no access is allowed to, so that a kernel
 * running past an allocation faults and a copy in the wrong direction or past its allocation,
 * a free of memory it did not allocate and a kernel given a host pointer are refused
 * (cudaErrorInvalidValue), where a GPU's behaviour is undefined. Work runs when it is
 * enqueued, but each stream remembers work not synchronised since: work enqueued on one stream
 * while another has some is refused, as the two would race on a GPU (dllm keeps all its work
 * on one stream). A launch (DLLM_LAUNCH, cuda/launch.cuh) runs the grid's blocks one after
 * another, each block's threads as fibers that take turns between __syncthreads, in thread
 * order or its reverse (alternately, so that a missing barrier shows); __shared__ arrays
 * become static ones, which the one block running at a time owns. The maths is the host's (no
 * fused multiply-add unless the compiler makes one), so what this proves is the code's
 * indexing, synchronisation, memory use and control flow, not the GPU's last bits. Only what
 * dllm calls is here; the error codes are the real runtime's.
 */
#ifndef DLLM_CUDA_EMU_RUNTIME_H
#define DLLM_CUDA_EMU_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The emulated GPU's memory, unless the environment's DLLM_EMU_GPU_MB says otherwise. */
#define DLLM_EMU_GPU_BYTES ((size_t)16 << 30)

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorUnsupportedPtxVersion = 222
} cudaError_t;
typedef void *cudaStream_t;
typedef struct dllm_emu_event *cudaEvent_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
};
#define cudaStreamNonBlocking 0x01
struct cudaDeviceProp {
    char name[256];
    int major, minor;
};

/* *(void **)p = bytes of device memory. */
cudaError_t cudaMalloc(void *p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
/*
 * Events: a record is work on its stream, timed by the host's clock as it is enqueued (work
 * runs then); cudaEventElapsedTime refuses an event not recorded (cudaErrorInvalidResourceHandle)
 * and one whose stream has not been synchronised since (cudaErrorNotReady), where a GPU may not
 * have reached it yet, and an event made with cudaEventDisableTiming
 * (cudaErrorInvalidResourceHandle). A stream waiting for an event (cudaStreamWaitEvent) has
 * nothing to wait for, since work runs as it is enqueued: the call checks its stream and event.
 */
#define cudaEventDisableTiming 0x02
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDeviceCount(int *n);
/* Makes device 0's primary context active, as the runtime does since CUDA 12. */
cudaError_t cudaSetDevice(int device);
/* Makes the primary context inactive; aborts the program (the library must never do this)
 * while device memory is allocated, which a GPU's reset would destroy. */
cudaError_t cudaDeviceReset(void);
/*
 * The driver's cuDeviceGet and cuDevicePrimaryCtxGetState (device 0's state as the calls here
 * leave it); any other symbol is not found. With DLLM_EMU_CONTEXTS set in the environment, the
 * state is also written to standard error as the program exits ("cuda-emu: primary context
 * active" or "inactive").
 */
enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess = 0,
    cudaDriverEntryPointSymbolNotFound = 1,
};
#define cudaEnableDefault 0x0ULL
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *found);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int device);
cudaError_t cudaDriverGetVersion(int *version);
cudaError_t cudaRuntimeGetVersion(int *version);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);

/* Whether bytes from p lie inside one allocation of device memory (p itself for bytes 0). */
bool dllm_emu_on_device(const void *p, size_t bytes);

/* Records e as the thread's last error (cudaGetLastError's). */
void dllm_emu_fail(cudaError_t e);

/* A library's code with its name and text (cudaGetErrorName and cudaGetErrorString's). */
struct dllm_emu_code {
    int code;
    const char *name, *text;
};

/* The name (or the text) of code in table[0 .. n), or unknown when it has none. */
const char *dllm_emu_code_word(const struct dllm_emu_code *table, size_t n, int code, bool text,
                               const char *unknown);

/*
 * Work enqueued on stream s: cudaSuccess, or cudaErrorInvalidValue when s is not a live stream
 * or another stream has work not synchronised yet (recorded as the last error).
 */
cudaError_t dllm_emu_enqueue(cudaStream_t s);

/*
 * A fiber's stack of bytes with a page no access is allowed to below it: its lowest byte, or
 * NULL when it cannot be mapped.
 */
char *dllm_emu_stack_new(size_t bytes);
void dllm_emu_stack_free(char *stack, size_t bytes);

/*
 * Fibers for a block's threads (x86-64 System V): dllm_emu_fiber_new prepares the stack of
 * bytes at stack to run start (which must never return) and gives its stack pointer;
 * dllm_emu_switch saves the running fiber's stack pointer in *from and resumes the one at to.
 * The floating-point control words (MXCSR, x87) are not switched: nothing here changes them.
 */
void *dllm_emu_fiber_new(char *stack, size_t bytes, void (*start)(void));
void dllm_emu_switch(void **from, void *to);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
#include <functional>
#include <mutex>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __shared__           static
#define __launch_bounds__(n) /* the grid's own concern */

struct dllm_emu_dim {
    unsigned x, y, z;
};
inline thread_local dllm_emu_dim threadIdx, blockIdx;
inline dllm_emu_dim blockDim, gridDim;

/*
 * A block's threads as fibers on the launching host thread, kept for the thread: each runs
 * until it reaches __syncthreads or returns, then the next one does (in thread order, or in
 * reverse); when all have, those at the barrier go on together. Switching fibers costs far
 * less than waking host threads.
 */
struct dllm_emu_block {
    static constexpr size_t stack_bytes = 64 << 10;
    std::vector<char *> stack;
    std::vector<void *> sp; /* each fiber's saved stack pointer */
    std::vector<bool> finished;
    void *scheduler = nullptr;
    unsigned current = 0;
    std::function<void()> body; /* the kernel, called with its arguments */

    static dllm_emu_block &get()
    {
        static thread_local dllm_emu_block block;
        return block;
    }

    ~dllm_emu_block()
    {
        for (char *s : stack)
            dllm_emu_stack_free(s, stack_bytes);
    }

    /* A fiber's life: the kernel, then back to the scheduler for good. */
    static void start()
    {
        dllm_emu_block &b = get();
        b.body();
        b.finished[b.current] = true;
        dllm_emu_switch(&b.sp[b.current], b.scheduler);
    }

    /*
     * Runs work as the n threads of one block, each turn in thread order or (reverse) the other
     * way; returns when every one has returned, or false at once when the stacks cannot be had.
     */
    bool run(unsigned n, bool reverse, std::function<void()> work)
    {
        body = std::move(work);
        while (stack.size() < n) {
            char *s = dllm_emu_stack_new(stack_bytes);
            if (!s)
                return false;
            stack.push_back(s);
        }
        sp.resize(stack.size());
        finished.assign(n, false);
        for (unsigned t = 0; t < n; t++)
            sp[t] = dllm_emu_fiber_new(stack[t], stack_bytes, start);
        for (unsigned left = n; left > 0;) {
            for (unsigned i = 0; i < n; i++) {
                const unsigned t = reverse ? n - 1 - i : i;
                if (finished[t])
                    continue;
                current = t;
                threadIdx = {t, 0, 0};
                dllm_emu_switch(&scheduler, sp[t]);
                left -= finished[t];
            }
        }
        return true;
    }

    /* __syncthreads: back to the scheduler, which resumes this thread once all have arrived. */
    void sync()
    {
        dllm_emu_switch(&sp[current], scheduler);
    }
};

#define __syncthreads() dllm_emu_block::get().sync()

/* One launch at a time in the process: the grid's sizes and the "__shared__" arrays are global. */
inline std::mutex dllm_emu_launch_lock;
inline unsigned long dllm_emu_launches;

/*
 * A launch of kernel on grid blocks of block threads in stream, called with the kernel's
 * arguments: the blocks run one after another, so that each finds the static "__shared__"
 * arrays its own, alternately in thread order and in reverse. A launch fails before it runs
 * (its error recorded for cudaGetLastError) when its size is not one a GPU runs
 * (cudaErrorInvalidConfiguration), when its stream may not take work (dllm_emu_enqueue) or
 * when a pointer argument is not device memory (cudaErrorInvalidValue).
 */
template <typename Kernel> struct dllm_emu_launcher {
    Kernel kernel;
    unsigned grid, block;
    cudaStream_t stream;

    template <typename... Args> void operator()(Args... args) const
    {
        if (grid < 1 || block < 1 || block > 1024) {
            dllm_emu_fail(cudaErrorInvalidConfiguration);
            return;
        }
        if (dllm_emu_enqueue(stream) != cudaSuccess)
            return;
        bool host = false;
        (
            [&] {
                if constexpr (std::is_pointer_v<Args>)
                    host = host || (args && !dllm_emu_on_device(args, 0));
            }(),
            ...);
        if (host) {
            dllm_emu_fail(cudaErrorInvalidValue);
            return;
        }
        std::lock_guard<std::mutex> one_at_a_time(dllm_emu_launch_lock);
        gridDim = {grid, 1, 1};
        blockDim = {block, 1, 1};
        const unsigned long launch = dllm_emu_launches++;
        for (unsigned b = 0; b < grid; b++) {
            blockIdx = {b, 0, 0};
            if (!dllm_emu_block::get().run(block, (launch + b) % 2 == 1,
                                           [&] { kernel(args...); })) {
                dllm_emu_fail(cudaErrorMemoryAllocation);
                return;
            }
        }
    }
};

template <typename Kernel>
dllm_emu_launcher<Kernel> dllm_emu_launch(Kernel k, unsigned grid, unsigned block,
                                          cudaStream_t stream)
{
    return dllm_emu_launcher<Kernel>{k, grid, block, stream};
}
#endif /* __cplusplus */

#endif
