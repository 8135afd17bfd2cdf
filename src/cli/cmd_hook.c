/* hbmctl hook poststop: the OCI poststop hook (docs/hook.md). A hook's failure would fail the
 * runtime's stop, so every error of its own is logged (stderr, the audit log) and it exits 0,
 * and a deadline ends it whatever it waits on. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hbm/hook.h"

static void on_deadline(int sig)
{
    (void)sig;
    static const char m[] = "hbmctl hook poststop: --deadline passed: stopped (exit 0)\n";
    ssize_t w = write(STDERR_FILENO, m, sizeof m - 1);
    (void)w;
    _exit(0);
}

/* Logged where a person finds it; the runtime's stop goes on. */
static int hook_error(const hbm_clean_opts *o, const char *id, const char *msg)
{
    cli_errorf("hook poststop: %s (the container's stop goes on)", msg);
    hbm_hook_audit_error(o, id, msg);
    return CLI_EXIT_OK;
}

static void show(const hbm_hook_plan *p, const char *undone)
{
    for (size_t i = 0; i < p->n; i++) {
        const hbm_hook_target *t = &p->targets[i];
        const hbm_clean_step *s = hbm_hook_step_of(p, t->pid);
        const char *what = !t->proven ? t->why : !s ? "" : !s->allowed ? s->why
                         : s->done       ? s->result
                         : s->result[0]  ? s->result
                                         : undone;
        printf("pid %d (%s) holds %s: %s%s%s\n", t->pid, t->comm, t->device,
               t->proven ? t->why : "", t->proven ? "; " : "", what);
    }
}

static int poststop(const hbm_clean_opts *o, double deadline, bool dry_run)
{
    hbm_err err = {{0}};
    hbm_hook_state st;
    if (hbm_hook_read_state(STDIN_FILENO, deadline < 10 ? deadline / 2 : 5, &st, &err) < 0)
        return hook_error(o, "", err.msg);
    hbm_hook_container c;
    if (hbm_hook_container_read(&st, &c, &err) < 0)
        return hook_error(o, st.id, err.msg);
    if (c.ndevs == 0) { /* no accelerator: nothing to look for, nothing to log */
        hbm_hook_container_free(&c);
        return CLI_EXIT_OK;
    }
    char cmd[120];
    snprintf(cmd, sizeof cmd, "%s (container %.12s)", o->command, st.id);
    hbm_clean_opts co = *o;
    co.command = cmd;
    hbm_obs obs;
    int rc = hbm_hook_observe(&obs, &err);
    if (rc == 0) {
        hbm_hook_plan plan;
        hbm_hook_plan_make(&obs, &c, &co, &plan);
        if (!dry_run && hbm_hook_apply(&plan, &c, &co, &err) < 0)
            rc = -1;
        show(&plan, dry_run ? "to end (dry run)" : "not ended: nothing is done unaudited");
        hbm_hook_plan_free(&plan);
    }
    hbm_obs_free(&obs);
    hbm_hook_container_free(&c);
    return rc < 0 ? hook_error(&co, st.id, err.msg) : CLI_EXIT_OK;
}

int cmd_hook(int argc, char **argv)
{
    double deadline = 30, grace = 5;
    bool dry_run = false;
    const char *audit = NULL;
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_DURATION, "deadline", 0, "DURATION", &deadline,
                "the hook ends by then, whatever it waits on (default 30s)", .min = 1,
                .why = "must be at least 1s"),
        HBM_OPT(HBM_OPT_DURATION, "grace", 0, "DURATION", &grace,
                "SIGTERM to SIGKILL (default 5s; at most a third of --deadline)"),
        HBM_OPT(HBM_OPT_FLAG, "dry-run", 0, NULL, &dry_run, "say what it would end; end nothing"),
        HBM_OPT(HBM_OPT_STRING, "audit-log", 0, "FILE", &audit,
                "default $HBMCTL_AUDIT_LOG, else /var/log/hbmctl/audit.jsonl"),
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "hook", .usage = "poststop [--deadline DURATION] [--grace DURATION] [--dry-run] [--audit-log FILE]",
        .about = "An OCI poststop hook (podman, CRI-O: deploy/oci-hooks/). Reads the runtime's state\n"
                 "on stdin, the devices of the bundle's config.json, and ends the processes that\n"
                 "held one of them and outlived the container, with clean's proofs (start time,\n"
                 "pidfd, never a process of another live container); each is audited. A container\n"
                 "without an accelerator device returns at once.\n",
        .opts = opts, .max_args = 1,
        .exits = "exit: always 0 (its own errors are logged to stderr and the audit log: a hook\n"
                 "      must never fail the container's stop)\n",
    };
    hbm_opt_args args;
    int rc = cli_parse(&spec, argc, argv, &args);
    bool stage = args.nargs == 1 && !strcmp(args.args[0], "poststop");
    hbm_opt_args_free(&args);
    if (rc != CLI_CONTINUE)
        return CLI_EXIT_OK;
    hbm_clean_opts o = {.grace_s = grace < deadline / 3 ? grace : deadline / 3,
                        .audit_path = audit, .command = "hbmctl hook poststop"};
    if (!stage)
        return hook_error(&o, "", "hbmctl hook needs the stage: poststop");
    signal(SIGALRM, on_deadline);
    alarm((unsigned)(deadline + 0.999));
    return poststop(&o, deadline, dry_run);
}
