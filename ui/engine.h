/*
 * The engine as dllm-tui drives it: a loaded model and a libdllm session that generates on
 * its own worker thread. To be implemented over libdllm (ui/engine.c); the screen tests link
 * a deterministic stand-in instead. Every function is called from the UI thread. Each
 * generation's session events go to the frame slot given to ui_engine_open, through
 * ui_frame_slot_event (the session's dllm_event_fn can forward them as they come).
 */
#ifndef DLLM_UI_ENGINE_H
#define DLLM_UI_ENGINE_H

#include "dllm.h"
#include "frame.h"

#include <stddef.h>
#include <stdint.h>

struct ui_engine;

struct ui_engine_params {
    const char *model;   /* a GGUF path (or, with the hub, org/repo[:QUANT]) */
    int threads;         /* 0: the number of cores */
    bool no_chat;        /* send the last user message as raw text, without the chat template */
    const char *kernels; /* the kernel variant, or NULL for the fastest */
    const char *backend; /* NULL (the CPU) or "cuda" */
    int device;          /* the GPU, for "cuda" */
    bool gpu_resident;
    const char *device_label;  /* the status bar's device: "cpu", "gpu:0 NVIDIA H200" */
    dllm_progress_fn progress; /* the weights' preparation (dllm_session_params'), or NULL */
    void *progress_user;
};

/* What the status bar shows. */
struct ui_engine_info {
    char model[256]; /* the model file's name */
    char arch[16];   /* "llada" or "dream" */
    char quant[32];  /* the file's quantization, e.g. "Q4_K_M" */
    char device[32]; /* e.g. "cpu avx2" */
    int threads;     /* worker threads in use */
    int64_t n_ctx;   /* the longest canvas (prompt plus answer) a generation may use */
    double load_ms;  /* how long loading took */
};

/*
 * Loads the model and starts a session, before the screen is set up (progress may go to
 * stderr when it is a terminal). On failure *out is NULL and err says what and the fix.
 */
enum dllm_status ui_engine_open(const struct ui_engine_params *params, struct ui_frame_slot *slot,
                                struct ui_engine **out, struct dllm_error *err);

void ui_engine_info(const struct ui_engine *engine, struct ui_engine_info *info);

/*
 * Starts an answer to the conversation msgs[0 .. n-1] (system, user and assistant messages,
 * the last one the user's) with settings, and returns at once; the session's events go to the
 * slot. An error (settings that cannot run, a generation still running) means nothing started
 * and no event will come; a prompt that cannot fit arrives as an ERROR event.
 */
enum dllm_status ui_engine_start(struct ui_engine *engine, const struct dllm_chat_message *msgs,
                                 size_t n, const struct dllm_sampler_params *settings,
                                 struct dllm_error *err);

/*
 * Asks the running generation to stop inside its current step, at the forward pass's next
 * layer, keeping the canvas of the last finished step; it then ends with a DONE
 * event marked cancelled that keeps the partial answer. Nothing happens when idle.
 */
void ui_engine_cancel(struct ui_engine *engine);

/*
 * The bytes token id stands for, for the canvas (a ui_piece_fn, with the engine as ctx):
 * NULL for control tokens such as end-of-generation.
 */
const char *ui_engine_piece(void *engine, int32_t id, size_t *len);

/* Cancels what runs, waits for the worker, frees everything. NULL is fine. */
void ui_engine_close(struct ui_engine *engine);

#endif
