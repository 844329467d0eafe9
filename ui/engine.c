/* dllm-tui's engine over libdllm: a loaded model and a session whose events feed the slot. */
#include "config.h"

#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ui_engine {
    struct dllm_model *model;
    struct dllm_session *session;
    const struct dllm_vocab *vocab;
    struct ui_frame_slot *slot;
    struct ui_engine_info info;
    bool no_chat;
};

/* The session's callback, on its worker thread: hand the event to the UI. */
static void forward_event(const struct dllm_event *event, void *user)
{
    ui_frame_slot_event(user, event);
}

enum dllm_status ui_engine_open(const struct ui_engine_params *params, struct ui_frame_slot *slot,
                                struct ui_engine **out, struct dllm_error *err)
{
    *out = NULL;
    struct ui_engine *e = calloc(1, sizeof *e);
    if (!e) {
        if (err) {
            err->status = DLLM_ERR_NOMEM;
            snprintf(err->text, sizeof err->text, "out of memory");
        }
        return DLLM_ERR_NOMEM;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    enum dllm_status st = dllm_model_open(params->model, NULL, &e->model, err);
    if (st == DLLM_OK) {
        struct dllm_session_params sp;
        dllm_session_params_init(&sp);
        sp.threads = params->threads;
        sp.kernels = params->kernels;
        sp.backend = params->backend;
        sp.device = params->device;
        sp.gpu_resident = params->gpu_resident;
        sp.progress = params->progress;
        sp.progress_user = params->progress_user;
        st = dllm_session_new(e->model, &sp, &e->session, err);
    }
    if (st != DLLM_OK) {
        ui_engine_close(e);
        return st;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    e->vocab = dllm_session_vocab(e->session);
    e->slot = slot;
    e->no_chat = params->no_chat;
    const char *base = strrchr(params->model, '/');
    snprintf(e->info.model, sizeof e->info.model, "%s", base ? base + 1 : params->model);
    snprintf(e->info.arch, sizeof e->info.arch, "%s", dllm_model_arch(e->model));
    snprintf(e->info.quant, sizeof e->info.quant, "%s", dllm_model_file_type(e->model));
    snprintf(e->info.device, sizeof e->info.device, "%s",
             params->device_label ? params->device_label : "cpu");
    e->info.threads = params->threads;
    e->info.n_ctx = dllm_session_max_canvas(e->session);
    e->info.load_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    *out = e;
    return DLLM_OK;
}

void ui_engine_info(const struct ui_engine *e, struct ui_engine_info *info)
{
    *info = e->info;
}

enum dllm_status ui_engine_start(struct ui_engine *e, const struct dllm_chat_message *msgs,
                                 size_t n, const struct dllm_sampler_params *settings,
                                 struct dllm_error *err)
{
    struct dllm_request req = {.messages = msgs, .n_messages = n, .sampler = *settings};
    if (e->no_chat && n > 0)
        req.raw_prompt = msgs[n - 1].content;
    return dllm_session_generate(e->session, &req, forward_event, e->slot, err);
}

void ui_engine_cancel(struct ui_engine *e)
{
    dllm_session_cancel(e->session);
}

const char *ui_engine_piece(void *engine, int32_t id, size_t *len)
{
    const struct ui_engine *e = engine;
    enum dllm_token_type type = dllm_vocab_token_type(e->vocab, id);
    if (type == DLLM_TOKEN_TYPE_CONTROL || type == DLLM_TOKEN_TYPE_UNUSED ||
        dllm_vocab_is_eog(e->vocab, id))
        return NULL;
    return dllm_vocab_token_bytes(e->vocab, id, len);
}

void ui_engine_close(struct ui_engine *e)
{
    if (!e)
        return;
    dllm_session_free(e->session);
    dllm_model_close(e->model);
    free(e);
}
