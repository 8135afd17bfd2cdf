/* --metrics-url URL (repeatable) and --stall DUR for the commands that follow servers over
 * time (watch, exporter): two entries of their option table. */
#ifndef HBM_CLI_PROGRESS_H
#define HBM_CLI_PROGRESS_H

#include "hbm/progress.h"
#include "hbm/opt.h"

/* HBM_OPT_CALL reader: adds a server to the hbm_progress_servers at dst. */
int cli_progress_add_url(void *dst, const char *value, char *why, size_t whylen);

#define CLI_PROGRESS_OPTS(set)                                                               \
    HBM_OPT(HBM_OPT_CALL, "metrics-url", 0, "URL", (set),                                   \
            "an inference server's /metrics (vLLM, SGLang, MindIE): its\n"                    \
            "progress state, tokens/s, seconds since a token; repeatable",                    \
            .fn = cli_progress_add_url),                                                     \
        HBM_OPT(HBM_OPT_DURATION, "stall", 0, "DUR", &(set)->stall_s,                       \
                "work and no token this long is a stall (default 60s)", .min = 1e-9,          \
                .why = "must be above 0", .words = "30s 1m 5m")

#endif
