/* Pure decisions of the supervisor: restart policy and budget, backoff, exit codes, the
 * allocator setting, device arguments. No side effects, so the unit tests cover them all. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "hbm/run.h"
#include "hbm/util.h"

int hbm_run_parse_restart(const char *s, hbm_run_restart *out, hbm_err *err)
{
    if (s && strcmp(s, "never") == 0)
        *out = HBM_RUN_RESTART_NEVER;
    else if (s && (strcmp(s, "on-failure") == 0 || strcmp(s, "on_failure") == 0))
        *out = HBM_RUN_RESTART_ON_FAILURE;
    else if (s && strcmp(s, "always") == 0)
        *out = HBM_RUN_RESTART_ALWAYS;
    else
        return hbm_err_set(err, "--restart '%s': expected never, on-failure or always",
                           s ? s : "");
    return 0;
}

int hbm_run_parse_budget(const char *s, hbm_run_budget *out, hbm_err *err)
{
    if (!s || !*s)
        return hbm_err_set(err, "--max-restarts: empty (example: 5/1d)");
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (end == s || errno || n < 0 || n > 1000000 || (*end && *end != '/'))
        return hbm_err_set(err, "--max-restarts '%s': expected COUNT or COUNT/WINDOW "
                                "(example: 5/1d)", s);
    out->max = (int)n;
    out->window_s = INFINITY;
    if (*end == '/') {
        double w;
        hbm_err e2;
        if (hbm_parse_duration(end + 1, &w, &e2) < 0)
            return hbm_err_set(err, "--max-restarts '%s': %s", s, e2.msg);
        if (w <= 0)
            return hbm_err_set(err, "--max-restarts '%s': the window must be positive", s);
        out->window_s = w;
    }
    return 0;
}

bool hbm_run_budget_allows(const hbm_run_budget *b, const double *past, size_t npast, double now)
{
    size_t inside = 0;
    for (size_t i = 0; i < npast; i++)
        if (isinf(b->window_s) || now - past[i] < b->window_s)
            inside++;
    return inside < (size_t)b->max;
}

double hbm_run_backoff(double base_s, unsigned attempt, double cap_s)
{
    if (attempt == 0)
        attempt = 1;
    double d = base_s;
    for (unsigned i = 1; i < attempt && d < cap_s; i++)
        d *= 2;
    return d < cap_s ? d : cap_s;
}

bool hbm_run_wants_restart(hbm_run_restart policy, int status, bool stopped_by_us)
{
    if (stopped_by_us)
        return false;
    switch (policy) {
    case HBM_RUN_RESTART_ALWAYS:
        return true;
    case HBM_RUN_RESTART_ON_FAILURE:
        return status != 0;
    case HBM_RUN_RESTART_NEVER:
    default:
        return false;
    }
}

int hbm_run_exit_code(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus); /* what sh and bash report */
    return HBM_RUN_EXIT_FAILED;
}

int hbm_run_alloc_conf(const char *current, char **out, char *why, size_t nwhy)
{
    if (!current || !*current) {
        *out = hbm_xstrdup("expandable_segments:True");
        return 1;
    }
    if (strstr(current, "expandable_segments")) {
        snprintf(why, nwhy, "it already says '%s'", current);
        return 0;
    }
    if (strstr(current, "max_split_size_mb")) {
        /* torch refuses the combination: expandable segments are never split */
        snprintf(why, nwhy, "it sets max_split_size_mb ('%s'), which torch refuses to combine "
                            "with expandable_segments", current);
        return 0;
    }
    *out = hbm_xasprintf("%s,expandable_segments:True", current);
    return 1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int parse_id(const char *s, const char **end, int64_t *v)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    char *e;
    errno = 0;
    long long n = strtoll(s, &e, 10);
    if (errno || n > 1000000)
        return -1;
    *v = n;
    *end = e;
    return 0;
}

int hbm_run_parse_devices(const char *s, size_t *count, int64_t **ids, size_t *nids,
                          hbm_err *err)
{
    *count = 0;
    *ids = NULL;
    *nids = 0;
    if (!s || !*s)
        return hbm_err_set(err, "--devices: empty (a count such as 2, or ids such as 0,1)");
    if (!strpbrk(s, ",-")) {
        const char *e;
        int64_t n;
        if (parse_id(s, &e, &n) < 0 || *e || n < 1)
            return hbm_err_set(err, "--devices '%s': expected a count (2) or a list of ids "
                                    "(0,1 or 4-7 or 5,)", s);
        *count = (size_t)n;
        return 0;
    }
    size_t cap = 0;
    int64_t *arr = NULL;
    size_t n = 0;
    const char *p = s;
    while (*p) {
        int64_t a, b;
        const char *e;
        if (parse_id(p, &e, &a) < 0)
            goto bad;
        b = a;
        if (*e == '-') {
            if (parse_id(e + 1, &e, &b) < 0 || b < a || b - a > 4096)
                goto bad;
        }
        for (int64_t v = a; v <= b; v++) {
            hbm_grow((void **)&arr, &cap, n, sizeof *arr);
            arr[n++] = v;
        }
        if (*e == ',')
            e++;
        else if (*e)
            goto bad;
        p = e;
    }
    if (n == 0)
        goto bad;
    qsort(arr, n, sizeof *arr, cmp_i64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || arr[m - 1] != arr[i])
            arr[m++] = arr[i];
    *ids = arr;
    *nids = m;
    *count = m;
    return 0;
bad:
    free(arr);
    return hbm_err_set(err, "--devices '%s': expected a count (2) or a list of ids "
                            "(0,1 or 4-7 or 5,)", s);
}

void hbm_run_opts_init(hbm_run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->grace_s = 30;
    o->kill_wait_s = 10;
    o->release_timeout_s = 60;
    o->restart = HBM_RUN_RESTART_NEVER;
    o->budget.max = 5;
    o->budget.window_s = 86400;
    o->backoff_s = 1;
    o->backoff_max_s = 60;
    o->restart_on_mem = NAN;
    o->mem_window_s = 60;
    o->mem_interval_s = 5;
    o->health_interval_s = 10;
    o->health_timeout_s = 5;
    o->health_retries = 3;
    o->ready_timeout_s = 0;
}

void hbm_run_result_free(hbm_run_result *r)
{
    free(r->summary);
    r->summary = NULL;
}
