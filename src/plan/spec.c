/* Speculative decoding in vLLM's start-up (docs/planner.md, "vLLM, speculative decoding").
 *
 * The drafter is built by the same model runner as the target: its weights are loaded with
 * the target's (counted in "Model loading took"), and every attention layer it has is one
 * more layer of the one KV cache (V1 collects the KV specs of all attention layers, the
 * drafter's included; V0's spec-decode worker split the blocks between scorer and proposer
 * by their bytes per block, which is the same sum). So, per method:
 *   ngram / suffix       no device memory
 *   eagle                its decoder layer(s) and fc; embedding and lm_head are the target's
 *   eagle3               its decoder layer(s) (q/k/v over 2 x hidden), fc over 3 x hidden and
 *                        its own lm_head over draft_vocab_size; the embedding is the target's
 *   mtp (deepseek_mtp..) the target's own MTP layers (num_nextn_predict_layers /
 *                        mtp_num_hidden_layers): weights and one KV layer each
 *   draft_model          the draft checkpoint and all its attention layers
 *   medusa, mlp_speculator  their heads' weights, no KV
 * Per request, full attention needs no block for the speculative tokens
 * (FullAttentionSpec.max_memory_usage_bytes depends on max_model_len alone); a Mamba
 * group keeps 1 + num_speculative_tokens state blocks (MambaSpec.num_speculative_blocks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <jansson.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

#define FLAG "--speculative-config"
#define GIB_D 1073741824.0
/* --speculative-config came with vLLM 0.8.0 (#14434), which deprecated the single flags;
 * 0.8.3 removed them (#15466) */
#define SPEC_CONFIG_SINCE 800
#define SPEC_FLAGS_REMOVED 803

typedef enum draft_kind {
    DRAFT_NONE,   /* proposes from the prompt: no weights, no KV */
    DRAFT_MODEL,  /* a whole draft checkpoint */
    DRAFT_EAGLE,
    DRAFT_EAGLE3,
    DRAFT_MTP,    /* the target's own next-token layers */
    DRAFT_HEADS,  /* heads on the target's hidden states: weights only */
} draft_kind;

static const struct {
    const char *name;
    draft_kind kind;
} methods[] = {
    {"ngram", DRAFT_NONE},       {"ngram_gpu", DRAFT_NONE},     {"suffix", DRAFT_NONE},
    {"eagle", DRAFT_EAGLE},      {"eagle3", DRAFT_EAGLE3},      {"draft_model", DRAFT_MODEL},
    {"medusa", DRAFT_HEADS},     {"mlp_speculator", DRAFT_HEADS}, {"mtp", DRAFT_MTP},
    {"deepseek_mtp", DRAFT_MTP},
};

#define NMETHODS (sizeof methods / sizeof methods[0])

/* The kind of a method; the model-specific MTP names (qwen3_next_mtp, ernie_mtp, ...) all
 * run the target's MTP layers. -1 when vLLM does not know it. */
static int method_kind(const char *name)
{
    for (size_t i = 0; i < NMETHODS; i++)
        if (!strcmp(name, methods[i].name))
            return (int)methods[i].kind;
    size_t l = strlen(name);
    if (l > 4 && !strcmp(name + l - 4, "_mtp"))
        return DRAFT_MTP;
    return -1;
}

static bool needs_model(int kind)
{
    return kind == DRAFT_MODEL || kind == DRAFT_EAGLE || kind == DRAFT_EAGLE3 ||
           kind == DRAFT_HEADS;
}

/* vLLM's choice when no method is given: from the draft's name. */
static const char *infer_method(const char *model)
{
    if (!model[0])
        return "";
    if (!strcmp(model, "[ngram]") || !strcmp(model, "ngram"))
        return "ngram";
    if (strcasestr(model, "eagle3"))
        return "eagle3";
    if (strcasestr(model, "eagle"))
        return "eagle";
    return "draft_model";
}

static int read_count(json_t *o, const char *key, int64_t *out, hbm_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 4096)
        return hbm_err_set(err, FLAG ": %s must be a positive integer", key);
    *out = json_integer_value(v);
    return 0;
}

