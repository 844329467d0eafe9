/*
 * What the fuzz targets share (fuzz_util.c): the count of inputs their parser accepted, which
 * the seed check (replay.c) reads, and the path of a fixture file.
 */
#ifndef DLLM_TESTS_FUZZ_H
#define DLLM_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Inputs the target's parser accepted; each target adds one per input that parsed. */
extern long fuzz_accepted;

/* The libFuzzer entry points every target defines (the first one only where it needs it). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * "<fixtures>/<rel>" (malloc'd): $DLLM_FIXTURES, else the fixtures beside the checkout
 * (FIXTURES_DEFAULT). Exits with a message naming DLLM_FIXTURES when the file is not there.
 */
char *fuzz_fixture(const char *rel);

struct dllm_vocab;

/*
 * The vocabularies of the n fixture files rels into out (fuzz_vocabs.c); exits with a message
 * when one does not load.
 */
void fuzz_load_vocabs(const char *const *rels, size_t n, struct dllm_vocab **out);

#endif
