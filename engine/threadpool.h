/*
 * A pool of worker threads owned by its creator (a session, or a program): dllm_threadpool_run
 * splits a job into n_items work items that the workers and the calling thread claim one at a time
 * from an atomic counter, so faster or less loaded cores simply take more items. A run returns when
 * every item is done. Runs allocate nothing. One thread at a time may call run.
 */
#ifndef DLLM_THREADPOOL_H
#define DLLM_THREADPOOL_H

#include "dllm.h"

#include <stdint.h>

/*
 * One work item: item is in [0, n_items); thread is the index of the thread running it, 0 for
 * the caller of dllm_threadpool_run and 1 .. n_threads-1 for the workers, so a job can give
 * each thread its own scratch.
 */
typedef void (*dllm_work_fn)(void *ctx, int64_t item, int thread);

/* dllm_threadpool_new, _free and _size are public (dllm.h). */

/* Runs fn(ctx, item, thread) once for every item in [0, n_items) and waits for all of them. */
void dllm_threadpool_run(struct dllm_threadpool *pool, int64_t n_items, dllm_work_fn fn, void *ctx);

/*
 * Runs fn(ctx, t, t) on every thread t of the pool and waits for all of them: a job split into
 * one part a thread, part t always on thread t, so that runs over the same rows one after
 * another find each row in the cache of the core that last wrote it. Nothing is rebalanced: for
 * parts of equal work only.
 */
void dllm_threadpool_run_each(struct dllm_threadpool *pool, dllm_work_fn fn, void *ctx);

/*
 * Part t of n things cut into one run a thread of the pool, as [*i0, *i1) (empty for a thread
 * past the end): every run_each over the same n cuts them alike, so its thread t gets the same
 * part each time.
 */
void dllm_threadpool_part(const struct dllm_threadpool *pool, int64_t n, int t, int64_t *i0,
                          int64_t *i1);

#endif
