/* Prometheus's HTTP API: instant queries (/api/v1/query) through the project's HTTP client,
 * and their JSON answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/fleet.h"
#include "hbm/http.h"
#include "hbm/util.h"

#define MAX_ANSWER (64u << 20) /* a fleet of thousands of nodes stays far below */

void hbm_fleet_prom_vec_free(hbm_fleet_prom_vec *v)
{
    for (size_t i = 0; i < v->n; i++)
        json_decref(v->s[i].metric);
    free(v->s);
    v->s = NULL;
    v->n = 0;
}

const char *hbm_fleet_prom_label(const hbm_fleet_prom_sample *s, const char *name)
{
    const char *v = json_string_value(json_object_get(s->metric, name));
    return v ? v : "";
}

/* "value": [unix_time, "number"], the number as Prometheus writes it (NaN, +Inf too). */
static int sample_value(const json_t *v, double *out)
{
    const char *s = json_string_value(json_array_get(v, 1));
    if (json_array_size(v) != 2 || !json_is_number(json_array_get(v, 0)) || !s)
        return -1;
    char *end;
    *out = strtod(s, &end);
    return *s && !*end ? 0 : -1;
}

int hbm_fleet_prom_parse(const char *buf, size_t len, const char *what, hbm_fleet_prom_vec *out,
                   hbm_err *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_loadb(buf, len, 0, &je);
    if (!root)
        return hbm_err_set(err, "%s: answer line %d, column %d: %s", what, je.line, je.column,
                           je.text);
    int rc = 0;
    const char *status = json_string_value(json_object_get(root, "status"));
    const json_t *data = json_object_get(root, "data");
    const char *type = json_string_value(json_object_get(data, "resultType"));
    const json_t *res = json_object_get(data, "result");
    if (status && !strcmp(status, "error")) {
        const char *e = json_string_value(json_object_get(root, "error"));
        rc = hbm_err_set(err, "%s: Prometheus says: %s", what, e ? e : "error");
    } else if (!status || strcmp(status, "success")) {
        rc = hbm_err_set(err, "%s: answer: status must be \"success\" or \"error\"", what);
    } else if (!type || strcmp(type, "vector") || !json_is_array(res)) {
        rc = hbm_err_set(err, "%s: answer: data must be a vector with a result array", what);
    }
    size_t i;
    const json_t *e;
    if (rc == 0) {
        out->s = hbm_xcalloc(json_array_size(res) + 1, sizeof *out->s);
        json_array_foreach(res, i, e) {
            json_t *m = json_object_get(e, "metric");
            double v;
            if (!json_is_object(m) || sample_value(json_object_get(e, "value"), &v) < 0) {
                rc = hbm_err_set(err, "%s: answer: data.result[%zu]: want metric and "
                                      "value [time, \"number\"]", what, i);
                break;
            }
            const char *k;
            json_t *lv;
            json_object_foreach(m, k, lv) {
                if (!json_is_string(lv)) {
                    rc = hbm_err_set(err, "%s: answer: data.result[%zu].metric.%s: not a "
                                          "string", what, i, k);
                    break;
                }
            }
            if (rc < 0)
                break;
            out->s[out->n].metric = json_incref(m);
            out->s[out->n++].value = v;
        }
    }
    json_decref(root);
    if (rc < 0)
        hbm_fleet_prom_vec_free(out);
    return rc;
}

static void urlencode(const char *s, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-_.~", c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

int hbm_fleet_prom_query(const hbm_fleet_opts *o, const char *base, const char *promql, double at,
                   hbm_fleet_prom_vec *out, hbm_err *err)
{
    char enc[4096], url[6144];
    urlencode(promql, enc, sizeof enc);
    snprintf(url, sizeof url, "%s/api/v1/query?query=%s&time=%.3f", base, enc, at);
    hbm_http_opts ho = {.timeout_s = o->timeout_s > 0 ? o->timeout_s : 10,
                        .user_agent = "hbmctl-fleet/" HBM_VERSION,
                        .bearer_token = o->bearer_token,
                        .username = o->username,
                        .password = o->password,
                        .ca_file = o->ca_file,
                        .max_body = MAX_ANSWER};
    hbm_http_result res;
    char *body;
    size_t len;
    hbm_err herr;
    if (hbm_http_fetch(url, &ho, &res, &body, &len, &herr) < 0) {
        /* The client's message starts with the whole URL; the server's name is enough. */
        const char *why = strstr(herr.msg, ": ") ? strstr(herr.msg, ": ") + 2 : herr.msg;
        return hbm_err_set(err, "%s: %s", base, why);
    }
    int rc;
    if (res.status == 401 || res.status == 403)
        rc = hbm_err_set(err, "%s: HTTP %ld: check --bearer-token-file or --user and "
                              "--password-file", base, res.status);
    else if (res.status != 200 && (res.status < 400 || res.status > 422))
        rc = hbm_err_set(err, "%s: HTTP %ld to %s", base, res.status, promql);
    else
        rc = hbm_fleet_prom_parse(body, len, promql, out, err);
    free(body);
    return rc;
}
