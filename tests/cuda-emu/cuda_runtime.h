/*
 * A stand-in for the CUDA runtime that runs dllm's kernels (cuda/kernels-*.cu, compiled as C++
 * with DLLM_CUDA_EMU) on the host, so that make check runs them without a GPU: "device" memory
 * is host memory, every call succeeds at once, and a launch (DLLM_LAUNCH, cuda/launch.cuh) runs
 * the grid's blocks one after another, each block's threads as host threads (a pool kept for
 * the program) that meet at __syncthreads on a barrier; __shared__ arrays become static ones,
 * which the one block running at a time owns. The maths is the host's (no fused multiply-add unless
 * the compiler makes one), so what this proves is the kernels' indexing, synchronisation and
 * control flow, not the GPU's last bits. Only what the kernels and tests/gpu/kernel_check.c use is
 * here.
 */
#ifndef DLLM_CUDA_EMU_RUNTIME_H
#define DLLM_CUDA_EMU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2
} cudaError_t;
typedef void *cudaStream_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice,
};
struct cudaDeviceProp {
    char name[256];
    int major, minor;
};

static inline cudaError_t cudaMalloc(void *p, size_t bytes)
{
    void *m = malloc(bytes ? bytes : 1);
    memcpy(p, &m, sizeof m);
    return m ? cudaSuccess : cudaErrorMemoryAllocation;
}

static inline cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}

static inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                                     enum cudaMemcpyKind kind)
{
    (void)kind;
    memmove(dst, src, bytes);
    return cudaSuccess;
}

static inline cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

static inline cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

static inline cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}

static inline cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int device)
{
    (void)device;
    memset(p, 0, sizeof *p);
    strcpy(p->name, "host emulation (tests/cuda-emu)");
    return cudaSuccess;
}

static inline const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess             ? "no error"
           : e == cudaErrorInvalidValue ? "invalid argument"
                                        : "out of memory";
}

#ifdef __cplusplus
#include <barrier>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
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
inline thread_local std::barrier<> *dllm_emu_barrier;

#define __syncthreads() dllm_emu_barrier->arrive_and_wait()

/*
 * The host threads that play a block's threads, started on the first launch and kept: a
 * launch hands each of the first `block` of them its part (thread t of every block in turn)
 * and waits until all are done.
 */
struct dllm_emu_pool {
    std::mutex lock;
    std::condition_variable wake, done;
    std::function<void(unsigned)> part; /* the launch's work for thread t */
    unsigned n_threads = 0, busy = 0;
    unsigned long generation = 0;
    std::vector<std::thread> threads;

    static dllm_emu_pool &get()
    {
        static dllm_emu_pool pool;
        return pool;
    }

    ~dllm_emu_pool()
    {
        {
            std::lock_guard<std::mutex> g(lock);
            part = nullptr;
            generation++;
        }
        wake.notify_all();
        for (std::thread &t : threads)
            t.join();
    }

    /* Runs part(t) for t < n on the pool's threads and returns when every one has. */
    void run(unsigned n, std::function<void(unsigned)> work)
    {
        while (threads.size() < n)
            threads.emplace_back([this, t = (unsigned)threads.size()] { serve(t); });
        std::unique_lock<std::mutex> g(lock);
        part = std::move(work);
        n_threads = n;
        busy = n;
        generation++;
        wake.notify_all();
        done.wait(g, [this] { return busy == 0; });
    }

    void serve(unsigned t)
    {
        unsigned long seen = 0;
        for (;;) {
            std::function<void(unsigned)> work;
            {
                std::unique_lock<std::mutex> g(lock);
                wake.wait(g, [&] { return generation != seen; });
                seen = generation;
                if (!part)
                    return;
                if (t >= n_threads)
                    continue;
                work = part;
            }
            work(t);
            std::lock_guard<std::mutex> g(lock);
            if (--busy == 0)
                done.notify_one();
        }
    }
};

/*
 * A launch of kernel on grid blocks of block threads, called with the kernel's arguments: the
 * blocks run one after another; a block's threads meet at __syncthreads on that block's own
 * barrier (a thread that returns drops out of it), and at the block's end on another, so that
 * the next block finds the static "__shared__" arrays free.
 */
template <typename Kernel> struct dllm_emu_launcher {
    Kernel kernel;
    unsigned grid, block;

    template <typename... Args> void operator()(Args... args) const
    {
        gridDim = {grid, 1, 1};
        blockDim = {block, 1, 1};
        std::vector<std::unique_ptr<std::barrier<>>> inside(grid);
        for (std::unique_ptr<std::barrier<>> &b : inside)
            b = std::make_unique<std::barrier<>>((std::ptrdiff_t)block);
        std::barrier<> between((std::ptrdiff_t)block);
        dllm_emu_pool::get().run(block, [&](unsigned t) {
            for (unsigned b = 0; b < grid; b++) {
                blockIdx = {b, 0, 0};
                threadIdx = {t, 0, 0};
                dllm_emu_barrier = inside[b].get();
                kernel(args...);
                inside[b]->arrive_and_drop();
                between.arrive_and_wait();
            }
        });
    }
};

template <typename Kernel>
dllm_emu_launcher<Kernel> dllm_emu_launch(Kernel k, unsigned grid, unsigned block)
{
    return dllm_emu_launcher<Kernel>{k, grid, block};
}
#endif /* __cplusplus */

#endif
