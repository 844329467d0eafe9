/*
 * Synthetic models: GGUF files of the real LLaDA, Dream, LLaDA-MoE and RND1 layouts with
 * random weights (synth.h). The tensor list, its order and the types of the Q4_K_M mix
 * follow llama-quantize (llama.cpp src/llama-quant.cpp); the keys and the synthetic
 * vocabulary follow the test fixtures, which llama.cpp's own converter wrote.
 */
#include "config.h"

#include "random_blocks.h"
#include "dllm.h"
#include "gguf_write.h"
#include "rng.h"
#include "synth.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KEY_MAX      128
#define NAME_MAX_LEN 64         /* ggml's GGML_MAX_NAME, terminator included */
#define CHUNK_BYTES  (1u << 20) /* tensor data generated and written per step */
#define MAX_LAYERS   4096
#define N_MERGES     8
#define FIRST_FREE   (256 + N_MERGES) /* the first id after the byte and merge tokens */
#define TOKEN_MAX    24               /* bytes of the longest generated token text, NUL included */

/* The chat templates, as the models' tokenizer_config.json files publish them. */
static const char llada_template[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n"
    "\n"
    "'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = "
    "bos_token + content %}{% endif %}{{ content }}{% endfor %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n"
    "\n"
    "' }}";

static const char dream_template[] =
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- 'You are a helpful assistant.' }}\n"
    "    {%- endif %}\n"
    "    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user "
    "query.\\n\\nYou are provided with function signatures within <tools></tools> XML "
    "tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- \"\\n\" }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name "
    "and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": "
    "<function-name>, \\\"arguments\\\": <args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' "
    "}}\n"
    "    {%- elif message.role == \"assistant\" %}\n"
    "        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n"
    "            {{- '\\n' + message.content }}\n"
    "        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n"
    "            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n"
    "            {%- endif %}\n"
    "            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n"
    "            {{- tool_call.name }}\n"
    "            {{- '\", \"arguments\": ' }}\n"
    "            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n"
    "        {%- endfor %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n"
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n";

/*
 * LLaDA-MoE-7B-A1B-Instruct's Ling role tags, as the llada-moe fixture carries them (thinking
 * off), and Qwen3's template, which RND1 keeps from Qwen3-30B-A3B (llama.cpp's
 * models/templates/Qwen-Qwen3-0.6B.jinja).
 */
static const char ling_template[] =
    "{%- set thinking_option = 'off' -%}{{- '<role>SYSTEM</role>' -}}{%- if messages and messag"
    "es[0]['role'] == 'system' -%}{{- messages[0]['content'] + '\\n' -}}{%- endif -%}{{- 'detai"
    "led thinking ' + thinking_option + '<|role_end|>' -}}{%- for message in messages -%}{%- if"
    " message['role'] == 'user' -%}{{- '<role>HUMAN</role>' + message['content'] + '<|role_end|"
    ">' -}}{%- elif message['role'] == 'assistant' -%}{{- '<role>ASSISTANT</role>' + message['c"
    "ontent'] + '<|role_end|>' -}}{%- elif message['role'] == 'system' and not loop.first -%}{{"
    "- '<role>SYSTEM</role>' + message['content'] + '<|role_end|>' -}}{%- endif -%}{%- endfor -"
    "%}{%- if add_generation_prompt -%}{{- '<role>ASSISTANT</role>' -}}{%- endif -%}";

static const char qwen3_template[] =
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0].role == 'system' %}\n"
    "        {{- messages[0].content + '\\n\\n' }}\n"
    "    {%- endif %}\n"
    "    {{- \"# Tools\\n\\nYou may call one or more functions to assist with the user query."
    "\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>"
    "\" }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- \"\\n\" }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name"
    " and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <fu"
    "nction-name>, \\\"arguments\\\": <args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n"
    "    {%- if messages[0].role == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}\n"
    "{%- for message in messages[::-1] %}\n"
    "    {%- set index = (messages|length - 1) - loop.index0 %}\n"
    "    {%- if ns.multi_step_tool and message.role == \"user\" and not(message.content.startsw"
    "ith('<tool_response>') and message.content.endswith('</tool_response>')) %}\n"
    "        {%- set ns.multi_step_tool = false %}\n"
    "        {%- set ns.last_query_index = index %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) %"
    "}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n'"
    " }}\n"
    "    {%- elif message.role == \"assistant\" %}\n"
    "        {%- set content = message.content %}\n"
    "        {%- set reasoning_content = '' %}\n"
    "        {%- if message.reasoning_content is defined and message.reasoning_content is not n"
    "one %}\n"
    "            {%- set reasoning_content = message.reasoning_content %}\n"
    "        {%- else %}\n"
    "            {%- if '</think>' in message.content %}\n"
    "                {%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}\n"
    "                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('"
    "\\n').split('<think>')[-1].lstrip('\\n') %}\n"
    "            {%- endif %}\n"
    "        {%- endif %}\n"
    "        {%- if loop.index0 > ns.last_query_index %}\n"
    "            {%- if loop.last or (not loop.last and reasoning_content) %}\n"
    "                {{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.st"
    "rip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}\n"
    "            {%- else %}\n"
    "                {{- '<|im_start|>' + message.role + '\\n' + content }}\n"
    "            {%- endif %}\n"
    "        {%- else %}\n"
    "            {{- '<|im_start|>' + message.role + '\\n' + content }}\n"
    "        {%- endif %}\n"
    "        {%- if message.tool_calls %}\n"
    "            {%- for tool_call in message.tool_calls %}\n"
    "                {%- if (loop.first and content) or (not loop.first) %}\n"
    "                    {{- '\\n' }}\n"
    "                {%- endif %}\n"
    "                {%- if tool_call.function %}\n"
    "                    {%- set tool_call = tool_call.function %}\n"
    "                {%- endif %}\n"
    "                {{- '<tool_call>\\n{\"name\": \"' }}\n"
    "                {{- tool_call.name }}\n"
    "                {{- '\", \"arguments\": ' }}\n"
    "                {%- if tool_call.arguments is string %}\n"
    "                    {{- tool_call.arguments }}\n"
    "                {%- else %}\n"
    "                    {{- tool_call.arguments | tojson }}\n"
    "                {%- endif %}\n"
    "                {{- '}\\n</tool_call>' }}\n"
    "            {%- endfor %}\n"
    "        {%- endif %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if loop.first or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n"
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}";

