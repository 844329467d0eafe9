/*
 * Parsing JSON with jansson so that running out of memory is told apart from bad input.
 * jansson 2.14 does not always report an allocation that failed inside its parser: it may
 * return a syntax error, or a document whose strings silently lost a character (its lexer
 * drops strbuffer_append_byte's failure in lex_save; akheron/jansson pull request 735). These
 * functions route jansson's allocations through a wrapper that notes, per thread, that one
 * failed, and call a parse during which one failed out of memory, whatever jansson returned.
 */
#ifndef DLLM_HUB_JSON_H
#define DLLM_HUB_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Installs the wrapper, once per process, where jansson still has its default allocator (an
 * application's own is kept); from then on every allocation of jansson's goes through it,
 * those that build and write documents too. The functions below call it.
 */
void dllm_hubjson_init(void);

/*
 * The document in buf[0..len) (json_loadb with flags), or NULL: then *nomem says whether an
 * allocation failed (the document is dropped even where jansson parsed it), else jerr says
 * why it is not JSON.
 */
json_t *dllm_hubjson_loadb(const char *buf, size_t len, size_t flags, json_error_t *jerr,
                           bool *nomem);
/* The same for the file at path (json_load_file). */
json_t *dllm_hubjson_load_file(const char *path, size_t flags, json_error_t *jerr, bool *nomem);

#endif
