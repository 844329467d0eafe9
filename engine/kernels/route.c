/* The top-k softmax router of a mixture-of-experts layer (route.h). */
#include "config.h"

#include "route.h"

#include <math.h>

/* Whether expert a ranks before expert b: the larger logit, or the lower id on a tie. */
static bool ranks_before(const float *logits, int32_t a, int32_t b)
{
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
}

void dllm_route(const float *logits, int64_t n_expert, int64_t k, bool normalize, int32_t *ids,
                float *weights, float *margin)
{
    /* Insertion into the sorted top k: k is small (8 for the real models). */
    int64_t kept = 0;
    for (int32_t e = 0; e < n_expert; e++) {
        if (kept == k && !ranks_before(logits, e, ids[k - 1]))
            continue;
        int64_t at = kept < k ? kept++ : k - 1;
        while (at > 0 && ranks_before(logits, e, ids[at - 1])) {
            ids[at] = ids[at - 1];
            at--;
        }
        ids[at] = e;
    }
    /* The best expert left out: the largest logit among those not kept. */
    float best_out = -INFINITY;
    for (int32_t e = 0; e < n_expert; e++) {
        bool is_kept = false;
        for (int64_t j = 0; j < k && !is_kept; j++)
            is_kept = ids[j] == e;
        if (!is_kept && logits[e] > best_out)
            best_out = logits[e];
    }
    *margin = k == n_expert ? INFINITY : logits[ids[k - 1]] - best_out;
    const float max = logits[ids[0]];
    double sum = 0.0;
    for (int64_t e = 0; e < n_expert; e++)
        sum += exp((double)logits[e] - max);
    double kept_sum = 0.0;
    for (int64_t j = 0; j < k; j++) {
        const double p = exp((double)logits[ids[j]] - max) / sum;
        weights[j] = (float)p;
        kept_sum += p;
    }
    if (normalize)
        for (int64_t j = 0; j < k; j++)
            weights[j] = (float)((double)weights[j] / kept_sum);
}
