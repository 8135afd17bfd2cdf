/* Prometheus /api/v1/query answers on arbitrary bytes, and the fleet view built from them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/fleet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_fleet_prom_vec v;
    hbm_err err;
    /* Parsed in place: a copy of exactly the input's size, so reads past it are caught. */
    char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    if (hbm_fleet_prom_parse(buf, size, "fuzz", NULL, &v, &err) < 0) {
        free(buf);
        return 0;
    }
    /* The same answer for every query: labels the builder does not expect included. */
    hbm_fleet_prom_vec ans[HBM_FQ_COUNT];
    for (int q = 0; q < HBM_FQ_COUNT; q++)
        ans[q] = v;
    hbm_fleet f;
    memset(&f, 0, sizeof f);
    hbm_fleet_build(&f, ans);
    for (size_t i = 0; i < f.nnodes; i++)
        json_decref(hbm_fleet_node_json(&f.nodes[i]));
    hbm_fleet_dirty(&f);
    hbm_fleet_free(&f);
    hbm_fleet_prom_vec_free(&v);
    /* Again keeping only the labels the view takes, as fleet reads its answers. */
    memcpy(buf, data, size);
    if (hbm_fleet_prom_parse(buf, size, "fuzz", hbm_fleet_labels(HBM_FQ_PROC_MEM), &v, &err) == 0)
        hbm_fleet_prom_vec_free(&v);
    free(buf);
    return 0;
}
