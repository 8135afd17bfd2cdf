/* MindIE (mindie-service with mindie-llm on Ascend) as a planner engine: its config keys
 * as flags, its config.json, and its start-up (docs/planner.md, MindIE):
 *   block bytes  cacheBlockSize x layers x KV heads per rank x (K + V head size) x dtype
 *   npuMemSize -1  KV = total x NPU_MEMORY_FRACTION (0.8) - weights - warm-up peak -
 *                  non-torch memory of the whole device (memory_profiling, baseline 0)
 *   npuMemSize N   KV = N GiB
 *   blocks       KV // block bytes (KVCacheSettings.num_npu_blocks)
 *   checks       maxPrefillTokens >= maxInputTokenLen (ConfigManager); the warm-up needs
 *                ceil(min(maxSeqLen, maxInputTokenLen + maxIterTimes) / cacheBlockSize)
 *                blocks (Generator._validate_warmup_memory)
 * The weights, the warm-up's activation peak and the non-torch memory are the shared
 * memory model's (memory.c), run with MindIE's budget rule. Its generator.py at c2ad716 reads the
 * same budget as total x fraction - (total - free) right after the warm-up: the used memory
 * is these terms and other processes' memory, with the allocator's kept pool for the peak. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

#define GIB_D 1073741824.0
#define CONFIG_MAX_BYTES (10 << 20) /* MindIE refuses a config.json over 10 MB */

#define M HBM_PLAN_FLAG_MODELLED
#define I HBM_PLAN_FLAG_IGNORED
#define U HBM_PLAN_FLAG_UNMODELLED

/* MindIE's config.json keys, as flags (the environment variable NPU_MEMORY_FRACTION too:
 * --NPU_MEMORY_FRACTION reads as --NPU-MEMORY-FRACTION). */
static const hbm_plan_flag mindie_flags[] = {
    /* read by the planner */
    {"--npuMemSize", true, M}, {"--maxSeqLen", true, M}, {"--maxInputTokenLen", true, M},
    {"--maxPrefillTokens", true, M}, {"--maxPrefillBatchSize", true, M},
    {"--maxBatchSize", true, M}, {"--maxIterTimes", true, M}, {"--cacheBlockSize", true, M},
    {"--worldSize", true, M}, {"--npuDeviceIds", true, M}, {"--modelWeightPath", true, M},
    {"--NPU-MEMORY-FRACTION", true, M},
    /* server, scheduling and host memory: no device memory */
    {"--modelName", true, I}, {"--ipAddress", true, I}, {"--managementIpAddress", true, I},
    {"--port", true, I}, {"--managementPort", true, I}, {"--metricsPort", true, I},
    {"--maxLinkNum", true, I}, {"--httpsEnabled", true, I}, {"--logLevel", true, I},
    {"--backendType", true, I}, {"--trustRemoteCode", true, I}, {"--truncation", true, I},
    {"--templateType", true, I}, {"--maxQueueDelayMicroseconds", true, I},
    {"--prefillTimeMsPerReq", true, I}, {"--decodeTimeMsPerReq", true, I},
    {"--supportSelectBatch", true, I}, {"--prefillPolicyType", true, I},
    {"--decodePolicyType", true, I}, {"--maxPreemptCount", true, I}, {"--cpuMemSize", true, I},
    {"--multiNodesInferEnabled", true, I}, {"--interCommTLSEnabled", true, I},
    {"--tokenizerProcessNumber", true, I},
    /* change device memory in ways the planner does not model */
    {"--maxLoras", true, U}, {"--maxLoraRank", true, U}, {"--speculationGamma", true, U}, {"--plugin-params", true, U},
    {NULL, false, 0},
};

#undef M
#undef I
#undef U

/* ---- reading keys -------------------------------------------------------------------- */

/* The integer keys, where they land in the input and the least value MindIE takes. */
typedef struct int_key {
    const char *name;
    size_t off;
    int64_t min;
} int_key;