/* A special token at its id in the real vocabulary. */
struct special {
    const char *text;
    int32_t id;
};

static const struct special llada_specials[] = {
    {"<|startoftext|>", 126080},     {"<|endoftext|>", 126081},     {"<|mdm_mask|>", 126336},
    {"<|start_header_id|>", 126346}, {"<|end_header_id|>", 126347}, {"<|eot_id|>", 126348},
};

static const struct special dream_specials[] = {
    {"<|endoftext|>", 151643},   {"<|im_start|>", 151644}, {"<|im_end|>", 151645},
    {"<|beginoftext|>", 151665}, {"<|mask|>", 151666},
};

/* LLaDA-MoE's, at the fixture's distances from the top of its 157184 (mask 156895). */
static const struct special llada_moe_specials[] = {
    {"<|startoftext|>", 156891}, {"<|endoftext|>", 156892}, {"[CLS]", 156893},
    {"[gMASK]", 156894},         {"<|mask|>", 156895},      {"<role>", 156896},
    {"</role>", 156897},         {"<|role_end|>", 156898},
};

/* Qwen3's (RND1 adds <|mask|> 151669), of 151936. */
static const struct special rnd1_specials[] = {
    {"<|endoftext|>", 151643},    {"<|im_start|>", 151644}, {"<|im_end|>", 151645},
    {"<tool_call>", 151657},      {"</tool_call>", 151658}, {"<tool_response>", 151665},
    {"</tool_response>", 151666}, {"<think>", 151667},      {"</think>", 151668},
    {"<|mask|>", 151669},
};

/*
 * What the architectures write differently; special ids are real-vocabulary ids. The MoE
 * converters write no vocab_size or rope.dimension_count, and rnd1's no shift_logits but the
 * head size.
 */
struct arch_desc {
    const char *name;
    const char *pre; /* tokenizer.ggml.pre */
    const char *chat_template;
    float rope_base, norm_eps;
    bool qkv_bias, add_bos, shift_logits;
    bool moe;           /* routed experts, per-head Q/K norms, the MoE converters' keys */
    bool shift_key;     /* diffusion.shift_logits is written */
    bool head_dim_keys; /* attention.key_length and value_length are written */
    int32_t real_vocab;
    const struct special *specials; /* ascending ids */
    size_t n_specials;
    int32_t bos, eos, mask, eot; /* eot -1: no tokenizer.ggml.eot_token_id key */
};

#define SPECIALS(list) list, sizeof list / sizeof *list

static const struct arch_desc archs[] = {
    {"llada", "llada-moe", llada_template, 500000.0f, 1e-5f, false, true, false, false, true, false,
     126464, SPECIALS(llada_specials), 126080, 126081, 126336, 126348},
    {"dream", "qwen2", dream_template, 1000000.0f, 1e-6f, true, false, true, false, true, false,
     152064, SPECIALS(dream_specials), 151665, 151643, 151666, -1},
    {"llada-moe", "llada-moe", ling_template, 50000.0f, 1e-5f, false, false, false, true, true,
     false, 157184, SPECIALS(llada_moe_specials), 156891, 156892, 156895, -1},
    {"rnd1", "qwen2", qwen3_template, 1000000.0f, 1e-6f, false, false, true, true, false, true,
     151936, SPECIALS(rnd1_specials), 151643, 151643, 151669, -1},
};

struct preset {
    const char *arch, *name;
    int64_t n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
    int64_t head_dim, n_expert, n_expert_used, n_ff_exp; /* 0 for the dense models */
};

/*
 * The real shapes (config.json of each model; LLaDA-MoE's feed_forward_length is written as
 * expert ffn times used experts, RND1's is Qwen3-30B-A3B's intermediate_size) and the
 * fixtures' tiny ones.
 */
static const struct preset presets[] = {
    {"llada", "8b", 32, 4096, 32, 32, 12288, 126464, 4096, 0, 0, 0, 0},
    {"llada", "tiny", 2, 256, 4, 4, 512, 2048, 4096, 0, 0, 0, 0},
    {"dream", "7b", 28, 3584, 28, 4, 18944, 152064, 131072, 0, 0, 0, 0},
    {"dream", "tiny", 2, 256, 4, 2, 768, 2048, 4096, 0, 0, 0, 0},
    {"llada-moe", "7b-a1b", 16, 2048, 16, 16, 8192, 157184, 4096, 0, 64, 8, 1024},
    {"llada-moe", "tiny", 2, 256, 4, 4, 512, 2048, 4096, 0, 8, 2, 128},
    {"rnd1", "30b-a3b", 48, 2048, 32, 4, 6144, 151936, 40960, 128, 128, 8, 768},
    {"rnd1", "tiny", 2, 256, 4, 2, 768, 2048, 4096, 128, 8, 2, 128},
};

