/* hbmctl status: every device, its processes, and a verdict with its reason. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_findings.h"
#include "hbm/snapshot.h"
#include "wrap.h"

static const char *fmt_pair(char *buf, size_t n, int64_t used, int64_t total)
{
    if (used < 0 && total < 0)
        return snprintf(buf, n, "-"), buf;
    if (total >= 10 * HBM_GIB || used >= 10 * HBM_GIB)
        snprintf(buf, n, "%.1f/%.1f GiB", (double)used / HBM_GIB, (double)total / HBM_GIB);
    else
        snprintf(buf, n, "%.2f/%.2f GiB", (double)used / HBM_GIB, (double)total / HBM_GIB);
    return buf;
}

static const char *fmt_id(char *buf, size_t n, int64_t v)
{
    if (v < 0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%lld", (long long)v);
    return buf;
}

/* Text after prefix (leading newlines first), wrapped at width under the prefix. */
static void print_wrapped(const char *prefix, const char *text, int width)
{
    while (*prefix == '\n') {
        putchar('\n');
        prefix++;
    }
    fputs(prefix, stdout);
    int indent = (int)strlen(prefix);
    cli_wrap_from(stdout, text, indent, indent, width, false);
}

static void render(const hbm_obs *obs)
{
    bool color = cli_color(stdout);
    bool ascend = obs->ndevs == 0 || obs->devs[0].vendor != HBM_VENDOR_NVIDIA;
    printf("backend %s%s%s%s, %zu device%s", obs->backend, obs->source[0] ? " (" : "",
           obs->source, obs->source[0] ? ")" : "", obs->ndevs, obs->ndevs == 1 ? "" : "s");
    if (obs->driver_version[0])
        printf(", driver %s", obs->driver_version);
    printf("\n");
    cli_print_partial(stdout, "", obs);
    /* NVIDIA has no chip or logic numbering: those columns give their room to the name
     * ("NVIDIA H100 80GB HBM3" must not read like every other NVIDIA part). */
    if (ascend)
        printf("\n%-5s %-4s %-5s %-12s %-7s %6s %5s %5s %-19s %-11s %s\n", "NPU", "CHIP",
               "LOGIC", "NAME", "HEALTH", "POWER", "TEMP", "UTIL", "MEMORY USED/TOTAL",
               "HUGEPAGES", "VERDICT");
    else
        printf("\n%-5s %-23s %-7s %6s %5s %5s %-19s %-11s %s\n", "GPU", "NAME", "HEALTH",
               "POWER", "TEMP", "UTIL", "MEMORY USED/TOTAL", "MIG", "VERDICT");
    char a[32], b[32], c[32], mem[48], power[16], temp[16], util[16], huge[24];
    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *d = &obs->devs[i];
        if (isnan(d->power_watts))
            snprintf(power, sizeof power, "-");
        else
            snprintf(power, sizeof power, "%.1fW", d->power_watts);
        if (isnan(d->temperature_celsius))
            snprintf(temp, sizeof temp, "-");
        else
            snprintf(temp, sizeof temp, "%.0fC", d->temperature_celsius);
        if (isnan(d->utilization_ratio))
            snprintf(util, sizeof util, "-");
        else
            snprintf(util, sizeof util, "%.0f%%", d->utilization_ratio * 100);
        if (d->hugepages_total < 0)
            snprintf(huge, sizeof huge, "-");
        else
            snprintf(huge, sizeof huge, "%lld/%lld", (long long)d->hugepages_used,
                     (long long)d->hugepages_total);
        const char *vcol = color ? cli_verdict_color(d->verdict) : "";
        const char *vend = color ? CLI_RESET : "";
        fmt_pair(mem, sizeof mem, d->memory_used_bytes, d->memory_total_bytes);
        if (ascend)
            printf("%-5s %-4s %-5s %-12.12s %-7.7s %6s %5s %5s %-19s %-11s %s%s%s\n",
                   fmt_id(a, sizeof a, d->index), fmt_id(b, sizeof b, d->chip),
                   fmt_id(c, sizeof c, d->logic_id), d->name[0] ? d->name : "-",
                   d->health[0] ? d->health : "-", power, temp, util, mem, huge, vcol,
                   hbm_verdict_name(d->verdict), vend);
        else
            printf("%-5s %-23.23s %-7.7s %6s %5s %5s %-19s %-11.11s %s%s%s\n",
                   fmt_id(a, sizeof a, d->index), d->name[0] ? d->name : "-",
                   d->health[0] ? d->health : "-", power, temp, util, mem,
                   d->mig[0] ? d->mig : "-", vcol, hbm_verdict_name(d->verdict), vend);
    }

    size_t nprocs = 0;
    for (size_t i = 0; i < obs->ndevs; i++)
        nprocs += obs->devs[i].nprocs;
    if (nprocs) {
        /* The chip column only where chips exist (Ascend). */
        printf("\n%-5s %-*s%-9s %-16s %12s %-28s %s\n", ascend ? "NPU" : "GPU", ascend ? 5 : 0,
               ascend ? "CHIP" : "", "PID", "NAME", "MEMORY", "CONTAINER/POD", "STATE");
        for (size_t i = 0; i < obs->ndevs; i++) {
            const hbm_device *d = &obs->devs[i];
            for (size_t j = 0; j < d->nprocs; j++) {
                const hbm_dproc *p = &d->procs[j];
                char chip[40] = "", where[320];
                if (ascend)
                    snprintf(chip, sizeof chip, "%-4s ", fmt_id(b, sizeof b, d->chip));
                printf("%-5s %s%-9lld %-16.16s %12s %-28.28s %s\n",
                       fmt_id(a, sizeof a, d->index), chip,
                       (long long)p->pid, p->name[0] ? p->name : "-",
                       cli_size(mem, sizeof mem, p->memory_bytes),
                       cli_proc_where(where, sizeof where, p), hbm_pid_state_name(p->state));
            }
        }
    }

    printf("\n");
    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *d = &obs->devs[i];
        char prefix[128];
        snprintf(prefix, sizeof prefix, "%s %s%s%s %s: ", ascend ? "NPU" : "GPU",
                 fmt_id(a, sizeof a, d->index), ascend ? " chip " : "",
                 ascend ? fmt_id(b, sizeof b, d->chip) : "", hbm_verdict_name(d->verdict));
        print_wrapped(prefix, d->reason, 100);
    }

    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *d = &obs->devs[i];
        if (d->vendor == HBM_VENDOR_ASCEND && d->hugepages_total > 0 &&
            d->hugepages_used * 10 >= d->hugepages_total * 9) {
            print_wrapped("\nnote: ", "npu-smi's Hugepages-Usage counts the card's own memory "
                          "pages, not host hugepages: it stays full while a process holds the "
                          "card's memory, and only ending that process lowers it (ipcrm and "
                          "host hugepage settings do not).", 100);
            break;
        }
    }

    if (obs->has_host) {
        bool header = false;
        for (size_t i = 0; i < obs->host.nprocs; i++) {
            const hbm_hproc *hp = &obs->host.procs[i];
            if (!hp->ndev_paths || hbm_obs_find_proc(obs, hp->pid))
                continue;
            if (!header) {
                printf("\nholding device files, not listed by the driver:\n");
                header = true;
            }
            printf("  pid %-8d %-16s %c  %s%s\n", hp->pid, hp->comm, hp->state ? hp->state : '?',
                   hp->dev_paths[0], hp->ndev_paths > 1 ? " ..." : "");
        }
        if (!obs->host.sees_host_pids)
            print_wrapped("\nnote: ", obs->host.sees_host_pids_why, 100);
    }
}

