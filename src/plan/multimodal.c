/* Multimodal checkpoints in vLLM's start-up (docs/planner.md, "vLLM, multimodal models"):
 * the vision tower's weights, and the profile run that encodes the largest dummy items
 * before the KV budget is taken (vllm/v1/worker/gpu_model_runner.py profile_run, the
 * models' get_mm_max_tokens_per_item and dummy inputs in qwen2_vl.py, gemma3_mm.py).
 *
 *   item       the modality whose largest item has the most LLM tokens, among those whose
 *              --limit-mm-per-prompt is not 0 (Qwen: image at max_pixels, or a video of
 *              as many such frames as max_model_len holds, at most 32)
 *   budget     encoder cache = max(max_num_batched_tokens, tokens of that item)
 *   items      budget // item tokens, at most max_num_seqs x the modality's limit, >= 1
 *   peak       items x patches x (tensors alive at the vision block's peak + pixels and
 *              rotary tables)
 *   run        max(encoder peak, language model peak + the encoder outputs it holds) */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "plan/plan_int.h"

/* Qwen2-VL's dummy video: at most this many frames (qwen2_vl.py _MAX_FRAMES_PER_VIDEO) */
#define QWEN_MAX_VIDEO_FRAMES 32
/* Gemma 3 replaces one image by "\n\n<start_of_image>", the soft tokens, "<end_of_image>\n\n" */
#define GEMMA3_IMAGE_WRAP_TOKENS 4

static int64_t num(json_t *o, const char *key, int64_t dflt)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 9e15)
        return (int64_t)json_real_value(v);
    return dflt;
}