/* The merges of the synthetic vocabulary, by rank; token 256 + i is merge i's result. */
static const char *const merges[N_MERGES] = {
    "\u0120 t", "h e", "\u0120t he", "i n", "\u0120 a", "e r", "o n", "r e",
};

static const struct {
    enum dllm_synth_type type;
    const char *name;
    uint32_t base; /* the matrices' type */
    uint32_t more; /* attn_v and ffn_down in use_more_bits layers (0: low_bit_rule's) */
    uint32_t out;  /* output.weight */
} type_mixes[] = {
    {DLLM_SYNTH_Q4_K_M, "Q4_K_M", DLLM_TYPE_Q4_K, DLLM_TYPE_Q6_K, DLLM_TYPE_Q6_K},
    {DLLM_SYNTH_Q5_K_M, "Q5_K_M", DLLM_TYPE_Q5_K, DLLM_TYPE_Q6_K, DLLM_TYPE_Q6_K},
    {DLLM_SYNTH_Q6_K, "Q6_K", DLLM_TYPE_Q6_K, DLLM_TYPE_Q6_K, DLLM_TYPE_Q6_K},
    {DLLM_SYNTH_Q8_0, "Q8_0", DLLM_TYPE_Q8_0, DLLM_TYPE_Q8_0, DLLM_TYPE_Q8_0},
    {DLLM_SYNTH_Q3_K_M, "Q3_K_M", DLLM_TYPE_Q3_K, 0, DLLM_TYPE_Q6_K},
    {DLLM_SYNTH_Q2_K, "Q2_K", DLLM_TYPE_Q2_K, 0, DLLM_TYPE_Q6_K},
    {DLLM_SYNTH_F16, "F16", DLLM_TYPE_F16, DLLM_TYPE_F16, DLLM_TYPE_F16},
};
#define N_TYPE_MIXES (sizeof type_mixes / sizeof type_mixes[0])

/* Tensor shapes in terms of the hyperparameters. */
enum dim { DIM_ONE, DIM_EMBD, DIM_Q, DIM_KV, DIM_HEAD, DIM_FF, DIM_FF_EXP, DIM_EXPERTS, DIM_VOCAB };

/* What a tensor holds: which rule picks its type, and how its values are drawn. */
enum role {
    ROLE_NORM,     /* F32 near 1 */
    ROLE_BIAS,     /* F32 near 0; only where the architecture has Q/K/V biases */
    ROLE_ROUTER,   /* F32 matrix: llama-quantize leaves ffn_gate_inp alone */
    ROLE_MATRIX,   /* the mix's base type */
    ROLE_ATTN_K,   /* the base type; Q8_0 in an 8-expert model */
    ROLE_ATTN_V,   /* the wider type in use_more_bits layers; Q8_0 in an 8-expert model */
    ROLE_ATTN_OUT, /* the base type; Q5_K in an 8-expert Q4_K_M model */
    ROLE_FFN_DOWN, /* the mix's wider type in use_more_bits layers */
    ROLE_OUTPUT,   /* output.weight */
};

struct tensor_desc {
    const char *name;
    enum role role;
    enum dim ne0, ne1, ne2;
};

/* The tensors outside the blocks, then those of a block, each list ordered by name. */
static const struct tensor_desc global_tensors[] = {
    {"output.weight", ROLE_OUTPUT, DIM_EMBD, DIM_VOCAB, DIM_ONE},
    {"output_norm.weight", ROLE_NORM, DIM_EMBD, DIM_ONE, DIM_ONE},
    {"token_embd.weight", ROLE_MATRIX, DIM_EMBD, DIM_VOCAB, DIM_ONE},
};

static const struct tensor_desc layer_tensors[] = {
    {"attn_k.bias", ROLE_BIAS, DIM_KV, DIM_ONE, DIM_ONE},
    {"attn_k.weight", ROLE_ATTN_K, DIM_EMBD, DIM_KV, DIM_ONE},
    {"attn_norm.weight", ROLE_NORM, DIM_EMBD, DIM_ONE, DIM_ONE},
    {"attn_output.weight", ROLE_ATTN_OUT, DIM_Q, DIM_EMBD, DIM_ONE},
    {"attn_q.bias", ROLE_BIAS, DIM_Q, DIM_ONE, DIM_ONE},
    {"attn_q.weight", ROLE_MATRIX, DIM_EMBD, DIM_Q, DIM_ONE},
    {"attn_v.bias", ROLE_BIAS, DIM_KV, DIM_ONE, DIM_ONE},
    {"attn_v.weight", ROLE_ATTN_V, DIM_EMBD, DIM_KV, DIM_ONE},
    {"ffn_down.weight", ROLE_FFN_DOWN, DIM_FF, DIM_EMBD, DIM_ONE},
    {"ffn_gate.weight", ROLE_MATRIX, DIM_EMBD, DIM_FF, DIM_ONE},
    {"ffn_norm.weight", ROLE_NORM, DIM_EMBD, DIM_ONE, DIM_ONE},
    {"ffn_up.weight", ROLE_MATRIX, DIM_EMBD, DIM_FF, DIM_ONE},
};

