#ifndef SETTLE_CCURL_SHIM_H
#define SETTLE_CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt is variadic, which Swift can't call: one typed wrapper per argument kind.
static inline CURLcode settle_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
// curl_easy_setopt is variadic, which Swift can't call.
static inline CURLcode settle_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
// curl_easy_setopt is variadic, which Swift can't call.
static inline CURLcode settle_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
// curl_easy_setopt is variadic, which Swift can't call.
static inline CURLcode settle_curl_setopt_offset(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }

typedef size_t (*settle_curl_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);
// curl_easy_setopt is variadic, which Swift can't call: CURLOPT_WRITEFUNCTION / HEADERFUNCTION / READFUNCTION.
static inline CURLcode settle_curl_setopt_callback(CURL *h, CURLoption o, settle_curl_data_callback f) { return curl_easy_setopt(h, o, f); }

// curl_easy_getinfo is variadic, which Swift can't call.
static inline CURLcode settle_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
// curl_easy_getinfo is variadic, which Swift can't call.
static inline CURLcode settle_curl_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }

// CURLVERSION_NOW is a macro naming an enum case, which Swift does not import.
static inline curl_version_info_data *settle_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
#endif