static json_t *load_json(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    hbm_err err = {{0}};
    if (hbm_read_file(path, 16 * HBM_MIB, &text, &len, &err) < 0)
        return NULL;
    json_t *j = json_loadb(text, len, 0, NULL);
    free(text);
    if (j && !json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* Qwen's image processor: max_pixels, or size.longest_edge (the newer spelling). */
static int64_t processor_max_pixels(json_t *pre, int64_t dflt)
{
    int64_t v = num(pre, "max_pixels", -1);
    if (v <= 0)
        v = num(json_object_get(pre, "size"), "longest_edge", -1);
    return v > 0 && v < (int64_t)1 << 40 ? v : dflt;
}

static bool sane(int64_t v, int64_t hi)
{
    return v > 0 && v <= hi;
}

/* Parameters of the tower and its projector into the language model. */
static int64_t tower_params(const plan_mm *mm)
{
    double H = (double)mm->hidden, I = (double)mm->intermediate, D = (double)mm->depth;
    double patch_in = (double)(mm->channels * mm->temporal * mm->patch * mm->patch);
    double mlp = mm->vit == PLAN_VIT_QWEN25 ? 3 * H * I : 2 * H * I;
    double blocks = D * (4 * H * H + mlp);
    if (mm->vit == PLAN_VIT_SIGLIP) {
        double side = (double)(mm->image_size / mm->patch);
        return (int64_t)(blocks + patch_in * H + side * side * H + H * (double)mm->out_hidden);
    }
    double merged = H * (double)(mm->merge * mm->merge);
    return (int64_t)(blocks + patch_in * H + merged * merged + merged * (double)mm->out_hidden);
}

/* The tower's sizes by family; false when the config does not describe one. */
static bool read_tower(json_t *root, json_t *vc, plan_mm *mm)
{
    const char *type = json_string_value(json_object_get(root, "model_type"));
    type = type ? type : "";
    mm->channels = num(vc, "in_chans", num(vc, "in_channels", num(vc, "num_channels", 3)));
    mm->patch = num(vc, "patch_size", 14);
    mm->merge = num(vc, "spatial_merge_size", 2);
    mm->temporal = num(vc, "temporal_patch_size", 2);
    json_t *text = json_object_get(root, "text_config");
    int64_t llm_hidden = num(text, "hidden_size", num(root, "hidden_size", -1));
    if (!strcmp(type, "qwen2_vl")) {
        mm->vit = PLAN_VIT_QWEN2;
        mm->hidden = num(vc, "embed_dim", -1);
        int64_t ratio = num(vc, "mlp_ratio", 4);
        mm->intermediate = sane(mm->hidden, 100000) && sane(ratio, 64) ? mm->hidden * ratio : -1;
        mm->out_hidden = num(vc, "hidden_size", llm_hidden);
    } else if (!strcmp(type, "qwen2_5_vl") || !strncmp(type, "qwen3_vl", 8)) {
        mm->vit = type[4] == '3' ? PLAN_VIT_QWEN3 : PLAN_VIT_QWEN25;
        mm->hidden = num(vc, "hidden_size", -1);
        mm->intermediate = num(vc, "intermediate_size", -1);
        mm->out_hidden = num(vc, "out_hidden_size", llm_hidden);
    } else if (!strcmp(type, "gemma3")) {
        mm->vit = PLAN_VIT_SIGLIP;
        mm->hidden = num(vc, "hidden_size", -1);
        mm->intermediate = num(vc, "intermediate_size", -1);
        mm->image_size = num(vc, "image_size", 896);
        mm->tokens_per_image = num(root, "mm_tokens_per_image", 256);
        mm->out_hidden = llm_hidden;
        mm->temporal = 1;
    } else {
        return false;
    }
    mm->depth = num(vc, "depth", num(vc, "num_hidden_layers", -1));
    /* transformers' Qwen2-VL / Qwen2.5-VL vision configs default to 16 heads */
    mm->heads = num(vc, "num_heads", num(vc, "num_attention_heads", 16));
    return sane(mm->hidden, 100000) && sane(mm->intermediate, 1000000) &&
           sane(mm->heads, mm->hidden) &&
           sane(mm->depth, 1000) && sane(mm->patch, 1000) && sane(mm->merge, 64) &&
           sane(mm->temporal, 64) && sane(mm->channels, 64) && sane(mm->out_hidden, 1000000) &&
           (mm->vit != PLAN_VIT_SIGLIP ||
            (sane(mm->image_size, 100000) && mm->image_size >= mm->patch &&
             sane(mm->tokens_per_image, 1000000)));
}

bool plan_mm_parse(const char *text, size_t len, plan_mm *mm)
{
    memset(mm, 0, sizeof *mm);
    mm->limit_image = mm->limit_video = HBM_UNKNOWN;
    json_t *root = json_loadb(text, len, 0, NULL);
    json_t *vc = json_is_object(root) ? json_object_get(root, "vision_config") : NULL;
    bool ok = json_is_object(vc) && read_tower(root, vc, mm);
    json_decref(root);
    if (!ok) {
        memset(mm, 0, sizeof *mm);
        return false;
    }
    /* Qwen2-VL's processor default: 12845056 pixels (3584 x 3584); Qwen3-VL's 16777216 */
    mm->max_pixels = mm->vit == PLAN_VIT_QWEN3 ? 16777216 : 12845056;
    mm->params = tower_params(mm);
    return true;
}

int plan_mm_load(const char *model_path, const hbm_plan_input *in, plan_mm *mm, hbm_err *err)
{
    memset(mm, 0, sizeof *mm);
    char dir[1024], cfg[1100], pre[1100];
    struct stat st;
    snprintf(dir, sizeof dir, "%s", model_path);
    if (stat(model_path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        char *slash = strrchr(dir, '/');
        snprintf(cfg, sizeof cfg, "%s", model_path);
        if (slash)
            *slash = 0;
        else
            snprintf(dir, sizeof dir, ".");
    } else {
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    }
    snprintf(pre, sizeof pre, "%s/preprocessor_config.json", dir);
    char *text = NULL;
    size_t len = 0;
    hbm_err ignored = {{0}};
    if (hbm_read_file(cfg, 16 * HBM_MIB, &text, &len, &ignored) < 0)
        return 0; /* the model reader has already said what is wrong with it */
    bool tower = plan_mm_parse(text, len, mm);
    free(text);
    if (!tower)
        return 0;
    json_t *pp = load_json(pre);
    if (pp)
        mm->max_pixels = processor_max_pixels(pp, mm->max_pixels);
    json_decref(pp);
    mm->limit_image = in->vllm.mm_limit_image;
    mm->limit_video = in->vllm.mm_limit_video;
    if (in->vllm.mm_processor_kwargs &&
        plan_mm_parse_kwargs(in->vllm.mm_processor_kwargs, &mm->max_pixels, err) < 0)
        return -1;
    mm->data_parallel = in->vllm.mm_encoder_tp_mode && !strcasecmp(in->vllm.mm_encoder_tp_mode, "data");
    mm->skip_profiling = in->vllm.skip_mm_profiling;
    return 0;
}

/* ---- flag values ---------------------------------------------------------------------- */

static int limit_value(json_t *v, const char *key, int64_t *out, hbm_err *err)
{
    if (json_is_object(v))
        v = json_object_get(v, "count"); /* {"count": 1, "width": ..., ...} (vLLM 0.11+) */
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000)
        return hbm_err_set(err, "--limit-mm-per-prompt: %s is not a count of items", key);
    *out = json_integer_value(v);
    return 0;
}

static int limits_kv(const char *text, int64_t *image, int64_t *video, hbm_err *err)
{
    char buf[256];
    if (strlen(text) >= sizeof buf)
        return hbm_err_set(err, "--limit-mm-per-prompt: value too long");
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '='), *end;
        long long n = eq ? strtoll(eq + 1, &end, 10) : -1;
        if (!eq || end == eq + 1 || *end || n < 0 || n > 1000000)
            return hbm_err_set(err, "--limit-mm-per-prompt: \"%s\" is not MODALITY=COUNT", t);
        *eq = 0;
        if (!strcmp(t, "image"))
            *image = n;
        else if (!strcmp(t, "video"))
            *video = n;
    }
    return 0;
}