static int read_string(json_t *o, const char *key, char *out, size_t n, hbm_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return hbm_err_set(err, FLAG ": %s must be a string", key);
    if (json_string_length(v) >= n)
        return hbm_err_set(err, FLAG ": %s is longer than %zu characters", key, n - 1);
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int read_config(json_t *root, hbm_plan_spec_config *out, hbm_err *err)
{
    if (!json_is_object(root))
        return hbm_err_set(err, FLAG ": must be a JSON object such as {\"method\": \"ngram\", "
                                "\"num_speculative_tokens\": 3}");
    if (read_string(root, "method", out->method, sizeof out->method, err) < 0 ||
        read_string(root, "model", out->model, sizeof out->model, err) < 0 ||
        read_count(root, "num_speculative_tokens", &out->num_speculative_tokens, err) < 0 ||
        read_count(root, "draft_tensor_parallel_size", &out->draft_tensor_parallel_size,
                   err) < 0)
        return -1;
    if (!out->method[0])
        snprintf(out->method, sizeof out->method, "%s", infer_method(out->model));
    if (!strcmp(out->method, "[ngram]"))
        snprintf(out->method, sizeof out->method, "ngram");
    if (!out->method[0]) /* no draft: MTP when the target has such layers (resolved later) */
        return 0;
    int kind = method_kind(out->method);
    if (kind < 0) {
        char known[256] = "";
        for (size_t i = 0; i < NMETHODS; i++) {
            size_t l = strlen(known);
            snprintf(known + l, sizeof known - l, "%s%s", i ? ", " : "", methods[i].name);
        }
        return hbm_err_set(err, FLAG ": method \"%s\" is not one vLLM knows (%s, *_mtp)",
                           out->method, known);
    }
    if (needs_model(kind) && !out->model[0])
        return hbm_err_set(err, FLAG ": method %s needs a \"model\" (the draft's directory)",
                           out->method);
    if (kind == DRAFT_NONE && out->num_speculative_tokens < 0)
        return hbm_err_set(err, FLAG ": method %s needs \"num_speculative_tokens\"",
                           out->method);
    return 0;
}

int hbm_plan_spec_parse(const char *text, size_t len, hbm_plan_spec_config *out,
                        hbm_err *err)
{
    memset(out, 0, sizeof *out);
    out->num_speculative_tokens = out->draft_tensor_parallel_size = HBM_UNKNOWN;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return hbm_err_set(err, FLAG ": not JSON (%s, at character %d)", je.text, je.position);
    int rc = read_config(root, out, err);
    json_decref(root);
    return rc;
}

/* ---- the flags of a release --------------------------------------------------------- */

/* The configuration the flags give for release ver; *given false when none. */
static int config_from_flags(const hbm_plan_input *in, int ver, hbm_plan_spec_config *sc,
                             bool *given, hbm_err *err)
{
    bool old = in->vllm.speculative_model || in->vllm.num_speculative_tokens > 0;
    *given = old || in->vllm.speculative_config;
    if (in->vllm.speculative_config && old)
        return hbm_err_set(err, FLAG ": give it or --speculative-model / "
                                "--num-speculative-tokens, not both");
    if (in->vllm.speculative_config) {
        if (ver < SPEC_CONFIG_SINCE)
            return hbm_err_set(err, FLAG ": vLLM %s has no such flag (it came with 0.8.0): "
                                    "give --speculative-model and --num-speculative-tokens",
                               in->engine_version);
        return hbm_plan_spec_parse(in->vllm.speculative_config, strlen(in->vllm.speculative_config),
                                   sc, err);
    }
    if (!old)
        return 0;
    const char *f = in->vllm.speculative_model ? "--speculative-model" : "--num-speculative-tokens";
    if (ver >= SPEC_FLAGS_REMOVED)
        return hbm_err_set(err, "%s: removed in vLLM 0.8.3 (deprecated since 0.8.0): give "
                                FLAG " '{\"model\": \"%s\", \"num_speculative_tokens\": %lld}'",
                           f, in->vllm.speculative_model ? in->vllm.speculative_model : "DRAFT",
                           (long long)(in->vllm.num_speculative_tokens > 0
                                           ? in->vllm.num_speculative_tokens : 1));
    memset(sc, 0, sizeof *sc);
    sc->draft_tensor_parallel_size = HBM_UNKNOWN;
    sc->num_speculative_tokens = in->vllm.num_speculative_tokens > 0 ? in->vllm.num_speculative_tokens
                                                                : HBM_UNKNOWN;
    if (in->vllm.speculative_model) {
        if (strlen(in->vllm.speculative_model) >= sizeof sc->model)
            return hbm_err_set(err, "--speculative-model: longer than %zu characters",
                               sizeof sc->model - 1);
        snprintf(sc->model, sizeof sc->model, "%s", in->vllm.speculative_model);
        snprintf(sc->method, sizeof sc->method, "%s", infer_method(sc->model));
    }
    /* no model: the method stays "" and the target's MTP layers decide */
    return 0;
}

/* ---- what each drafter brings ---------------------------------------------------------- */

/* A key of a config.json (or its text_config), 0 when absent. */
static int64_t config_int(const char *path, const char *const *keys)
{
    char *text = NULL;
    size_t len;
    hbm_err err = {{0}};
    if (hbm_read_file(path, 1 << 22, &text, &len, &err) < 0)
        return 0;
    json_t *root = json_loadb(text, len, 0, NULL);
    free(text);
    json_t *nested = json_object_get(root, "text_config");
    int64_t v = 0;
    for (size_t i = 0; keys[i] && v == 0; i++) {
        json_t *x = json_object_get(root, keys[i]);
        if (!json_is_integer(x))
            x = json_object_get(nested, keys[i]);
        if (json_is_integer(x) && json_integer_value(x) > 0)
            v = json_integer_value(x);
    }
    json_decref(root);
    return v;
}

/* The attention layers of a model as draft KV geometry. */
static void kv_shape_of(const hbm_plan_model *m, int64_t layers, plan_draft *d)
{
    d->layers = layers;
    d->kv_heads = m->mla ? 0 : m->num_kv_heads;
    d->kv_width = m->mla ? m->head_dim : m->head_dim + (m->v_head_dim > 0 ? m->v_head_dim
                                                                            : m->head_dim);
}

/* An EAGLE head's parameters from its config: per layer attention (EAGLE-3's q/k/v read
 * the embedding and the hidden state side by side: 2 x hidden) and MLP, the fc that mixes
 * the target's hidden states in (2 x hidden for EAGLE, 3 x hidden for EAGLE-3), and
 * EAGLE-3's own lm_head over its draft vocabulary. */
static double eagle_params(const hbm_plan_model *dm, bool eagle3, int64_t draft_vocab)
{
    double H = (double)dm->hidden_size, hd = (double)dm->head_dim;
    double in = eagle3 ? 2 * H : H;
    double attn = in * hd * (double)(dm->num_heads + 2 * dm->num_kv_heads) +
                  (double)dm->num_heads * hd * H;
    double layer = attn + 3 * H * (double)dm->intermediate_size + 2 * H;
    double fc = (eagle3 ? 3 : 2) * H * H;
    double head = eagle3 ? (double)draft_vocab * H : 0;
    return (double)dm->num_layers * layer + fc + head + H;
}

static int load_draft(const char *dir, hbm_plan_model *dm, hbm_err *err)
{
    char cfg[1100];
    struct stat st;
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || stat(cfg, &st) < 0)
        return 1;
    return hbm_plan_model_load(dir, dm, err) < 0 ? -1 : 0;
}

