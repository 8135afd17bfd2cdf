/* Servers sampled again and again by a long-running command: the history stays in memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/progress.h"
#include "hbm/util.h"
#include "hbm/text.h"

void hbm_progress_servers_init(hbm_progress_servers *set, double stall_s, double timeout_s)
{
    memset(set, 0, sizeof *set);
    set->stall_s = stall_s;
    set->timeout_s = timeout_s;
}

void hbm_progress_servers_add(hbm_progress_servers *set, const char *url)
{
    hbm_grow((void **)&set->s, &set->cap, set->n + 1, sizeof *set->s);
    hbm_progress_server *v = &set->s[set->n++];
    memset(v, 0, sizeof *v);
    v->url = hbm_xstrdup(url);
    hbm_progress_url_safe(url, v->safe, sizeof v->safe);
    hbm_progress_init(&v->track);
}

void hbm_progress_servers_sample(hbm_progress_servers *set)
{
    for (size_t i = 0; i < set->n; i++) {
        hbm_progress_server *v = &set->s[i];
        hbm_progress sample;
        hbm_http_result res;
        hbm_err err = {{0}};
        v->sampled = true;
        v->up = hbm_progress_fetch(v->url, set->timeout_s, &sample, &res, &err) == 0;
        if (!v->up) {
            hbm_text_fitf(v->error, sizeof v->error, "%s", err.msg);
            continue;
        }
        v->error[0] = '\0';
        hbm_progress_judge(&v->track, &sample, hbm_now_wall(), set->stall_s);
    }
}

void hbm_progress_servers_free(hbm_progress_servers *set)
{
    for (size_t i = 0; i < set->n; i++) {
        free(set->s[i].url);
        hbm_progress_free(&set->s[i].track);
    }
    free(set->s);
    memset(set, 0, sizeof *set);
}
