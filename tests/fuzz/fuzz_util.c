/* What the fuzz targets share (see fuzz.h). */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef FIXTURES_DEFAULT
#define FIXTURES_DEFAULT "../shared/fixtures"
#endif

long fuzz_accepted;

char *fuzz_fixture(const char *rel)
{
    const char *dir = getenv("DLLM_FIXTURES");
    if (!dir || !*dir)
        dir = FIXTURES_DEFAULT;
    size_t n = snprintf(NULL, 0, "%s/%s", dir, rel) + 1;
    char *path = malloc(n);
    if (!path)
        abort();
    snprintf(path, n, "%s/%s", dir, rel);
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "fuzz: cannot read the fixture %s (set DLLM_FIXTURES)\n", path);
        exit(1);
    }
    return path;
}
