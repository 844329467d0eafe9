/*
 * The thread pool: every item of a run runs exactly once, on a thread index in range, for
 * various item and thread counts; a run_each runs item t on thread t, once for every thread,
 * and the parts of n things for its threads cover them in order;
 * runs back to back (10,000 of them) stay correct and quick; bad thread counts are refused.
 */
#include "fixtures.h"
#include "threadpool.h"

#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>

/* Counts, per item, how often it ran, and which threads ran anything. */
struct tally {
    _Atomic int *count;            /* [n_items] */
    _Atomic unsigned threads_seen; /* bit t: thread t ran an item */
    int n_threads;
    _Atomic int bad_thread;
};

static void count_item(void *ctx, int64_t item, int thread)
{
    struct tally *t = ctx;
    atomic_fetch_add(&t->count[item], 1);
    if (thread < 0 || thread >= t->n_threads) {
        atomic_store(&t->bad_thread, 1);
    } else if (thread < 32) {
        atomic_fetch_or(&t->threads_seen, 1u << thread);
    }
}

static const struct {
    int threads;
    int64_t items;
} run_cases[] = {
    {1, 0},    {1, 1}, {1, 100}, {2, 0}, {2, 1},     {2, 2},  {2, 3},
    {2, 1000}, {3, 7}, {4, 64},  {8, 5}, {8, 10007}, {16, 1}, {16, 300},
};

/* Each item runs exactly once on a valid thread index, in each of several runs of one pool. */
START_TEST(test_run_once)
{
    const int threads = run_cases[_i].threads;
    const int64_t items = run_cases[_i].items;
    struct dllm_threadpool *pool = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_threadpool_new(threads, &pool, &err), DLLM_OK);
    ck_assert_int_eq(dllm_threadpool_size(pool), threads);
    struct tally t = {.n_threads = threads};
    t.count = calloc((size_t)(items > 0 ? items : 1), sizeof *t.count);
    ck_assert_ptr_nonnull(t.count);
    for (int run = 0; run < 3; run++) {
        dllm_threadpool_run(pool, items, count_item, &t);
        for (int64_t i = 0; i < items; i++) {
            ck_assert_int_eq(atomic_load(&t.count[i]), run + 1);
        }
    }
    ck_assert_int_eq(atomic_load(&t.bad_thread), 0);
    printf("%d threads, %lld items: threads that ran items 0x%x\n", threads, (long long)items,
           atomic_load(&t.threads_seen));
    free(t.count);
    dllm_threadpool_free(pool);
}
END_TEST

/* Counts an item as count_item does, and marks the run bad when it is not on its own thread. */
static void own_item(void *ctx, int64_t item, int thread)
{
    struct tally *t = ctx;
    if (item != thread) {
        atomic_store(&t->bad_thread, 1);
    }
    count_item(ctx, item, thread);
}

/* run_each runs item t on thread t, once for every thread of the pool, in each of several runs. */
START_TEST(test_run_each)
{
    static const int thread_counts[] = {1, 2, 3, 8};
    const int threads = thread_counts[_i];
    struct dllm_threadpool *pool = NULL;
    ck_assert_int_eq(dllm_threadpool_new(threads, &pool, NULL), DLLM_OK);
    struct tally t = {.n_threads = threads};
    struct tally plain = {.n_threads = threads};
    t.count = calloc((size_t)threads, sizeof *t.count);
    plain.count = calloc(5, sizeof *plain.count);
    ck_assert_ptr_nonnull(t.count);
    ck_assert_ptr_nonnull(plain.count);
    for (int run = 0; run < 100; run++) {
        dllm_threadpool_run_each(pool, own_item, &t);
        for (int i = 0; i < threads; i++) {
            ck_assert_int_eq(atomic_load(&t.count[i]), run + 1);
        }
        /* plain runs in between still share their items out */
        dllm_threadpool_run(pool, 5, count_item, &plain);
        for (int i = 0; i < 5; i++) {
            ck_assert_int_eq(atomic_load(&plain.count[i]), run + 1);
        }
    }
    ck_assert_int_eq(atomic_load(&t.bad_thread), 0);
    ck_assert_int_eq(atomic_load(&plain.bad_thread), 0);
    ck_assert_uint_eq(atomic_load(&t.threads_seen), (1u << threads) - 1);
    free(plain.count);
    free(t.count);
    dllm_threadpool_free(pool);
}
END_TEST

