/* The versions of the libraries libdllm runs with, as their own version calls report them. */
#include "config.h"

#include "dllm.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>

void dllm_library_versions(char *buf, size_t size)
{
    char pcre2[64] = "?";
    if (pcre2_config(PCRE2_CONFIG_VERSION, NULL) <= (int)sizeof pcre2)
        pcre2_config(PCRE2_CONFIG_VERSION, pcre2);
    snprintf(buf, size, "PCRE2 %s", pcre2);
}
