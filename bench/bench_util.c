#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

float rng_normal(uint64_t *s)
{
    uint64_t r = rng_next(s);
    double sum = 0.0;
    for (int i = 0; i < 4; i++)
        sum += (double)((r >> (16 * i)) & 0xffff) / 65536.0;
    return (float)((sum - 2.0) * 1.7320508);
}

int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int split_list(char *s, char **out, int max)
{
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok != NULL && n < max;
         tok = strtok_r(NULL, ",", &save))
        out[n++] = tok;
    return n;
}

void read_line(const char *path, const char *prefix, char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            snprintf(buf, size, "%s", line + strlen(prefix));
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}
