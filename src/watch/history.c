/* Memory history between runs: a checker that lives for one sample (NPD starts it every
 * interval) keeps its series in a small JSON file, so the step detector sees a staircase
 * that no single run can. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hbm/watch.h"

static int bad(hbm_err *err, size_t i, const char *what)
{
    return hbm_err_set(err, "devices[%zu]: %s", i, what);
}

static int parse_dev(const json_t *e, size_t i, hbm_history_dev *d, hbm_err *err)
{
    const json_t *dev = json_object_get(e, "device"), *tot = json_object_get(e, "total_bytes");
    const json_t *ss = json_object_get(e, "samples");
    if (!json_is_integer(dev) || json_integer_value(dev) < 0)
        return bad(err, i, "device must be a non-negative integer");
    if (tot && !json_is_null(tot) && !json_is_integer(tot))
        return bad(err, i, "total_bytes must be an integer or null");
    if (!json_is_array(ss))
        return bad(err, i, "samples must be an array");
    memset(d, 0, sizeof *d);
    d->device = json_integer_value(dev);
    d->total_bytes = json_is_integer(tot) ? json_integer_value(tot) : HBM_UNKNOWN;
    size_t k, skip = json_array_size(ss) > HBM_HISTORY_MAX ? json_array_size(ss) - HBM_HISTORY_MAX
                                                            : 0;
    const json_t *s;
    json_array_foreach(ss, k, s) {
        const json_t *t = json_array_get(s, 0), *b = json_array_get(s, 1);
        if (json_array_size(s) != 2 || !json_is_number(t) || !json_is_integer(b) ||
            json_integer_value(b) < 0)
            return hbm_err_set(err, "devices[%zu].samples[%zu]: want [seconds, bytes]", i, k);
        if (k < skip)
            continue;
        d->t[d->n] = json_number_value(t);
        d->bytes[d->n++] = json_integer_value(b);
    }
    return 0;
}

int hbm_history_parse(const char *buf, size_t len, hbm_history *h, hbm_err *err)
{
    memset(h, 0, sizeof *h);
    json_error_t je;
    json_t *root = json_loadb(buf, len, 0, &je);
    if (!root)
        return hbm_err_set(err, "line %d, column %d: %s", je.line, je.column, je.text);
    const json_t *devs = json_object_get(root, "devices");
    const char *schema = json_string_value(json_object_get(root, "schema"));
    int rc = 0;
    if (!schema || strcmp(schema, "hbmctl.history/1"))
        rc = hbm_err_set(err, "schema: want \"hbmctl.history/1\"");
    else if (!json_is_array(devs))
        rc = hbm_err_set(err, "devices: must be an array");
    size_t i;
    const json_t *e;
    if (rc == 0) {
        h->devs = hbm_xcalloc(json_array_size(devs) + 1, sizeof *h->devs);
        json_array_foreach(devs, i, e) {
            if ((rc = parse_dev(e, i, &h->devs[h->n], err)) < 0)
                break;
            h->n++;
        }
    }
    json_decref(root);
    if (rc < 0)
        hbm_history_free(h);
    return rc;
}

int hbm_history_load(const char *path, hbm_history *h, hbm_err *err)
{
    memset(h, 0, sizeof *h);
    /* no file yet: the first run */
    if (access(path, F_OK) < 0 && errno == ENOENT)
        return 0;
    /* 64 samples per device keep a history far below this: more is not one hbmctl wrote */
    char *buf;
    size_t n;
    if (hbm_read_file(path, 1 << 20, &buf, &n, err) < 0)
        return -1;
    int rc = hbm_history_parse(buf, n, h, err);
    free(buf);
    return rc < 0 ? hbm_err_prefix(err, "%s", path) : 0;
}

static hbm_history_dev *find(hbm_history *h, int64_t id)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->devs[i].device == id)
            return &h->devs[i];
    return NULL;
}

void hbm_history_add(hbm_history *h, const hbm_obs *obs, double t)
{
    hbm_history_dev *out = hbm_xcalloc(obs->ndevs + 1, sizeof *out);
    size_t n = 0;
    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *d = &obs->devs[i];
        int64_t id = hbm_device_user_id(d);
        if (id < 0 || d->memory_used_bytes < 0)
            continue;
        hbm_history_dev *old = find(h, id), *nd = &out[n++];
        if (old)
            *nd = *old;
        else
            *nd = (hbm_history_dev){.device = id};
        nd->total_bytes = d->memory_total_bytes;
        if (nd->n == HBM_HISTORY_MAX) {
            memmove(nd->t, nd->t + 1, (HBM_HISTORY_MAX - 1) * sizeof nd->t[0]);
            memmove(nd->bytes, nd->bytes + 1, (HBM_HISTORY_MAX - 1) * sizeof nd->bytes[0]);
            nd->n--;
        }
        nd->t[nd->n] = t;
        nd->bytes[nd->n++] = d->memory_used_bytes;
    }
    free(h->devs);
    h->devs = out;
    h->n = n;
}

int hbm_history_save(const char *path, const hbm_history *h, hbm_err *err)
{
    json_t *root = json_object(), *devs = json_array();
    json_object_set_new(root, "schema", json_string("hbmctl.history/1"));
    for (size_t i = 0; i < h->n; i++) {
        const hbm_history_dev *d = &h->devs[i];
        json_t *e = json_object(), *ss = json_array();
        json_object_set_new(e, "device", json_integer(d->device));
        json_object_set_new(e, "total_bytes",
                            d->total_bytes >= 0 ? json_integer(d->total_bytes) : json_null());
        for (size_t k = 0; k < d->n; k++)
            json_array_append_new(ss, json_pack("[fI]", d->t[k], (json_int_t)d->bytes[k]));
        json_object_set_new(e, "samples", ss);
        json_array_append_new(devs, e);
    }
    json_object_set_new(root, "devices", devs);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    int rc = hbm_write_file_atomic(path, text, strlen(text), 0644, err);
    free(text);
    return rc;
}

hbm_leak_status hbm_history_judge(const hbm_history_dev *d, const hbm_leak_params *p)
{
    hbm_leak det;
    hbm_leak_init(&det, p);
    for (size_t k = 0; k < d->n; k++)
        hbm_leak_add(&det, d->t[k], d->bytes[k], d->total_bytes);
    return det.st;
}

void hbm_history_free(hbm_history *h)
{
    free(h->devs);
    h->devs = NULL;
    h->n = 0;
}