static const int_key int_keys[] = {
    {"npuMemSize", offsetof(hbm_plan_input, mindie.npu_mem_size_gib), -1},
    {"maxSeqLen", offsetof(hbm_plan_input, max_model_len), 1},
    {"maxInputTokenLen", offsetof(hbm_plan_input, mindie.max_input_len), 1},
    {"maxPrefillTokens", offsetof(hbm_plan_input, max_num_batched_tokens), 1},
    {"maxPrefillBatchSize", offsetof(hbm_plan_input, mindie.max_prefill_batch_size), 1},
    {"maxBatchSize", offsetof(hbm_plan_input, max_num_seqs), 1},
    {"maxIterTimes", offsetof(hbm_plan_input, mindie.max_iter_times), 1},
    {"cacheBlockSize", offsetof(hbm_plan_input, block_size), 1},
    {"worldSize", offsetof(hbm_plan_input, tensor_parallel_size), 1},
};

static const int_key *int_key_of(const char *name)
{
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++)
        if (!strcmp(int_keys[i].name, name))
            return &int_keys[i];
    return NULL;
}

static int64_t *int_field(hbm_plan_input *in, const int_key *k)
{
    return (int64_t *)(void *)((char *)in + k->off);
}

/* A value MindIE accepts for the key, in its own words where it has them. */
static int check_int(const char *where, const int_key *k, int64_t x, hbm_err *err)
{
    if (!strcmp(k->name, "npuMemSize") && (x == 0 || x < -1 || x > 4294967295LL))
        return hbm_err_set(err, "%sThe value of 'npuMemSize' in ModelDeployConfig in config.json "
                                "is %lld it should be within (0, 4294967295] or -1",
                           where, (long long)x);
    if (x < k->min || x > (1LL << 32))
        return hbm_err_set(err, "%sThe value of %s can not be %lld", where, k->name,
                           (long long)x);
    return 0;
}

static int parse_count(const char *key, const char *v, int64_t *out, hbm_err *err)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end)
        return hbm_err_set(err, "--%s: \"%s\" is not an integer", key, v);
    *out = x;
    return 0;
}

/* npuDeviceIds as typed ("[[0,1,2,3]]" or "0,1,2,3"): the devices of one instance. */
static int parse_device_ids(const char *v, int64_t *n, hbm_err *err)
{
    *n = 0;
    bool digit = false;
    for (const char *p = v; *p; p++) {
        if (isdigit((unsigned char)*p)) {
            *n += !digit;
            digit = true;
        } else if (strchr("[], ", *p)) {
            digit = false;
        } else {
            return hbm_err_set(err, "--npuDeviceIds: \"%s\" is not a list of device ids", v);
        }
    }
    return *n > 0 ? 0 : hbm_err_set(err, "--npuDeviceIds: \"%s\" names no device", v);
}

static int parse_fraction(const char *v, double *out, hbm_err *err)
{
    char *end;
    double u = strtod(v, &end);
    if (end == v || *end || !(u > 0 && u <= 1))
        return hbm_err_set(err, "NPU_MEMORY_FRACTION: \"%s\" is not a ratio in (0, 1]", v);
    *out = u;
    return 0;
}

/* One key given on the command line (it wins over the config). */
static int set_key(hbm_plan_input *in, const char *key, const char *v, hbm_err *err)
{
    const int_key *k = int_key_of(key);
    int64_t x = 0;
    if (k) {
        if (parse_count(key, v, &x, err) < 0 || check_int("", k, x, err) < 0)
            return -1;
        *int_field(in, k) = x;
    } else if (!strcmp(key, "npuDeviceIds")) {
        if (parse_device_ids(v, &x, err) < 0)
            return -1;
        in->tensor_parallel_size = x;
    } else if (!strcmp(key, "NPU-MEMORY-FRACTION")) {
        return parse_fraction(v, &in->gpu_memory_utilization, err);
    } else if (!strcmp(key, "modelWeightPath")) {
        in->model_path = in->served_model = v;
    }
    return 0;
}

/* ---- config.json ----------------------------------------------------------------------- */

/* The object under key, or NULL with the error naming its path. */
static json_t *object_at(const char *name, json_t *parent, const char *path, const char *key,
                         hbm_err *err)
{
    json_t *o = json_object_get(parent, key);
    if (!json_is_object(o))
        hbm_err_set(err, "%s: %s%s%s is %s, not an object", name, path, path[0] ? "." : "",
                    key, o ? "of another type" : "missing");
    return json_is_object(o) ? o : NULL;
}

