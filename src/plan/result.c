/* The parts of a plan's result that every engine fills alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

void plan_add_note(hbm_plan_result *res, char *text)
{
    res->notes = hbm_xrealloc(res->notes, (res->nnotes + 1) * sizeof *res->notes);
    res->notes[res->nnotes++] = text;
}

void plan_add_error(hbm_plan_result *res, const char *kind, char *msg)
{
    res->errors = hbm_xrealloc(res->errors, (res->nerrors + 1) * sizeof *res->errors);
    hbm_plan_error *e = &res->errors[res->nerrors++];
    snprintf(e->kind, sizeof e->kind, "%s", kind);
    e->message = msg;
}

void plan_fill_device(const hbm_plan_input *in, hbm_plan_result *res)
{
    res->platform = in->platform;
    snprintf(res->device_name, sizeof res->device_name, "%s",
             in->device_name ? in->device_name : "");
    res->live = in->live;
    if (in->ndevice_ids) {
        res->device_ids = hbm_xcalloc(in->ndevice_ids, sizeof *res->device_ids);
        memcpy(res->device_ids, in->device_ids, in->ndevice_ids * sizeof *res->device_ids);
        res->ndevice_ids = in->ndevice_ids;
    }
    snprintf(res->visible_devices, sizeof res->visible_devices, "%s",
             in->visible_devices ? in->visible_devices : "");
}

void plan_release_record(hbm_plan_result *res, const char *engine, const char *given, int ver,
                         bool newer)
{
    snprintf(res->rules_version, sizeof res->rules_version, "%d.%d.%d", ver / 10000,
             ver / 100 % 100, ver % 100);
    /* vllm_version stays the rules used, as the JSON contract has it */
    snprintf(res->vllm_version, sizeof res->vllm_version, "%s", res->rules_version);
    snprintf(res->engine_version, sizeof res->engine_version, "%s", given ? given : "");
    res->rules_newer = newer;
    if (newer)
        plan_add_note(res, hbm_xasprintf("%s %s is newer than the releases the rules know: "
                                         "planned with the newest rules (%s); compare the "
                                         "figures with the engine's own start-up log",
                                         engine, given, res->rules_version));
}

void plan_model_notes(const hbm_plan_model *m, hbm_plan_result *res)
{
    if (m->weights_estimated)
        plan_add_note(res, hbm_xasprintf("no safetensors found: weights estimated from the "
                                         "architecture (%.2f B parameters%s%s)",
                                         (double)m->params_estimated / 1e9,
                                         m->quant_method[0] ? ", " : "", m->quant_method));
    if (m->generic)
        plan_add_note(res, hbm_xasprintf(
            "model_type \"%s\" is not one the rules were checked against: planned as a "
            "generic decoder from config.json's numbers (layers, heads, KV heads, hidden, "
            "intermediate, vocabulary, experts); layer kinds it does not list in layer_types "
            "are taken as full attention, and tensors it does not describe are not counted",
            m->model_type[0] ? m->model_type : "(none)"));
    if (m->generic && m->nunread_keys) {
        size_t len = 0;
        for (size_t i = 0; i < m->nunread_keys; i++)
            len += strlen(m->unread_keys[i]) + 2;
        char *keys = hbm_xcalloc(len + 1, 1);
        for (size_t i = 0; i < m->nunread_keys; i++) {
            if (i)
                strcat(keys, ", ");
            strcat(keys, m->unread_keys[i]);
        }
        plan_add_note(res, hbm_xasprintf("config keys no rule reads, so whatever they size is "
                                         "not in the plan: %s",
                                         keys));
        free(keys);
    }
}
