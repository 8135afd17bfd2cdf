/* The vLLM serving flags the planner knows: which it reads, which do not change device
 * memory, and which do but are not modelled; and, for every engine's table, the lookup of
 * an argument as typed and the nearest known name for a typo. A table is what `hbmctl plan`
 * accepts before `--` (docs/planner.md lists them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

#define M HBM_PLAN_FLAG_MODELLED
#define I HBM_PLAN_FLAG_IGNORED
#define U HBM_PLAN_FLAG_UNMODELLED

/* Read into hbm_plan_input first (they win ties in suggestions), then the rest by topic.
 * value: the flag takes the next word (or =VALUE). */
const hbm_plan_flag plan_vllm_flags[] = {
    /* read by the planner */
    {"--model", true, M}, {"--tensor-parallel-size", true, M}, {"-tp", true, M},
    {"--pipeline-parallel-size", true, M}, {"-pp", true, M},
    {"--gpu-memory-utilization", true, M}, {"--max-model-len", true, M},
    {"--max-num-seqs", true, M}, {"--max-num-batched-tokens", true, M},
    {"--block-size", true, M}, {"--kv-cache-dtype", true, M}, {"--quantization", true, M},
    {"-q", true, M}, {"--dtype", true, M}, {"--kv-cache-memory-bytes", true, M},
    {"--kv-cache-memory", true, M}, {"--num-gpu-blocks-override", true, M},
    {"--enforce-eager", false, M},
    {"--no-enforce-eager", false, M}, {"--enable-chunked-prefill", false, M},
    {"--no-enable-chunked-prefill", false, M}, {"--limit-mm-per-prompt", true, M},
    {"--mm-processor-kwargs", true, M}, {"--mm-encoder-tp-mode", true, M},
    {"--skip-mm-profiling", false, M}, {"--speculative-config", true, M},
    {"--speculative-model", true, M}, {"--num-speculative-tokens", true, M},
    {"--enable-lora", false, M},
    {"--no-enable-lora", false, M}, {"--max-loras", true, M}, {"--max-lora-rank", true, M},
    {"--max-cpu-loras", true, M}, {"--lora-dtype", true, M},
    {"--lora-extra-vocab-size", true, M}, {"--fully-sharded-loras", false, M},
    {"--no-fully-sharded-loras", false, M},
    /* server front end: no device memory */
    {"--host", true, I}, {"--port", true, I}, {"--served-model-name", true, I},
    {"--api-key", true, I}, {"--uvicorn-log-level", true, I}, {"--root-path", true, I},
    {"--ssl-keyfile", true, I}, {"--ssl-certfile", true, I}, {"--ssl-ca-certs", true, I},
    {"--allowed-origins", true, I}, {"--allowed-methods", true, I},
    {"--allowed-headers", true, I}, {"--middleware", true, I}, {"--response-role", true, I},
    {"--chat-template", true, I}, {"--chat-template-content-format", true, I},
    {"--tool-call-parser", true, I}, {"--tool-parser-plugin", true, I},
    {"--tool-server", true, I}, {"--reasoning-parser", true, I},
    {"--log-config-file", true, I}, {"--max-log-len", true, I},
    {"--api-server-count", true, I}, {"--lora-modules", true, I},
    {"--enable-auto-tool-choice", false, I}, {"--disable-log-requests", false, I},
    {"--enable-log-requests", false, I}, {"--disable-log-stats", false, I},
    {"--disable-uvicorn-access-log", false, I}, {"--allow-credentials", false, I},
    {"--disable-frontend-multiprocessing", false, I},
    {"--enable-request-id-headers", false, I}, {"--return-tokens-as-token-ids", false, I},
    {"--disable-fastapi-docs", false, I}, {"--enable-prompt-tokens-details", false, I},
    {"--enable-server-load-tracking", false, I}, {"--enable-force-include-usage", false, I},
    {"--enable-tokenizer-info-endpoint", false, I}, {"--enable-ssl-refresh", false, I},
    {"--headless", false, I}, {"--default-chat-template-kwargs", true, I},
    {"--reasoning-parser-plugin", true, I}, {"--enable-log-outputs", false, I},
    {"--log-error-stack", false, I}, {"--enable-mfu-metrics", false, I},
    {"--kv-cache-metrics", false, I}, {"--exclude-tools-when-tool-choice-none", false, I},
    {"--trust-request-chat-template", false, I}, {"--enable-offline-docs", false, I},
    /* model loading, tokenizer, sampling: no device memory at start-up */
    {"--tokenizer", true, I}, {"--tokenizer-mode", true, I}, {"--revision", true, I},
    {"--tokenizer-revision", true, I}, {"--code-revision", true, I},
    {"--hf-config-path", true, I}, {"--hf-token", true, I}, {"--download-dir", true, I},
    {"--load-format", true, I}, {"--model-loader-extra-config", true, I},
    {"--ignore-patterns", true, I}, {"--safetensors-load-strategy", true, I},
    {"--max-parallel-loading-workers", true, I}, {"--seed", true, I},
    {"--generation-config", true, I}, {"--override-generation-config", true, I},
    {"--max-logprobs", true, I}, {"--logprobs-mode", true, I}, {"--task", true, I},
    {"--runner", true, I}, {"--convert", true, I}, {"--model-impl", true, I},
    {"--allowed-local-media-path", true, I}, {"--guided-decoding-backend", true, I},
    {"--structured-outputs-config", true, I},
    {"--media-io-kwargs", true, I}, {"--mm-processor-cache-gb", true, I},
    {"--trust-remote-code", false, I}, {"--skip-tokenizer-init", false, I},
    {"--use-tqdm-on-load", false, I}, {"--enable-prompt-embeds", false, I},
    {"--disable-mm-preprocessor-cache", false, I}, {"--interleave-mm-strings", false, I},
    /* scheduling and parallel layout that leaves each rank's memory as it is */
    {"--distributed-executor-backend", true, I}, {"--data-parallel-size", true, I},
    {"-dp", true, I}, {"--data-parallel-size-local", true, I},
    {"--data-parallel-address", true, I}, {"--data-parallel-rpc-port", true, I},
    {"--data-parallel-start-rank", true, I}, {"--data-parallel-rank", true, I},
    {"--data-parallel-backend", true, I}, {"--scheduling-policy", true, I},
    {"--scheduler-cls", true, I}, {"--worker-cls", true, I},
    {"--worker-extension-cls", true, I}, {"--num-lookahead-slots", true, I},
    {"--max-num-partial-prefills", true, I}, {"--max-long-partial-prefills", true, I},
    {"--long-prefill-token-threshold", true, I}, {"--prefix-caching-hash-algo", true, I},
    {"--swap-space", true, I}, {"--kv-events-config", true, I},
    {"--otlp-traces-endpoint", true, I}, {"--collect-detailed-traces", true, I},
    {"--show-hidden-metrics-for-version", true, I}, {"--enable-prefix-caching", false, I},
    {"--enable-expert-parallel", false, I}, {"--disable-custom-all-reduce", false, I},
    {"--disable-cascade-attn", false, I}, {"--async-scheduling", false, I},
    {"--disable-chunked-mm-input", false, I}, {"--data-parallel-hybrid-lb", false, I},
    {"--ray-workers-use-nsight", false, I}, {"--disable-async-output-proc", false, I},
    {"--calculate-kv-scales", false, I},
    /* V0 speculative decoding's tuning (up to 0.8.2): no device memory */
    {"--ngram-prompt-lookup-max", true, I}, {"--ngram-prompt-lookup-min", true, I},
    {"--speculative-disable-by-batch-size", true, I}, {"--speculative-max-model-len", true, I},
    {"--spec-decoding-acceptance-method", true, I}, {"--speculative-disable-mqa-scorer", false, I},
    /* change device memory in ways the planner does not model */
    {"--cpu-offload-gb", true, U},
    {"--kv-transfer-config", true, U}, {"--speculative-draft-tensor-parallel-size", true, U},
    {"--speculative-model-quantization", true, U},
    {"--compilation-config", true, U}, {"-O", true, U}, {"--additional-config", true, U},
    {"--hf-overrides", true, U}, {"--config", true, U}, {"--rope-scaling", true, U},
    {"--rope-theta", true, U},
    {"--max-seq-len-to-capture", true, U}, {"--cuda-graph-sizes", true, U},
    {"--mamba-cache-dtype", true, U}, {"--mamba-ssm-cache-dtype", true, U},
    {"--decode-context-parallel-size", true, U}, {"-dcp", true, U},
    {"--num-redundant-experts", true, U}, {"--eplb-config", true, U},
    {"--override-attention-dtype", true, U}, {"--enable-lora-bias", false, U},
    {"--enable-eplb", false, U}, {"--enable-sleep-mode", false, U},
    {"--disable-sliding-window", false, U}, {"--disable-hybrid-kv-cache-manager", false, U},
    {"--kv-sharing-fast-prefill", false, U},
    {"--enable-dbo", false, U}, {"--enable-multimodal-encoder-data-parallel", false, U},
    /* current releases' knobs: the attention backend (its block size and workspaces), the
     * hybrid state's cache mode, the compilation presets and their graph sizes, serving only
     * the language model of a multimodal checkpoint */
    {"--attention-backend", true, U}, {"--mamba-cache-mode", true, U},
    {"--optimization-level", true, U}, {"--performance-mode", true, U},
    {"-cc", true, U}, {"--max-cudagraph-capture-size", true, U},
    {"--language-model-only", false, U},
    {NULL, false, 0},
};

