/* The engines the planner knows and the public entry points that dispatch to them. Each
 * engine is one file (vLLM's in plan.c, args.c and flags.c); what they share (the model,
 * the weights, the KV layout) is in model.c and memory.c, the result's common parts in
 * result.c. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

static const plan_engine *const engines[] = {
    &plan_engine_vllm,
    &plan_engine_sglang,
    &plan_engine_mindie,
};

#define NENGINES (sizeof engines / sizeof engines[0])

const plan_engine *plan_engine_of(hbm_plan_engine id)
{
    for (size_t i = 0; i < NENGINES; i++)
        if (engines[i]->id == id)
            return engines[i];
    return NULL;
}

const char *hbm_plan_engine_name(hbm_plan_engine e)
{
    const plan_engine *pe = plan_engine_of(e);
    return pe ? pe->name : "unknown";
}

const char *hbm_plan_engine_util_flag(hbm_plan_engine e)
{
    const plan_engine *pe = plan_engine_of(e);
    return pe ? pe->util_flag : NULL;
}

int hbm_plan_engine_parse(const char *name, hbm_plan_engine *out, hbm_err *err)
{
    char known[128] = "";
    for (size_t i = 0; i < NENGINES; i++) {
        if (name && !strcasecmp(name, engines[i]->name)) {
            *out = engines[i]->id;
            return 0;
        }
        size_t l = strlen(known);
        snprintf(known + l, sizeof known - l, "%s%s", l ? ", " : "", engines[i]->name);
    }
    return hbm_err_set(err, "--engine: \"%s\" is not an engine the planner knows (%s)",
                       name ? name : "", known);
}

int hbm_plan_args_from_argv(hbm_plan_input *in, int argc, char *const *argv, hbm_err *err)
{
    const plan_engine *pe = plan_engine_of(in->engine);
    if (!pe)
        return hbm_err_set(err, "engine %d is not one the planner knows", (int)in->engine);
    return pe->args(in, argc, argv, err);
}

int hbm_plan_run(const hbm_plan_input *in, hbm_plan_result *r, hbm_err *err)
{
    memset(r, 0, sizeof *r);
    hbm_plan_model_init(&r->model);
    r->engine = in->engine;
    const plan_engine *pe = plan_engine_of(in->engine);
    if (!pe)
        return hbm_err_set(err, "engine %d is not one the planner knows", (int)in->engine);
    return pe->run(in, r, err);
}

const hbm_plan_flag *hbm_plan_flag_find(hbm_plan_engine e, const char *arg, bool *attached)
{
    const plan_engine *pe = plan_engine_of(e);
    return pe ? plan_flag_find(pe->flags, arg, attached) : NULL;
}

const char *hbm_plan_flag_suggest(hbm_plan_engine e, const char *arg, const char *const *extra)
{
    const plan_engine *pe = plan_engine_of(e);
    return pe ? plan_flag_suggest(pe->flags, arg, extra) : NULL;
}

const hbm_plan_flag *hbm_plan_flags(hbm_plan_engine e, size_t *n)
{
    const plan_engine *pe = plan_engine_of(e);
    *n = 0;
    while (pe && pe->flags[*n].name)
        (*n)++;
    return pe ? pe->flags : NULL;
}
