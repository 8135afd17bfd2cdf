/* hbmctl plan: the preflight memory planner (SPEC 4). The library predicts; this file picks
 * the device (a table name, --mem/--free, or the live host through hbm_observe), prints,
 * and chooses the exit code: 0 fits, 1 does not fit, 2 could not look. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hbm/plan.h"

static void plan_help(void)
{
    printf(
        "usage: hbmctl plan MODEL_DIR|config.json [OPTIONS] [vLLM FLAGS] [-- vllm serve ...]\n"
        "\n"
        "Predicts what vLLM (V1 engine, or vllm-ascend) does with device memory at start-up:\n"
        "weights, peak activation, non-torch and graph memory, KV cache, tokens, blocks and\n"
        "concurrency per rank, and whether it starts, in vLLM's own words. When it does not,\n"
        "prints the changes that make it fit, best first, each with a ready flag line.\n"
        "\n"
        "device:\n"
        "  --device NAME      a known device (910B1..910B4, 910, 310P3, A100-40G, A100-80G,\n"
        "                     H100-80G, H200, H20, L40S, 4090, 3090, A10; --list-devices)\n"
        "  --device auto      the live host: first TP x PP devices, their free memory and holders\n"
        "  --mem SIZE         total memory as the framework sees it (e.g. 43.24GiB)\n"
        "  --free SIZE        free memory at start-up (default: all of it, or live)\n"
        "  --platform P       cuda or ascend (with --mem; default cuda)\n"
        "  --vllm-version V   rules of that release (vllm-ascend release on Ascend); default newest\n"
        "  --list-devices     print the device table and exit\n"
        "\n"
        "vLLM flags (same names, same defaults as vLLM for that version and device):\n"
        "  --tensor-parallel-size --pipeline-parallel-size --gpu-memory-utilization\n"
        "  --max-model-len --max-num-seqs --max-num-batched-tokens --kv-cache-dtype\n"
        "  --block-size --quantization --dtype --enforce-eager --kv-cache-memory-bytes\n"
        "  After '--', a whole 'vllm serve MODEL ...' line is read the same way.\n"
        "\n"
        "output:\n" CLI_COMMON_HELP
        "\n"
        "exit: 0 vLLM starts, 1 it does not (the reasons and fixes are printed),\n"
        "      2 could not look (unreadable model or safetensors header, bad flag, no device)\n");
}

static void list_devices(void)
{
    size_t n;
    const hbm_plan_device *d = hbm_plan_devices(&n);
    printf("%-10s %-7s %10s  %s\n", "DEVICE", "KIND", "TOTAL", "SOURCE");
    for (size_t i = 0; i < n; i++)
        printf("%-10s %-7s %6.2f GiB  %.70s\n", d[i].name,
               d[i].platform == HBM_PLAN_PLATFORM_ASCEND ? "ascend" : "cuda",
               (double)d[i].total_bytes / 1073741824.0, d[i].source);
}

/* The live devices vLLM would use: the first tp x pp of the observation. */
static int live_device(const cli_common *cc, int64_t ndev, hbm_plan_input *in,
                       hbm_plan_holder **holders, char *name, size_t namelen)
{
    hbm_obs obs;
    hbm_obs_init(&obs);
    if (!cli_observe(cc, &obs)) {
        cli_errorf("--device auto: no live observation, so no free memory to plan with; use "
                   "--device NAME or --mem SIZE --free SIZE");
        hbm_obs_free(&obs);
        return -1;
    }
    if (obs.ndevs == 0) {
        cli_errorf("--device auto: the %s backend sees no device", obs.backend);
        hbm_obs_free(&obs);
        return -1;
    }
    if ((size_t)ndev > obs.ndevs)
        ndev = (int64_t)obs.ndevs;
    int64_t total = -1, free_min = -1;
    size_t nh = 0;
    for (int64_t i = 0; i < ndev; i++) {
        hbm_device *d = &obs.devs[i];
        if (d->memory_total_bytes <= 0 || d->memory_used_bytes < 0) {
            cli_errorf("--device auto: device %lld reports no memory figures",
                       (long long)d->index);
            hbm_obs_free(&obs);
            return -1;
        }
        /* the framework sees less than the driver's total: use the table's figure when the
         * device is known, keeping what the driver says is used */
        const hbm_plan_device *t = hbm_plan_device_match(d->name, d->memory_total_bytes);
        int64_t tot = t ? t->total_bytes : d->memory_total_bytes;
        int64_t fr = tot - d->memory_used_bytes;
        if (fr < 0)
            fr = 0;
        if (total < 0 || tot < total)
            total = tot;
        if (free_min < 0 || fr < free_min)
            free_min = fr;
        if (i == 0) {
            snprintf(name, namelen, "%s", d->name[0] ? d->name : "device");
            in->platform = d->vendor == HBM_VENDOR_ASCEND ? HBM_PLAN_PLATFORM_ASCEND
                                                          : HBM_PLAN_PLATFORM_CUDA;
            in->large_device = t ? t->large_class
                                 : (tot >= 70 * HBM_GIB && !strstr(d->name, "A100") &&
                                    in->platform == HBM_PLAN_PLATFORM_CUDA);
        }
        for (size_t p = 0; p < d->nprocs; p++) {
            *holders = hbm_xrealloc(*holders, (nh + 1) * sizeof **holders);
            hbm_plan_holder *h = &(*holders)[nh++];
            h->pid = d->procs[p].pid;
            snprintf(h->name, sizeof h->name, "%s",
                     d->procs[p].name[0] ? d->procs[p].name : "?");
            h->memory_bytes = d->procs[p].memory_bytes;
        }
    }
    in->mem_total_bytes = total;
    in->mem_free_bytes = free_min;
    in->holders = *holders;
    in->nholders = nh;
    in->live = true;
    hbm_obs_free(&obs);
    return 0;
}

