/* A plan as JSON (docs/planner.md); its human report is the command line's
 * (src/cli/render_plan.c). */
#include <math.h>

#include "hbm/plan.h"

static json_t *int_or_null(int64_t v)
{
    return v < 0 ? json_null() : json_integer(v);
}

static json_t *real_or_null(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

/* The answer of planning backwards; null when no target was asked. */
/* The LoRA slots (present only with --enable-lora). */
static json_t *lora_json(const hbm_plan_lora *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "max_loras", json_integer(l->max_loras));
    json_object_set_new(o, "max_lora_rank", json_integer(l->max_lora_rank));
    json_object_set_new(o, "dtype_bytes", json_integer(l->dtype_bytes));
    json_object_set_new(o, "fully_sharded", json_boolean(l->fully_sharded));
    json_object_set_new(o, "extra_vocab", json_integer(l->extra_vocab));
    json_object_set_new(o, "slot_bytes", json_integer(l->slot_bytes));
    json_object_set_new(o, "adapter_bytes", json_integer(l->adapter_bytes));
    json_object_set_new(o, "activation_bytes", json_integer(l->activation_bytes));
    return o;
}

static json_t *launch_json(const hbm_plan_launch *l)
{
    if (!l->asked)
        return json_null();
    json_t *o = json_object(), *flags = json_array();
    for (size_t i = 0; i < l->nflags; i++)
        json_array_append_new(flags, json_string(l->flags[i]));
    json_object_set_new(o, "flags", flags);
    json_object_set_new(o, "tensor_parallel_size", json_integer(l->tensor_parallel_size));
    json_object_set_new(o, "pipeline_parallel_size", json_integer(l->pipeline_parallel_size));
    json_object_set_new(o, "gpu_memory_utilization", json_real(l->gpu_memory_utilization));
    json_object_set_new(o, "serves", json_boolean(l->serves));
    json_object_set_new(o, "requests", json_integer(l->requests));
    json_object_set_new(o, "max_model_len", json_integer(l->max_model_len));
    json_object_set_new(o, "max_concurrency", json_real(l->max_concurrency));
    json_object_set_new(o, "fewer_devices_concurrency", real_or_null(l->fewer_devices_concurrency));
    json_object_set_new(o, "lower_util_concurrency", real_or_null(l->lower_util_concurrency));
    return o;
}

/* The vision encoder and its profile run; null for a text model. */
static json_t *multimodal_json(const hbm_plan_multimodal *mm)
{
    if (!mm->present)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "images_profiled", json_boolean(mm->profiled));
    json_object_set_new(o, "modality", mm->modality[0] ? json_string(mm->modality) : json_null());
    json_object_set_new(o, "items", json_integer(mm->items));
    json_object_set_new(o, "tokens_per_item", json_integer(mm->tokens_per_item));
    json_object_set_new(o, "encoder_cache_tokens", json_integer(mm->encoder_cache_tokens));
    json_object_set_new(o, "encoder_weights_bytes", json_integer(mm->encoder_weights_bytes));
    json_object_set_new(o, "encoder_activation_bytes",
                        json_integer(mm->encoder_activation_bytes));
    json_object_set_new(o, "tower_loaded", json_boolean(mm->tower_loaded));
    return o;
}

/* Speculative decoding's share of the plan; null without it. */
static json_t *spec_json(const hbm_plan_spec *s)
{
    if (!s->on)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "method", json_string(s->method));
    json_object_set_new(o, "modelled", json_boolean(s->modelled));
    json_object_set_new(o, "draft_weights_bytes", int_or_null(s->draft_weights_bytes));
    json_object_set_new(o, "draft_kv_bytes_per_token", int_or_null(s->draft_kv_bytes_per_token));
    json_object_set_new(o, "draft_layers", int_or_null(s->draft_layers));
    json_object_set_new(o, "num_speculative_tokens", int_or_null(s->num_speculative_tokens));
    return o;
}