/* The integer keys of one object into the fields still unset. */
static int read_ints(const char *name, json_t *o, const char *path, hbm_plan_input *in,
                     hbm_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        const int_key *k = int_key_of(key);
        if (!k)
            continue;
        char where[160];
        snprintf(where, sizeof where, "%s: %s.%s: ", name, path, key);
        if (!json_is_integer(v))
            return hbm_err_set(err, "%sis not an integer", where);
        if (check_int(where, k, json_integer_value(v), err) < 0)
            return -1;
        int64_t *f = int_field(in, k);
        if (*f <= 0 && !(k->min < 0 && *f == -1))
            *f = json_integer_value(v);
    }
    return 0;
}

/* ModelConfig[0]: the model served (one model per instance is what the planner plans). */
static int read_model_config(const char *name, json_t *deploy, hbm_plan_input *in, hbm_err *err)
{
    json_t *models = json_object_get(deploy, "ModelConfig");
    if (!json_is_array(models) || !json_is_object(json_array_get(models, 0)))
        return hbm_err_set(err, "%s: BackendConfig.ModelDeployConfig.ModelConfig is not an "
                                "array of objects (The type of ModelConfig should be array.)",
                           name);
    json_t *m = json_array_get(models, 0);
    if (read_ints(name, m, "BackendConfig.ModelDeployConfig.ModelConfig[0]", in, err) < 0)
        return -1;
    json_t *path = json_object_get(m, "modelWeightPath");
    if (path && !json_is_string(path))
        return hbm_err_set(err, "%s: ModelConfig[0].modelWeightPath is not a string", name);
    if (path && !in->model_path) {
        snprintf(in->mindie.config_model_path, sizeof in->mindie.config_model_path, "%s",
                 json_string_value(path));
        in->model_path = in->served_model = in->mindie.config_model_path;
    }
    return 0;
}

/* BackendConfig.npuDeviceIds ([[0,1,2,3]]): the devices of the first instance. */
static int read_device_ids(const char *name, json_t *backend, hbm_plan_input *in, hbm_err *err)
{
    json_t *ids = json_object_get(backend, "npuDeviceIds");
    if (!ids)
        return 0;
    json_t *first = json_array_get(ids, 0);
    if (!json_is_array(first) || json_array_size(first) == 0)
        return hbm_err_set(err, "%s: BackendConfig.npuDeviceIds is not a list of device "
                                "lists like [[0,1,2,3]]", name);
    for (size_t i = 0; i < json_array_size(first); i++)
        if (!json_is_integer(json_array_get(first, i)))
            return hbm_err_set(err, "%s: BackendConfig.npuDeviceIds[0][%zu] is not a device id",
                               name, i);
    if (in->tensor_parallel_size <= 0)
        in->tensor_parallel_size = (int64_t)json_array_size(first);
    return 0;
}

static int read_backend(const char *name, json_t *root, hbm_plan_input *in, hbm_err *err)
{
    json_t *backend = object_at(name, root, "", "BackendConfig", err);
    json_t *deploy = backend ? object_at(name, backend, "BackendConfig", "ModelDeployConfig",
                                         err)
                             : NULL;
    json_t *sched = deploy ? object_at(name, backend, "BackendConfig", "ScheduleConfig", err)
                           : NULL;
    if (!sched)
        return -1;
    if (read_model_config(name, deploy, in, err) < 0 ||
        read_ints(name, deploy, "BackendConfig.ModelDeployConfig", in, err) < 0 ||
        read_ints(name, sched, "BackendConfig.ScheduleConfig", in, err) < 0)
        return -1;
    return read_device_ids(name, backend, in, err);
}

int hbm_plan_mindie_config_parse(const char *text, size_t len, const char *name,
                                 hbm_plan_input *in, hbm_err *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return hbm_err_set(err, "%s:%d: not JSON: %s", name, je.line, je.text);
    int rc = json_is_object(root) ? read_backend(name, root, in, err)
                                  : hbm_err_set(err, "%s:1: not a JSON object", name);
    json_decref(root);
    return rc;
}

/* ---- the command line ------------------------------------------------------------------ */

