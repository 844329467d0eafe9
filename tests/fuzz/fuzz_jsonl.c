/*
 * libFuzzer target: the conversation files /load reads (ui/jsonl.c) on arbitrary bytes. A file
 * that parses must hold turns in their documented state (a stopped answer's gaps inside its
 * text, ascending), and written back it must parse again to the same turns.
 */
#include "fuzz.h"
#include "jsonl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Aborts unless the parsed turns are in their documented state. */
static void check(const struct ui_transcript *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct ui_turn *turn = &t->turns[i];
        const size_t len = strlen(turn->text);
        if (turn->n_gaps && (!turn->stopped || !turn->context || strlen(turn->context) > len))
            abort();
        for (size_t k = 0; k < turn->n_gaps; k++)
            if (turn->gaps[k] > len || (k && turn->gaps[k] <= turn->gaps[k - 1]))
                abort();
        if (turn->has_stats && dllm_sampler_params_check(&turn->settings, NULL) != DLLM_OK)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ui_transcript t, back;
    char err[512];
    if (!ui_jsonl_parse((const char *)data, size, &t, err, sizeof err)) {
        if (strncmp(err, "line ", 5) != 0)
            abort();
        return 0;
    }
    fuzz_accepted++;
    check(&t);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f || !ui_jsonl_write(&t, "fuzz", f))
        abort();
    fclose(f);
    if (!ui_jsonl_parse(buf, len, &back, err, sizeof err) || back.n != t.n ||
        (t.system == NULL) != (back.system == NULL))
        abort();
    for (size_t i = 0; i < t.n; i++)
        if (back.turns[i].role != t.turns[i].role || back.turns[i].n_gaps != t.turns[i].n_gaps)
            abort();
    free(buf);
    ui_transcript_fini(&t);
    ui_transcript_fini(&back);
    return 0;
}
