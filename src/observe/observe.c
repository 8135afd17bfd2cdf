/* Chooses a device source and builds one full observation: devices, host facts, verdicts. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hbm/backend.h"
#include "hbm/host.h"
#include "hbm/npusmi.h"
#include "hbm/observe.h"
#include "hbm/snapshot.h"
#include "hbm/util.h"
#include "hbm/verdict.h"
#include "hbm/text.h"

/* Live sources in the order auto tries them: the driver libraries first (exact, cheap),
 * then the npu-smi tool (text, slower, at most 8 processes per chip). */
static const hbm_backend *const live_backends[] = {
    &hbm_backend_dcmi,
    &hbm_backend_nvml,
    &hbm_backend_npusmi,
};
#define NLIVE (sizeof live_backends / sizeof live_backends[0])

static bool looks_like_json(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')
            continue;
        return text[i] == '{';
    }
    return false;
}

/* Snapshots and pastes are bounded: a real npu-smi output is a few KiB, a snapshot of a
 * busy host a few MiB. */
#define MAX_INPUT_BYTES (256u << 20)

/* Reads a snapshot or raw npu-smi text from a file ("-" = stdin), detecting which. */
static int observe_file(hbm_obs *obs, const char *path, hbm_err *err)
{
    char *text;
    size_t len;
    if (hbm_read_file(path, MAX_INPUT_BYTES, &text, &len, err) < 0)
        return -1;
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    int rc;
    if (looks_like_json(text, len)) {
        rc = hbm_snapshot_parse(obs, text, len, name, err);
    } else {
        rc = hbm_npusmi_parse_info(obs, text, len, name, err);
        if (rc == 0) {
            snprintf(obs->backend, sizeof obs->backend, "npu-smi");
            snprintf(obs->source, sizeof obs->source, "%s", name);
            hbm_verdict_apply(obs);
        }
    }
    free(text);
    return rc;
}

static const hbm_backend *find_backend(const char *name)
{
    for (size_t i = 0; i < NLIVE; i++)
        if (live_backends[i] && strcmp(live_backends[i]->name, name) == 0)
            return live_backends[i];
    return NULL;
}

static int scan_host(hbm_obs *obs, const hbm_source_opts *opts, hbm_err *err)
{
    int *pids = hbm_xcalloc(1, sizeof *pids);
    size_t n = 0;
    for (size_t i = 0; i < obs->ndevs; i++)
        for (size_t j = 0; j < obs->devs[i].nprocs; j++) {
            int64_t pid = obs->devs[i].procs[j].pid;
            if (pid <= 0 || pid > 0x7fffffff)
                continue;
            pids = hbm_xrealloc(pids, (n + 1) * sizeof *pids);
            pids[n++] = (int)pid;
        }
    hbm_host_opts hopts = {
        .root = opts->root ? opts->root : hbm_host_env_root(),
        .want_pids = pids,
        .nwant_pids = n,
    };
    int rc = hbm_host_scan(&obs->host, &hopts, err);
    free(pids);
    if (rc == 0)
        obs->has_host = true;
    return rc;
}

/* A live observation is stamped with this host and this moment. */
static void stamp(hbm_obs *obs)
{
    obs->captured_at = hbm_now_wall();
    gethostname(obs->hostname, sizeof obs->hostname - 1);
}

/* Fills obs from one source; on failure obs is left empty and stamped again. */
static int observe_with(hbm_obs *obs, const hbm_backend *b, const hbm_source_opts *opts,
                        hbm_err *err)
{
    snprintf(obs->backend, sizeof obs->backend, "%s", b->name);
    obs->want_topology = opts->want_topology;
    double t = opts->vendor_timeout > 0 ? opts->vendor_timeout : HBM_VENDOR_TIMEOUT_DEFAULT;
    int rc = b->observe(obs, t, err);
    if (rc == 0)
        return 0;
    hbm_obs_free(obs);
    hbm_obs_init(obs);
    stamp(obs);
    return rc == HBM_ERR_HUNG ? HBM_ERR_HUNG : -1;
}

static bool present(const hbm_backend *b, hbm_err *why)
{
    return !b->available || b->available(why) == 1;
}

int hbm_observe(hbm_obs *obs, const hbm_source_opts *opts, hbm_err *err)
{
    hbm_obs_init(obs);
    const char *want = opts->backend ? opts->backend : "auto";
    if (opts->snapshot || strcmp(want, "snapshot") == 0) {
        if (!opts->snapshot)
            return hbm_err_set(err, "--backend snapshot needs --snapshot FILE");
        /* A paste or a snapshot keeps its own host and time (unknown for npu-smi text): it
         * was not observed here, now. */
        if (observe_file(obs, opts->snapshot, err) < 0) {
            hbm_obs_free(obs);
            return -1;
        }
        return 0;
    }
    stamp(obs);

    const hbm_backend *chosen = NULL;
    if (strcmp(want, "auto") == 0) {
        /* A library can load on a machine whose driver is absent (an NVML package without
         * a GPU): a source that is present but fails to observe gives way to the next. */
        char tried[sizeof err->msg] = "";
        for (size_t i = 0; i < NLIVE && !chosen; i++) {
            if (!live_backends[i])
                continue;
            hbm_err why = {{0}};
            int rc = present(live_backends[i], &why)
                         ? observe_with(obs, live_backends[i], opts, &why)
                         : -1;
            /* A driver that hangs is the answer: not "absent", and the next source asks
             * the same driver (npu-smi goes through DCMI). */
            if (rc == HBM_ERR_HUNG) {
                hbm_err_set(err, "%s: %s", live_backends[i]->name, why.msg);
                return HBM_ERR_HUNG;
            }
            if (rc == 0)
                chosen = live_backends[i];
            else
                hbm_text_fitf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s: %s",
                         tried[0] ? "; " : "", live_backends[i]->name, why.msg);
        }
        if (!chosen && !opts->host_only_ok)
            return hbm_err_set(err, "no accelerator backend found (%s)", tried);
        if (!chosen) {
            /* A broken driver or a container without the vendor libraries: the host facts
             * still say what is stale, so look at those and say what was skipped. */
            snprintf(obs->backend, sizeof obs->backend, "none");
            hbm_text_fitf(obs->backend_why, sizeof obs->backend_why,
                          "no accelerator backend found (%s)", tried);
        }
    } else {
        chosen = find_backend(want);
        if (!chosen)
            return hbm_err_set(err, "unknown backend '%s' (auto, dcmi, nvml, npu-smi, snapshot)",
                               want);
        hbm_err why = {{0}};
        if (!present(chosen, &why))
            return hbm_err_set(err, "backend %s: %s", want, why.msg);
        int rc = observe_with(obs, chosen, opts, err);
        if (rc < 0) {
            hbm_obs_free(obs);
            hbm_err_prefix(err, "%s", chosen->name);
            return rc;
        }
    }
    if (!opts->no_host && scan_host(obs, opts, err) < 0) {
        hbm_err_prefix(err, "host facts");
        hbm_obs_free(obs);
        return -1;
    }
    hbm_verdict_apply(obs);
    hbm_observe_servers(obs, opts->progress_interval_s);
    return 0;
}