#undef M
#undef I
#undef U


void plan_flag_canon(const char *in, char *out, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && in[i] != '=' && j + 1 < n; i++)
        out[j++] = in[i] == '_' ? '-' : in[i];
    out[j] = 0;
}

static const hbm_plan_flag *lookup(const hbm_plan_flag *table, const char *name)
{
    for (size_t i = 0; table[i].name; i++)
        if (!strcmp(table[i].name, name))
            return &table[i];
    return NULL;
}

const hbm_plan_flag *plan_flag_find(const hbm_plan_flag *table, const char *arg, bool *attached)
{
    char f[96];
    plan_flag_canon(arg, f, sizeof f);
    if (attached)
        *attached = strchr(arg, '=') != NULL;
    const hbm_plan_flag *fl = lookup(table, f);
    if (fl)
        return fl;
    /* -O3: the compilation level joined to the short flag */
    if (!strncmp(f, "-O", 2) && f[2]) {
        if (attached && f[2] != '.')
            *attached = true;
        return lookup(table, "-O");
    }
    /* --compilation-config.cudagraph_mode FULL: one key of a JSON flag */
    char *dot = strchr(f, '.');
    if (dot && dot > f + 2) {
        *dot = 0;
        fl = lookup(table, f);
        if (fl && fl->value)
            return fl;
        return NULL;
    }
    /* vLLM's boolean flags also take a --no- form */
    if (!strncmp(f, "--no-", 5)) {
        char pos[96];
        snprintf(pos, sizeof pos, "--%s", f + 5);
        fl = lookup(table, pos);
        if (fl && !fl->value)
            return fl;
    }
    return NULL;
}