int plan_mm_parse_limits(const char *text, int64_t *image, int64_t *video, hbm_err *err)
{
    while (*text == ' ')
        text++;
    if (*text != '{')
        return limits_kv(text, image, video, err);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return hbm_err_set(err, "--limit-mm-per-prompt: not a JSON object: %s", je.text);
    }
    int rc = 0;
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        int64_t *dst = !strcmp(key, "image") ? image : !strcmp(key, "video") ? video : NULL;
        int64_t other;
        if (limit_value(v, key, dst ? dst : &other, err) < 0) {
            rc = -1;
            break;
        }
    }
    json_decref(j);
    return rc;
}

int plan_mm_limit_arg(hbm_plan_input *in, const char *key, const char *value, hbm_err *err)
{
    int64_t image = in->vllm.mm_limit_image, video = in->vllm.mm_limit_video;
    if (!key) {
        if (plan_mm_parse_limits(value, &image, &video, err) < 0)
            return -1;
    } else {
        /* --limit-mm-per-prompt.video 0 (vLLM's dotted form); key.count likewise */
        char kv[128];
        size_t klen = strcspn(key, ".");
        snprintf(kv, sizeof kv, "%.*s=%s", (int)(klen < 32 ? klen : 32), key, value);
        if (plan_mm_parse_limits(kv, &image, &video, err) < 0)
            return -1;
    }
    in->vllm.mm_limit_image = image;
    in->vllm.mm_limit_video = video;
    return 0;
}

bool plan_mm_flag(const char *flag)
{
    return (!strncmp(flag, "--limit-mm-per-prompt", 21) && (!flag[21] || flag[21] == '.')) ||
           !strcmp(flag, "--mm-processor-kwargs") || !strcmp(flag, "--mm-encoder-tp-mode") ||
           !strcmp(flag, "--skip-mm-profiling") || !strcmp(flag, "--no-skip-mm-profiling");
}

int plan_mm_arg(hbm_plan_input *in, const char *flag, const char *value, hbm_err *err)
{
    if (!strncmp(flag, "--limit-mm-per-prompt", 21))
        return plan_mm_limit_arg(in, flag[21] ? flag + 22 : NULL, value, err);
    if (!strcmp(flag, "--mm-processor-kwargs")) {
        int64_t px = HBM_UNKNOWN;
        if (plan_mm_parse_kwargs(value, &px, err) < 0)
            return -1;
        in->vllm.mm_processor_kwargs = value;
    } else if (!strcmp(flag, "--mm-encoder-tp-mode")) {
        if (strcmp(value, "weights") && strcmp(value, "data"))
            return hbm_err_set(err, "%s: \"%s\" is not weights or data", flag, value);
        in->vllm.mm_encoder_tp_mode = value;
    } else {
        in->vllm.skip_mm_profiling = !strcmp(flag, "--skip-mm-profiling");
    }
    return 0;
}