/* The threads' parts of n things, for n below, at and above the thread count, cover [0, n) in
 * order. */
START_TEST(test_parts)
{
    static const int thread_counts[] = {1, 2, 3, 8};
    const int threads = thread_counts[_i];
    struct dllm_threadpool *pool = NULL;
    ck_assert_int_eq(dllm_threadpool_new(threads, &pool, NULL), DLLM_OK);
    for (int64_t n = 0; n <= 40; n++) {
        int64_t end = 0;
        for (int t = 0; t < threads; t++) {
            int64_t i0, i1;
            dllm_threadpool_part(pool, n, t, &i0, &i1);
            ck_assert_int_eq(i0, end);
            ck_assert_int_le(i0, i1);
            end = i1;
        }
        ck_assert_int_eq(end, n);
    }
    dllm_threadpool_free(pool);
}
END_TEST

/* Adds item + 1 to a sum: with n items a run adds n (n + 1) / 2. */
static void sum_item(void *ctx, int64_t item, int thread)
{
    atomic_fetch_add((_Atomic int64_t *)ctx, item + 1);
}

/* 10,000 runs back to back, each complete when run returns, within a few seconds. */
START_TEST(test_stress)
{
    const int threads = _i == 0 ? 2 : 4;
    struct dllm_threadpool *pool = NULL;
    ck_assert_int_eq(dllm_threadpool_new(threads, &pool, NULL), DLLM_OK);
    _Atomic int64_t sum = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int run = 0; run < 10000; run++) {
        const int64_t n = 1 + run % 17;
        atomic_store(&sum, 0);
        dllm_threadpool_run(pool, n, sum_item, &sum);
        ck_assert_int_eq(atomic_load(&sum), n * (n + 1) / 2);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("10000 runs on %d threads: %.3f s (%.1f us per run)\n", threads, s, s * 100.0);
    ck_assert_double_lt(s, 10.0);
    dllm_threadpool_free(pool);
}
END_TEST

/* 0 threads is one per online core; counts outside 0..1024 are DLLM_ERR_ARG; freeing NULL is
 * fine. */
START_TEST(test_bad_counts)
{
    struct dllm_threadpool *pool = NULL;
    struct dllm_error err = {0};
    ck_assert_int_eq(dllm_threadpool_new(0, &pool, &err), DLLM_OK);
    ck_assert_int_eq(dllm_threadpool_size(pool), sysconf(_SC_NPROCESSORS_ONLN));
    dllm_threadpool_free(pool);
    pool = NULL;
    ck_assert_int_eq(dllm_threadpool_new(-3, &pool, &err), DLLM_ERR_ARG);
    ck_assert_str_eq(err.text, "-3 threads: use 1 to 1024 (0: one per core)");
    ck_assert_int_eq(dllm_threadpool_new(1025, &pool, &err), DLLM_ERR_ARG);
    ck_assert_ptr_null(pool);
    dllm_threadpool_free(NULL);
}
END_TEST

static Suite *threadpool_suite(void)
{
    Suite *s = suite_create("threadpool");
    TCase *tc = tcase_create("run");
    tcase_add_loop_test(tc, test_run_once, 0, (int)(sizeof run_cases / sizeof run_cases[0]));
    tcase_add_loop_test(tc, test_run_each, 0, 4);
    tcase_add_loop_test(tc, test_parts, 0, 4);
    tcase_add_loop_test(tc, test_stress, 0, 2);
    tcase_add_test(tc, test_bad_counts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run_suite(threadpool_suite());
}