/* A config.json that is MindIE's (it has a BackendConfig) is read; *taken says so. */
static int maybe_config(hbm_plan_input *in, const char *path, bool *taken, hbm_err *err)
{
    *taken = false;
    struct stat st;
    size_t l = strlen(path);
    if (l < 5 || strcmp(path + l - 5, ".json") || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return 0;
    char *text = NULL;
    size_t len;
    if (hbm_read_file(path, CONFIG_MAX_BYTES, &text, &len, err) < 0)
        return -1;
    *taken = strstr(text, "\"BackendConfig\"") != NULL;
    int rc = *taken ? hbm_plan_mindie_config_parse(text, len, path, in, err) : 0;
    free(text);
    return rc;
}

/* A word that is not a flag: the launcher, NPU_MEMORY_FRACTION=..., MindIE's config.json,
 * else the model when none is known yet. */
static int positional(hbm_plan_input *in, const char *a, hbm_err *err)
{
    const char *base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
    if (!strcmp(a, "serve") || !strcmp(base, "mindieservice_daemon"))
        return 0;
    if (!strncmp(a, "NPU_MEMORY_FRACTION=", 20))
        return parse_fraction(a + 20, &in->gpu_memory_utilization, err);
    bool taken;
    if (maybe_config(in, a, &taken, err) < 0)
        return -1;
    if (!taken && !in->model_path)
        in->model_path = in->served_model = a;
    return 0;
}

static void note_unmodelled(hbm_plan_input *in, const hbm_plan_flag *fl)
{
    for (size_t k = 0; k < in->nunmodelled; k++)
        if (in->unmodelled[k] == fl->name)
            return;
    if (in->nunmodelled < sizeof in->unmodelled / sizeof in->unmodelled[0])
        in->unmodelled[in->nunmodelled++] = fl->name;
}

static int mindie_args(hbm_plan_input *in, int argc, char *const *argv, hbm_err *err)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            continue;
        if (a[0] != '-') {
            if (positional(in, a, err) < 0)
                return -1;
            continue;
        }
        bool attached;
        const hbm_plan_flag *fl = plan_flag_find(mindie_flags, a, &attached);
        if (!fl) {
            const char *near = plan_flag_suggest(mindie_flags, a, NULL);
            return hbm_err_set(err, "%s is not a MindIE config key the planner knows%s%s%s",
                               a, near ? " (did you mean " : "", near ? near : "",
                               near ? "?)" : "");
        }
        const char *v = attached ? strchr(a, '=') + 1 : i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return hbm_err_set(err, "%s: needs a value", fl->name);
        if (!attached)
            i++;
        if (fl->use == HBM_PLAN_FLAG_UNMODELLED)
            note_unmodelled(in, fl);
        else if (fl->use == HBM_PLAN_FLAG_MODELLED && set_key(in, fl->name + 2, v, err) < 0)
            return -1;
    }
    return 0;
}

/* ---- the start-up ---------------------------------------------------------------------- */

/* MindIE's settings with its defaults (the config.json shipped with mindie-service). */
typedef struct mindie_settings {
    int64_t npu_mem_gib, seq_len, input_len, prefill_tokens, prefill_batch, batch,
        iter_times, block, world;
    double fraction; /* NPU_MEMORY_FRACTION, 0.8 unless set */
} mindie_settings;

static int64_t or_default(int64_t v, int64_t d)
{
    return v > 0 ? v : d;
}

static mindie_settings settings_of(const hbm_plan_input *in)
{
    mindie_settings s;
    s.npu_mem_gib = in->mindie.npu_mem_size_gib > 0 ? in->mindie.npu_mem_size_gib : -1;
    s.seq_len = or_default(in->max_model_len, 2560);
    s.input_len = or_default(in->mindie.max_input_len, 2048);
    s.prefill_tokens = or_default(in->max_num_batched_tokens, 8192);
    s.prefill_batch = or_default(in->mindie.max_prefill_batch_size, 50);
    s.batch = or_default(in->max_num_seqs, 200);
    s.iter_times = or_default(in->mindie.max_iter_times, 512);
    s.block = or_default(in->block_size, 128);
    s.world = or_default(in->tensor_parallel_size, 1);
    s.fraction = isnan(in->gpu_memory_utilization) ? 0.8 : in->gpu_memory_utilization;
    return s;
}

