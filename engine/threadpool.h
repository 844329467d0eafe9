/*
 * A pool of worker threads owned by its creator (a session): dllm_threadpool_run splits a job
 * into n_items work items that the workers and the calling thread claim one at a time from an
 * atomic counter, so faster or less loaded cores simply take more items. A run returns when
 * every item is done. Runs allocate nothing. One thread at a time may call run.
 */
#ifndef DLLM_THREADPOOL_H
#define DLLM_THREADPOOL_H

#include "dllm.h"

#include <stdint.h>

struct dllm_threadpool;

/*
 * One work item: item is in [0, n_items); thread is the index of the thread running it, 0 for
 * the caller of dllm_threadpool_run and 1 .. n_threads-1 for the workers, so a job can give
 * each thread its own scratch.
 */
typedef void (*dllm_work_fn)(void *ctx, int64_t item, int thread);

/*
 * A pool of n_threads threads in all: the caller of run plus n_threads - 1 workers started
 * now (n_threads = 1 starts none). n_threads outside 1 .. 1024 is DLLM_ERR_ARG.
 */
enum dllm_status dllm_threadpool_new(int n_threads, struct dllm_threadpool **out,
                                     struct dllm_error *err);

/* Stops and joins the workers. Accepts NULL. */
void dllm_threadpool_free(struct dllm_threadpool *pool);

/* The number of threads that run items, the caller included. */
int dllm_threadpool_size(const struct dllm_threadpool *pool);

/* Runs fn(ctx, item, thread) once for every item in [0, n_items) and waits for all of them. */
void dllm_threadpool_run(struct dllm_threadpool *pool, int64_t n_items, dllm_work_fn fn, void *ctx);

#endif
