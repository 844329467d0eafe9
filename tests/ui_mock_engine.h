/*
 * A stand-in for dllm-tui's engine (ui/engine.h) in tests. It opens the model file for its
 * vocabulary and architecture, but "generates" a fixed answer on a deterministic schedule, so
 * screens can be compared exactly. The answer is "You said: <the last message>. Diffusion
 * fills every mask in parallel: 日本語 ✓", encoded with the model's tokenizer and cut to the
 * generation length; the rest of the canvas gets end-of-text tokens. Positions commit block
 * by block (blocks of the settings' block length), in a shuffled order fixed by the seed,
 * with the LLaDA quota (a block's masks spread evenly over its steps); with a threshold, four
 * a step. Each step reports forward 10 + step % 3 ms and sample 0.5 ms.
 *
 * Environment: DLLM_MOCK_STEP_MS (sleep per step, default 20), DLLM_MOCK_HOLD_AT=N (after
 * step N, counted from 1, wait until cancelled), DLLM_MOCK_CONTEXT=C (messages beyond C bytes
 * of content, oldest first, are dropped with a notice).
 */
#ifndef DLLM_TESTS_UI_MOCK_ENGINE_H
#define DLLM_TESTS_UI_MOCK_ENGINE_H

#include "engine.h"

/*
 * An engine with no model and no worker, for unit tests of the app: ui_engine_start records
 * the request and returns; the test feeds the slot itself.
 */
struct ui_engine *mock_engine_manual(struct ui_frame_slot *slot);

/* What the manual engine was asked: starts, cancels, and the last request. */
struct mock_requests {
    int starts, cancels;
    size_t n_messages;
    char last_role[16];
    char last_content[256];
    struct dllm_sampler_params settings;
};
const struct mock_requests *mock_engine_requests(const struct ui_engine *engine);

/* Makes the manual engine's next start fail with this message (NULL: succeed). */
void mock_engine_fail_next(struct ui_engine *engine, const char *message);

#endif