static int64_t cdiv(int64_t a, int64_t b)
{
    return b > 0 ? (a + b - 1) / b : 0;
}

/* What one start-up with these settings does. */
typedef struct mindie_outcome {
    int64_t weights, act, nt, others, block_bytes, kv, blocks, warmup_len, required;
    bool weights_oom, no_kv, npu_oom, prefill_fail, warmup_fail, fits;
} mindie_outcome;

/* What stays fixed: the model, the device, the KV element size. */
typedef struct mindie_ctx {
    const hbm_plan_model *m;
    int64_t total, free;
    int kvb;
} mindie_ctx;

/* calc_block_mem: every layer keeps K and V for each KV head of the card, at least one when
 * the heads are fewer than the cards (MLA: the latent and the rope key of one head). */
static int64_t block_bytes(const mindie_ctx *c, const mindie_settings *s)
{
    const hbm_plan_model *m = c->m;
    int64_t per_layer;
    if (m->mla) {
        per_layer = m->kv_lora_rank + m->qk_rope_head_dim;
    } else {
        int64_t heads = m->num_kv_heads / s->world > 1 ? m->num_kv_heads / s->world : 1;
        per_layer = heads * (m->head_dim + (m->v_head_dim > 0 ? m->v_head_dim : m->head_dim));
    }
    return s->block * m->num_layers * per_layer * c->kvb;
}

/* Weights, the warm-up's peak and the non-torch memory from the shared model: a prefill of
 * maxPrefillTokens tokens in requests of the warm-up length, no graphs; the whole device's
 * memory outside torch is charged (memory_profiling's baseline_non_torch is 0). */
static void budget(const mindie_ctx *c, const mindie_settings *s, mindie_outcome *o)
{
    plan_ctx pc = {.m = c->m, .r = plan_rules_for(PLAN_VERSION_NEWEST, true)};
    pc.r.precheck = false;
    pc.r.snapshot_budget = false;
    pc.act_bytes = c->kvb;
    pc.w_scale = c->m->dtype_bytes == 4 && !c->m->weights_estimated ? 0.5 : 1.0;
    pc.n_full = c->m->num_layers;
    int64_t requests = cdiv(s->prefill_tokens, o->warmup_len);
    plan_flags f = {.tp = s->world, .pp = 1, .mml = s->seq_len, .mnbt = s->prefill_tokens,
                    .seqs = requests < s->batch ? requests : s->batch, .block = s->block,
                    .kvmem = HBM_UNKNOWN, .total = c->total, .free = c->free,
                    .util = s->fraction, .kvb = c->kvb, .eager = true, .chunked = true};
    plan_outcome po;
    plan_evaluate(&pc, &f, &po);
    o->weights = po.weights;
    o->act = po.act;
    o->nt = po.nt;
    o->others = c->free >= 0 && c->free < c->total ? c->total - c->free : 0;
    o->weights_oom = po.oom;
    o->kv = s->npu_mem_gib > 0 ? (int64_t)((double)s->npu_mem_gib * GIB_D) : po.avail;
}

static void mindie_evaluate(const mindie_ctx *c, const mindie_settings *s, mindie_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->warmup_len = s->seq_len < s->input_len + s->iter_times ? s->seq_len
                                                               : s->input_len + s->iter_times;
    budget(c, s, o);
    o->block_bytes = block_bytes(c, s);
    o->blocks = o->kv > 0 && o->block_bytes > 0 ? o->kv / o->block_bytes : 0;
    o->required = cdiv(o->warmup_len, s->block);
    o->prefill_fail = s->prefill_tokens < s->input_len;
    o->no_kv = s->npu_mem_gib < 0 && o->kv <= 0;
    /* a given npuMemSize is allocated whatever is left: it must fit beside the rest */
    o->npu_oom = s->npu_mem_gib > 0 &&
                 o->weights + o->act + o->nt + o->others + o->kv > c->total;
    o->warmup_fail = s->npu_mem_gib < 0 && !o->no_kv && o->required > o->blocks;
    o->fits = !o->weights_oom && !o->prefill_fail && !o->no_kv && !o->npu_oom &&
              !o->warmup_fail;
}

/* ---- words and advice ------------------------------------------------------------------ */

