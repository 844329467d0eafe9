/*
 * Finding the reference fixtures (../shared/fixtures, or $DLLM_FIXTURES) from a test, and what
 * every test program does: temporary folders, running its check suite.
 */
#ifndef DLLM_TESTS_FIXTURES_H
#define DLLM_TESTS_FIXTURES_H

#include <check.h>
#include <stddef.h>

/*
 * The fixtures folder. When it is absent the test cannot run: it prints a SKIP line naming
 * DLLM_FIXTURES and exits 77 (automake's "skipped"), or 1 when CI=true.
 */
const char *fixtures_dir(void);

/* A malloc'd path "<fixtures>/<rel>". */
char *fixture_path(const char *rel);

/* Reads a whole file into a malloc'd buffer; aborts the test on failure. */
void *fixture_read(const char *rel, size_t *size);

/* A malloc'd path to a new, empty temporary directory for this test. */
char *test_tmpdir(void);

/*
 * The tag of a test case that repeats one check over every fixture model. The plain builds run
 * it; CI's sanitizer builds leave it out (CK_EXCLUDE_TAGS=sweep), the rest of the program runs.
 */
#define TEST_TAG_SWEEP "sweep"

/*
 * The tag of a test case that repeats one computation many times through the session's worker
 * without other threads acting on it (the statistics against the rows): the ThreadSanitizer
 * build, where it takes minutes, leaves it out (CK_EXCLUDE_TAGS="sweep long").
 */
#define TEST_TAG_LONG "long"

/*
 * How many models at the head of a sweep's list (a dense and a MoE one) run untagged, so that the
 * sanitizer builds still check them.
 */
#define TEST_N_REPRESENTATIVE 2

/*
 * Runs a check suite, frees it, and returns the exit status: EXIT_SUCCESS when all passed. A
 * line says so when CK_EXCLUDE_TAGS leaves test cases out.
 */
int test_run_suite(Suite *suite);

#endif