/* A MoE block (llama.cpp's llada-moe and rnd1 tensors). */
static const struct tensor_desc moe_layer_tensors[] = {
    {"attn_k.weight", ROLE_ATTN_K, DIM_EMBD, DIM_KV, DIM_ONE},
    {"attn_k_norm.weight", ROLE_NORM, DIM_HEAD, DIM_ONE, DIM_ONE},
    {"attn_norm.weight", ROLE_NORM, DIM_EMBD, DIM_ONE, DIM_ONE},
    {"attn_output.weight", ROLE_ATTN_OUT, DIM_Q, DIM_EMBD, DIM_ONE},
    {"attn_q.weight", ROLE_MATRIX, DIM_EMBD, DIM_Q, DIM_ONE},
    {"attn_q_norm.weight", ROLE_NORM, DIM_HEAD, DIM_ONE, DIM_ONE},
    {"attn_v.weight", ROLE_ATTN_V, DIM_EMBD, DIM_KV, DIM_ONE},
    {"ffn_down_exps.weight", ROLE_FFN_DOWN, DIM_FF_EXP, DIM_EMBD, DIM_EXPERTS},
    {"ffn_gate_exps.weight", ROLE_MATRIX, DIM_EMBD, DIM_FF_EXP, DIM_EXPERTS},
    {"ffn_gate_inp.weight", ROLE_ROUTER, DIM_EMBD, DIM_EXPERTS, DIM_ONE},
    {"ffn_norm.weight", ROLE_NORM, DIM_EMBD, DIM_ONE, DIM_ONE},
    {"ffn_up_exps.weight", ROLE_MATRIX, DIM_EMBD, DIM_FF_EXP, DIM_EXPERTS},
};

#define N_GLOBAL    (sizeof global_tensors / sizeof global_tensors[0])
#define N_LAYER     (sizeof layer_tensors / sizeof layer_tensors[0])
#define N_MOE_LAYER (sizeof moe_layer_tensors / sizeof moe_layer_tensors[0])

/* One tensor of the file to write. */
struct planned {
    char name[NAME_MAX_LEN];
    enum role role;
    uint32_t type;
    int n_dims;
    int64_t ne[3];
};

static const struct arch_desc *find_arch(const char *name)
{
    for (size_t i = 0; name && i < sizeof archs / sizeof archs[0]; i++)
        if (strcmp(archs[i].name, name) == 0)
            return &archs[i];
    return NULL;
}

static int find_mix(enum dllm_synth_type type)
{
    for (size_t i = 0; i < N_TYPE_MIXES; i++)
        if (type_mixes[i].type == type)
            return (int)i;
    return -1;
}

const char *dllm_synth_type_name(enum dllm_synth_type type)
{
    int i = find_mix(type);
    return i < 0 ? NULL : type_mixes[i].name;
}

bool dllm_synth_type_parse(const char *name, enum dllm_synth_type *out)
{
    for (size_t i = 0; i < N_TYPE_MIXES; i++) {
        if (strcasecmp(type_mixes[i].name, name) == 0) {
            *out = type_mixes[i].type;
            return true;
        }
    }
    return false;
}

enum dllm_status dllm_synth_params_init(struct dllm_synth_params *params, const char *arch,
                                        const char *preset, struct dllm_error *err)
{
    const struct arch_desc *a = find_arch(arch);
    if (!a)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "unknown architecture '%s' (synthetic models: llada, dream, "
                              "llada-moe, rnd1)",
                              arch ? arch : "(none)");
    char names[64] = "";
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const struct preset *p = &presets[i];
        if (strcmp(p->arch, a->name) != 0)
            continue;
        if (preset && strcmp(p->name, preset) == 0) {
            *params = (struct dllm_synth_params){
                .arch = a->name,
                .n_layer = p->n_layer,
                .n_embd = p->n_embd,
                .n_head = p->n_head,
                .n_head_kv = p->n_head_kv,
                .n_ff = p->n_ff,
                .n_vocab = p->n_vocab,
                .n_ctx = p->n_ctx,
                .head_dim = p->head_dim,
                .n_expert = p->n_expert,
                .n_expert_used = p->n_expert_used,
                .n_ff_exp = p->n_ff_exp,
                .type = DLLM_SYNTH_Q4_K_M,
                .seed = 0,
            };
            return DLLM_OK;
        }
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", *names ? ", " : "",
                 p->name);
    }
    return dllm_error_set(err, DLLM_ERR_ARG, "unknown %s preset '%s' (presets: %s)", a->name,
                          preset ? preset : "(none)", names);
}

/* Whether n is in [1, max]. */
static bool in_range(int64_t n, int64_t max)
{
    return n >= 1 && n <= max;
}

/*
 * Where the special tokens start: their real ids when the vocabulary holds the last of them,
 * else shifted down so that they keep their distance from the top of the vocabulary.
 */
static int64_t special_shift(const struct arch_desc *a, int64_t n_vocab)
{
    return n_vocab > a->specials[a->n_specials - 1].id ? 0 : n_vocab - a->real_vocab;
}