char *plan_mm_limits_flag(const hbm_plan_input *in)
{
    char image[32] = "", video[32] = "";
    if (in->vllm.mm_limit_image >= 0)
        snprintf(image, sizeof image, "\"image\": %lld", (long long)in->vllm.mm_limit_image);
    if (in->vllm.mm_limit_video >= 0)
        snprintf(video, sizeof video, "\"video\": %lld", (long long)in->vllm.mm_limit_video);
    return hbm_xasprintf(" --limit-mm-per-prompt '{%s%s%s}'", image,
                         image[0] && video[0] ? ", " : "", video);
}

int plan_mm_parse_kwargs(const char *text, int64_t *max_pixels, hbm_err *err)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return hbm_err_set(err, "--mm-processor-kwargs: not a JSON object: %s", je.text);
    }
    int64_t v = processor_max_pixels(j, -1);
    json_t *given = json_object_get(j, "max_pixels");
    json_decref(j);
    if (given && v <= 0)
        return hbm_err_set(err, "--mm-processor-kwargs: max_pixels is not a positive count");
    if (v > 0)
        *max_pixels = v;
    return 0;
}

/* ---- the profile run -------------------------------------------------------------------- */

/* Qwen's smart_resize of a huge square image under max_pixels: patches per side. */
static int64_t qwen_side_patches(const plan_mm *mm)
{
    int64_t factor = mm->patch * mm->merge;
    int64_t side = (int64_t)floor(sqrt((double)mm->max_pixels) / (double)factor) * factor;
    if (side < factor)
        side = factor;
    return side / mm->patch;
}

typedef struct item {
    const char *modality;
    int64_t tokens;  /* LLM tokens the item takes in the prompt */
    int64_t embeds;  /* encoder outputs the cache holds for it */
    int64_t patches; /* the encoder's sequence for it */
} item;

static item largest_image(const plan_mm *mm)
{
    item it = {"image", 0, 0, 0};
    if (mm->vit == PLAN_VIT_SIGLIP) {
        int64_t side = mm->image_size / mm->patch;
        it.patches = side * side;
        it.embeds = mm->tokens_per_image;
        it.tokens = mm->tokens_per_image + GEMMA3_IMAGE_WRAP_TOKENS;
        return it;
    }
    int64_t side = qwen_side_patches(mm);
    it.patches = side * side;
    it.embeds = it.tokens = it.patches / (mm->merge * mm->merge);
    return it;
}

/* Qwen's dummy video: as many full-size frames as max_model_len holds (frames padded to the
 * temporal patch), split among the videos a prompt may carry. */
static item largest_video(const plan_mm *mm, int64_t seq_len)
{
    item frame = largest_image(mm);
    int64_t frames = 1;
    while (frames < 100000 &&
           (frames + 1 + (frames + 1) % mm->temporal) / mm->temporal * frame.tokens <= seq_len)
        frames++;
    int64_t videos = mm->limit_video > 0 ? mm->limit_video : 1;
    frames /= videos;
    if (frames > QWEN_MAX_VIDEO_FRAMES)
        frames = QWEN_MAX_VIDEO_FRAMES;
    if (frames < 1)
        frames = 1;
    int64_t grid_t = (frames + frames % mm->temporal) / mm->temporal;
    if (grid_t < 1)
        grid_t = 1;
    item it = {"video", grid_t * frame.tokens, grid_t * frame.embeds, grid_t * frame.patches};
    return it;
}

/* Tensors of the vision width alive per patch at the block's peak, per rank: the larger of
 * the attention and the MLP. The attention holds the block's input, its norm and qkv; the
 * rotary towers (qwen2_vl.py, qwen2_5_vl.py Qwen2_5_VisionAttention, which Qwen3-VL reuses)
 * then copy q, k and v to [b, s] order with .contiguous() and rotate through an fp32 copy
 * into an fp32 output before casting back (apply_rotary_pos_emb_vision). Up to 0.10 they
 * rotate q, then k, one tensor at a time; 0.11 rotates the q|k concatenation at once
 * (#24511, #25005, September 2025); from 0.12 the reorder is a view and the rotation stays
 * in the model's dtype. The MLP holds input and norm, the up projection(s) and the
 * activation; Qwen2.5-VL's separate gate and up projections keep both and their product
 * alive while down_proj writes its output up to 0.10.0, and from 0.10.1 its fused norm
 * keeps a residual pair beside the merged gate_up (#22066, #22184). */
