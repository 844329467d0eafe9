/*
 * The stand-in CUDA runtime's calls (cuda_runtime.h says what it emulates): device memory is
 * host memory listed here, every call checks its pointers against the list, and work is done
 * when it is enqueued.
 */
#include "cuda_runtime.h"

#include "clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The device allocations, unordered, and the streams (the first the legacy one, NULL). */
#define MAX_STREAMS 16
static struct {
    pthread_mutex_t lock;
    struct allocation {
        uintptr_t base;
        size_t bytes;
        void *map; /* the mapping it ends in, a page no access is allowed to after it */
        size_t map_bytes;
    } * list;
    size_t n, cap, used;
    struct stream {
        cudaStream_t id;
        bool pending; /* work enqueued since it was last synchronised */
    } streams[MAX_STREAMS];
    int n_streams;
} mem = {.lock = PTHREAD_MUTEX_INITIALIZER, .n_streams = 1};

static _Thread_local cudaError_t last_error;

/*
 * The emulated GPU's memory: DLLM_EMU_GPU_BYTES, or DLLM_EMU_GPU_MB megabytes where the
 * environment sets it (tests of a GPU too small for a request); under mem.lock.
 */
static size_t gpu_bytes(void)
{
    static size_t bytes;
    if (!bytes) {
        const char *mb = getenv("DLLM_EMU_GPU_MB");
        const long long n = mb ? atoll(mb) : 0;
        bytes = n > 0 ? (size_t)n << 20 : DLLM_EMU_GPU_BYTES;
    }
    return bytes;
}

void dllm_emu_fail(cudaError_t e)
{
    last_error = e;
}

/* Returns e, recorded as the thread's last error when it is one. */
static cudaError_t result(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
    return e;
}

/* The index of the allocation that holds bytes from p (p itself for bytes 0), or -1. */
static ptrdiff_t find(uintptr_t p, size_t bytes)
{
    for (size_t i = 0; i < mem.n; i++) {
        const struct allocation *a = &mem.list[i];
        if (p >= a->base && p - a->base < a->bytes && bytes <= a->bytes - (p - a->base))
            return (ptrdiff_t)i;
    }
    return -1;
}

/* Whether any byte from p to p + bytes is device memory (a range past the top counts). */
static bool overlaps(uintptr_t p, size_t bytes)
{
    if (bytes > UINTPTR_MAX - p)
        return true;
    for (size_t i = 0; i < mem.n; i++) {
        const struct allocation *a = &mem.list[i];
        if (p < a->base + a->bytes && a->base < p + (bytes ? bytes : 1))
            return true;
    }
    return false;
}

bool dllm_emu_on_device(const void *p, size_t bytes)
{
    pthread_mutex_lock(&mem.lock);
    const bool in = find((uintptr_t)p, bytes) >= 0;
    pthread_mutex_unlock(&mem.lock);
    return in;
}

/* The size of a page. */
static size_t page_bytes(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * Maps bytes (at least 1) ending 256-aligned where a page no access is allowed to begins; *map
 * and *map_bytes get the mapping; NULL when it fails.
 */
static void *map_guarded(size_t bytes, void **map, size_t *map_bytes)
{
    const size_t page = page_bytes(), body = (bytes + 255) / 256 * 256;
    const size_t span = (body + page - 1) / page * page + page;
    char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (mprotect(m + span - page, page, PROT_NONE) != 0) {
        munmap(m, span);
        return NULL;
    }
    *map = m;
    *map_bytes = span;
    return m + span - page - body;
}

cudaError_t cudaMalloc(void *p, size_t bytes)
{
    void *m = NULL, *map = NULL;
    size_t map_bytes = 0;
    const size_t size = bytes ? bytes : 1;
    memcpy(p, &m, sizeof m);
    pthread_mutex_lock(&mem.lock);
    cudaError_t e = cudaErrorMemoryAllocation;
    if (size <= gpu_bytes() - mem.used) {
        if (mem.n == mem.cap) {
            const size_t cap = mem.cap ? 2 * mem.cap : 16;
            struct allocation *list = realloc(mem.list, cap * sizeof *list);
            if (list) {
                mem.list = list;
                mem.cap = cap;
            }
        }
        if (mem.n < mem.cap && (m = map_guarded(size, &map, &map_bytes))) {
            mem.list[mem.n++] = (struct allocation){(uintptr_t)m, size, map, map_bytes};
            mem.used += size;
            memcpy(p, &m, sizeof m);
            e = cudaSuccess;
        }
    }
    pthread_mutex_unlock(&mem.lock);
    return result(e);
}

/* Frees p, which must be an allocation's start (or NULL, which does nothing); a synchronisation. */
cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    pthread_mutex_lock(&mem.lock);
    const ptrdiff_t i = find((uintptr_t)p, 0);
    const bool start = i >= 0 && mem.list[i].base == (uintptr_t)p;
    struct allocation a = {0};
    if (start) {
        a = mem.list[i];
        mem.used -= a.bytes;
        mem.list[i] = mem.list[--mem.n];
        for (int k = 0; k < mem.n_streams; k++)
            mem.streams[k].pending = false;
    }
    pthread_mutex_unlock(&mem.lock);
    if (!start)
        return result(cudaErrorInvalidValue);
    munmap(a.map, a.map_bytes);
    return cudaSuccess;
}

