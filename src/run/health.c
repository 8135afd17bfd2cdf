/* --health-url: one HTTP GET with a hard time bound; 2xx is healthy. --stall: the
 * server's /metrics shows tokens advancing whenever work runs or waits. */
#include "hbm/http.h"
#include "hbm/util.h"
#include "run_int.h"

int run_health_get(const char *url, double timeout_s, hbm_err *err)
{
    hbm_http_result res;
    if (hbm_http_get(url, timeout_s < 0.1 ? 0.1 : timeout_s, "hbmctl-run/" HBM_VERSION, &res,
                     err) < 0)
        return -1;
    if (res.status < 200 || res.status > 299)
        return hbm_err_set(err, "%s: HTTP %ld", url, res.status);
    return 0;
}

int run_progress_check(const hbm_run_opts *o, hbm_progress *track, hbm_err *err)
{
    hbm_progress sample;
    hbm_http_result res;
    double tmo = o->health_timeout_s < 0.1 ? 0.1 : o->health_timeout_s;
    if (hbm_progress_fetch(o->metrics_url, tmo, &sample, &res, err) < 0)
        return -1;
    hbm_progress_judge(track, &sample, hbm_now_wall(), o->stall_s);
    const hbm_progress_engine *w = hbm_progress_worst(track);
    if (!w || w->state != HBM_PROGRESS_STALLED) {
        err->msg[0] = '\0';
        return 0;
    }
    char line[400], url[512];
    hbm_progress_line(w, line, sizeof line);
    hbm_progress_url_safe(o->metrics_url, url, sizeof url);
    hbm_err_set(err, "%s (%s)", line, url);
    return 1;
}
