/* config.json reading: the architecture numbers vLLM itself derives (kv heads, head size,
 * layer kinds), found in the text config of multimodal models too, and a parameter count
 * from the architecture for when no safetensors are present. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

void hbm_plan_model_init(hbm_plan_model *m)
{
    memset(m, 0, sizeof *m);
    m->hidden_size = m->intermediate_size = m->num_layers = HBM_UNKNOWN;
    m->num_heads = m->num_kv_heads = m->head_dim = m->vocab_size = HBM_UNKNOWN;
    m->max_position_embeddings = HBM_UNKNOWN;
    m->sliding_window = HBM_UNKNOWN;
    m->weights_bytes = m->weights_tensors = m->embed_bytes = HBM_UNKNOWN;
    m->params_estimated = HBM_UNKNOWN;
    m->dtype_bytes = 2;
    snprintf(m->dtype, sizeof m->dtype, "bfloat16");
}

void hbm_plan_model_free(hbm_plan_model *m)
{
    free(m->layer_kinds);
    m->layer_kinds = NULL;
    for (size_t i = 0; i < m->nunread_keys; i++)
        free(m->unread_keys[i]);
    free(m->unread_keys);
    m->unread_keys = NULL;
    m->nunread_keys = 0;
}

/* A config being read: the language model's object (nested in multimodal wrappers), the
 * whole file, and the names looked up so far, so that the keys never consulted can be listed
 * (a config of an unchecked family may size tensors through them). */
typedef struct config_view {
    json_t *text, *root;
    json_t *consulted; /* an object used as a set of key names */
} config_view;

static void consult(const config_view *c, const char *key)
{
    json_object_set_new(c->consulted, key, json_true());
}

/* First integer among keys (NULL-terminated), looked up in the text config, then the file. */
static int64_t get_int(const config_view *c, const char *const *keys, int64_t dflt)
{
    for (const char *const *k = keys; *k; k++)
        consult(c, *k);
    json_t *objs[2] = {c->text, c->root};
    for (int o = 0; o < 2; o++) {
        if (!json_is_object(objs[o]))
            continue;
        for (const char *const *k = keys; *k; k++) {
            json_t *v = json_object_get(objs[o], *k);
            if (json_is_integer(v))
                return json_integer_value(v);
            if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
                fabs(json_real_value(v)) < 9e15)
                return (int64_t)json_real_value(v);
        }
    }
    return dflt;
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

static json_t *get_any(const config_view *c, const char *key)
{
    consult(c, key);
    json_t *v = json_is_object(c->text) ? json_object_get(c->text, key) : NULL;
    if (!v && json_is_object(c->root))
        v = json_object_get(c->root, key);
    return v;
}

