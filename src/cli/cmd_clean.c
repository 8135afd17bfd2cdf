/* hbmctl clean: what doctor found and hbmctl may remove, as a dry run unless --apply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_findings.h"
#include "hbm/doctor.h"
#include "hbm/audit.h"

static const char about[] =
    "Lists what it would do about doctor's findings; --apply does it:\n"
    "  orphaned device holders: SIGTERM, then SIGKILL after --grace, each signal\n"
    "    through a pidfd after checking the process start time again;\n"
    "  SysV segments: removed only when nobody attaches them and their creator and\n"
    "    last user are dead;\n"
    "  /dev/shm objects: removed only when no process maps or holds them.\n"
    "Never PID 1, never hbmctl's ancestors, never a process stuck in the kernel\n"
    "(state D), never a process in a running container unless named with --pid.\n"
    "--policy is the unattended remediation (docs/remediation.md): only what has\n"
    "been a leftover for --min-age, at most --max-actions a run.\n"
    "Then it observes again and reports per device the memory released.\n"
    "--apply appends a record per action to the audit log\n"
    "(JSON lines; a dry run writes nothing). --apply acts on the live host only.\n"
    "With no device source it handles the host objects alone and says so first.\n";

static const char exits[] =
    "exit: 0 nothing to do, or every action done; 1 a dry run with something to\n"
    "      do, a step kept by the safety rules (the problem stays: its reason is\n"
    "      printed), an action kept when checked again (no longer safe) or failed,\n"
    "      or the question answered no, or a step deferred by --max-actions (a\n"
    "      step under --min-age alone is no failure);\n"
    "      2 could not look, bad option, or could not write the audit log (then\n"
    "      nothing is done)\n";

/* What the command line asks of clean. */
typedef struct clean_args {
    hbm_opt_common c;
    bool apply, yes, policy;
    hbm_clean_opts copts;
    int *pids;
    size_t npids;
    double settle;
} clean_args;

/* --pid: one more process to end; repeatable. */
static int add_pid(void *dst, const char *v, char *why, size_t n)
{
    clean_args *a = dst;
    char *end;
    long pid = strtol(v, &end, 10);
    if (end == v || *end || pid <= 0 || pid > 0x3fffffff) {
        snprintf(why, n, "not a process id");
        return -1;
    }
    a->pids = hbm_xrealloc(a->pids, (a->npids + 1) * sizeof *a->pids);
    a->pids[a->npids++] = (int)pid;
    return 0;
}

static int parse(clean_args *a, int argc, char **argv)
{
    hbm_opt_common_init(&a->c);
    a->copts.grace_s = 10.0;
    a->settle = 5.0;
    a->copts.min_age_s = -1;
    a->copts.max_actions = -1;
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_FLAG, "apply", 0, NULL, &a->apply,
                "perform the actions; asks first when stdin is a terminal,\n"
                "proceeds without asking when it is not (scripts, pipes)"),
        HBM_OPT(HBM_OPT_FLAG, "yes", 'y', NULL, &a->yes, "do not ask"),
        HBM_OPT(HBM_OPT_DURATION, "grace", 0, "DURATION", &a->copts.grace_s,
                "SIGTERM to SIGKILL (default 10s)"),
        HBM_OPT(HBM_OPT_DURATION, "settle", 0, "DURATION", &a->settle,
                "how long to wait for the driver to release memory before\n"
                "reporting it (default 5s)"),
        HBM_OPT(HBM_OPT_CALL, "pid", 0, "PID", a,
                "also end this device holder (repeatable; allows a process\n"
                "in a running container)", .fn = add_pid),
        HBM_OPT(HBM_OPT_STRING, "only", 0, "IDS", &a->copts.only,
                "act only on these findings (comma-separated ids, e.g.\n"
                "orphan-holder,stale-sysv-shm); --pid holders still count"),
        HBM_OPT(HBM_OPT_DURATION, "min-age", 0, "DURATION", &a->copts.min_age_s,
                "act only on a leftover seen as one for this long (first\n"
                "sighting kept in --state; default none, 10m with --policy)"),
        HBM_OPT(HBM_OPT_COUNT, "max-actions", 0, "N", &a->copts.max_actions,
                "do at most N actions this run, oldest leftovers first; the\n"
                "rest are deferred (default no limit, 5 with --policy)", .min = 1),
        HBM_OPT(HBM_OPT_FLAG, "policy", 0, NULL, &a->policy,
                "the unattended policy: --only " HBM_CLEAN_POLICY_ONLY "\n"
                "--min-age 10m --max-actions 5 unless given"),
        HBM_OPT(HBM_OPT_STRING, "state", 0, "FILE", &a->copts.state_path,
                "first sightings kept between runs for --min-age\n"
                "(default " HBM_CLEAN_STATE_DEFAULT ")"),
        HBM_OPT(HBM_OPT_STRING, "audit-log", 0, "FILE", &a->copts.audit_path,
                "audit log (default $HBMCTL_AUDIT_LOG, else\n"
                HBM_AUDIT_DEFAULT_PATH "; directory made 0750, file 0640)"),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "clean", .usage = "[--apply [--yes]] [OPTIONS]", .about = about, .opts = opts,
        .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE, .common = &a->c, .exits = exits,
    };
    int rc = cli_parse_options(&spec, argc, argv);
    if (a->policy)
        hbm_clean_opts_policy(&a->copts);
    char bad[64];
    if (rc == CLI_CONTINUE && a->copts.only && !hbm_clean_only_ok(a->copts.only, bad, sizeof bad)) {
        cli_errorf("--only: '%s' is not a finding id that clean acts on (hbmctl doctor "
                   "--rules lists them)", bad);
        rc = CLI_EXIT_ERROR;
    }
    if (rc == CLI_CONTINUE && a->apply && a->c.src.snapshot) {
        cli_errorf("clean --apply acts on the live host only; drop --snapshot");
        rc = CLI_EXIT_ERROR;
    }
    return rc;
}