static double rotary_widths(int ver)
{
    if (ver < 1100)
        return 3 + 2 + 2 + 1;
    return ver < 1200 ? 3 + 2 + 4 + 4 + 2 : 2 + 2;
}

static double peak_widths(const plan_mm *mm, int ver, double tp)
{
    double ratio = (double)mm->intermediate / (double)mm->hidden;
    double attn = 2 + 3 / tp;
    if (mm->vit == PLAN_VIT_SIGLIP)
        attn += 1 / tp;
    else
        attn += rotary_widths(ver) / tp;
    double mlp = mm->vit == PLAN_VIT_QWEN25 ? (ver < 1001 ? 3 : 4) + 3 * ratio / tp
                                            : 2 + 2 * ratio / tp;
    return attn > mlp ? attn : mlp;
}

/* Bytes per patch that no block frees: the pixels, which vLLM's processor call casts to
 * the model's dtype from 0.9.1 (inputs/registry.py call_hf_processor) and which were fp32
 * before, and for the rotary towers the fp32 angle table (head width / 2 per patch) with
 * the cos and sin taken of it while a block rotates. */
static double resident_bytes(const plan_mm *mm, int ver, double act_bytes)
{
    double elems = (double)(mm->channels * mm->temporal * mm->patch * mm->patch);
    double bytes = elems * (ver >= 901 ? act_bytes : 4);
    if (mm->vit != PLAN_VIT_SIGLIP)
        bytes += 3 * (double)(mm->hidden / mm->heads / 2) * 4;
    return bytes;
}

static void choose_item(const plan_mm *mm, int64_t seq_len, item *it)
{
    item img = largest_image(mm);
    bool image_on = mm->limit_image != 0;
    bool video_on = mm->limit_video != 0 && mm->vit != PLAN_VIT_SIGLIP;
    item vid = video_on ? largest_video(mm, seq_len) : img;
    if (video_on && (!image_on || vid.tokens > img.tokens))
        *it = vid;
    else if (image_on)
        *it = img;
    else
        memset(it, 0, sizeof *it);
}

void plan_mm_profile_for(const plan_ctx *c, const plan_flags *f, plan_mm_profile *p)
{
    const plan_mm *mm = c->mm;
    memset(p, 0, sizeof *p);
    p->modality = "";
    bool all_off = mm->limit_image == 0 && (mm->limit_video == 0 || mm->vit == PLAN_VIT_SIGLIP);
    /* vLLM builds no vision tower when no modality may appear in a prompt */
    p->tower_loaded = !(all_off && c->r.ver >= 1100);
    double tower = (double)mm->params * c->act_bytes;
    if (!p->tower_loaded)
        p->weights_delta = -(int64_t)(tower / (double)(f->tp * f->pp));
    else if (mm->data_parallel && f->tp > 1)
        p->weights_delta = (int64_t)(tower / (double)f->pp * (1.0 - 1.0 / (double)f->tp));
    item it;
    choose_item(mm, f->mml, &it);
    if (all_off || mm->skip_profiling || c->r.v0 || it.tokens <= 0)
        return;
    p->profiled = true;
    p->modality = it.modality;
    p->tokens_per_item = it.tokens;
    p->budget = f->mnbt > it.tokens ? f->mnbt : it.tokens;
    int64_t limit = !strcmp(it.modality, "video") ? mm->limit_video : mm->limit_image;
    int64_t cap = f->seqs * (limit > 0 ? limit : 1);
    p->items = p->budget / it.tokens;
    if (p->items > cap)
        p->items = cap;
    if (p->items < 1)
        p->items = 1;
    /* data mode: items are split among the ranks, each runs the whole tower */
    double tp = mm->data_parallel ? 1 : (double)f->tp;
    int64_t items = mm->data_parallel ? (p->items + f->tp - 1) / f->tp : p->items;
    double per_patch = peak_widths(mm, c->r.ver, tp) * (double)mm->hidden * c->act_bytes +
                       resident_bytes(mm, c->r.ver, c->act_bytes);
    p->peak = (int64_t)((double)items * (double)it.patches * per_patch);
    p->outputs = p->items * it.embeds * mm->out_hidden * c->act_bytes;
}

