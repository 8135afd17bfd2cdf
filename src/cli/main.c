/* hbmctl: git-style command table. Each command lives in cmd_<name>.c. Commands whose
 * libraries a build leaves out (the static build has no HTTP server or terminal UI) are
 * weak references that stay NULL, and `hbmctl --version` lists what is in. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define CLI_COMMANDS(X)                                                                      \
    X(status, "every device, its processes and a verdict: FREE BUSY UNACCOUNTED ORPHANED UNHEALTHY") \
    X(snapshot, "write everything hbmctl observes as one JSON document")                    \
    X(pick, "choose N free devices (one interconnect domain), optionally leased")           \
    X(leases, "list device leases and their holders")                                        \
    X(release, "end a lease")                                                                \
    X(plan, "predict vLLM's start-up memory and what to change so it fits")                 \
    X(doctor, "every problem on this host, with evidence and remedy")                       \
    X(clean, "remove orphans and stale shared memory (dry run unless --apply)")             \
    X(run, "supervise a server so stopping it always gives the device back")                \
    X(watch, "live view with memory history and leak detection")                            \
    X(probe, "health check for Kubernetes exec probes and scripts")                         \
    X(exporter, "Prometheus metrics over HTTP")                                              \
    X(explain, "read a failing server's log and say what happened and what to do")

#define DECLARE(name, summary) extern int cmd_##name(int argc, char **argv) __attribute__((weak));
CLI_COMMANDS(DECLARE)
#undef DECLARE

static const struct {
    const char *name;
    cli_cmd_fn fn;
    const char *summary;
} commands[] = {
#define ENTRY(name, summary) {#name, cmd_##name, summary},
    CLI_COMMANDS(ENTRY)
#undef ENTRY
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: hbmctl COMMAND [OPTIONS]\n\n"
               "Keeps accelerator memory clean for LLM inference servers (Ascend NPUs, NVIDIA "
               "GPUs).\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (commands[i].fn)
            fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'hbmctl COMMAND --help' shows a command's options.\n\n"
               "exit codes:\n"
               "  0  done, nothing wrong\n"
               "  1  done, and the answer is no: doctor found problems, probe unhealthy, clean\n"
               "     could not finish, plan says vLLM will not start, pick found too few free\n"
               "     devices, explain found failures, watch saw a leak, release: no such lease\n"
               "  2  could not look: bad usage, unreadable input (file:line named), no backend\n"
               "run: the child's status, 128+N when a signal N killed it; 125 hbmctl failed,\n"
               "     126 command not executable, 127 command not found (as docker run).\n");
}

static void version(void)
{
    printf("hbmctl %s\ncommands:", HBM_VERSION);
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (commands[i].fn)
            printf(" %s", commands[i].name);
    printf("\n");
    int left_out = 0;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!commands[i].fn)
            left_out++;
    if (left_out) {
        printf("left out of this build:");
        for (size_t i = 0; i < NCOMMANDS; i++)
            if (!commands[i].fn)
                printf(" %s", commands[i].name);
        printf("\n");
    }
#ifndef HBM_HAVE_CURL
    printf("without libcurl: run --health-url and probe --url are left out\n");
#endif
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_ERROR;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        version();
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, name) != 0)
            continue;
        if (!commands[i].fn) {
            cli_errorf("'%s' is left out of this build (see hbmctl --version)", name);
            return CLI_EXIT_ERROR;
        }
        return commands[i].fn(argc - 1, argv + 1);
    }
    cli_errorf("'%s' is not a command; see 'hbmctl --help'", name);
    return CLI_EXIT_ERROR;
}
