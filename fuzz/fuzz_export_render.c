/* Fuzz target: workload-controlled text (process and device names, container ids, health
 * words) through the exposition writer, which must always produce lines Prometheus can
 * parse: every label value quoted with backslash, quote and newline escaped. The same
 * input is also given to the --listen and memory-limit parsers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/export.h"

/* Checks one exposition: aborts on a line a Prometheus text parser would reject. */
static void validate(const char *t)
{
    const char *p = t;
    while (*p) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            abort(); /* every line ends with a newline */
        if (*p != '#') {
            const char *q = p;
            if (!((*q >= 'a' && *q <= 'z') || *q == '_'))
                abort();
            while ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_')
                q++;
            if (*q == '{') {
                q++;
                while (*q != '}') {
                    while ((*q >= 'a' && *q <= 'z') || *q == '_')
                        q++;
                    if (q[0] != '=' || q[1] != '"')
                        abort();
                    q += 2;
                    while (*q != '"') {
                        if (*q == '\n' || *q == '\0')
                            abort();
                        if (*q == '\\') {
                            if (q[1] != '\\' && q[1] != '"' && q[1] != 'n')
                                abort();
                            q++;
                        }
                        q++;
                    }
                    q++;
                    if (*q == ',')
                        q++;
                    else if (*q != '}')
                        abort();
                }
                q++;
            }
            if (*q != ' ' || q + 1 >= eol)
                abort();
        }
        p = eol + 1;
    }
}

/* Copies the next NUL-separated field of the input into dst (cut to n - 1). */
static const uint8_t *field(const uint8_t *d, const uint8_t *end, char *dst, size_t n)
{
    size_t i = 0;
    while (d < end && *d) {
        if (i + 1 < n)
            dst[i++] = (char)*d;
        d++;
    }
    dst[i] = '\0';
    return d < end ? d + 1 : d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *d = data, *end = data + size;
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_device *dev = hbm_obs_add_device(&obs, size % 2 ? HBM_VENDOR_ASCEND : HBM_VENDOR_NVIDIA);
    dev->index = (int64_t)(size % 7);
    dev->chip = 0;
    dev->logic_id = size % 3 ? (int64_t)(size % 5) : HBM_UNKNOWN;
    d = field(d, end, dev->name, sizeof dev->name);
    d = field(d, end, dev->bus_id, sizeof dev->bus_id);
    d = field(d, end, dev->health, sizeof dev->health);
    d = field(d, end, dev->uuid, sizeof dev->uuid);
    dev->memory_used_bytes = (int64_t)size * HBM_MIB;
    dev->memory_total_bytes = 64 * HBM_GIB;
    dev->procs_known = true;
    dev->verdict = (hbm_verdict)(size % 6);
    for (int i = 0; i < 3 && d < end; i++) {
        hbm_dproc *p = hbm_device_add_proc(dev);
        p->pid = 100 + i;
        p->memory_bytes = HBM_GIB;
        d = field(d, end, p->name, sizeof p->name);
        d = field(d, end, p->container, sizeof p->container);
    }
    hbm_watch w;
    hbm_watch_init(&w, NULL);
    for (int t = 0; t < 6; t++)
        hbm_watch_update(&w, &obs, t);
    hbm_findings f = {0};
    hbm_finding fi = {0};
    size_t idn = size < sizeof fi.id - 1 ? size : sizeof fi.id - 1;
    memcpy(fi.id, data, idn);
    fi.id[strnlen(fi.id, sizeof fi.id)] = '\0';
    fi.device = HBM_UNKNOWN;
    f.items = &fi;
    f.n = 1;
    hbm_lease_info lease = {.device = 1, .pid = 42, .held = true};
    memcpy(lease.name, fi.id, sizeof lease.name < sizeof fi.id ? sizeof lease.name : sizeof fi.id);
    lease.name[sizeof lease.name - 1] = '\0';
    hbm_export_input in = {.obs = &obs, .watch = &w, .findings = &f, .leases = &lease,
                           .nleases = 1, .leases_known = true, .threshold_set = true};
    hbm_export_buf b = {0};
    hbm_export_render(&in, &b);
    validate(b.data);
    hbm_export_buf_free(&b);

    char *text = malloc(size + 1);
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    hbm_export_input failed = {.obs = NULL, .obs_error = text};
    hbm_export_render(&failed, &b);
    validate(b.data);
    hbm_export_buf_free(&b);
    char ss[128];
    unsigned len;
    bool v6;
    int64_t bytes;
    double ratio;
    hbm_err err;
    hbm_export_parse_listen(text, ss, &len, &v6, &err);
    hbm_watch_parse_limit(text, &bytes, &ratio, &err);
    free(text);
    hbm_watch_free(&w);
    hbm_obs_free(&obs);
    return 0;
}