int64_t plan_mm_activation(plan_mm_profile *p, int64_t text_act)
{
    int64_t lm = text_act + p->outputs;
    int64_t run = p->peak > lm ? p->peak : lm;
    p->cost = run - text_act;
    return run;
}

/* ---- the result ---------------------------------------------------------------------------- */

#define GIB_D 1073741824.0

static void note(hbm_plan_result *res, char *text)
{
    res->notes = hbm_xrealloc(res->notes, (res->nnotes + 1) * sizeof *res->notes);
    res->notes[res->nnotes++] = text;
}

void plan_mm_result(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                    hbm_plan_result *res)
{
    const plan_mm_profile *p = &o->mm;
    hbm_plan_multimodal *r = &res->multimodal;
    r->present = true;
    r->profiled = p->profiled;
    snprintf(r->modality, sizeof r->modality, "%s", p->modality);
    r->items = p->items;
    r->tokens_per_item = p->tokens_per_item;
    r->encoder_cache_tokens = p->budget;
    r->tower_loaded = p->tower_loaded;
    double tower = (double)c->mm->params * c->act_bytes;
    r->encoder_weights_bytes =
        !p->tower_loaded ? 0
                         : (int64_t)(tower / (double)f->pp /
                                     (c->mm->data_parallel ? 1.0 : (double)f->tp));
    r->encoder_activation_bytes = p->peak;
}

/* The limits that turn every modality of the tower off. */
static const char *all_off_flag(const plan_mm *mm)
{
    return mm->vit == PLAN_VIT_SIGLIP ? "'{\"image\": 0}'" : "'{\"image\": 0, \"video\": 0}'";
}

void plan_mm_notes(const plan_ctx *c, const plan_outcome *o, hbm_plan_result *res)
{
    const plan_mm *mm = c->mm;
    const plan_mm_profile *p = &o->mm;
    double tower = (double)mm->params * c->act_bytes / GIB_D;
    const char *arch = c->m->architecture[0] ? c->m->architecture : "this multimodal model";
    if (c->r.v0) {
        note(res, hbm_xasprintf("%s under V0 (before vLLM 0.8): its multimodal dummy data in "
                                "the profile run is not modelled", arch));
    } else if (p->profiled) {
        note(res, hbm_xasprintf(
                      "%s profiles %lld %s item%s of %lld tokens (the largest its limits allow; "
                      "encoder cache %lld tokens) before sizing the KV cache: %.2f GiB of peak "
                      "that the KV cache does not get, even when it only ever serves text. "
                      "Text only: --limit-mm-per-prompt %s skips it%s",
                      arch, (long long)p->items, p->modality, p->items == 1 ? "" : "s",
                      (long long)p->tokens_per_item, (long long)p->budget,
                      (double)p->cost / GIB_D, all_off_flag(mm),
                      c->r.ver >= 1100 ? " and the vision tower's weights" : ""));
        if (!strcmp(p->modality, "video") && mm->limit_video < 0)
            note(res, hbm_xstrdup("the largest item is a video of as many full-size frames as "
                                  "max_model_len holds: --limit-mm-per-prompt "
                                  "'{\"video\": 0}' keeps images and profiles the largest "
                                  "image instead"));
    } else if (mm->skip_profiling) {
        note(res, hbm_xstrdup("--skip-mm-profiling: the encoder is not profiled, so its peak on "
                              "a large image is not kept out of the KV cache and may run out of "
                              "memory at serving time"));
    } else if (!p->tower_loaded) {
        note(res, hbm_xasprintf("--limit-mm-per-prompt allows no image or video: vLLM builds no "
                                "vision tower (%.2f GiB of the checkpoint not loaded) and profiles "
                                "no encoder input", tower));
    } else {
        note(res, hbm_xstrdup("--limit-mm-per-prompt allows no image or video: no encoder input "
                              "is profiled (this release still loads the vision tower)"));
    }
}