enum dllm_status dllm_synth_params_check(const struct dllm_synth_params *p, struct dllm_error *err)
{
    const struct arch_desc *a = find_arch(p->arch);
    if (!a)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "unknown architecture '%s' (synthetic models: llada, dream, "
                              "llada-moe, rnd1)",
                              p->arch ? p->arch : "(none)");
    int mix = find_mix(p->type);
    if (mix < 0)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "unknown type mix %d (Q4_K_M, Q5_K_M, Q6_K, Q8_0 or F16)",
                              (int)p->type);
    const int64_t block = dllm_type_block_elems(type_mixes[mix].base);
    if (!in_range(p->n_layer, MAX_LAYERS))
        return dllm_error_set(err, DLLM_ERR_ARG, "%" PRId64 " layers: from 1 to %d", p->n_layer,
                              MAX_LAYERS);
    if (!in_range(p->n_embd, 1 << 20) || p->n_embd % block)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "d_model %" PRId64 " must be a multiple of %" PRId64
                              " for %s, at most 2^20",
                              p->n_embd, block, type_mixes[mix].name);
    if (!in_range(p->n_ff, 1 << 20) || (!a->moe && p->n_ff % block))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "ffn size %" PRId64 " must be a multiple of %" PRId64
                              " for %s, at most 2^20",
                              p->n_ff, block, type_mixes[mix].name);
    if (p->head_dim
            ? !in_range(p->n_head, 1 << 16) || !in_range(p->head_dim, 1 << 16) || p->head_dim % 2
            : !in_range(p->n_head, p->n_embd) || p->n_embd % p->n_head ||
                  (p->n_embd / p->n_head) % 2)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " heads must divide d_model %" PRId64
                              " into heads of an even size",
                              p->n_head, p->n_embd);
    if (!in_range(p->n_head_kv, p->n_head) || p->n_head % p->n_head_kv)
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " KV heads must divide %" PRId64 " heads", p->n_head_kv,
                              p->n_head);
    if (a->moe && (!in_range(p->n_expert, 512) || p->n_expert < 2 ||
                   !in_range(p->n_expert_used, p->n_expert)))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "%" PRId64 " experts, %" PRId64 " used: from 2 to 512 experts, "
                              "1 to all of them used",
                              p->n_expert, p->n_expert_used);
    if (a->moe && (!in_range(p->n_ff_exp, 1 << 20) || p->n_ff_exp % 32))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "expert ffn size %" PRId64 " must be a multiple of 32, at most 2^20",
                              p->n_ff_exp);
    const int64_t top = a->real_vocab - a->specials[0].id; /* special ids from the top */
    if (!in_range(p->n_vocab, INT32_MAX) ||
        (special_shift(a, p->n_vocab) && p->n_vocab - top < FIRST_FREE))
        return dllm_error_set(err, DLLM_ERR_ARG,
                              "vocabulary of %" PRId64 " tokens: %s needs at least %" PRId64
                              " (%d byte and merge tokens, then its special tokens)",
                              p->n_vocab, a->name, FIRST_FREE + top, FIRST_FREE);
    if (!in_range(p->n_ctx, UINT32_MAX))
        return dllm_error_set(err, DLLM_ERR_ARG, "context length %" PRId64 ": from 1 to %" PRIu32,
                              p->n_ctx, UINT32_MAX);
    return DLLM_OK;
}

/* llama-quantize's choice of layers that get more bits: the first and last eighth, and every
 * third layer between them. */
