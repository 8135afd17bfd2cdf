/* The probe's memory between runs: the previous sample of each engine behind one URL.
 * {"schema": "hbmctl.progress/1", "url": ..., "engines": [{"kind", "model", "engine",
 * "tokens", "at", "last_token_at", "busy_since"}]}. Anything unusable is "no history": the
 * probe then takes a first sample, which is healthy, and judges at the next run. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hbm/progress.h"
#include "hbm/util.h"

#define SCHEMA "hbmctl.progress/1"

void hbm_progress_state_path(const char *url, char *buf, size_t n)
{
    /* FNV-1a: a stable name per URL, so two probes of two servers never share a file */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    snprintf(buf, n, "/run/hbmctl/progress-%016llx.json", (unsigned long long)h);
}

static bool get_str(json_t *o, const char *k, char *out, size_t n)
{
    const char *s = json_string_value(json_object_get(o, k));
    if (!s || strlen(s) >= n)
        return false;
    memcpy(out, s, strlen(s) + 1);
    return true;
}

static bool get_num(json_t *o, const char *k, double *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return isfinite(*out);
}

static int load_engines(json_t *arr, hbm_progress *track, double now)
{
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        hbm_progress_engine e = {0};
        e.running = e.waiting = e.tokens_per_s = e.since_token_s = NAN;
        if (!get_str(o, "kind", e.kind, sizeof e.kind) ||
            !get_str(o, "model", e.model, sizeof e.model) ||
            !get_str(o, "engine", e.engine, sizeof e.engine) ||
            !get_num(o, "tokens", &e.tokens) || !get_num(o, "at", &e.at) ||
            !get_num(o, "last_token_at", &e.last_token_at) ||
            !get_num(o, "busy_since", &e.busy_since) || e.at > now + 1 ||
            e.last_token_at > e.at)
            return -1;
        hbm_grow((void **)&track->e, &track->cap, track->n + 1, sizeof *track->e);
        track->e[track->n++] = e;
    }
    return 0;
}

int hbm_progress_state_load(const char *path, const char *raw_url, hbm_progress *track,
                            char *why, size_t whyn)
{
    hbm_progress_init(track);
    char url[1024];
    hbm_progress_url_safe(raw_url, url, sizeof url);
    char *text = NULL;
    size_t len = 0;
    hbm_err err = {{0}};
    struct stat st;
    if (stat(path, &st) < 0 && errno == ENOENT) {
        snprintf(why, whyn, "no state file yet");
        return 1;
    }
    if (hbm_read_file(path, 1u << 20, &text, &len, &err) < 0) {
        snprintf(why, whyn, "%s: starting over", err.msg);
        return 1;
    }
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    free(text);
    const char *bad = NULL;
    if (!j)
        bad = "not JSON";
    else if (!json_is_string(json_object_get(j, "schema")) ||
             strcmp(json_string_value(json_object_get(j, "schema")), SCHEMA) != 0)
        bad = "not an " SCHEMA " file";
    else if (!json_is_string(json_object_get(j, "url")) ||
             strcmp(json_string_value(json_object_get(j, "url")), url) != 0)
        bad = "written for another URL";
    else if (!json_is_array(json_object_get(j, "engines")) ||
             load_engines(json_object_get(j, "engines"), track, hbm_now_wall()) < 0)
        bad = "unusable engine entry";
    json_decref(j);
    if (!bad)
        return 0;
    hbm_progress_free(track);
    snprintf(why, whyn, "state file %s %s: starting over", path, bad);
    return 1;
}

static char *state_text(const char *url, const hbm_progress *track)
{
    json_t *j = json_object();
    json_object_set_new(j, "schema", json_string(SCHEMA));
    json_object_set_new(j, "url", json_string(url));
    json_t *arr = json_array();
    for (size_t i = 0; i < track->n; i++) {
        const hbm_progress_engine *e = &track->e[i];
        if (isnan(e->tokens))
            continue; /* nothing to compare next time */
        json_t *o = json_object();
        json_object_set_new(o, "kind", json_string(e->kind));
        json_object_set_new(o, "model", json_string(e->model));
        json_object_set_new(o, "engine", json_string(e->engine));
        json_object_set_new(o, "tokens", json_real(e->tokens));
        json_object_set_new(o, "at", json_real(e->at));
        json_object_set_new(o, "last_token_at", json_real(e->last_token_at));
        json_object_set_new(o, "busy_since", json_real(e->busy_since));
        json_array_append_new(arr, o);
    }
    json_object_set_new(j, "engines", arr);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

int hbm_progress_state_save(const char *path, const char *raw_url, const hbm_progress *track,
                            hbm_err *err)
{
    char url[1024]; /* the file is readable by others: never a password in it */
    hbm_progress_url_safe(raw_url, url, sizeof url);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return hbm_err_set(err, "state directory %s: %s", dir, strerror(errno));
    }
    char *s = state_text(url, track);
    int rc = hbm_write_file_atomic(path, s, strlen(s), 0644, err);
    free(s);
    return rc < 0 ? hbm_err_prefix(err, "state file") : 0;
}
