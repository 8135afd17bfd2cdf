/* Vendor calls under a deadline. A driver call can block forever (a wedged device, a hung
 * ioctl) and no driver library offers a way to abandon it, so a backend's calls run on a
 * worker thread and the caller waits at most the deadline per call. A call that passes it
 * is abandoned: the worker keeps its own observation (nothing of the caller's is touched
 * later), and until that call returns no other is made (a wedged driver is not asked
 * again, and worker threads cannot pile up), so later observations fail at once. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/dl.h"
#include "hbm/backend.h"
#include "hbm/util.h"

typedef struct vc_job {
    hbm_vcall_body body;
    hbm_obs obs; /* the worker's; moved to the caller's only when it finished in time */
    hbm_err err;
    int rc;
    bool done, abandoned;
    hbm_dl_fn call; /* the vendor call now running (the last one entered) */
    double since;   /* when it was entered, monotonic */
} vc_job;

static pthread_mutex_t vc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t vc_cond;
static pthread_once_t vc_once = PTHREAD_ONCE_INIT;
static vc_job *vc_wedged; /* abandoned and still inside the driver */
static bool vc_stopping;
static _Thread_local vc_job *vc_self;

static void vc_init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&vc_cond, &a);
    pthread_condattr_destroy(&a);
}

hbm_dl_fn hbm_vcall_enter(hbm_dl_fn fn)
{
    vc_job *j = vc_self;
    if (j) {
        pthread_mutex_lock(&vc_lock);
        j->call = fn;
        j->since = hbm_now_mono();
        pthread_mutex_unlock(&vc_lock);
    }
    return fn;
}

/* What a job waits on: the exported name of the vendor function (dladdr of the very
 * address dlsym gave), or, before the first call, the loading of the library itself. */
static const char *call_name(hbm_dl_fn fn, const char *backend, char *buf, size_t n)
{
    Dl_info info;
    void *p;
    memcpy(&p, &fn, sizeof p);
    if (fn && dladdr(p, &info) && info.dli_sname)
        return info.dli_sname;
    snprintf(buf, n, "%s", fn ? backend : "loading the library");
    return buf;
}

static void *worker(void *arg)
{
    vc_job *j = arg;
    vc_self = j;
    int rc = j->body(&j->obs, &j->err);
    vc_self = NULL;
    pthread_mutex_lock(&vc_lock);
    j->rc = rc;
    j->done = true;
    bool orphan = j->abandoned;
    if (orphan && vc_wedged == j)
        vc_wedged = NULL;
    pthread_cond_broadcast(&vc_cond);
    pthread_mutex_unlock(&vc_lock);
    if (orphan) {
        hbm_obs_free(&j->obs);
        free(j);
    }
    return NULL;
}

/* Waits (vc_lock held) until the job is done, a call of it passes timeout, or stop. No
 * signal marks a call's start: a wake-up at the old deadline finds the newer one. */
static void wait_job(vc_job *j, double timeout)
{
    while (!j->done && !vc_stopping) {
        /* since moves on with every call entered: the deadline is per call. */
        double until = j->since + timeout;
        if (hbm_now_mono() >= until)
            return;
        struct timespec ts = {(time_t)until, (long)((until - floor(until)) * 1e9)};
        pthread_cond_timedwait(&vc_cond, &vc_lock, &ts);
    }
}

/* Refuses at once while a call abandoned earlier has not returned. vc_lock held. */
static int refuse_if_wedged(const char *backend, hbm_err *err)
{
    if (vc_stopping)
        return hbm_err_set(err, "%s: not asked, hbmctl is stopping", backend);
    if (!vc_wedged)
        return 0;
    char what[64];
    return hbm_err_set(err, "%s has not returned for %.0fs (the driver is wedged; it is not "
                       "asked again until that call returns)",
                       call_name(vc_wedged->call, backend, what, sizeof what),
                       hbm_now_mono() - vc_wedged->since);
}

int hbm_vcall_run(const char *backend, hbm_vcall_body body, hbm_obs *obs, double timeout,
                  hbm_err *err)
{
    if (!(timeout > 0))
        return body(obs, err);
    pthread_once(&vc_once, vc_init);
    pthread_mutex_lock(&vc_lock);
    if (refuse_if_wedged(backend, err) < 0) {
        pthread_mutex_unlock(&vc_lock);
        return HBM_ERR_HUNG;
    }
    vc_job *j = hbm_xcalloc(1, sizeof *j);
    j->body = body;
    j->obs = *obs; /* freshly initialised: nothing owned yet */
    j->since = hbm_now_mono(); /* loading the library counts as the first call */
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int e = pthread_create(&t, &attr, worker, j);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        pthread_mutex_unlock(&vc_lock);
        free(j);
        return hbm_err_set(err, "%s: cannot start a thread: %s", backend, strerror(e));
    }
    wait_job(j, timeout);
    if (!j->done) {
        j->abandoned = true;
        vc_wedged = j;
        if (vc_stopping)
            hbm_err_set(err, "%s: abandoned, hbmctl is stopping", backend);
        else {
            char what[64];
            hbm_err_set(err, "%s did not return within %gs (--vendor-timeout)",
                        call_name(j->call, backend, what, sizeof what), timeout);
        }
        pthread_mutex_unlock(&vc_lock);
        return HBM_ERR_HUNG;
    }
    pthread_mutex_unlock(&vc_lock);
    *obs = j->obs;
    int rc = j->rc;
    if (rc < 0 && err)
        *err = j->err;
    free(j);
    return rc;
}

void hbm_backend_stop(void)
{
    pthread_once(&vc_once, vc_init);
    pthread_mutex_lock(&vc_lock);
    vc_stopping = true;
    pthread_cond_broadcast(&vc_cond);
    pthread_mutex_unlock(&vc_lock);
}

bool hbm_backend_wedged(void)
{
    pthread_once(&vc_once, vc_init);
    pthread_mutex_lock(&vc_lock);
    bool wedged = vc_wedged != NULL;
    pthread_mutex_unlock(&vc_lock);
    return wedged;
}