static bool use_more_bits(int64_t i, int64_t n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The size of one attention head: the preset's, else d_model / heads. */
static int64_t head_dim(const struct dllm_synth_params *p)
{
    return p->head_dim ? p->head_dim : p->n_embd / p->n_head;
}

static int64_t dim_value(const struct dllm_synth_params *p, enum dim d)
{
    switch (d) {
    case DIM_EMBD: return p->n_embd;
    case DIM_Q: return p->n_head * head_dim(p);
    case DIM_KV: return p->n_head_kv * head_dim(p);
    case DIM_HEAD: return head_dim(p);
    case DIM_FF: return p->n_ff;
    case DIM_FF_EXP: return p->n_ff_exp;
    case DIM_EXPERTS: return p->n_expert;
    case DIM_VOCAB: return p->n_vocab;
    case DIM_ONE: break;
    }
    return 1;
}

/*
 * The Q3_K_M and Q2_K mixes' rules for attn_v, attn_output and ffn_down (llama_tensor_get_type):
 * Q3_K_M gives attn_v Q5_K in layers 0 and 1 and Q4_K after, ffn_down Q5_K in the first
 * sixteenth of the layers and Q4_K after, attn_output Q4_K; Q2_K gives attn_v Q4_K where 4 or
 * more query heads share a key head and Q3_K otherwise, ffn_down and attn_output Q3_K.
 */
static uint32_t low_bit_rule(const struct dllm_synth_params *p, enum role role, int64_t layer)
{
    const bool q3 = p->type == DLLM_SYNTH_Q3_K_M;
    switch (role) {
    case ROLE_ATTN_V:
        if (q3)
            return layer < 2 ? DLLM_TYPE_Q5_K : DLLM_TYPE_Q4_K;
        return p->n_head / p->n_head_kv >= 4 ? DLLM_TYPE_Q4_K : DLLM_TYPE_Q3_K;
    case ROLE_FFN_DOWN:
        if (q3)
            return layer < p->n_layer / 16 ? DLLM_TYPE_Q5_K : DLLM_TYPE_Q4_K;
        return DLLM_TYPE_Q3_K;
    default: return q3 ? DLLM_TYPE_Q4_K : DLLM_TYPE_Q3_K; /* attn_output */
    }
}

/*
 * llama-quantize's type for a tensor of a role in layer `layer` (llama_tensor_get_type): the
 * mix's rule, the 8-expert rules, then the fallback for rows that are no multiple of 256 (a
 * K-quant's block): Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, and Q2_K and Q3_K -> Q4_0 (where
 * llama-quantize takes IQ4_NL, which dllm has no kernels for). F16 is the converter's: every
 * matrix F16, the vectors F32.
 */
static uint32_t tensor_type(const struct dllm_synth_params *p, int mix, enum role role,
                            int64_t layer, int64_t ne0)
{
    const bool eight = p->n_expert == 8, more = use_more_bits(layer, p->n_layer);
    const bool low_bits = p->type == DLLM_SYNTH_Q3_K_M || p->type == DLLM_SYNTH_Q2_K;
    uint32_t t = type_mixes[mix].base;
    if (role == ROLE_NORM || role == ROLE_BIAS || role == ROLE_ROUTER)
        return DLLM_TYPE_F32;
    if (t == DLLM_TYPE_F16) /* the converter's output: no quantizer's rules */
        return t;
    switch (role) {
    case ROLE_NORM: /* the vectors returned above */
    case ROLE_BIAS:
    case ROLE_ROUTER:
    case ROLE_MATRIX: break;
    case ROLE_ATTN_K: t = eight ? DLLM_TYPE_Q8_0 : t; break;
    case ROLE_ATTN_V:
    case ROLE_ATTN_OUT:
    case ROLE_FFN_DOWN:
        if (role == ROLE_ATTN_V && eight)
            t = DLLM_TYPE_Q8_0;
        else if (low_bits)
            t = low_bit_rule(p, role, layer);
        else if (role == ROLE_ATTN_OUT)
            t = eight && p->type == DLLM_SYNTH_Q4_K_M ? DLLM_TYPE_Q5_K : t;
        else if (more)
            t = type_mixes[mix].more;
        break;
    case ROLE_OUTPUT: t = type_mixes[mix].out; break;
    }
    if (ne0 % 256 == 0)
        return t;
    switch (t) {
    case DLLM_TYPE_Q4_K: return DLLM_TYPE_Q5_0;
    case DLLM_TYPE_Q5_K: return DLLM_TYPE_Q5_1;
    case DLLM_TYPE_Q6_K: return DLLM_TYPE_Q8_0;
    case DLLM_TYPE_Q2_K:
    case DLLM_TYPE_Q3_K: return DLLM_TYPE_Q4_0;
    default: return t;
    }
}

/* Fills out[0 ..] with the file's tensors in order; returns their number. */
static size_t plan_tensors(const struct dllm_synth_params *p, const struct arch_desc *a,
                           struct planned *out)
{
    const int mix = find_mix(p->type);
    size_t n = 0;
    for (int64_t layer = -1; layer < p->n_layer; layer++) {
        const struct tensor_desc *list = layer < 0 ? global_tensors
                                         : a->moe  ? moe_layer_tensors
                                                   : layer_tensors;
        const size_t count = layer < 0 ? N_GLOBAL : a->moe ? N_MOE_LAYER : N_LAYER;
        for (size_t i = 0; i < count; i++) {
            const struct tensor_desc *d = &list[i];
            if (d->role == ROLE_BIAS && !a->qkv_bias)
                continue;
            struct planned *t = &out[n++];
            if (layer < 0)
                snprintf(t->name, sizeof t->name, "%s", d->name);
            else
                snprintf(t->name, sizeof t->name, "blk.%" PRId64 ".%s", layer, d->name);
            t->role = d->role;
            t->ne[0] = dim_value(p, d->ne0);
            t->ne[1] = dim_value(p, d->ne1);
            t->ne[2] = dim_value(p, d->ne2);
            t->n_dims = d->ne2 != DIM_ONE ? 3 : d->ne1 != DIM_ONE ? 2 : 1;
            t->type = tensor_type(p, mix, d->role, layer, t->ne[0]);
        }
    }
    return n;
}

/* ---- the vocabulary ----------------------------------------------------------------------- */

struct vocab {
    const char **tokens; /* [n_vocab] */
    int32_t *types;      /* [n_vocab] enum dllm_token_type */
    char *pool;          /* [n_vocab][TOKEN_MAX]: texts of byte, merge and filler tokens */
};

static void vocab_fini(struct vocab *v)
{
    free(v->tokens);
    free(v->types);
    free(v->pool);
}

/* Builds the synthetic vocabulary of n tokens; vocab_fini frees it, also after a failure. */
static enum dllm_status vocab_init(struct vocab *v, const struct arch_desc *a, int64_t n,
                                   struct dllm_error *err)
{
    v->tokens = malloc((size_t)n * sizeof *v->tokens);
    v->types = malloc((size_t)n * sizeof *v->types);
    v->pool = malloc((size_t)n * TOKEN_MAX);
    if (!v->tokens || !v->types || !v->pool)
        return dllm_error_set(err, DLLM_ERR_NOMEM,
                              "out of memory for a vocabulary of %" PRId64 " tokens", n);
    for (int64_t i = 0; i < n; i++) {
        char *text = v->pool + (size_t)i * TOKEN_MAX;
        if (i < 256) {
            text[dllm_tokenizer_byte_text((unsigned char)i, text)] = 0;
        } else if (i < FIRST_FREE) {
            const char *m = merges[i - 256], *space = strchr(m, ' ');
            snprintf(text, TOKEN_MAX, "%.*s%s", (int)(space - m), m, space + 1);
        } else {
            snprintf(text, TOKEN_MAX, "[PAD%d]", (int)i);
        }
        v->tokens[i] = text;
        v->types[i] = i < FIRST_FREE ? DLLM_TOKEN_TYPE_NORMAL : DLLM_TOKEN_TYPE_UNUSED;
    }
    const int64_t shift = special_shift(a, n);
    for (size_t i = 0; i < a->n_specials; i++) {
        const int64_t id = a->specials[i].id + shift;
        v->tokens[id] = a->specials[i].text;
        v->types[id] = DLLM_TOKEN_TYPE_CONTROL;
    }
    return DLLM_OK;
}

/* ---- metadata ----------------------------------------------------------------------------- */

static enum dllm_status set_arch_u32(struct dllm_gguf_writer *w, const char *arch,
                                     const char *suffix, int64_t v, struct dllm_error *err)
{
    char key[KEY_MAX];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return dllm_gguf_writer_set_u32(w, key, (uint32_t)v, err);
}

static enum dllm_status set_arch_f32(struct dllm_gguf_writer *w, const char *arch,
                                     const char *suffix, float v, struct dllm_error *err)
{
    char key[KEY_MAX];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return dllm_gguf_writer_set_f32(w, key, v, err);
}

/* The hyperparameters of a dense model, in the order llama.cpp's converter writes them. */
static enum dllm_status set_dense_keys(struct dllm_gguf_writer *w,
                                       const struct dllm_synth_params *p, const struct arch_desc *a,
                                       struct dllm_error *err)
{
    const char *n = a->name;
    enum dllm_status st;
    if ((st = set_arch_u32(w, n, "context_length", p->n_ctx, err)) ||
        (st = set_arch_u32(w, n, "embedding_length", p->n_embd, err)) ||
        (st = set_arch_u32(w, n, "block_count", p->n_layer, err)) ||
        (st = set_arch_u32(w, n, "feed_forward_length", p->n_ff, err)) ||
        (st = set_arch_u32(w, n, "attention.head_count", p->n_head, err)) ||
        (st = set_arch_u32(w, n, "attention.head_count_kv", p->n_head_kv, err)) ||
        (st = set_arch_f32(w, n, "rope.freq_base", a->rope_base, err)) ||
        (st = set_arch_f32(w, n, "attention.layer_norm_rms_epsilon", a->norm_eps, err)) ||
        (st = set_arch_u32(w, n, "rope.dimension_count", head_dim(p), err)) ||
        (st = set_arch_u32(w, n, "vocab_size", p->n_vocab, err)))
        return st;
    return DLLM_OK;
}

/* The hyperparameters of a MoE model, in the order the llada-moe and rnd1 fixtures hold. */
static enum dllm_status set_moe_keys(struct dllm_gguf_writer *w, const struct dllm_synth_params *p,
                                     const struct arch_desc *a, struct dllm_error *err)
{
    const char *n = a->name;
    enum dllm_status st;
    if ((st = set_arch_u32(w, n, "block_count", p->n_layer, err)) ||
        (st = set_arch_u32(w, n, "context_length", p->n_ctx, err)) ||
        (st = set_arch_u32(w, n, "embedding_length", p->n_embd, err)) ||
        (st = set_arch_u32(w, n, "feed_forward_length", p->n_ff, err)) ||
        (st = set_arch_u32(w, n, "attention.head_count", p->n_head, err)) ||
        (st = set_arch_u32(w, n, "attention.head_count_kv", p->n_head_kv, err)) ||
        (st = set_arch_f32(w, n, "rope.freq_base", a->rope_base, err)) ||
        (st = set_arch_f32(w, n, "attention.layer_norm_rms_epsilon", a->norm_eps, err)) ||
        (st = set_arch_u32(w, n, "expert_count", p->n_expert, err)) ||
        (st = set_arch_u32(w, n, "expert_used_count", p->n_expert_used, err)))
        return st;
    if (a->head_dim_keys && ((st = set_arch_u32(w, n, "attention.key_length", head_dim(p), err)) ||
                             (st = set_arch_u32(w, n, "attention.value_length", head_dim(p), err))))
        return st;
    return set_arch_u32(w, n, "expert_feed_forward_length", p->n_ff_exp, err);
}

/* Every key, in the order llama.cpp's converter and llama-quantize write them. */
static enum dllm_status set_keys(struct dllm_gguf_writer *w, const struct dllm_synth_params *p,
                                 const struct arch_desc *a, const struct vocab *v,
                                 struct dllm_error *err)
{
    const char *n = a->name;
    const int64_t shift = special_shift(a, p->n_vocab);
    char name[KEY_MAX], causal[KEY_MAX];
    snprintf(name, sizeof name, "synthetic-%s", n);
    snprintf(causal, sizeof causal, "%s.attention.causal", n);
    enum dllm_status st;
    if ((st = dllm_gguf_writer_set_str(w, "general.architecture", n, err)) ||
        (st = dllm_gguf_writer_set_str(w, "general.name", name, err)) ||
        (st = a->moe ? set_moe_keys(w, p, a, err) : set_dense_keys(w, p, a, err)) ||
        (st = dllm_gguf_writer_set_bool(w, causal, false, err)))
        return st;
    if (a->moe && a->shift_key &&
        (st = dllm_gguf_writer_set_bool(w, "diffusion.shift_logits", a->shift_logits, err)))
        return st;
    if ((st = dllm_gguf_writer_set_str(w, "tokenizer.chat_template", a->chat_template, err)) ||
        (st = dllm_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2", err)) ||
        (st = dllm_gguf_writer_set_str(w, "tokenizer.ggml.pre", a->pre, err)) ||
        (st = dllm_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", v->tokens,
                                             (uint64_t)p->n_vocab, err)) ||
        (st = dllm_gguf_writer_set_array(w, "tokenizer.ggml.token_type", DLLM_GGUF_INT32, v->types,
                                         (uint64_t)p->n_vocab, err)) ||
        (st = dllm_gguf_writer_set_str_array(w, "tokenizer.ggml.merges", merges, N_MERGES, err)) ||
        (st = dllm_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)(a->bos + shift),
                                       err)) ||
        (st = dllm_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)(a->eos + shift),
                                       err)) ||
        (st = dllm_gguf_writer_set_u32(w, "tokenizer.ggml.mask_token_id",
                                       (uint32_t)(a->mask + shift), err)))
        return st;
    if (a->eot >= 0 && (st = dllm_gguf_writer_set_u32(w, "tokenizer.ggml.eot_token_id",
                                                      (uint32_t)(a->eot + shift), err)))
        return st;
    if ((st = dllm_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", a->add_bos, err)))
        return st;
    if (!a->moe && a->shift_key &&
        (st = dllm_gguf_writer_set_bool(w, "diffusion.shift_logits", a->shift_logits, err)))
        return st;
    if ((st = dllm_gguf_writer_set_u32(w, "general.quantization_version", 2, err)) ||
        (st = dllm_gguf_writer_set_u32(w, "general.file_type", (uint32_t)p->type, err)))
        return st;
    return DLLM_OK;
}

/* Where tensor data goes, and who hears of it. */
struct output {
    struct dllm_gguf_writer *w;
    uint8_t *buf; /* [CHUNK_BYTES] */
    const struct dllm_synth_params *params;
};

/*
 * Writes tensor `index`'s data, generated chunk by chunk from its own random stream (so a
 * tensor's values do not depend on the tensors before it), reporting progress after each chunk.
 */
static enum dllm_status write_tensor(struct output *o, const struct planned *t, uint64_t seed,
                                     size_t index, struct dllm_error *err)
{
    struct synth_rng rng = {seed ^ ((uint64_t)(index + 1) * 0x9e3779b97f4a7c15ull)};
    uint8_t *buf = o->buf;
    const size_t block_bytes = dllm_type_block_bytes(t->type);
    const uint64_t n_blocks =
        (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] / dllm_type_block_elems(t->type));
    const size_t per_chunk = CHUNK_BYTES / block_bytes;
    const float sigma = 1.0f / sqrtf((float)t->ne[0]);
    for (uint64_t b = 0; b < n_blocks; b += per_chunk) {
        const size_t n = (size_t)(n_blocks - b < per_chunk ? n_blocks - b : per_chunk);
        if (t->type == DLLM_TYPE_F32) {
            float *f = (float *)buf;
            for (size_t i = 0; i < n; i++) {
                const float u = (float)synth_rng_uniform(&rng) - 0.5f;
                /* a router row of standard deviation sigma (u has 1 / sqrt(12)) */
                f[i] = t->role == ROLE_NORM     ? 1.0f + 0.2f * u
                       : t->role == ROLE_ROUTER ? sigma * 3.4641f * u
                                                : 0.2f * u;
            }
        } else {
            synth_random_blocks(t->type, sigma, &rng, buf, n);
        }
        enum dllm_status st = dllm_gguf_writer_write(o->w, buf, n * block_bytes, err);
        if (st)
            return st;
        const struct dllm_synth_params *p = o->params;
        if (p->progress) {
            const uint64_t done = dllm_gguf_writer_data_written(o->w),
                           total = dllm_gguf_writer_data_size(o->w);
            const struct dllm_progress pr = {.kind = DLLM_PROGRESS_SYNTH,
                                             .fraction = total ? (double)done / (double)total : 1,
                                             .done = (int64_t)done,
                                             .total = (int64_t)total};
            p->progress(&pr, p->progress_user);
        }
        if (p->cancel && atomic_load(p->cancel))
            return dllm_error_set(err, DLLM_ERR_CANCELLED, "cancelled: nothing was written");
    }
    return DLLM_OK;
}

