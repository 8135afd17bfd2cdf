/* Serving flags in vLLM's own names, from a `vllm serve ...` command line, and version
 * numbers. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

void hbm_plan_input_init(hbm_plan_input *in)
{
    memset(in, 0, sizeof *in);
    in->mem_total_bytes = in->mem_free_bytes = HBM_UNKNOWN;
    in->tensor_parallel_size = in->pipeline_parallel_size = HBM_UNKNOWN;
    in->gpu_memory_utilization = NAN;
    in->max_model_len = in->max_num_seqs = in->max_num_batched_tokens = HBM_UNKNOWN;
    in->block_size = HBM_UNKNOWN;
    in->enforce_eager = in->vllm.enable_chunked_prefill = -1;
    in->kv_cache_memory_bytes = in->num_gpu_blocks_override = HBM_UNKNOWN;
    in->serve_requests = HBM_UNKNOWN;
    in->sglang.max_total_tokens = in->sglang.cuda_graph_max_bs = HBM_UNKNOWN;
    in->vllm.mm_limit_image = in->vllm.mm_limit_video = HBM_UNKNOWN;
    in->vllm.num_speculative_tokens = HBM_UNKNOWN;
    in->vllm.enable_lora = in->vllm.fully_sharded_loras = -1;
    in->vllm.max_loras = in->vllm.max_lora_rank = in->vllm.max_cpu_loras = HBM_UNKNOWN;
    in->vllm.lora_extra_vocab_size = HBM_UNKNOWN;
}

int plan_version_parse(const char *s)
{
    if (!s)
        return -1;
    while (*s == 'v' || *s == 'V')
        s++;
    int part[3] = {0, 0, 0}, k = 0;
    const char *p = s;
    while (k < 3 && isdigit((unsigned char)*p)) {
        long v = strtol(p, (char **)&p, 10);
        if (v > 99)
            return -1;
        part[k++] = (int)v;
        if (*p != '.')
            break;
        p++;
    }
    if (k < 2 || part[0] > 9)
        return -1;
    return part[0] * 10000 + part[1] * 100 + part[2];
}

int plan_release_rules(const char *given, const plan_release *rel, int *ver, bool *newer,
                       hbm_err *err)
{
    *ver = rel->newest;
    *newer = false;
    if (!given)
        return 0;
    int v = plan_version_parse(given);
    if (v < 0)
        return hbm_err_set(err, "%s: \"%s\" is not a version like %d.%d.0", rel->flag, given,
                           rel->newest / 10000, rel->newest / 100 % 100);
    char last[24];
    if (rel->by_patch)
        snprintf(last, sizeof last, "%d.%d.%d", rel->newest / 10000, rel->newest / 100 % 100,
                 rel->newest % 100);
    else
        snprintf(last, sizeof last, "%d.%d.x", rel->newest / 10000, rel->newest / 100 % 100);
    /* an older release is refused, not clamped: another release's rules would give figures
     * that look exact for a start-up whose rules were never read */
    if (v < rel->oldest)
        return hbm_err_set(err, "%s: %s %s is older than the releases the rules know (%d.%d.0 "
                                "to %s, and any newer one with the newest rules)",
                           rel->flag, rel->engine, given, rel->oldest / 10000,
                           rel->oldest / 100 % 100, last);
    if (rel->by_patch ? v > rel->newest : v / 100 > rel->newest / 100)
        *newer = true;
    else
        *ver = v;
    return 0;
}

static int parse_int(const char *flag, const char *v, int64_t *out, hbm_err *err)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    /* vLLM also takes "32k" style lengths for --max-model-len */
    if (end != v && (*end == 'k' || *end == 'K') && end[1] == 0)
        x *= 1000, end++;
    else if (end != v && (*end == 'm' || *end == 'M') && end[1] == 0)
        x *= 1000000, end++;
    if (errno || end == v || *end || x < -1 || x > (1LL << 40))
        return hbm_err_set(err, "%s: \"%s\" is not a count", flag, v);
    *out = x;
    return 0;
}

/* --speculative-config and V0's single flags, kept as given: spec.c reads them by release */
static int speculative_flag(hbm_plan_input *in, const char *f, const char *v, hbm_err *err)
{
    int64_t x;
    if (!strcmp(f, "--speculative-config"))
        in->vllm.speculative_config = v;
    else if (!strcmp(f, "--speculative-model"))
        in->vllm.speculative_model = v;
    else if (parse_int(f, v, &x, err) < 0 || x < 1)
        return hbm_err_set(err, "%s: \"%s\" is not a positive count", f, v);
    else
        in->vllm.num_speculative_tokens = x;
    return 0;
}