static const char *get_str(const config_view *c, const char *key)
{
    json_t *v = get_any(c, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The file's own key (not the text config's), as vLLM reads it from the top level. */
static json_t *get_top(const config_view *c, const char *key)
{
    consult(c, key);
    return json_object_get(c->root, key);
}

int plan_dtype_bytes(const char *name)
{
    if (!name)
        return 0;
    if (!strcasecmp(name, "bfloat16") || !strcasecmp(name, "float16") ||
        !strcasecmp(name, "half") || !strcasecmp(name, "bf16") || !strcasecmp(name, "fp16") ||
        !strcasecmp(name, "torch.bfloat16") || !strcasecmp(name, "torch.float16"))
        return 2;
    if (!strcasecmp(name, "float32") || !strcasecmp(name, "float") ||
        !strcasecmp(name, "fp32") || !strcasecmp(name, "torch.float32"))
        return 4;
    if (!strncasecmp(name, "fp8", 3) || !strncasecmp(name, "float8", 6) ||
        !strcasecmp(name, "int8"))
        return 1;
    return 0;
}

int plan_kv_dtype_bytes(const char *name, int model_bytes)
{
    if (!name || !strcasecmp(name, "auto"))
        return model_bytes;
    int b = plan_dtype_bytes(name);
    return b ? b : model_bytes;
}

static bool positive(int64_t v)
{
    return v > 0;
}

/* Layer kinds as vLLM groups them (docs/planner.md): layer_types when the config lists them, else
 * the patterns older configs encode. */
static void read_layer_kinds(const config_view *c, hbm_plan_model *m)
{
    int64_t n = m->num_layers;
    m->layer_kinds = hbm_xcalloc((size_t)n, sizeof *m->layer_kinds);
    json_t *types = get_any(c, "layer_types");
    bool any_sliding = false;
    if (json_is_array(types) && (int64_t)json_array_size(types) >= n) {
        for (int64_t i = 0; i < n; i++) {
            const char *s = json_string_value(json_array_get(types, (size_t)i));
            if (!s)
                continue;
            if (strstr(s, "sliding") || strstr(s, "local"))
                m->layer_kinds[i] = HBM_PLAN_LAYER_SLIDING, any_sliding = true;
            else if (strstr(s, "linear") || strstr(s, "mamba") || strstr(s, "delta"))
                m->layer_kinds[i] = HBM_PLAN_LAYER_LINEAR;
        }
    } else {
        int64_t interval = get_int(c, KEYS("full_attention_interval"), 0);
        int64_t pattern = get_int(c, KEYS("sliding_window_pattern"), 0);
        json_t *use_sw = get_any(c, "use_sliding_window");
        int64_t max_window_layers = get_int(c, KEYS("max_window_layers"), HBM_UNKNOWN);
        bool sw = positive(m->sliding_window);
        for (int64_t i = 0; i < n; i++) {
            if (interval > 0) {
                /* Qwen3-Next: every interval-th layer is full attention, the rest linear */
                if ((i + 1) % interval)
                    m->layer_kinds[i] = HBM_PLAN_LAYER_LINEAR;
            } else if (sw && pattern > 0) {
                if ((i + 1) % pattern)
                    m->layer_kinds[i] = HBM_PLAN_LAYER_SLIDING, any_sliding = true;
            } else if (sw && !strcmp(m->model_type, "gemma2")) {
                if (i % 2 == 0)
                    m->layer_kinds[i] = HBM_PLAN_LAYER_SLIDING, any_sliding = true;
            } else if (sw && json_is_boolean(use_sw)) {
                /* Qwen2: sliding only when enabled, on layers from max_window_layers up */
                if (json_is_true(use_sw) && (max_window_layers < 0 || i >= max_window_layers))
                    m->layer_kinds[i] = HBM_PLAN_LAYER_SLIDING, any_sliding = true;
            } else if (sw) {
                /* Mistral style: one window for every layer */
                m->layer_kinds[i] = HBM_PLAN_LAYER_SLIDING, any_sliding = true;
            }
        }
    }
    /* Gemma 3n/4: the last layers reuse earlier layers' KV and keep none of their own */
    int64_t shared = get_int(c, KEYS("num_kv_shared_layers"), 0);
    if (shared > 0 && shared < n)
        for (int64_t i = n - shared; i < n; i++)
            m->layer_kinds[i] = HBM_PLAN_LAYER_SHARED;
    if (!any_sliding)
        m->sliding_window = HBM_UNKNOWN;
}

/* Parameters of the linear layers by the module they belong to, summed over the layers: the
 * unit a checkpoint's quantisation config names when it keeps some modules unquantised. */
typedef struct param_split {
    double attn, mlp, experts, shared, router, norms;
} param_split;

/* Parameters per layer and in total, from the architecture alone. */
static void estimate_params(hbm_plan_model *m, int64_t *embed_params, param_split *p)
{
    double H = (double)m->hidden_size, heads = (double)m->num_heads;
    double kv = (double)m->num_kv_heads, V = (double)(m->vocab_size > 0 ? m->vocab_size : 0);
    double attn;
    if (m->mla) {
        double qk = (double)(m->qk_nope_head_dim + m->qk_rope_head_dim);
        double vh = (double)(m->v_head_dim > 0 ? m->v_head_dim : m->qk_nope_head_dim);
        double q = m->q_lora_rank > 0
                       ? H * (double)m->q_lora_rank + (double)m->q_lora_rank * heads * qk
                       : H * heads * qk;
        attn = q + H * (double)(m->kv_lora_rank + m->qk_rope_head_dim) +
               (double)m->kv_lora_rank * heads * ((double)m->qk_nope_head_dim + vh) +
               heads * vh * H;
    } else {
        double hd = (double)m->head_dim;
        double vd = m->v_head_dim > 0 ? (double)m->v_head_dim : hd;
        attn = H * heads * hd + H * kv * (hd + vd) + heads * vd * H;
    }
    double lin = attn;
    if (m->linear_num_v_heads > 0) {
        double kd = (double)(m->linear_num_k_heads * m->linear_k_head_dim);
        double vd = (double)(m->linear_num_v_heads * m->linear_v_head_dim);
        lin = H * (2 * kd + 2 * vd) + H * 2 * (double)m->linear_num_v_heads + vd * H +
              (2 * kd + vd) * (double)(m->linear_conv_kernel > 0 ? m->linear_conv_kernel : 4);
    }
    double dense = 3 * H * (double)(m->intermediate_size > 0 ? m->intermediate_size : 0);
    double shared = m->shared_expert_intermediate_size > 0
                        ? (double)m->shared_expert_intermediate_size
                        : (double)(m->num_shared_experts * m->moe_intermediate_size);
    memset(p, 0, sizeof *p);
    for (int64_t i = 0; i < m->num_layers; i++) {
        bool is_moe = m->num_experts > 0 && i >= m->first_dense_layers;
        p->attn += m->layer_kinds[i] == HBM_PLAN_LAYER_LINEAR ? lin : attn;
        if (is_moe) {
            p->experts += (double)m->num_experts * 3 * H * (double)m->moe_intermediate_size;
            p->shared += 3 * H * shared;
            p->router += H * (double)m->num_experts;
        } else {
            p->mlp += dense;
        }
        p->norms += 2 * H;
    }
    double emb = V * H * (m->tie_word_embeddings ? 1 : 2);
    *embed_params = (int64_t)emb;
    m->expert_params = (int64_t)p->experts;
    m->params_estimated =
        (int64_t)(p->attn + p->mlp + p->experts + p->shared + p->router + p->norms + emb + H);
}

int64_t plan_moe_layers(const hbm_plan_model *m)
{
    if (m->num_experts <= 0 || m->num_layers <= m->first_dense_layers)
        return 0;
    return m->num_layers - m->first_dense_layers;
}

double plan_mxfp4_expert_bytes(const hbm_plan_model *m, double inter, double hidden,
                               double layers)
{
    /* per expert: w13 and w2 at 4 bits with one byte of scale per 32 weights, and their
     * bf16 biases, which vLLM's MXFP4 method always creates */
    return layers * (double)m->num_experts *
           (3 * inter * hidden * (0.5 + 1.0 / 32) + (2 * inter + hidden) * 2);
}

unsigned plan_quant_skip_of(const char *module)
{
    /* a module path or a regular expression over them ("model.layers.*.self_attn",
     * "re:.*mlp.gate$", "lm_head"): the kind of module it names in every layer; one
     * numbered layer's module ("model.layers.0.mlp") is not counted as all of them */
    const char *layers = strstr(module, "layers.");
    if (layers && isdigit((unsigned char)layers[7]))
        return 0;
    if (strstr(module, "attn") || strstr(module, "attention"))
        return HBM_PLAN_QSKIP_ATTN;
    if (strstr(module, "shared_expert"))
        return HBM_PLAN_QSKIP_SHARED;
    if (strstr(module, "router"))
        return HBM_PLAN_QSKIP_ROUTER;
    if (strstr(module, "experts"))
        return HBM_PLAN_QSKIP_EXPERTS;
    const char *g = strstr(module, "gate"); /* the router's usual name; not gate_proj */
    if (g && g[4] != '_' && !isalnum((unsigned char)g[4]))
        return HBM_PLAN_QSKIP_ROUTER;
    const char *mlp = strstr(module, "mlp");
    if (mlp && (mlp[3] == 0 || mlp[3] == '$'))
        return HBM_PLAN_QSKIP_MLP | HBM_PLAN_QSKIP_EXPERTS | HBM_PLAN_QSKIP_SHARED |
               HBM_PLAN_QSKIP_ROUTER;
    return 0;
}

/* compressed-tensors names its width per group of targets: `config_groups.*.weights` with
 * `num_bits` and, for the group strategy, one scale of the model dtype per `group_size`
 * weights (vLLM's CompressedTensorsWNA16.create_weights: weight_packed at num_bits a weight,
 * weight_scale [out, in / group_size] in params_dtype). The widest group counts; 0 when the
 * config names no width. */
static double compressed_weight_bytes(json_t *qc, int dtype_bytes)
{
    json_t *groups = json_object_get(qc, "config_groups"), *g;
    const char *name;
    double widest = 0;
    json_object_foreach(groups, name, g) {
        json_t *w = json_object_get(g, "weights");
        json_int_t bits = json_integer_value(json_object_get(w, "num_bits"));
        if (bits < 1 || bits > 32)
            continue;
        double per = (double)bits / 8;
        const char *strategy = json_string_value(json_object_get(w, "strategy"));
        json_int_t group = json_integer_value(json_object_get(w, "group_size"));
        if (strategy && !strcmp(strategy, "group") && group > 0)
            per += (double)dtype_bytes / (double)group;
        if (per > widest)
            widest = per;
    }
    return widest;
}

/* Bytes of the weights as stored: quantised linear layers at their packed width, the modules
 * the quantisation leaves out (modules_to_not_convert, ignore), norms and embeddings at the
 * model dtype. vLLM's MXFP4 method quantises only the routed experts: every other linear
 * layer falls back to the unquantised method (mxfp4.py get_quant_method). */
static void estimate_weights(hbm_plan_model *m)
{
    int64_t emb = 0;
    param_split p;
    estimate_params(m, &emb, &p);
    double per = m->dtype_bytes;
    const char *q = m->quant_method;
    bool mxfp4 = !strcasecmp(q, "mxfp4");
    if (!strcasecmp(q, "awq") || !strcasecmp(q, "gptq") || !strcasecmp(q, "awq_marlin") ||
        !strcasecmp(q, "gptq_marlin") || !strcasecmp(q, "bitsandbytes"))
        per = 0.5 + 0.03125; /* 4-bit weights + group-128 fp16 scales and zeros */
    else if (!strncasecmp(q, "fp8", 3) || !strcasecmp(q, "compressed-tensors") ||
             !strcasecmp(q, "modelopt"))
        per = 1;
    if (m->quant_weight_bytes > 0)
        per = m->quant_weight_bytes;
    unsigned keep = m->quant_skip;
    double d = m->dtype_bytes;
    double body = p.norms * d;
    if (mxfp4) {
        body += (p.attn + p.mlp + p.shared + p.router) * d +
                plan_mxfp4_expert_bytes(m, (double)m->moe_intermediate_size,
                                        (double)m->hidden_size, (double)plan_moe_layers(m));
    } else {
        body += p.attn * (keep & HBM_PLAN_QSKIP_ATTN ? d : per) +
                p.mlp * (keep & HBM_PLAN_QSKIP_MLP ? d : per) +
                p.experts * (keep & HBM_PLAN_QSKIP_EXPERTS ? d : per) +
                p.shared * (keep & HBM_PLAN_QSKIP_SHARED ? d : per) +
                p.router * (keep & HBM_PLAN_QSKIP_ROUTER ? d : per);
    }
    m->weights_bytes = (int64_t)body + (int64_t)m->hidden_size * m->dtype_bytes +
                       emb * m->dtype_bytes;
    m->embed_bytes = emb * m->dtype_bytes;
    m->weights_estimated = true;
}

/* The object holding the language model: multimodal wrappers keep it in a nested config. */
static json_t *text_config(const config_view *c)
{
    static const char *const nested[] = {"text_config", "llm_config", "language_config",
                                         "thinker_config"};
    for (size_t i = 0; i < sizeof nested / sizeof nested[0]; i++) {
        json_t *n = get_top(c, nested[i]);
        if (json_is_object(n) && json_object_get(n, "text_config"))
            n = json_object_get(n, "text_config");
        if (json_is_object(n))
            return n;
    }
    return c->root;
}

/* The model families whose config layouts the rules were checked against (fixtures and
 * start-up cases); any other is planned as a generic decoder from the same keys, which the
 * plan says, rather than refused: its numbers are read alike, only the layer kinds and extra
 * tensors a config does not spell out may be missed. */
static bool known_family(const char *model_type)
{
    static const char *const known[] = {
        "llama",      "mistral",     "mixtral",   "qwen2",        "qwen2_moe",
        "qwen2_vl",   "qwen2_5_vl",  "qwen3",     "qwen3_moe",    "qwen3_next",
        "qwen3_vl",   "qwen3_vl_moe", "gemma2",   "gemma3",       "gemma3_text",
        "gpt_oss",    "deepseek_v2", "deepseek_v3", "pangu",
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(model_type, known[i]))
            return true;
    return false;
}

/* Names and the transformer's dimensions; fails when vLLM could not size it. */
static int read_dims(const config_view *c, const char *name, hbm_plan_model *m,
                     hbm_err *err)
{
    json_t *arch = get_top(c, "architectures");
    if (json_is_array(arch) && json_is_string(json_array_get(arch, 0)))
        snprintf(m->architecture, sizeof m->architecture, "%s",
                 json_string_value(json_array_get(arch, 0)));
    const char *mt = get_str(c, "model_type");
    snprintf(m->model_type, sizeof m->model_type, "%s", mt ? mt : "");
    m->generic = !known_family(m->model_type);
    json_t *nop = get_top(c, "_name_or_path");
    if (json_is_string(nop) && strlen(json_string_value(nop)) < sizeof m->name_or_path)
        snprintf(m->name_or_path, sizeof m->name_or_path, "%s", json_string_value(nop));

    m->hidden_size = get_int(c, KEYS("hidden_size", "d_model", "n_embd", "dim"), -1);
    m->num_layers = get_int(c, KEYS("num_hidden_layers", "n_layer", "num_layers",
                                          "n_layers"), -1);
    m->num_heads = get_int(c, KEYS("num_attention_heads", "n_head", "n_heads"), -1);
    m->intermediate_size =
        get_int(c, KEYS("intermediate_size", "ffn_hidden_size", "ffn_dim", "n_inner"), 0);
    m->num_kv_heads = get_int(c,
                              KEYS("n_head_kv", "num_kv_heads", "num_key_value_heads",
                                   "multi_query_group_num", "num_attention_groups"),
                              m->num_heads);
    m->vocab_size = get_int(c, KEYS("vocab_size", "padded_vocab_size"), -1);
    m->max_position_embeddings =
        get_int(c, KEYS("max_position_embeddings", "n_positions", "max_sequence_length",
                              "seq_length", "max_seq_len"), HBM_UNKNOWN);
    json_t *tie = get_any(c, "tie_word_embeddings");
    m->tie_word_embeddings = json_is_true(tie);

    if (m->hidden_size <= 0 || m->num_layers <= 0 || m->num_heads <= 0)
        return hbm_err_set(err, "%s: no hidden_size, num_hidden_layers or "
                                "num_attention_heads: not a transformer config vLLM can size",
                           name);
    if (m->num_layers > 100000 || m->hidden_size > 10000000 || m->num_heads > 100000 ||
        m->num_kv_heads <= 0 || m->num_kv_heads > m->num_heads * 64 ||
        m->vocab_size > 100000000 || m->intermediate_size < 0 ||
        m->intermediate_size > 100000000)
        return hbm_err_set(err, "%s: architecture numbers out of range (layers %lld, hidden "
                                "%lld, heads %lld, kv heads %lld)",
                           name, (long long)m->num_layers, (long long)m->hidden_size,
                           (long long)m->num_heads, (long long)m->num_kv_heads);
    const char *dt = get_str(c, "torch_dtype");
    if (!dt)
        dt = get_str(c, "dtype");
    if (dt && plan_dtype_bytes(dt) >= 2) {
        m->dtype_bytes = plan_dtype_bytes(dt);
        snprintf(m->dtype, sizeof m->dtype, "%s", dt);
    }
    return 0;
}

/* Mixture of experts; numbers out of range read as a dense model. */
static void read_moe(const config_view *c, hbm_plan_model *m)
{
    m->num_experts = get_int(c, KEYS("num_experts", "n_routed_experts",
                                           "num_local_experts", "moe_num_experts"), 0);
    m->experts_per_token = get_int(c, KEYS("num_experts_per_tok", "moe_topk",
                                                 "num_experts_per_token", "top_k_experts"), 0);
    m->moe_intermediate_size =
        get_int(c, KEYS("moe_intermediate_size", "expert_intermediate_size"),
                m->intermediate_size);
    m->shared_expert_intermediate_size =
        get_int(c, KEYS("shared_expert_intermediate_size"), 0);
    m->num_shared_experts = get_int(c, KEYS("n_shared_experts", "num_shared_experts"), 0);
    m->first_dense_layers = get_int(c, KEYS("first_k_dense_replace"), 0);
    if (m->num_experts < 0 || m->num_experts > 100000 || m->experts_per_token < 0 ||
        m->experts_per_token > m->num_experts || m->moe_intermediate_size < 0 ||
        m->moe_intermediate_size > 100000000 || m->shared_expert_intermediate_size < 0 ||
        m->shared_expert_intermediate_size > 100000000 || m->num_shared_experts < 0 ||
        m->num_shared_experts > 1000 || m->first_dense_layers < 0)
        m->num_experts = m->experts_per_token = 0;
}

/* The size of one token's KV per layer and head. MLA: one latent of kv_lora_rank + rope dim
 * per token and layer, not split by TP. */
static int read_head_dim(const config_view *c, const char *name,
                         hbm_plan_model *m, hbm_err *err)
{
    m->kv_lora_rank = get_int(c, KEYS("kv_lora_rank"), 0);
    m->qk_rope_head_dim = get_int(c, KEYS("qk_rope_head_dim"), 0);
    m->qk_nope_head_dim = get_int(c, KEYS("qk_nope_head_dim"), 0);
    m->q_lora_rank = get_int(c, KEYS("q_lora_rank"), 0);
    m->v_head_dim = get_int(c, KEYS("v_head_dim"), 0);
    if (m->kv_lora_rank > 0 && m->kv_lora_rank < 1000000 && m->qk_rope_head_dim >= 0 &&
        m->qk_rope_head_dim < 100000 && m->qk_nope_head_dim >= 0 &&
        m->qk_nope_head_dim < 100000 && m->q_lora_rank >= 0 && m->q_lora_rank < 1000000 &&
        m->v_head_dim >= 0 && m->v_head_dim < 100000) {
        m->mla = true;
        m->head_dim = m->kv_lora_rank + m->qk_rope_head_dim;
        m->num_kv_heads = 1;
        return 0;
    }
    m->kv_lora_rank = m->qk_rope_head_dim = m->qk_nope_head_dim = m->q_lora_rank = 0;
    m->v_head_dim = 0;
    m->head_dim = get_int(c, KEYS("head_dim", "hidden_size_per_head"), -1);
    if (m->head_dim <= 0 || m->head_dim > 100000)
        m->head_dim = m->hidden_size / m->num_heads;
    if (m->head_dim <= 0)
        return hbm_err_set(err, "%s: head size is 0 (hidden_size %lld over %lld heads)", name,
                           (long long)m->hidden_size, (long long)m->num_heads);
    return 0;
}

/* Linear attention (Gated DeltaNet and relatives), sliding windows and quantisation. */
static void read_attention_kinds(const config_view *c, hbm_plan_model *m)
{
    m->linear_num_k_heads = get_int(c, KEYS("linear_num_key_heads"), 0);
    m->linear_num_v_heads = get_int(c, KEYS("linear_num_value_heads"), 0);
    m->linear_k_head_dim = get_int(c, KEYS("linear_key_head_dim"), 0);
    m->linear_v_head_dim = get_int(c, KEYS("linear_value_head_dim"), 0);
    m->linear_conv_kernel = get_int(c, KEYS("linear_conv_kernel_dim"), 4);
    if (m->linear_num_k_heads < 0 || m->linear_num_k_heads > 10000 ||
        m->linear_num_v_heads < 0 || m->linear_num_v_heads > 10000 ||
        m->linear_k_head_dim < 0 || m->linear_k_head_dim > 10000 ||
        m->linear_v_head_dim < 0 || m->linear_v_head_dim > 10000 ||
        m->linear_conv_kernel < 1 || m->linear_conv_kernel > 1000)
        m->linear_num_k_heads = m->linear_num_v_heads = 0;

    m->sliding_window = get_int(c, KEYS("sliding_window", "attention_window"), HBM_UNKNOWN);
    if (m->sliding_window <= 0)
        m->sliding_window = HBM_UNKNOWN;

    json_t *qc = get_top(c, "quantization_config");
    if (!qc)
        qc = json_object_get(c->text, "quantization_config");
    const char *qm = json_is_object(qc) ? json_string_value(json_object_get(qc, "quant_method"))
                                        : NULL;
    snprintf(m->quant_method, sizeof m->quant_method, "%s", qm ? qm : "");
    m->quant_weight_bytes = json_is_object(qc) ? compressed_weight_bytes(qc, m->dtype_bytes) : 0;
    m->quant_skip = 0;
    static const char *const lists[] = {"modules_to_not_convert", "ignore", "ignored_layers"};
    for (size_t k = 0; json_is_object(qc) && k < sizeof lists / sizeof lists[0]; k++) {
        json_t *l = json_object_get(qc, lists[k]), *v;
        size_t i;
        json_array_foreach(l, i, v)
            if (json_is_string(v))
                m->quant_skip |= plan_quant_skip_of(json_string_value(v));
    }
}

/* Keys that size no tensor and no cache: token ids, the numerics of norms, activations and
 * rotary angles, dropout, and provenance. Every other key the rules never consulted is
 * listed, since an unchecked family may size something through it. */
static bool sizes_nothing(const char *key)
{
    static const char *const exact[] = {"transformers_version", "initializer_range",
                                        "hidden_act", "hidden_activation", "use_cache",
                                        "rope_theta", "bos_token_id", "eos_token_id",
                                        "pad_token_id"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(key, exact[i]))
            return true;
    static const char *const suffixes[] = {"_token_id", "_token_ids", "_eps", "_epsilon"};
    size_t kl = strlen(key);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t sl = strlen(suffixes[i]);
        if (kl >= sl && !strcmp(key + kl - sl, suffixes[i]))
            return true;
    }
    return strstr(key, "dropout") != NULL;
}

