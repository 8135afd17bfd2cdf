/* Inference servers among the host's processes (include/hbm/inference.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/host.h"
#include "hbm/inference.h"

bool hbm_inference_server(const hbm_hproc *p)
{
    const char *c = p->cmdline ? p->cmdline : "";
    if (!*c || p->state == 'Z')
        return false;
    static const char *const marks[] = {"vllm", "sglang", "mindie", "lmdeploy",
                                        "text-generation-launcher", "VLLM::", NULL};
    for (size_t i = 0; marks[i]; i++)
        if (strstr(c, marks[i]))
            return true;
    return false;
}

/* Value of "--name V" or "--name=V" in a space-joined command line; false when absent. */
static bool arg_value(const char *cmd, const char *name, char *out, size_t n)
{
    size_t len = strlen(name);
    for (const char *p = cmd; (p = strstr(p, name)); p += len) {
        if (p != cmd && p[-1] != ' ')
            continue;
        const char *v = p + len;
        if (*v == '=' || *v == ' ')
            v++;
        else
            continue;
        size_t k = 0;
        while (v[k] && v[k] != ' ' && k + 1 < n) {
            out[k] = v[k];
            k++;
        }
        out[k] = '\0';
        return k > 0;
    }
    return false;
}

long hbm_cmdline_arg_long(const char *cmd, const char *a, const char *b, long dflt)
{
    char v[32];
    if (!arg_value(cmd, a, v, sizeof v) && !(b && arg_value(cmd, b, v, sizeof v)))
        return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return *end == '\0' && x > 0 ? x : dflt;
}

static const hbm_hproc *find_proc(const hbm_obs *obs, int pid)
{
    return obs->has_host ? hbm_host_find(&obs->host, pid) : NULL;
}

bool hbm_obs_in_tree(const hbm_obs *obs, int root, int pid)
{
    for (int depth = 0; depth < 64 && pid > 1; depth++) {
        if (pid == root)
            return true;
        const hbm_hproc *p = find_proc(obs, pid);
        if (!p)
            return false;
        pid = p->ppid;
    }
    return false;
}

bool hbm_inference_parent_is_server(const hbm_obs *obs, const hbm_hproc *p)
{
    const hbm_hproc *pp = find_proc(obs, p->ppid);
    return pp && hbm_inference_server(pp);
}

long hbm_inference_port(const hbm_hproc *p)
{
    const char *c = p->cmdline ? p->cmdline : "";
    long dflt = strstr(c, "sglang") ? 30000 : strstr(c, "vllm") ? 8000 : -1;
    return hbm_cmdline_arg_long(c, "--port", NULL, dflt);
}