static bool takes_value(const char *a, const char *name)
{
    return !strcmp(a, name);
}

int cmd_plan(int argc, char **argv)
{
    cli_common cc;
    cli_common_init(&cc);
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    const char *device = NULL, *mem = NULL, *freemem = NULL, *platform = NULL;
    /* plan's own options are taken out; the rest are vLLM flags, read as `serve ...` */
    char **rest = hbm_xcalloc((size_t)argc + 2, sizeof *rest);
    int nrest = 0, dash = -1;
    rest[nrest++] = "serve";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            dash = i + 1;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            plan_help();
            free(rest);
            return CLI_EXIT_OK;
        }
        if (!strcmp(a, "--list-devices")) {
            list_devices();
            free(rest);
            return CLI_EXIT_OK;
        }
        if (!strcmp(a, "--json")) {
            cc.json = true;
            continue;
        }
        static const char *const own[] = {"--device", "--mem", "--free", "--platform",
                                          "--vllm-version", "--snapshot", "--backend", "--root"};
        bool taken = false;
        for (size_t k = 0; k < sizeof own / sizeof own[0] && !taken; k++) {
            size_t l = strlen(own[k]);
            const char *v = NULL;
            if (takes_value(a, own[k]))
                v = next;
            else if (!strncmp(a, own[k], l) && a[l] == '=')
                v = a + l + 1;
            else
                continue;
            taken = true;
            if (!v) {
                cli_errorf("%s needs a value", own[k]);
                free(rest);
                return cli_usage_error("plan");
            }
            if (v == next)
                i++;
            switch (k) {
            case 0: device = v; break;
            case 1: mem = v; break;
            case 2: freemem = v; break;
            case 3: platform = v; break;
            case 4: in.vllm_version = v; break;
            case 5: cc.src.snapshot = v; break;
            case 6: cc.src.backend = v; break;
            case 7: cc.src.root = v; break;
            }
        }
        if (!taken)
            rest[nrest++] = argv[i];
    }
    hbm_err err = {{0}};
    int rc = CLI_EXIT_ERROR;
    hbm_plan_holder *holders = NULL;
    hbm_plan_result res;
    memset(&res, 0, sizeof res);
    char live_name[64] = "";
    if (hbm_plan_args_from_argv(&in, nrest, rest, &err) < 0 ||
        (dash > 0 && hbm_plan_args_from_argv(&in, argc - dash, argv + dash, &err) < 0)) {
        cli_errorf("%s", err.msg);
        goto out;
    }
    if (!in.model_path) {
        cli_errorf("plan: give a model directory or config.json (see hbmctl plan --help)");
        goto out;
    }
    if (platform) {
        if (!strcmp(platform, "ascend") || !strcmp(platform, "npu"))
            in.platform = HBM_PLAN_PLATFORM_ASCEND;
        else if (!strcmp(platform, "cuda") || !strcmp(platform, "gpu"))
            in.platform = HBM_PLAN_PLATFORM_CUDA;
        else {
            cli_errorf("--platform: \"%s\" is not cuda or ascend", platform);
            goto out;
        }
    }
    if (device && !strcmp(device, "auto")) {
        int64_t n = (in.tensor_parallel_size > 0 ? in.tensor_parallel_size : 1) *
                    (in.pipeline_parallel_size > 0 ? in.pipeline_parallel_size : 1);
        if (live_device(&cc, n, &in, &holders, live_name, sizeof live_name) < 0)
            goto out;
        in.device_name = live_name;
    } else if (device) {
        const hbm_plan_device *d = hbm_plan_device_find(device);
        if (!d) {
            cli_errorf("--device: \"%s\" is not in the device table (hbmctl plan "
                       "--list-devices); use --mem SIZE for others",
                       device);
            goto out;
        }
        in.device_name = d->name;
        in.mem_total_bytes = d->total_bytes;
        in.large_device = d->large_class;
        if (!platform)
            in.platform = d->platform;
    }
    if (mem) {
        int64_t b;
        if (hbm_parse_size(mem, &b, &err) < 0 || b <= 0) {
            cli_errorf("--mem: %s", b <= 0 && !err.msg[0] ? "must be positive" : err.msg);
            goto out;
        }
        in.mem_total_bytes = b;
        if (!device)
            in.large_device = b >= 70 * HBM_GIB;
    }
    if (freemem) {
        int64_t b;
        if (hbm_parse_size(freemem, &b, &err) < 0) {
            cli_errorf("--free: %s", err.msg);
            goto out;
        }
        in.mem_free_bytes = b;
    }
    if (in.platform == HBM_PLAN_PLATFORM_UNKNOWN)
        in.platform = HBM_PLAN_PLATFORM_CUDA;
    if (in.mem_total_bytes <= 0) {
        cli_errorf("plan: which device? give --device NAME, --device auto or --mem SIZE");
        goto out;
    }
    if (in.mem_free_bytes > in.mem_total_bytes) {
        cli_errorf("--free: %lld bytes is more than the device's %lld",
                   (long long)in.mem_free_bytes, (long long)in.mem_total_bytes);
        goto out;
    }
    if (hbm_plan_run(&in, &res, &err) < 0) {
        cli_errorf("%s", err.msg);
        goto out;
    }
    if (cc.json) {
        cli_json_out(hbm_plan_result_to_json(&res));
    } else {
        char *text = hbm_plan_result_text(&res, 100, cli_color(stdout));
        fputs(text, stdout);
        free(text);
    }
    rc = res.fits ? CLI_EXIT_OK : CLI_EXIT_PROBLEM;
out:
    hbm_plan_result_free(&res);
    free(holders);
    free(rest);
    return rc;
}