static bool listed(const hbm_plan_model *m, const char *key)
{
    for (size_t i = 0; i < m->nunread_keys; i++)
        if (!strcmp(m->unread_keys[i], key))
            return true;
    return false;
}

/* The keys of the text config, then of the file, that no rule consulted. */
static void list_unread(const config_view *c, hbm_plan_model *m)
{
    json_t *objs[2] = {c->text, c->root};
    for (int o = 0; o < (c->text == c->root ? 1 : 2); o++) {
        const char *key;
        json_t *v;
        json_object_foreach(objs[o], key, v) {
            if (json_object_get(c->consulted, key) || sizes_nothing(key) || listed(m, key))
                continue;
            m->unread_keys = hbm_xrealloc(m->unread_keys,
                                          (m->nunread_keys + 1) * sizeof *m->unread_keys);
            m->unread_keys[m->nunread_keys++] = hbm_xstrdup(key);
        }
    }
}

int hbm_plan_model_parse_config(const char *text, size_t len, const char *name,
                                hbm_plan_model *m, hbm_err *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return hbm_err_set(err, "%s:%d: not JSON: %s", name, je.line, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return hbm_err_set(err, "%s:1: not a JSON object", name);
    }
    snprintf(m->path, sizeof m->path, "%s", name);
    config_view c = {.root = root, .consulted = json_object()};
    c.text = text_config(&c);
    /* the vision tower is sized by multimodal.c from the same file */
    consult(&c, "vision_config");
    int rc = -1;
    if (read_dims(&c, name, m, err) < 0)
        goto out;
    read_moe(&c, m);
    if (read_head_dim(&c, name, m, err) < 0)
        goto out;
    read_attention_kinds(&c, m);
    read_layer_kinds(&c, m);
    list_unread(&c, m);
    estimate_weights(m);
    rc = 0;
out:
    json_decref(c.consulted);
    json_decref(root);
    return rc;
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int hbm_plan_model_load(const char *path, hbm_plan_model *m, hbm_err *err)
{
    char cfg[2048], dir[1024];
    if (is_dir(path)) {
        snprintf(dir, sizeof dir, "%s", path);
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
    } else {
        snprintf(cfg, sizeof cfg, "%s", path);
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        else
            snprintf(dir, sizeof dir, ".");
    }
    /* a config under another name is not a model directory's: the files next to it
     * are not its weights */
    const char *base = strrchr(cfg, '/');
    bool model_dir = !strcmp(base ? base + 1 : cfg, "config.json");
    char *text = NULL;
    size_t len = 0;
    if (hbm_read_file(cfg, 16 * HBM_MIB, &text, &len, err) < 0)
        return -1;
    int rc = hbm_plan_model_parse_config(text, len, cfg, m, err);
    free(text);
    if (rc < 0)
        return -1;
    m->model_dir = model_dir;
    if (!model_dir)
        return 0;
    hbm_plan_st_sum sum;
    int files = 0;
    if (plan_weights_in_dir(dir, &sum, &files, err) < 0)
        return -1;
    if (files > 0) {
        m->weights_bytes = sum.tensor_bytes;
        m->weights_tensors = sum.tensors;
        m->embed_bytes = sum.embed_bytes;
        m->weights_files = files;
        m->weights_estimated = false;
    }
    return 0;
}