/* The on/off flags the plan reads; false when f is none of them. */
static bool switch_flag(hbm_plan_input *in, const char *f)
{
    if (!strcmp(f, "--enforce-eager") || !strcmp(f, "--no-enforce-eager"))
        in->enforce_eager = f[2] != 'n';
    else if (!strcmp(f, "--enable-chunked-prefill") || !strcmp(f, "--no-enable-chunked-prefill"))
        in->vllm.enable_chunked_prefill = f[2] != 'n';
    else
        return false;
    return true;
}

/* A flag the plan does not read: listed when it changes memory unmodelled. Returns whether
 * it takes the next word (the table says; unknown flags stand alone). */
static bool other_flag(hbm_plan_input *in, const char *a, const char *f, bool has_v)
{
    bool attached;
    const hbm_plan_flag *fl = plan_flag_find(plan_vllm_flags, a, &attached);
    /* one key of a JSON flag the planner reads whole is not read */
    bool json_key = fl && fl->use == HBM_PLAN_FLAG_MODELLED && strchr(f, '.');
    if (fl && (fl->use == HBM_PLAN_FLAG_UNMODELLED || json_key)) {
        bool seen = false;
        for (size_t k = 0; k < in->nunmodelled; k++)
            seen |= in->unmodelled[k] == fl->name;
        if (!seen && in->nunmodelled < sizeof in->unmodelled / sizeof in->unmodelled[0])
            in->unmodelled[in->nunmodelled++] = fl->name;
    }
    return fl && fl->value && !attached && has_v;
}

/* The LoRA flags (lora.c): 1 when f is one (*took: its value was used), 0 when not, -1 on a
 * bad value. */
static int lora_flag(hbm_plan_input *in, const char *f, const char *v, bool *took, hbm_err *err)
{
    int64_t x;
    *took = false;
    if (!strcmp(f, "--enable-lora") || !strcmp(f, "--no-enable-lora")) {
        in->vllm.enable_lora = f[2] != 'n';
        return 1;
    }
    if (!strcmp(f, "--fully-sharded-loras") || !strcmp(f, "--no-fully-sharded-loras")) {
        in->vllm.fully_sharded_loras = f[2] != 'n';
        return 1;
    }
    int64_t *count = !strcmp(f, "--max-loras")               ? &in->vllm.max_loras
                     : !strcmp(f, "--max-lora-rank")          ? &in->vllm.max_lora_rank
                     : !strcmp(f, "--max-cpu-loras")          ? &in->vllm.max_cpu_loras
                     : !strcmp(f, "--lora-extra-vocab-size") ? &in->vllm.lora_extra_vocab_size
                                                             : NULL;
    if (!count && strcmp(f, "--lora-dtype"))
        return 0;
    if (!v)
        return hbm_err_set(err, "%s: needs a value", f);
    *took = true;
    if (!count) {
        if (strcasecmp(v, "auto") && plan_dtype_bytes(v) < 2)
            return hbm_err_set(err, "%s: \"%s\" is not auto, float16, bfloat16 or float32", f, v);
        in->vllm.lora_dtype = v;
        return 1;
    }
    /* an extra vocabulary of 0 rows is vLLM's way to turn it off */
    int64_t least = count == &in->vllm.lora_extra_vocab_size ? 0 : 1;
    if (parse_int(f, v, &x, err) < 0 || x < least)
        return hbm_err_set(err, "%s: \"%s\" is not a %scount", f, v, least ? "positive " : "");
    *count = x;
    return 1;
}

