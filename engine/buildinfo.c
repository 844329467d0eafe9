/* The versions of the libraries libdllm runs with, as their own version calls report them. */
#include "config.h"

#include "dllm.h"

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>

/* jansson_version_str() exists from jansson 2.13; older ones only have the header's version. */
static const char *jansson_version(void)
{
#if JANSSON_VERSION_HEX >= 0x020d00
    return jansson_version_str();
#else
    return JANSSON_VERSION;
#endif
}

void dllm_library_versions(char *buf, size_t size)
{
    const curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);
    char pcre2[64] = "?";
    if (pcre2_config(PCRE2_CONFIG_VERSION, NULL) <= (int)sizeof pcre2)
        pcre2_config(PCRE2_CONFIG_VERSION, pcre2);
    snprintf(buf, size, "libcurl %s (%s), %s, PCRE2 %s, jansson %s", curl->version,
             curl->ssl_version ? curl->ssl_version : "no TLS", OpenSSL_version(OPENSSL_VERSION),
             pcre2, jansson_version());
}