/* The settings as MindIE keys (what `hbmctl plan --engine mindie` reads back). */
static char *settings_line(const mindie_settings *s)
{
    char frac[48] = "";
    if (s->npu_mem_gib < 0)
        snprintf(frac, sizeof frac, " --NPU_MEMORY_FRACTION %g", s->fraction);
    return hbm_xasprintf("--npuMemSize %lld --maxSeqLen %lld --maxInputTokenLen %lld "
                         "--maxPrefillTokens %lld --maxPrefillBatchSize %lld --maxBatchSize "
                         "%lld --maxIterTimes %lld --cacheBlockSize %lld --worldSize %lld%s",
                         (long long)s->npu_mem_gib, (long long)s->seq_len,
                         (long long)s->input_len, (long long)s->prefill_tokens,
                         (long long)s->prefill_batch, (long long)s->batch,
                         (long long)s->iter_times, (long long)s->block, (long long)s->world,
                         frac);
}

static void mindie_errors(const mindie_settings *s, const mindie_outcome *o,
                          hbm_plan_result *res)
{
    if (o->prefill_fail)
        plan_add_error(res, "config", hbm_xstrdup("The value of maxPrefillTokens should not be less "
                                             "than maxInputTokenLen."));
    if (o->weights_oom)
        plan_add_error(res, "weights_oom",
                  hbm_xasprintf("NPU out of memory while loading the weights: %.2f GiB per "
                                "card. Increase `worldSize` or use a quantized model.",
                                (double)o->weights / GIB_D));
    else if (o->no_kv)
        plan_add_error(res, "no_kv_memory",
                  hbm_xstrdup("Warmup failed due to NPU out of memory when `npuMemSize` set "
                              "to -1. Try to increase the environment value "
                              "`NPU_MEMORY_FRACTION` or decrease `max_prefill_tokens`"));
    else if (o->npu_oom)
        plan_add_error(res, "npu_out_of_memory",
                  hbm_xasprintf("Warmup failed due to NPU out of memory when `npuMemSize` set "
                                "to %lld. Try to decrease `npuMemSize` or `maxPrefillTokens`",
                                (long long)s->npu_mem_gib));
    else if (o->warmup_fail)
        plan_add_error(res, "max_seq_len",
                  hbm_xasprintf("Warmup failed. This could be caused by setting both "
                                "`max_prefill_tokens` and `max_input_length` to very large "
                                "values, or setting insufficient `npu_mem`. Reducing either "
                                "`max_prefill_tokens` or `max_input_length` may resolve this "
                                "issue. If `npu_mem` is -1, try to increase the environment "
                                "value `NPU_MEMORY_FRACTION`. Required block number: %lld. "
                                "Left block number: %lld.",
                                (long long)o->required, (long long)o->blocks));
}

static void add_rec(hbm_plan_result *res, const char *kind, const mindie_settings *s,
                    char *change, char *cost, char *flags)
{
    res->recs = hbm_xrealloc(res->recs, (res->nrecs + 1) * sizeof *res->recs);
    hbm_plan_rec *r = &res->recs[res->nrecs++];
    snprintf(r->kind, sizeof r->kind, "%s", kind);
    r->change = change;
    r->cost = cost;
    r->flags = flags;
    r->launch_line = settings_line(s);
}

/* Shorter requests: the longest maxSeqLen (and maxInputTokenLen) the blocks hold. */
static void advise_seq_len(const mindie_ctx *c, const mindie_settings *s,
                           const mindie_outcome *o, hbm_plan_result *res)
{
    mindie_settings t = *s;
    t.seq_len = o->blocks * s->block;
    if (t.input_len > t.seq_len)
        t.input_len = t.seq_len;
    mindie_outcome to;
    mindie_evaluate(c, &t, &to);
    if (t.seq_len <= 0 || !to.fits)
        return;
    add_rec(res, "maxSeqLen", &t,
            hbm_xasprintf("set maxSeqLen to %lld (the %lld blocks of %lld tokens)",
                          (long long)t.seq_len, (long long)o->blocks, (long long)s->block),
            hbm_xasprintf("requests up to %lld tokens instead of %lld", (long long)t.seq_len,
                          (long long)s->seq_len),
            hbm_xasprintf("--maxSeqLen %lld --maxInputTokenLen %lld", (long long)t.seq_len,
                          (long long)t.input_len));
}