static cudaError_t copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind);

/*
 * A copy of the legacy stream: refused while another stream has work (dllm_emu_enqueue); a copy
 * to the device, or within it, may still be under way when it returns.
 */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    if (!bytes)
        return cudaSuccess;
    pthread_mutex_lock(&mem.lock);
    bool race = false;
    for (int k = 1; k < mem.n_streams; k++)
        race = race || mem.streams[k].pending;
    mem.streams[0].pending = !race && kind != cudaMemcpyDeviceToHost;
    pthread_mutex_unlock(&mem.lock);
    return race ? result(cudaErrorInvalidValue) : copy(dst, src, bytes, kind);
}

/* Copies bytes when the pointers are on the sides kind names, wholly inside their allocations. */
static cudaError_t copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    pthread_mutex_lock(&mem.lock);
    const bool dst_dev = find((uintptr_t)dst, bytes) >= 0,
               src_dev = find((uintptr_t)src, bytes) >= 0;
    const bool dst_host = !overlaps((uintptr_t)dst, bytes),
               src_host = !overlaps((uintptr_t)src, bytes);
    pthread_mutex_unlock(&mem.lock);
    const bool fits = kind == cudaMemcpyHostToDevice     ? dst_dev && src_host
                      : kind == cudaMemcpyDeviceToHost   ? dst_host && src_dev
                      : kind == cudaMemcpyDeviceToDevice ? dst_dev && src_dev
                                                         : false;
    if (!fits || !dst || !src)
        return result(cudaErrorInvalidValue);
    memmove(dst, src, bytes);
    return cudaSuccess;
}

/* The index of live stream s, or -1; under mem.lock. */
static int stream_index(cudaStream_t s)
{
    for (int i = 0; i < mem.n_streams; i++)
        if (mem.streams[i].id == s)
            return i;
    return -1;
}

cudaError_t dllm_emu_enqueue(cudaStream_t s)
{
    pthread_mutex_lock(&mem.lock);
    const int i = stream_index(s);
    bool race = false;
    for (int k = 0; k < mem.n_streams; k++)
        race = race || (k != i && mem.streams[k].pending);
    if (i >= 0 && !race)
        mem.streams[i].pending = true;
    pthread_mutex_unlock(&mem.lock);
    return result(i >= 0 && !race ? cudaSuccess : cudaErrorInvalidValue);
}

/*
 * Copies bytes in stream s (a copy to the device, or within it, may still be under way when the
 * call returns); a copy to the host ends with the stream synchronised.
 */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    cudaError_t e = bytes ? dllm_emu_enqueue(s) : cudaSuccess;
    if (e == cudaSuccess && bytes)
        e = copy(dst, src, bytes, kind);
    if (e == cudaSuccess && kind == cudaMemcpyDeviceToHost)
        e = cudaStreamSynchronize(s);
    return e;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    pthread_mutex_lock(&mem.lock);
    *free_bytes = gpu_bytes() - mem.used;
    *total_bytes = gpu_bytes();
    pthread_mutex_unlock(&mem.lock);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    pthread_mutex_lock(&mem.lock);
    for (int k = 0; k < mem.n_streams; k++)
        mem.streams[k].pending = false;
    pthread_mutex_unlock(&mem.lock);
    return cudaSuccess;
}

/* Streams are tokens (their own allocations) with their pending flag. */
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = NULL;
    pthread_mutex_lock(&mem.lock);
    void *token = mem.n_streams < MAX_STREAMS ? malloc(1) : NULL;
    if (token) {
        mem.streams[mem.n_streams++] = (struct stream){token, false};
        *s = token;
    }
    pthread_mutex_unlock(&mem.lock);
    return result(token ? cudaSuccess : cudaErrorMemoryAllocation);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    pthread_mutex_lock(&mem.lock);
    const int i = s ? stream_index(s) : -1;
    if (i >= 0)
        mem.streams[i] = mem.streams[--mem.n_streams];
    pthread_mutex_unlock(&mem.lock);
    if (i < 0)
        return result(cudaErrorInvalidValue);
    free(s);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    pthread_mutex_lock(&mem.lock);
    const int i = stream_index(s);
    if (i >= 0)
        mem.streams[i].pending = false;
    pthread_mutex_unlock(&mem.lock);
    return result(i >= 0 ? cudaSuccess : cudaErrorInvalidValue);
}

struct dllm_emu_event {
    bool recorded;
    cudaStream_t stream;
    double ms;    /* the host's clock when it was recorded */
    bool untimed; /* made with cudaEventDisableTiming */
};

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, 0);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    *e = calloc(1, sizeof **e);
    if (*e)
        (*e)->untimed = flags & cudaEventDisableTiming;
    return result(*e ? cudaSuccess : cudaErrorMemoryAllocation);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    free(e);
    return result(e ? cudaSuccess : cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!e)
        return result(cudaErrorInvalidResourceHandle);
    const cudaError_t r = dllm_emu_enqueue(s);
    if (r == cudaSuccess)
        *e = (struct dllm_emu_event){true, s, dllm_clock_ms(), e->untimed};
    return r;
}