enum dllm_status dllm_synth_write(const char *path, const struct dllm_synth_params *params,
                                  struct dllm_error *err)
{
    struct output o = {.params = params};
    struct planned *tensors = NULL;
    struct vocab vocab = {0};
    enum dllm_status st = dllm_synth_params_check(params, err);
    if (st)
        return st;
    const struct arch_desc *a = find_arch(params->arch);
    tensors = malloc((N_GLOBAL + (size_t)params->n_layer * (a->moe ? N_MOE_LAYER : N_LAYER)) *
                     sizeof *tensors);
    o.buf = malloc(CHUNK_BYTES);
    if (!tensors || !o.buf) {
        st = dllm_error_set(err, DLLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    const size_t n_tensors = plan_tensors(params, a, tensors);
    if ((st = vocab_init(&vocab, a, params->n_vocab, err)) ||
        (st = dllm_gguf_writer_new(&o.w, err)) || (st = set_keys(o.w, params, a, &vocab, err)))
        goto fail;
    for (size_t i = 0; i < n_tensors; i++) {
        const struct planned *t = &tensors[i];
        if ((st = dllm_gguf_writer_add_tensor(o.w, t->name, t->type, t->n_dims, t->ne, err)))
            goto fail;
    }
    if ((st = dllm_gguf_writer_begin(o.w, path, err)))
        goto fail;
    for (size_t i = 0; i < n_tensors; i++)
        if ((st = write_tensor(&o, &tensors[i], params->seed, i, err)))
            goto fail;
    st = dllm_gguf_writer_finish(o.w, NULL, NULL, err);
fail:
    dllm_gguf_writer_free(o.w);
    vocab_fini(&vocab);
    free(tensors);
    free(o.buf);
    return st;
}