/* The draft checkpoint's share: weights and attention layers. */
static int draft_from_dir(const char *flag, const hbm_plan_spec_config *sc, int kind,
                          plan_ctx *c, hbm_plan_result *res, hbm_err *err)
{
    hbm_plan_model dm;
    hbm_plan_model_init(&dm);
    int rc = load_draft(sc->model, &dm, err);
    if (rc != 0) {
        hbm_plan_model_free(&dm);
        if (rc < 0)
            return hbm_err_prefix(err, "%s: the draft %s", flag, sc->model);
        res->spec.modelled = false;
        plan_add_note(res, hbm_xasprintf("speculative decoding: the draft %s is not a local model "
                                    "directory with a config.json, so its weights and KV "
                                    "layers are not counted (give its directory to plan them)",
                                    sc->model));
        return 0;
    }
    if (kind == DRAFT_EAGLE || kind == DRAFT_EAGLE3) {
        char cfg[1100];
        snprintf(cfg, sizeof cfg, "%s/config.json", sc->model);
        static const char *const vocab_keys[] = {"draft_vocab_size", "vocab_size", NULL};
        int64_t dv = config_int(cfg, vocab_keys);
        c->draft.weights = (int64_t)(eagle_params(&dm, kind == DRAFT_EAGLE3, dv) * c->act_bytes);
    } else {
        c->draft.weights = dm.weights_bytes > 0 ? dm.weights_bytes : 0;
    }
    if (kind != DRAFT_HEADS)
        kv_shape_of(&dm, dm.num_layers, &c->draft);
    if (kind == DRAFT_MODEL && dm.weights_estimated)
        plan_add_note(res, hbm_xasprintf("speculative decoding: no safetensors in %s: the draft's "
                                    "weights are estimated from its architecture",
                                    sc->model));
    hbm_plan_model_free(&dm);
    return 0;
}

/* The target's MTP layers: their weights (already in a measured checkpoint, which holds
 * them; otherwise one average decoder layer and the 2 x hidden -> hidden projection each)
 * and one KV layer each, shaped like the target's. */
