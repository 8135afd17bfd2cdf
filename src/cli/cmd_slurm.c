/* hbmctl slurm prolog|epilog|healthcheck: Slurm's Prolog, Epilog and HealthCheckProgram. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_findings.h"
#include "hbm/audit.h"
#include "hbm/slurm.h"

static const char about[] =
    "Slurm's Prolog, Epilog and HealthCheckProgram (docs/slurm.md). The job's devices\n"
    "come from --devices, else SLURM_JOB_GPUS, ASCEND_RT_VISIBLE_DEVICES,\n"
    "CUDA_VISIBLE_DEVICES (first set wins), else from `scontrol show job -d` (the GRES\n"
    "IDX of this node); when none of these says, nothing is checked or ended (exit 2).\n"
    "healthcheck looks at every device.\n"
    "  prolog       refuses the job (exit 1, the node drained with the reason) when one\n"
    "               of its devices is unhealthy, holds memory of a process outside the\n"
    "               job, or memory no process accounts for; exit 2 when the refusal\n"
    "               cannot be noted under --state-dir\n"
    "  epilog       ends the job's own processes, and only those: proof is the job's\n"
    "               cgroup or SLURM_JOB_ID=<job> in the environment, never a listing by\n"
    "               the driver alone. SIGTERM, --grace, SIGKILL, through a pidfd after a\n"
    "               start-time check; removes the SysV segments they created once nobody\n"
    "               uses them; waits up to --settle for the memory to return; audits\n"
    "               each action; drains the node and exits 1 when memory stays or a\n"
    "               process of no job holds a device (left alone)\n"
    "  healthcheck  drains on an unhealthy device or memory held outside every job;\n"
    "               resumes a node only when the drain reason is hbmctl's own\n"
    "               (it starts with \"" HBM_SLURM_REASON_PREFIX "\")\n"
    "A node is drained or resumed only in a state hbmctl may change (IDLE, MIXED,\n"
    "ALLOCATED; COMPLETING; a DRAIN with hbmctl's reason): DOWN, FAIL, MAINT, REBOOT,\n"
    "a reservation and any other drain are kept as they are.\n";

/* "job 42: devices 0,1 (from SLURM_JOB_GPUS)", so a log shows where they came from. */
static void print_devices(const hbm_slurm_opts *o, const hbm_slurm_result *r)
{
    char list[HBM_SLURM_MAX_DEVS * 8];
    hbm_slurm_format_devlist(r->devs, r->ndevs, list, sizeof list);
    printf("job %s: %s%s (from %s)\n", o->env.job_id, r->ndevs ? "devices " : "no device",
           list, r->devs_from);
}

static void print_result(const hbm_slurm_opts *o, const hbm_slurm_result *r)
{
    if (o->mode != HBM_SLURM_HEALTHCHECK && r->devs_from[0])
        print_devices(o, r);
    for (size_t i = 0; i < r->nkills; i++) {
        char label[140];
        snprintf(label, sizeof label, "ended pid %d (%s, %s):", r->kills[i].pid,
                 r->kills[i].comm, r->kills[i].why);
        cli_wrap(stdout, label, (int)strlen(label) + 1, r->kills[i].result);
    }
    if (r->refused_job)
        printf("the prolog refused job %s: its devices' holders are not the job's, left to "
               "the health check\n", o->env.job_id);
    if (r->shm_removed)
        printf("removed %zu stale SysV segment%s\n", r->shm_removed,
               r->shm_removed == 1 ? "" : "s");
    if (r->problem[0]) {
        char label[80];
        snprintf(label, sizeof label, "%.60s:", o->env.node);
        cli_wrap(stdout, label, (int)strlen(label) + 1, r->problem);
    }
    if (r->drained)
        printf("node %s drained\n", o->env.node);
    if (r->resumed)
        printf("node %s resumed: its devices are clean again\n", o->env.node);
    if (r->kept_why[0])
        printf("node %s stays as it is: %s\n", o->env.node, r->kept_why);
    if (!r->problem[0] && !r->resumed && !r->refused_job)
        printf("%s: devices clean (%s)\n", o->env.node, r->devs_from);
}