static const char *undash(const char *s)
{
    while (*s == '-')
        s++;
    return s;
}

/* Closer than this many edits counts as a typo; short names allow fewer. */
static size_t allowed_edits(const char *word)
{
    size_t l = strlen(undash(word)) / 4;
    return l < 1 ? 1 : l > 3 ? 3 : l;
}

static void consider(const char *f, const char *name, const char **best, size_t *bestd,
                     const char **prefix, int *nprefix)
{
    /* compare without the dashes so "-max-model-len" and "--tp" still find theirs */
    size_t d = hbm_edit_distance(undash(f), undash(name));
    if (d < *bestd) {
        *bestd = d;
        *best = name;
    }
    size_t lf = strlen(undash(f));
    if (lf >= 4 && !strncmp(undash(name), undash(f), lf) && *prefix != name) {
        *prefix = name;
        (*nprefix)++;
    }
}

const char *plan_flag_suggest(const hbm_plan_flag *table, const char *arg,
                              const char *const *extra)
{
    char f[96];
    plan_flag_canon(arg, f, sizeof f);
    const char *best = NULL, *prefix = NULL;
    size_t bestd = (size_t)-1;
    int nprefix = 0;
    for (size_t k = 0; extra && extra[k]; k++)
        consider(f, extra[k], &best, &bestd, &prefix, &nprefix);
    for (size_t i = 0; table[i].name; i++)
        consider(f, table[i].name, &best, &bestd, &prefix, &nprefix);
    if (best && bestd <= allowed_edits(f))
        return best;
    /* an abbreviation of exactly one name ("--max-model" for --max-model-len) */
    return nprefix == 1 ? prefix : NULL;
}