/* More of the card: the lowest NPU_MEMORY_FRACTION (up to 0.96) that starts. */
static void advise_fraction(const mindie_ctx *c, const mindie_settings *s,
                            hbm_plan_result *res)
{
    mindie_settings t = *s;
    mindie_outcome to;
    for (int pct = (int)ceil(s->fraction * 100 + 0.5); pct <= 96; pct++) {
        t.fraction = pct / 100.0;
        mindie_evaluate(c, &t, &to);
        if (to.fits) {
            add_rec(res, "NPU_MEMORY_FRACTION", &t,
                    hbm_xasprintf("export NPU_MEMORY_FRACTION=%.2f", t.fraction),
                    hbm_xstrdup("less headroom for the memory the warm-up did not see"),
                    hbm_xasprintf("--NPU_MEMORY_FRACTION %.2f", t.fraction));
            return;
        }
    }
}

/* More cards: the smallest worldSize (a power of two up to 16) that starts. */
static void advise_world(const mindie_ctx *c, const mindie_settings *s, hbm_plan_result *res)
{
    mindie_settings t = *s;
    mindie_outcome to;
    for (t.world = s->world * 2; t.world <= 16; t.world *= 2) {
        mindie_evaluate(c, &t, &to);
        if (to.fits) {
            add_rec(res, "worldSize", &t,
                    hbm_xasprintf("set worldSize to %lld (and as many npuDeviceIds)",
                                  (long long)t.world),
                    hbm_xasprintf("%lld cards instead of %lld", (long long)t.world,
                                  (long long)s->world),
                    hbm_xasprintf("--worldSize %lld", (long long)t.world));
            return;
        }
    }
}

/* A given npuMemSize that does not fit: the largest that does. */
static void advise_npu_mem(const mindie_ctx *c, const mindie_settings *s,
                           const mindie_outcome *o, hbm_plan_result *res)
{
    mindie_settings t = *s;
    t.npu_mem_gib = (c->total - o->weights - o->act - o->nt - o->others) / HBM_GIB;
    mindie_outcome to;
    mindie_evaluate(c, &t, &to);
    if (t.npu_mem_gib <= 0 || !to.fits)
        return;
    add_rec(res, "npuMemSize", &t,
            hbm_xasprintf("set npuMemSize to %lld", (long long)t.npu_mem_gib),
            hbm_xasprintf("%lld KV blocks instead of %lld", (long long)to.blocks,
                          (long long)o->blocks),
            hbm_xasprintf("--npuMemSize %lld", (long long)t.npu_mem_gib));
}

static void mindie_advise(const mindie_ctx *c, const mindie_settings *s,
                          const mindie_outcome *o, hbm_plan_result *res)
{
    if (o->prefill_fail) {
        mindie_settings t = *s;
        t.prefill_tokens = s->input_len;
        add_rec(res, "maxPrefillTokens", &t,
                hbm_xasprintf("set maxPrefillTokens to at least maxInputTokenLen (%lld)",
                              (long long)s->input_len),
                hbm_xstrdup("a larger warm-up prefill"),
                hbm_xasprintf("--maxPrefillTokens %lld", (long long)s->input_len));
    }
    if (o->npu_oom)
        advise_npu_mem(c, s, o, res);
    if (o->warmup_fail)
        advise_seq_len(c, s, o, res);
    if (o->warmup_fail || o->no_kv)
        advise_fraction(c, s, res);
    if (o->warmup_fail || o->no_kv || o->weights_oom || o->npu_oom)
        advise_world(c, s, res);
}

/* ---- the run --------------------------------------------------------------------------- */

