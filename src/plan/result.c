/* The parts of a plan's result that every engine fills alike. */
#include <stdio.h>
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