json_t *hbm_plan_result_to_json(const hbm_plan_result *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "fits", json_boolean(r->fits));
    json_t *errs = json_array();
    for (size_t i = 0; i < r->nerrors; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "kind", json_string(r->errors[i].kind));
        json_object_set_new(e, "message", json_string(r->errors[i].message));
        json_array_append_new(errs, e);
    }
    json_object_set_new(j, "errors", errs);
    json_object_set_new(j, "weights_bytes", int_or_null(r->weights_bytes));
    json_object_set_new(j, "activation_bytes", int_or_null(r->activation_bytes));
    json_object_set_new(j, "sampler_bytes", int_or_null(r->sampler_bytes));
    json_object_set_new(j, "sampler_rows", int_or_null(r->sampler_rows));
    json_object_set_new(j, "non_torch_bytes", int_or_null(r->non_torch_bytes));
    json_object_set_new(j, "graph_bytes", int_or_null(r->graph_bytes));
    json_object_set_new(j, "kv_cache_bytes", json_integer(r->kv_cache_bytes));
    json_object_set_new(j, "kv_bytes_per_token", int_or_null(r->kv_bytes_per_token));
    json_object_set_new(j, "block_size", int_or_null(r->block_size));
    json_object_set_new(j, "num_blocks", int_or_null(r->num_blocks));
    json_object_set_new(j, "kv_cache_tokens", int_or_null(r->kv_cache_tokens));
    json_object_set_new(j, "max_concurrency", json_real(r->max_concurrency));
    json_t *recs = json_array();
    for (size_t i = 0; i < r->nrecs; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "kind", json_string(r->recs[i].kind));
        json_object_set_new(e, "change", json_string(r->recs[i].change));
        json_object_set_new(e, "cost", json_string(r->recs[i].cost));
        json_object_set_new(e, "flags", json_string(r->recs[i].flags));
        json_object_set_new(e, "launch_line", json_string(r->recs[i].launch_line));
        /* the older name, kept one release (docs/planner.md, JSON) */
        json_object_set_new(e, "vllm_args", json_string(r->recs[i].launch_line));
        json_array_append_new(recs, e);
    }
    json_object_set_new(j, "recommendations", recs);
    json_object_set_new(j, "launch_line", json_string(r->launch_line ? r->launch_line : ""));
    json_object_set_new(j, "vllm_args", json_string(r->launch_line ? r->launch_line : ""));
    json_object_set_new(j, "launch", launch_json(&r->launch));
    json_object_set_new(j, "multimodal", multimodal_json(&r->multimodal));
    json_object_set_new(j, "speculative", spec_json(&r->spec));
    if (r->lora.enabled)
        json_object_set_new(j, "lora", lora_json(&r->lora));
    /* what the prediction rests on */
    json_object_set_new(j, "graph_outside_budget_bytes", int_or_null(r->graph_outside_bytes));
    json_object_set_new(j, "max_model_len_fit", int_or_null(r->max_model_len_fit));
    json_object_set_new(j, "memory_total_bytes", int_or_null(r->total_bytes));
    json_object_set_new(j, "memory_free_bytes", int_or_null(r->free_bytes));
    json_object_set_new(j, "requested_bytes", int_or_null(r->requested_bytes));
    json_object_set_new(j, "gpu_memory_utilization", json_real(r->gpu_memory_utilization));
    json_object_set_new(j, "tensor_parallel_size", json_integer(r->tensor_parallel_size));
    json_object_set_new(j, "pipeline_parallel_size", json_integer(r->pipeline_parallel_size));
    json_object_set_new(j, "max_model_len", json_integer(r->max_model_len));
    json_object_set_new(j, "max_num_seqs", json_integer(r->max_num_seqs));
    json_object_set_new(j, "max_num_batched_tokens", json_integer(r->max_num_batched_tokens));
    json_object_set_new(j, "kv_cache_dtype", json_string(r->kv_cache_dtype));
    json_object_set_new(j, "vllm_version", json_string(r->vllm_version));
    json_object_set_new(j, "rules_version", json_string(r->rules_version));
    json_object_set_new(j, "engine_version",
                        r->engine_version[0] ? json_string(r->engine_version) : json_null());
    json_object_set_new(j, "rules_newer", json_boolean(r->rules_newer));
    json_object_set_new(j, "model_runner",
                        r->engine == HBM_PLAN_ENGINE_VLLM && r->platform != HBM_PLAN_PLATFORM_ASCEND
                            ? json_string(r->model_runner_v2 ? "v2" : "v1")
                            : json_null());
    json_object_set_new(j, "platform", json_string(r->platform == HBM_PLAN_PLATFORM_ASCEND
                                                       ? "ascend"
                                                       : r->platform == HBM_PLAN_PLATFORM_CUDA
                                                             ? "cuda"
                                                             : "unknown"));
    json_object_set_new(j, "device", r->device_name[0] ? json_string(r->device_name) : json_null());
    json_object_set_new(j, "live", json_boolean(r->live));
    json_t *ids = json_array();
    for (size_t i = 0; i < r->ndevice_ids; i++)
        json_array_append_new(ids, json_integer(r->device_ids[i]));
    json_object_set_new(j, "devices", r->ndevice_ids ? ids : (json_decref(ids), json_null()));
    json_object_set_new(j, "visible_devices",
                        r->visible_devices[0] ? json_string(r->visible_devices) : json_null());
    const hbm_plan_model *m = &r->model;
    json_t *mo = json_object();
    json_object_set_new(mo, "config", json_string(m->path));
    json_object_set_new(mo, "architecture", json_string(m->architecture));
    json_object_set_new(mo, "num_layers", int_or_null(m->num_layers));
    json_object_set_new(mo, "num_kv_heads", int_or_null(m->num_kv_heads));
    json_object_set_new(mo, "head_dim", int_or_null(m->head_dim));
    json_object_set_new(mo, "mla", json_boolean(m->mla));
    json_object_set_new(mo, "num_experts", json_integer(m->num_experts));
    json_object_set_new(mo, "dtype", json_string(m->dtype));
    json_object_set_new(mo, "checkpoint_bytes", int_or_null(m->weights_bytes));
    json_object_set_new(mo, "weights_estimated", json_boolean(m->weights_estimated));
    json_object_set_new(mo, "safetensors_files", json_integer(m->weights_files));
    json_object_set_new(mo, "model_type", json_string(m->model_type));
    json_object_set_new(mo, "generic", json_boolean(m->generic));
    json_t *unread = json_array();
    for (size_t i = 0; i < m->nunread_keys; i++)
        json_array_append_new(unread, json_string(m->unread_keys[i]));
    json_object_set_new(mo, "unread_keys", unread);
    json_object_set_new(j, "model", mo);
    json_t *notes = json_array();
    for (size_t i = 0; i < r->nnotes; i++)
        json_array_append_new(notes, json_string(r->notes[i]));
    json_object_set_new(j, "notes", notes);
    return j;
}