int cmd_status(int argc, char **argv)
{
    hbm_opt_common c;
    hbm_opt_common_init(&c);
    const hbm_opt opts[] = {HBM_OPT_GROUPS_HERE, HBM_OPTS_END};
    const hbm_opt_spec spec = {
        .cmd = "status", .usage = "[--json] [--snapshot FILE] [--backend NAME] [--root DIR]",
        .about = "Shows every device (health, power, temperature, utilisation, memory, hugepages),\n"
                 "the processes on it, and a verdict per device with its reason:\n"
                 "  FREE         no process, memory at the chip's idle baseline\n"
                 "  BUSY         a live process holds it\n"
                 "  UNACCOUNTED  memory above the baseline that no visible process accounts for\n"
                 "  ORPHANED     held by a process whose owner is gone (exited, zombie, D state,\n"
                 "               container removed)\n"
                 "  UNHEALTHY    the driver says the device is not healthy\n\n"
                 "--snapshot accepts a snapshot (hbmctl snapshot) or raw 'npu-smi info' text.\n",
        .opts = opts, .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE, .common = &c,
        .exits = "exit: 0 shown, 2 could not look (the message names the file and line)\n",
    };
    int rc = cli_parse_options(&spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    c.src.want_topology = c.json; /* the JSON is a snapshot, topology included */
    hbm_obs obs;
    if (!cli_observe(&c, &obs))
        return CLI_EXIT_ERROR;
    if (c.json)
        cli_json_out(hbm_snapshot_to_json(&obs));
    else
        render(&obs);
    hbm_obs_free(&obs);
    return CLI_EXIT_OK;
}
