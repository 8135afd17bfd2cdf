/* The npu-smi backend: runs `npu-smi info` (and `-m`, `-t topo` for logic ids and
 * topology) when the DCMI library is not loadable but the tool is on PATH. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hbm/backend.h"
#include "hbm/npusmi.h"

static const char *tool(void)
{
    const char *t = getenv("HBMCTL_NPU_SMI");
    return t && *t ? t : "npu-smi";
}

static int npusmi_available(hbm_err *err)
{
    const char *t = tool();
    if (strchr(t, '/'))
        return access(t, X_OK) == 0 ? 1 : (hbm_err_set(err, "%s not executable", t), 0);
    const char *path = getenv("PATH");
    if (!path)
        return hbm_err_set(err, "npu-smi not on PATH (PATH unset)"), 0;
    char *copy = hbm_xstrdup(path), *save = NULL;
    int found = 0;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char *p = hbm_xasprintf("%s/%s", *dir ? dir : ".", t);
        found = access(p, X_OK) == 0;
        free(p);
    }
    free(copy);
    if (!found)
        hbm_err_set(err, "npu-smi not on PATH");
    return found;
}

static int npusmi_observe(hbm_obs *obs, double timeout, hbm_err *err)
{
    if (!(timeout > 0))
        timeout = HBM_CHILD_TIMEOUT_DEFAULT;
    char *text;
    size_t len;
    char *info[] = {(char *)tool(), "info", NULL};
    int ran = hbm_run_capture_for(info, timeout, &text, &len, err);
    if (ran < 0)
        return ran;
    int rc = hbm_npusmi_parse_info(obs, text, len, "npu-smi info", err);
    free(text);
    if (rc < 0)
        return -1;
    /* Logic ids and topology are extras: the main table is still right without them. */
    char *map[] = {(char *)tool(), "info", "-m", NULL};
    if (hbm_run_capture_for(map, timeout, &text, &len, NULL) == 0) {
        hbm_npusmi_parse_map(obs, text, len, "npu-smi info -m", NULL);
        free(text);
    }
    char *topo[] = {(char *)tool(), "info", "-t", "topo", NULL};
    if (hbm_run_capture_for(topo, timeout, &text, &len, NULL) == 0) {
        hbm_npusmi_parse_topo(obs, text, len, "npu-smi info -t topo", NULL);
        free(text);
    }
    return 0;
}

const hbm_backend hbm_backend_npusmi = {
    .name = "npu-smi",
    .available = npusmi_available,
    .observe = npusmi_observe,
};