static void fill_result(const hbm_plan_input *in, const mindie_ctx *c, const mindie_settings *s,
                        const mindie_outcome *o, hbm_plan_result *res)
{
    res->fits = o->fits;
    res->weights_bytes = o->weights;
    res->activation_bytes = o->act;
    res->non_torch_bytes = o->nt;
    res->kv_cache_bytes = o->kv;
    res->kv_bytes_per_token = o->block_bytes / s->block;
    res->block_size = s->block;
    res->num_blocks = o->blocks;
    res->kv_cache_tokens = o->blocks * s->block;
    res->max_concurrency = (double)o->blocks / (double)cdiv(s->seq_len, s->block);
    res->max_model_len_fit = o->blocks * s->block;
    res->total_bytes = c->total;
    res->free_bytes = c->free;
    res->requested_bytes = s->npu_mem_gib > 0 ? o->kv : (int64_t)((double)c->total * s->fraction);
    res->gpu_memory_utilization = s->fraction;
    res->tensor_parallel_size = s->world;
    res->pipeline_parallel_size = 1;
    res->max_model_len = s->seq_len;
    res->max_num_seqs = s->batch;
    res->max_num_batched_tokens = s->prefill_tokens;
    res->kv_dtype_bytes = c->kvb;
    snprintf(res->kv_cache_dtype, sizeof res->kv_cache_dtype, "auto");
    /* MindIE's rules do not change by release: any release is planned alike */
    snprintf(res->vllm_version, sizeof res->vllm_version, "%s",
             in->engine_version ? in->engine_version : "newest");
    snprintf(res->rules_version, sizeof res->rules_version, "%s", res->vllm_version);
    snprintf(res->engine_version, sizeof res->engine_version, "%s",
             in->engine_version ? in->engine_version : "");
    plan_fill_device(in, res);
    res->launch_line = settings_line(s);
}

static void mindie_notes(const hbm_plan_input *in, const mindie_ctx *c, const mindie_settings *s,
                         const mindie_outcome *o, hbm_plan_result *res)
{
    plan_model_notes(c->m, res);
    if (s->npu_mem_gib > 0 && o->fits && o->required > o->blocks)
        plan_add_note(res, hbm_xasprintf("npuMemSize %lld holds %lld blocks: a request of %lld "
                                    "tokens (%lld blocks) cannot be scheduled",
                                    (long long)s->npu_mem_gib, (long long)o->blocks,
                                    (long long)o->warmup_len, (long long)o->required));
    if (s->batch > res->max_concurrency && o->fits)
        plan_add_note(res, hbm_xasprintf("maxBatchSize %lld is above the %.2f requests of maxSeqLen "
                                    "the blocks hold", (long long)s->batch,
                                    res->max_concurrency));
    for (size_t k = 0; k < in->nunmodelled; k++)
        plan_add_note(res, hbm_xasprintf("%s changes device memory in ways the planner does not "
                                    "model: the figures assume MindIE's default",
                                    in->unmodelled[k]));
}

static int mindie_run(const hbm_plan_input *in, hbm_plan_result *res, hbm_err *err)
{
    if (!in->model_path)
        return hbm_err_set(err, "no model: give a model directory, or MindIE's config.json "
                                "with its modelWeightPath");
    if (in->mem_total_bytes <= 0)
        return hbm_err_set(err, "device memory unknown: give --device NAME, --device auto or "
                                "--mem SIZE");
    if (in->platform == HBM_PLAN_PLATFORM_CUDA)
        return hbm_err_set(err, "MindIE runs on Ascend NPUs: give an Ascend --device (910B3, "
                                "...) or --platform ascend");
    if (hbm_plan_model_load(in->model_path, &res->model, err) < 0)
        return -1;
    const hbm_plan_model *m = &res->model;
    mindie_ctx c = {m, in->mem_total_bytes, in->mem_free_bytes,
                    m->dtype_bytes == 4 ? 2 : m->dtype_bytes};
    mindie_settings s = settings_of(in);
    mindie_outcome o;
    mindie_evaluate(&c, &s, &o);
    fill_result(in, &c, &s, &o, res);
    mindie_errors(&s, &o, res);
    if (!o.fits)
        mindie_advise(&c, &s, &o, res);
    mindie_notes(in, &c, &s, &o, res);
    return 0;
}

const plan_engine plan_engine_mindie = {
    .id = HBM_PLAN_ENGINE_MINDIE,
    .name = "mindie",
    .flags = mindie_flags,
    .args = mindie_args,
    .run = mindie_run,
    .util_flag = "--NPU_MEMORY_FRACTION",
    .len_flag = "--maxSeqLen",
    .no_pipeline = true,
};