static bool ask(void)
{
    if (!isatty(STDIN_FILENO))
        return true;
    fprintf(stderr, "Proceed? [y/N] ");
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

/* Observes again: what the devices show now. Drivers free memory asynchronously after a
 * process exits, so look again for up to --settle until every device a process was ended
 * on shows less memory. Returns the per-device figures, NULL when it could not observe. */
static json_t *observe_after(const clean_args *a, const hbm_obs *obs,
                             const hbm_clean_plan *plan)
{
    hbm_obs after;
    hbm_err err = {{0}};
    double until = hbm_now_mono() + a->settle;
    int orc;
    while ((orc = hbm_observe(&after, &a->c.src, &err)) == 0 && hbm_now_mono() < until &&
           !hbm_clean_settled(obs, &after, plan)) {
        hbm_obs_free(&after);
        usleep(500 * 1000);
    }
    if (orc < 0) {
        if (!a->c.json)
            printf("could not observe again: %s\n", err.msg);
        return NULL;
    }
    if (!a->c.json && !obs->ndevs)
        printf("device memory after clean: not known (%s)\n",
               obs->backend_why[0] ? "no device source" : "no device observed");
    else if (!a->c.json)
        printf("device memory after clean:\n  %-7s %12s    %-12s %s\n", "DEVICE", "BEFORE",
               "AFTER", "RELEASED");
    json_t *rel = hbm_clean_released(obs, &after);
    if (!a->c.json)
        cli_print_released(rel);
    hbm_obs_free(&after);
    return rel;
}

/* --apply with something to do: act, report each step, then the memory released. */
static int apply_plan(clean_args *a, const hbm_obs *obs, hbm_clean_plan *plan)
{
    hbm_err err = {{0}};
    int rc, bad = hbm_clean_apply(plan, &a->copts, &err);
    if (bad < 0) {
        cli_errorf("%s", err.msg);
        rc = CLI_EXIT_ERROR;
    } else {
        rc = bad ? CLI_EXIT_PROBLEM : CLI_EXIT_OK;
    }
    if (!a->c.json)
        cli_print_clean_results(plan, hbm_audit_path(a->copts.audit_path));
    json_t *rel = observe_after(a, obs, plan);
    if (a->c.json)
        cli_json_out(hbm_clean_json(obs, plan, false, rel, hbm_audit_path(a->copts.audit_path)));
    else
        json_decref(rel);
    return rc;
}

int cmd_clean(int argc, char **argv)
{
    clean_args a = {0};
    int rc = parse(&a, argc, argv);
    if (rc != CLI_CONTINUE) {
        free(a.pids);
        return rc;
    }
    a.copts.named_pids = a.pids;
    a.copts.nnamed = a.npids;
    char *command = hbm_audit_command(argc, argv);
    a.copts.command = command;
    a.c.src.host_only_ok = true;
    hbm_obs obs;
    if (!cli_observe(&a.c, &obs)) {
        free(a.pids);
        free(command);
        return CLI_EXIT_ERROR;
    }
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    hbm_clean_plan plan;
    hbm_clean_plan_make(&obs, &f, &a.copts, &plan);
    hbm_err perr = {{0}};
    if (hbm_clean_policy(&obs, &plan, &a.copts, hbm_now_wall(), &perr) < 0)
        fprintf(stderr, "hbmctl: state file not kept (%s): ages are the leftovers' own "
                "(process start, segment time, file mtime)\n", perr.msg);
    hbm_clean_counts n = hbm_clean_plan_counts(&plan);
    if (!a.c.json)
        cli_print_clean_plan(&obs, &plan, a.apply);
    rc = n.allowed ? CLI_EXIT_PROBLEM : CLI_EXIT_OK;
    if (!a.apply) {
        if (!a.c.json && n.allowed)
            printf("nothing changed; run 'hbmctl clean --apply' to do this\n");
        if (a.c.json)
            cli_json_out(hbm_clean_json(&obs, &plan, true, NULL, NULL));
    } else if (n.allowed && !a.yes && !ask()) {
        fprintf(stderr, "hbmctl: nothing done\n");
        rc = CLI_EXIT_PROBLEM;
    } else if (n.allowed) {
        rc = apply_plan(&a, &obs, &plan);
    } else if (a.c.json) {
        cli_json_out(hbm_clean_json(&obs, &plan, false, NULL, NULL));
    }
    /* A step the safety rules kept or --max-actions deferred leaves its problem (an orphan
     * holding memory) in place: never a success. One under --min-age is the policy's own
     * choice. */
    if (rc == CLI_EXIT_OK && n.kept + n.deferred)
        rc = CLI_EXIT_PROBLEM;
    hbm_clean_plan_free(&plan);
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
    free(a.pids);
    free(command);
    return rc;
}