int plan_vllm_args(hbm_plan_input *in, int argc, char *const *argv, hbm_err *err)
{
    int i = 0;
    /* skip the launcher: vllm serve, python -m ..., hbmctl's own "--" */
    bool positional_model = false;
    for (int k = 0; k < argc && k < 4; k++)
        if (!strcmp(argv[k], "serve")) {
            i = k + 1;
            positional_model = true;
            break;
        }
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-') {
            if (positional_model && !in->served_model) {
                in->served_model = a;
                if (!in->model_path)
                    in->model_path = a;
            }
            continue;
        }
        char f[64];
        plan_flag_canon(a, f, sizeof f);
        const char *eq = strchr(a, '=');
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        bool has_v = eq || (i + 1 < argc && (argv[i + 1][0] != '-' || isdigit((unsigned char)argv[i + 1][1])));
#define TAKE() do { if (!v || !has_v) return hbm_err_set(err, "%s: needs a value", f); if (!eq) i++; } while (0)
        int64_t x;
        bool took;
        int lora = lora_flag(in, f, has_v ? v : NULL, &took, err);
        if (lora < 0)
            return -1;
        if (lora) {
            if (took && !eq)
                i++;
        } else if (!strcmp(f, "--model")) {
            TAKE();
            in->served_model = v;
            if (!in->model_path)
                in->model_path = v;
        } else if (!strcmp(f, "--tensor-parallel-size") || !strcmp(f, "-tp")) {
            TAKE();
            if (parse_int(f, v, &x, err) < 0 || x < 1)
                return hbm_err_set(err, "%s: \"%s\" is not a device count", f, v);
            in->tensor_parallel_size = x;
        } else if (!strcmp(f, "--pipeline-parallel-size") || !strcmp(f, "-pp")) {
            TAKE();
            if (parse_int(f, v, &x, err) < 0 || x < 1)
                return hbm_err_set(err, "%s: \"%s\" is not a device count", f, v);
            in->pipeline_parallel_size = x;
        } else if (!strcmp(f, "--gpu-memory-utilization")) {
            TAKE();
            char *end;
            double u = strtod(v, &end);
            if (end == v || *end || !(u > 0 && u <= 1))
                return hbm_err_set(err, "%s: \"%s\" is not a ratio in (0, 1]", f, v);
            in->gpu_memory_utilization = u;
        } else if (!strcmp(f, "--max-model-len")) {
            TAKE();
            if (parse_int(f, v, &x, err) < 0)
                return -1;
            in->max_model_len = x;
        } else if (!strcmp(f, "--max-num-seqs")) {
            TAKE();
            if (parse_int(f, v, &x, err) < 0 || x < 1)
                return hbm_err_set(err, "%s: \"%s\" is not a positive count", f, v);
            in->max_num_seqs = x;
        } else if (!strcmp(f, "--max-num-batched-tokens")) {
            TAKE();
            if (parse_int(f, v, &x, err) < 0 || x < 1)
                return hbm_err_set(err, "%s: \"%s\" is not a positive count", f, v);
            in->max_num_batched_tokens = x;
        } else if (!strcmp(f, "--block-size")) {
            TAKE();
            if (parse_int(f, v, &x, err) < 0 || x < 1 || x > 65536)
                return hbm_err_set(err, "%s: \"%s\" is not a block size", f, v);
            in->block_size = x;
        } else if (!strcmp(f, "--kv-cache-dtype")) {
            TAKE();
            in->kv_cache_dtype = v;
        } else if (!strcmp(f, "--quantization") || !strcmp(f, "-q")) {
            TAKE();
            in->quantization = v;
        } else if (!strcmp(f, "--dtype")) {
            TAKE();
            in->dtype = v;
        } else if (!strcmp(f, "--kv-cache-memory-bytes") || !strcmp(f, "--kv-cache-memory")) {
            TAKE();
            int64_t b;
            if (hbm_parse_size(v, &b, err) < 0)
                return hbm_err_prefix(err, "%s", f);
            in->kv_cache_memory_bytes = b;
        } else if (!strcmp(f, "--num-gpu-blocks-override")) {
            TAKE();
            if (parse_int(f, v, &x, err) < 0 || x < 1)
                return hbm_err_set(err, "%s: \"%s\" is not a positive count", f, v);
            in->num_gpu_blocks_override = x;
        } else if (plan_mm_flag(f)) {
            if (!strstr(f, "skip-mm-profiling"))
                TAKE();
            if (plan_mm_arg(in, f, v, err) < 0)
                return -1;
        } else if (!strcmp(f, "--speculative-config") || !strcmp(f, "--speculative-model") ||
                   !strcmp(f, "--num-speculative-tokens")) {
            TAKE();
            if (speculative_flag(in, f, v, err) < 0)
                return -1;
        } else if (!switch_flag(in, f)) {
            if (other_flag(in, a, f, has_v))
                i++;
        }
#undef TAKE
    }
    return 0;
}