static int draft_from_mtp(const char *flag, plan_ctx *c, hbm_plan_result *res, hbm_err *err)
{
    const hbm_plan_model *m = c->m;
    static const char *const keys[] = {"num_nextn_predict_layers", "mtp_num_hidden_layers",
                                       "num_mtp_layers", NULL};
    int64_t n = config_int(m->path, keys);
    if (n <= 0)
        return hbm_err_set(err, "%s: method %s runs the target's MTP layers, and %s has "
                                "none (num_nextn_predict_layers / mtp_num_hidden_layers)",
                           flag, res->spec.method, m->path);
    if (m->weights_estimated && m->num_layers > 0) {
        double layer = (double)(m->weights_bytes - m->embed_bytes) / (double)m->num_layers;
        double proj = 2.0 * (double)m->hidden_size * (double)m->hidden_size * c->act_bytes;
        c->draft.weights = (int64_t)((double)n * (layer + proj));
    }
    kv_shape_of(m, n, &c->draft);
    if (res->spec.num_speculative_tokens < 0)
        res->spec.num_speculative_tokens = n; /* vLLM's default: one token per MTP layer */
    return 0;
}

int64_t plan_draft_weights(const plan_ctx *c, const plan_flags *f)
{
    int64_t tp = c->draft.tp > 0 ? c->draft.tp : f->tp;
    return tp > 0 ? c->draft.weights / tp : c->draft.weights;
}

int64_t plan_draft_kv_per_token(const plan_ctx *c, const plan_flags *f)
{
    if (c->draft.layers <= 0)
        return 0;
    int64_t tp = c->draft.tp > 0 ? c->draft.tp : f->tp;
    int64_t heads = c->draft.kv_heads == 0 ? 1 : c->draft.kv_heads / tp;
    if (heads < 1)
        heads = 1; /* fewer KV heads than ranks: each rank keeps a copy */
    return c->draft.layers * heads * c->draft.kv_width * f->kvb;
}

static void spec_note(const plan_ctx *c, hbm_plan_result *res)
{
    const hbm_plan_spec *s = &res->spec;
    if (!s->modelled)
        return;
    if (c->draft.weights == 0 && c->draft.layers == 0) {
        plan_add_note(res, hbm_xasprintf("speculative decoding (%s, %lld tokens): drafts from the "
                                    "tokens already seen, no device memory",
                                    s->method, (long long)s->num_speculative_tokens));
        return;
    }
    bool in_checkpoint = c->draft.weights == 0 && !c->m->weights_estimated;
    plan_add_note(res, hbm_xasprintf("speculative decoding (%s, %lld tokens): %.2f GiB of draft "
                                "weights per rank%s, %lld attention layer%s adding %lld bytes "
                                "per token to the KV cache",
                                s->method, (long long)s->num_speculative_tokens,
                                (double)s->draft_weights_bytes / GIB_D,
                                in_checkpoint ? " (the MTP layers are in the checkpoint measured)"
                                              : "",
                                (long long)s->draft_layers, s->draft_layers == 1 ? "" : "s",
                                (long long)s->draft_kv_bytes_per_token));
}

int plan_spec_apply(const hbm_plan_input *in, plan_ctx *c, const plan_flags *f,
                    hbm_plan_result *res, hbm_err *err)
{
    hbm_plan_spec_config sc;
    bool given;
    if (config_from_flags(in, c->r.ver, &sc, &given, err) < 0)
        return -1;
    if (!given)
        return 0;
    hbm_plan_spec *s = &res->spec;
    s->on = s->modelled = true;
    s->num_speculative_tokens = sc.num_speculative_tokens;
    snprintf(s->method, sizeof s->method, "%s", sc.method[0] ? sc.method : "mtp");
    c->draft.tp = sc.draft_tensor_parallel_size > 0 ? sc.draft_tensor_parallel_size : 0;
    const char *flag = in->vllm.speculative_config ? FLAG
                       : in->vllm.speculative_model ? "--speculative-model"
                                               : "--num-speculative-tokens";
    int kind = method_kind(s->method);
    int rc = kind == DRAFT_MTP ? draft_from_mtp(flag, c, res, err)
             : kind == DRAFT_NONE ? 0
                                  : draft_from_dir(flag, &sc, kind, c, res, err);
    if (rc < 0)
        return -1;
    if (s->num_speculative_tokens > 0)
        c->draft.mamba_spec_blocks = s->num_speculative_tokens;
    s->draft_weights_bytes = s->modelled ? plan_draft_weights(c, f) : HBM_UNKNOWN;
    s->draft_kv_bytes_per_token = s->modelled ? plan_draft_kv_per_token(c, f) : HBM_UNKNOWN;
    s->draft_layers = s->modelled ? c->draft.layers : HBM_UNKNOWN;
    spec_note(c, res);
    return 0;
}
