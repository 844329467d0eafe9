/* The versions of the libraries libdllm-hub runs with, as their own version calls report them. */
#include "config.h"

#include "dllm-hub.h"

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>
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

void dllm_hub_library_versions(char *buf, size_t size)
{
    const curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);
    snprintf(buf, size, "libcurl %s (%s), %s, jansson %s", curl->version,
             curl->ssl_version ? curl->ssl_version : "no TLS", OpenSSL_version(OPENSSL_VERSION),
             jansson_version());
}
