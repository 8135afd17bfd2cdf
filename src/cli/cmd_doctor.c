/* hbmctl doctor: every finding on this host (or in a snapshot), worst first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_findings.h"
#include "hbm/doctor.h"
#include "wrap.h"

static const char about[] =
    "Finds what keeps accelerator memory from being free: orphaned, zombie or stuck\n"
    "device holders, memory no live process accounts for, devices that need a reset,\n"
    "stale SysV and /dev/shm objects, host hugepages, THP, a full /dev/shm, servers\n"
    "whose visible devices or --port are wrong, servers that answer but produce no\n"
    "token. Each finding has evidence, a remedy,\n"
    "and what `hbmctl clean` would do. Finding ids and --json fields: docs/doctor.md.\n"
    "Run it as root on the host: other users' open files (who holds a device) are\n"
    "readable only by root, and a container sees only its own processes. With no\n"
    "device source (broken driver, no vendor libraries) it checks the host alone\n"
    "and says so first.\n";

/* The rule registry, one rule a paragraph: id, severity and clean action, then when it is
 * raised and what to do. */
static void print_rules(FILE *f)
{
    for (size_t i = 0; i < hbm_doctor_nrules(); i++) {
        const hbm_doctor_rule *r = hbm_doctor_rule_at(i);
        fprintf(f, "%s%s\n", i ? "\n" : "", r->id);
        cli_wrap(f, "  severity", 14, r->severity);
        cli_wrap(f, "  when", 14, r->when);
        cli_wrap(f, "  evidence", 14, r->evidence);
        cli_wrap(f, "  remedy", 14, r->remedy);
        cli_wrap(f, "  clean", 14, r->clean);
    }
}

int cmd_doctor(int argc, char **argv)
{
    hbm_opt_common c;
    hbm_opt_common_init(&c);
    hbm_doctor_opts dopts = {0};
    c.src.progress_interval_s = 5;
    bool rules = false;
    const hbm_opt opts[] = {
        HBM_OPT_GROUPS_HERE,
        HBM_OPT(HBM_OPT_FLAG, "rules", 0, NULL, &rules,
                "list every finding doctor can raise (id, severity, when, evidence,\n"
                "remedy, clean action) and exit; observes nothing"),
        HBM_OPT(HBM_OPT_RATIO, "shm-full", 0, "RATIO", &dopts.devshm_full_ratio,
                "/dev/shm use that counts as nearly full (default 90%)"),
        HBM_OPT(HBM_OPT_DURATION, "progress-interval", 0, "DUR", &c.src.progress_interval_s,
                "read the /metrics of each inference server found listening here\n"
                "twice this far apart (default 5s; 0 = do not): work and no token\n"
                "in between is server-stalled", .min = 0, .words = "0 1s 5s"),
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "doctor", .usage = "[OPTIONS]", .about = about, .opts = opts,
        .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE, .common = &c,
        .env = "environment: HBMCTL_ROOT (as --root), HBMCTL_DEVICE_PATTERNS (colon-separated\n"
               "  device-file globs, default /dev/davinci*:/dev/nvidia*:...), HBMCTL_DCMI_LIB,\n"
               "  HBMCTL_NVML_LIB, HBMCTL_NPU_SMI (where the vendor libraries and tool are)\n",
        .exits = "exit: 0 no finding of severity warning or worse (info notes may be printed),\n"
                 "      1 problems found, 2 could not look (unreadable snapshot, bad option,\n"
                 "      a --backend named that is unavailable)\n",
    };
    int prc = cli_parse_options(&spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    if (rules) {
        if (c.json)
            cli_json_out(hbm_doctor_rules_json());
        else
            print_rules(stdout);
        return CLI_EXIT_OK;
    }
    c.src.host_only_ok = true;
    hbm_obs obs;
    if (!cli_observe(&c, &obs))
        return CLI_EXIT_ERROR;
    hbm_findings f;
    hbm_doctor_findings(&obs, &dopts, &f);
    size_t problems = hbm_findings_problems(&f);
    if (c.json) {
        json_t *j = hbm_findings_to_json(&f);
        json_object_set_new(j, "backend", json_string(obs.backend));
        json_object_set_new(j, "backend_why",
                            obs.backend_why[0] ? json_string(obs.backend_why) : json_null());
        json_object_set_new(j, "partial", json_boolean(obs.partial));
        json_object_set_new(j, "partial_why",
                            obs.partial ? json_string(obs.partial_why) : json_null());
        cli_json_out(j);
    } else {
        cli_print_findings(stdout, &obs, &f);
    }
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
    return problems ? CLI_EXIT_PROBLEM : CLI_EXIT_OK;
}