/* Whether event e's work is done: its stream synchronised since it was recorded. */
static bool event_done(cudaEvent_t e)
{
    pthread_mutex_lock(&mem.lock);
    const int i = stream_index(e->stream);
    const bool done = i >= 0 && !mem.streams[i].pending;
    pthread_mutex_unlock(&mem.lock);
    return done;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!start || !end || !start->recorded || !end->recorded || start->untimed || end->untimed)
        return result(cudaErrorInvalidResourceHandle);
    if (!event_done(start) || !event_done(end))
        return result(cudaErrorNotReady);
    *ms = (float)(end->ms - start->ms);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    pthread_mutex_lock(&mem.lock);
    const int i = stream_index(s);
    pthread_mutex_unlock(&mem.lock);
    return result(i >= 0 && e && flags == 0 ? cudaSuccess : cudaErrorInvalidValue);
}

cudaError_t cudaGetLastError(void)
{
    const cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}

/* Whether device 0's primary context is active. */
static atomic_bool primary;

/* Writes the primary context's state at exit (cuda_runtime.h). */
static void report_primary(void)
{
    fprintf(stderr, "cuda-emu: primary context %s\n", primary ? "active" : "inactive");
}

__attribute__((constructor)) static void report_primary_at_exit(void)
{
    if (getenv("DLLM_EMU_CONTEXTS"))
        atexit(report_primary);
}

cudaError_t cudaSetDevice(int device)
{
    if (device != 0)
        return result(cudaErrorInvalidDevice);
    primary = true;
    return cudaSuccess;
}

cudaError_t cudaDeviceReset(void)
{
    pthread_mutex_lock(&mem.lock);
    const size_t live = mem.n;
    pthread_mutex_unlock(&mem.lock);
    if (live) {
        fprintf(stderr, "cuda-emu: cudaDeviceReset with %zu allocations live\n", live);
        abort();
    }
    primary = false;
    return cudaSuccess;
}

static int emu_device_get(int *device, int ordinal)
{
    *device = ordinal;
    return ordinal == 0 ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}

static int emu_primary_state(int device, unsigned *flags, int *active)
{
    *flags = 0;
    *active = device == 0 && primary;
    return device == 0 ? 0 : 101;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *found)
{
    *fn = !strcmp(symbol, "cuDeviceGet")                  ? (void *)emu_device_get
          : !strcmp(symbol, "cuDevicePrimaryCtxGetState") ? (void *)emu_primary_state
                                                          : NULL;
    *found = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int device)
{
    if (device != 0)
        return result(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    strcpy(p->name, "host emulation (tests/cuda-emu)");
    p->major = 9;
    p->minor = 0;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}

const char *dllm_emu_code_word(const struct dllm_emu_code *table, size_t n, int code, bool text,
                               const char *unknown)
{
    for (size_t i = 0; i < n; i++)
        if (table[i].code == code)
            return text ? table[i].text : table[i].name;
    return unknown;
}

/* The runtime's names and texts of the codes above. */
static const struct dllm_emu_code errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {cudaErrorUnsupportedPtxVersion, "cudaErrorUnsupportedPtxVersion",
     "the provided PTX was compiled with an unsupported toolchain."},
};
#define N_ERRORS (sizeof errors / sizeof errors[0])

const char *cudaGetErrorName(cudaError_t e)
{
    return dllm_emu_code_word(errors, N_ERRORS, e, false, "cudaErrorUnknown");
}

const char *cudaGetErrorString(cudaError_t e)
{
    return dllm_emu_code_word(errors, N_ERRORS, e, true, "unknown error");
}

/* The registers a function must keep (rbp, rbx, r12-r15) go on the stack being left. */
__asm__(".text\n"
        ".globl dllm_emu_switch\n"
        ".hidden dllm_emu_switch\n"
        ".type dllm_emu_switch, @function\n"
        "dllm_emu_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size dllm_emu_switch, .-dllm_emu_switch\n");

/*
 * A new fiber's stack as dllm_emu_switch leaves one: six saved registers, then start as the
 * address to return to, above it a null return address for start, with the stack aligned as
 * at a call (16 bytes at the call, so 8 more at start's first instruction).
 */
void *dllm_emu_fiber_new(char *stack, size_t bytes, void (*start)(void))
{
    uintptr_t *sp = (uintptr_t *)(((uintptr_t)stack + bytes) & ~(uintptr_t)15);
    *--sp = 0;
    *--sp = (uintptr_t)start;
    for (int i = 0; i < 6; i++)
        *--sp = 0;
    return sp;
}

char *dllm_emu_stack_new(size_t bytes)
{
    const size_t page = page_bytes();
    char *m = mmap(NULL, bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (mprotect(m, page, PROT_NONE) != 0) {
        munmap(m, bytes + page);
        return NULL;
    }
    return m + page;
}

void dllm_emu_stack_free(char *stack, size_t bytes)
{
    munmap(stack - page_bytes(), bytes + page_bytes());
}