int cmd_slurm(int argc, char **argv)
{
    hbm_opt_common c;
    hbm_opt_common_init(&c);
    char host[256];
    hbm_slurm_opts o = {0};
    hbm_slurm_env_read(&o.env, host, sizeof host);
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_STRING, "node", 0, "NAME", &o.env.node,
                "the Slurm node (default $SLURMD_NODENAME, else the host name)"),
        HBM_OPT(HBM_OPT_STRING, "devices", 0, "LIST", &o.env.devices,
                "the job's devices, e.g. 0,1 or 0-3 (ids as status shows them)"),
        HBM_OPT(HBM_OPT_DURATION, "grace", 0, "DUR", &o.grace_s,
                "epilog: SIGTERM to SIGKILL (default 5s)", .min = 1e-9,
                .why = "must be above 0"),
        HBM_OPT(HBM_OPT_DURATION, "settle", 0, "DUR", &o.settle_s,
                "epilog: how long memory may take to return (default 20s)", .min = 1e-9,
                .why = "must be above 0"),
        HBM_OPT(HBM_OPT_FLAG, "no-drain", 0, NULL, &o.no_drain,
                "report only: never change the node"),
        HBM_OPT(HBM_OPT_STRING, "scontrol", 0, "FILE", &o.scontrol,
                "the scontrol program (default scontrol on PATH)"),
        HBM_OPT(HBM_OPT_STRING, "audit-log", 0, "FILE", &o.audit_path,
                "audit log (default $HBMCTL_AUDIT_LOG, else\n" HBM_AUDIT_DEFAULT_PATH ")"),
        HBM_OPT(HBM_OPT_STRING, "state-dir", 0, "DIR", &o.state_dir,
                "where the prolog notes a refusal and the devices scontrol\n"
                "named, for the job's epilog (default " HBM_SLURM_STATE_DEFAULT ")"),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "slurm", .usage = "prolog|epilog|healthcheck [OPTIONS]", .about = about,
        .opts = opts, .groups = HBM_OPT_G_JSON | HBM_OPT_G_LIVE, .common = &c, .max_args = 1,
        .json_help = "{\"mode\", \"node\", \"job\", \"devices\", \"problem\", \"ended\", ...}",
        .exits = "exit: 0 clean; 1 a problem (the node drained unless --no-drain or its state\n"
                 "      is not hbmctl's to change); 2 could not look or act (bad option or job\n"
                 "      id, no backend, the job's devices unknown, scontrol failed, audit log\n"
                 "      or state dir not writable)\n",
    };
    hbm_opt_args args;
    int rc = cli_parse(&spec, argc, argv, &args);
    bool mode_ok = rc == CLI_CONTINUE && args.nargs == 1 && hbm_slurm_mode_parse(args.args[0], &o.mode);
    hbm_opt_args_free(&args);
    if (rc != CLI_CONTINUE)
        return rc;
    if (!mode_ok) {
        cli_errorf("slurm: say prolog, epilog or healthcheck; see hbmctl slurm --help");
        return CLI_EXIT_ERROR;
    }
    o.src = c.src;
    hbm_slurm_result r;
    hbm_err err = {{0}};
    rc = hbm_slurm_run(&o, &r, &err);
    if (rc < 0) {
        cli_errorf("slurm %s: %s", hbm_slurm_mode_name(o.mode), err.msg);
        hbm_slurm_result_free(&r);
        return CLI_EXIT_ERROR;
    }
    if (c.json)
        cli_json_out(hbm_slurm_result_json(&o, &r));
    else
        print_result(&o, &r);
    hbm_slurm_result_free(&r);
    return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_PROBLEM;
}
