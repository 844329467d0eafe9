/*
 * The worker pool. A run publishes the job under the mutex with a new generation number and
 * wakes the workers; every thread then claims items with an atomic fetch-add until none are
 * left (or, in a run_each, runs the one item of its own index). Each worker reports once per
 * generation, so run returns only when no worker can still touch the job. Since the forward pass
 * starts runs back to back, hundreds a pass, workers spin on the generation for SPIN_NS before
 * sleeping, and the caller on the workers' reports before it sleeps: a run then costs no lock
 * handoff and no wake-up of a sleeping thread.
 */
#include "config.h"

#include "dllm.h"
#include "threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * How long a thread polls (the generation, the reports) before it sleeps on a condition, in
 * nanoseconds, timed by the clock since a PAUSE takes a few to 40 ns by CPU. A sleeper is woken
 * by a futex, late on a virtual machine, so the polls should outlast the wait that a product's
 * last work item on another thread causes: 2000 PAUSEs, 36 us on a Zen 5, let the worker sleep
 * in half the 516 runs of a LLaDA-8B-shape pass on 2 threads, 200 us in 50-120 of them
 * (README, "Benchmarks").
 */
#define SPIN_NS 200000
/*
 * Polls that PAUSE before the rest yield the CPU: 4 threads on 2 cores spinning 200 us on
 * PAUSE alone made a LLaDA-MoE-7B-A1B-shape pass 1.4-1.5 times slower; yielding after as many
 * PAUSEs as the old spin made (36 us here) kept it as before, and changed nothing measurable
 * with a thread per core.
 */
#define SPIN_PAUSES 2000

/* The monotonic clock in nanoseconds. */
static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/*
 * A bounded busy wait, zero-initialised: polls for SPIN_NS from its first reading of the clock,
 * so that a wait that ends at once reads no clock.
 */
struct spin {
    int64_t deadline; /* 0 until the clock is first read */
    unsigned polls;
};

/*
 * Waits a little before the next poll: a PAUSE for the first SPIN_PAUSES polls, then a
 * sched_yield, so that where threads outnumber free cores the one being waited for gets this
 * core. Whether to poll again (the clock is read every 64 polls).
 */
static bool spin_more(struct spin *s)
{
    if (s->polls < SPIN_PAUSES)
        __builtin_ia32_pause();
    else
        sched_yield();
    if (++s->polls % 64)
        return true;
    const int64_t now = now_ns();
    if (!s->deadline)
        s->deadline = now + SPIN_NS;
    return now < s->deadline;
}

struct worker {
    struct dllm_threadpool *pool;
    pthread_t thread;
    int index;
};

struct dllm_threadpool {
    int n_threads;
    struct worker *workers; /* [n_threads - 1] */
    int started;            /* workers whose threads are running */

    pthread_mutex_t lock;
    pthread_cond_t wake;  /* a new generation or stop, for the workers */
    pthread_cond_t done;  /* busy reached 0, for the caller */
    _Atomic uint64_t gen; /* written under lock */
    bool stop;            /* under lock */
    _Atomic int busy;     /* workers still in the current generation */

    /* The current job, written under lock before gen changes. */
    dllm_work_fn fn;
    void *ctx;
    int64_t n_items;
    bool each;            /* item t is thread t's (dllm_threadpool_run_each) */
    _Atomic int64_t next; /* the next unclaimed item */
};

/* Runs thread's items of the current job: its own, or claimed ones until none are left. */
static void run_items(struct dllm_threadpool *pool, int thread)
{
    if (pool->each) {
        pool->fn(pool->ctx, thread, thread);
        return;
    }
    for (;;) {
        int64_t item = atomic_fetch_add_explicit(&pool->next, 1, memory_order_relaxed);
        if (item >= pool->n_items) {
            return;
        }
        pool->fn(pool->ctx, item, thread);
    }
}

