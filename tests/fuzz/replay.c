/*
 * A fuzz target as a check suite, without libFuzzer: runs its LLVMFuzzerTestOneInput on each
 * committed seed in tests/fuzz/seeds/<FUZZ_NAME>/ and needs its parser to accept at least one
 * (fuzz_accepted), so that a target that never reaches its parser fails. With file arguments
 * it runs those instead, e.g. a crash input make fuzz found.
 */
#include "fixtures.h"
#include "fuzz.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static char **inputs; /* the files to run */
static size_t n_inputs;

/* Runs the entry point on one file's bytes. */
static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t cap = 4096, n = 0;
    uint8_t *data = malloc(cap);
    size_t k;
    while (data && (k = fread(data + n, 1, cap - n, f)) > 0)
        if ((n += k) == cap)
            data = realloc(data, cap *= 2);
    ck_assert(data != NULL && !ferror(f));
    fclose(f);
    /* A copy of exactly n bytes, so that AddressSanitizer sees any read past the input. */
    uint8_t *exact = malloc(n ? n : 1);
    ck_assert(exact != NULL);
    memcpy(exact, data, n);
    free(data);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
}

START_TEST(test_seeds)
{
    ck_assert_msg(n_inputs > 0, "no seeds in tests/fuzz/seeds/%s", FUZZ_NAME);
    for (size_t i = 0; i < n_inputs; i++)
        run_file(inputs[i]);
    printf("fuzz_%s: %zu inputs, %ld accepted by the parser\n", FUZZ_NAME, n_inputs, fuzz_accepted);
    ck_assert_msg(fuzz_accepted > 0, "fuzz_%s: the parser accepted none of its %zu seeds",
                  FUZZ_NAME, n_inputs);
}
END_TEST

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The seed files of this target, sorted by name. */
static void list_seeds(void)
{
    const char *src = getenv("DLLM_TESTS_SRC");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz/seeds/%s", src && *src ? src : "tests", FUZZ_NAME);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        inputs = realloc(inputs, (n_inputs + 1) * sizeof *inputs);
        size_t n = strlen(dir) + strlen(e->d_name) + 2;
        inputs[n_inputs] = malloc(n);
        snprintf(inputs[n_inputs++], n, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(inputs, n_inputs, sizeof *inputs, by_name);
}

int main(int argc, char **argv)
{
#ifdef FUZZ_NEEDS_FIXTURES
    fixtures_dir();
#endif
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    if (argc > 1) {
        inputs = argv + 1;
        n_inputs = (size_t)argc - 1;
    } else {
        list_seeds();
    }
    Suite *s = suite_create("fuzz_" FUZZ_NAME);
    TCase *tc = tcase_create("seeds");
    tcase_add_test(tc, test_seeds);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