/* A worker: waits for each new generation, runs its share of the job and reports back. */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct dllm_threadpool *pool = w->pool;
    uint64_t seen = 0;
    for (;;) {
        /* a new generation seen while spinning: its job was written before gen changed */
        uint64_t gen = atomic_load_explicit(&pool->gen, memory_order_acquire);
        for (struct spin s = {0}; gen == seen && spin_more(&s);)
            gen = atomic_load_explicit(&pool->gen, memory_order_acquire);
        if (gen == seen) {
            pthread_mutex_lock(&pool->lock);
            while (!pool->stop && atomic_load_explicit(&pool->gen, memory_order_relaxed) == seen) {
                pthread_cond_wait(&pool->wake, &pool->lock);
            }
            const bool stop = pool->stop;
            gen = atomic_load_explicit(&pool->gen, memory_order_relaxed);
            pthread_mutex_unlock(&pool->lock);
            if (stop) {
                return NULL;
            }
        }
        seen = gen;

        run_items(pool, w->index);

        /* the last report wakes the caller if it sleeps (signalled under the lock, so that a
           caller about to sleep cannot miss it) */
        if (atomic_fetch_sub_explicit(&pool->busy, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
}

enum dllm_status dllm_threadpool_new(int n_threads, struct dllm_threadpool **out,
                                     struct dllm_error *err)
{
    if (n_threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = cores < 1 ? 1 : cores > 1024 ? 1024 : (int)cores;
    }
    if (n_threads < 1 || n_threads > 1024) {
        return dllm_error_set(err, DLLM_ERR_ARG, "%d threads: use 1 to 1024 (0: one per core)",
                              n_threads);
    }
    struct dllm_threadpool *pool = calloc(1, sizeof *pool);
    if (pool == NULL) {
        return dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a thread pool");
    }
    pool->n_threads = n_threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    enum dllm_status st;
    pool->workers = calloc((size_t)n_threads, sizeof *pool->workers);
    if (pool->workers == NULL) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory for a thread pool");
        goto fail;
    }
    for (int i = 0; i < n_threads - 1; i++) {
        struct worker *w = &pool->workers[i];
        w->pool = pool;
        w->index = i + 1;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            st = dllm_error_set(err, DLLM_ERR_NOMEM, "could not start worker thread %d of %d",
                                i + 1, n_threads - 1);
            goto fail;
        }
        pool->started++;
    }
    *out = pool;
    return DLLM_OK;

fail:
    dllm_threadpool_free(pool);
    return st;
}

void dllm_threadpool_free(struct dllm_threadpool *pool)
{
    if (pool == NULL) {
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->stop = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->started; i++) {
        pthread_join(pool->workers[i].thread, NULL);
    }
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool->workers);
    free(pool);
}

int dllm_threadpool_size(const struct dllm_threadpool *pool)
{
    return pool->n_threads;
}

/* Runs a job of n_items (each: one item a thread) on every thread and waits for all of them. */
static void run_job(struct dllm_threadpool *pool, int64_t n_items, bool each, dllm_work_fn fn,
                    void *ctx)
{
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->n_items = n_items;
    pool->each = each;
    atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->busy, pool->n_threads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->gen, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    run_items(pool, 0);

    struct spin s = {0};
    do {
        if (atomic_load_explicit(&pool->busy, memory_order_acquire) == 0) {
            return;
        }
    } while (spin_more(&s));
    pthread_mutex_lock(&pool->lock);
    while (atomic_load_explicit(&pool->busy, memory_order_acquire) > 0) {
        pthread_cond_wait(&pool->done, &pool->lock);
    }
    pthread_mutex_unlock(&pool->lock);
}

void dllm_threadpool_run(struct dllm_threadpool *pool, int64_t n_items, dllm_work_fn fn, void *ctx)
{
    if (n_items <= 0) {
        return;
    }
    if (pool->n_threads == 1 || n_items == 1) {
        for (int64_t i = 0; i < n_items; i++) {
            fn(ctx, i, 0);
        }
        return;
    }
    run_job(pool, n_items, false, fn, ctx);
}

void dllm_threadpool_part(const struct dllm_threadpool *pool, int64_t n, int t, int64_t *i0,
                          int64_t *i1)
{
    const int64_t per = (n + pool->n_threads - 1) / pool->n_threads;
    *i0 = t * per < n ? t * per : n;
    *i1 = *i0 + per < n ? *i0 + per : n;
}

void dllm_threadpool_run_each(struct dllm_threadpool *pool, dllm_work_fn fn, void *ctx)
{
    if (pool->n_threads == 1) {
        fn(ctx, 0, 0);
        return;
    }
    run_job(pool, pool->n_threads, true, fn, ctx);
}
