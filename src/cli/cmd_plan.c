/* hbmctl plan: the preflight memory planner (docs/planner.md). The library predicts; this file picks
 * the device (a table name, --mem/--free, or the live host through hbm_observe), prints,
 * and chooses the exit code: 0 fits, 1 does not fit, 2 could not look. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hbm/plan.h"
#include "render_plan.h"
#include "wrap.h"

static const char about[] =
    "Predicts what vLLM (V1 engine, or vllm-ascend) does with device memory at start-up:\n"
    "weights, peak activation, non-torch and graph memory, KV cache, tokens, blocks and\n"
    "concurrency per rank, and whether it starts, in vLLM's own words. When it does not,\n"
    "prints the changes that make it fit, best first, each with a ready flag line.\n";

static const char vllm_flags[] =
    "--tensor-parallel-size --pipeline-parallel-size --gpu-memory-utilization\n"
    "--max-model-len --max-num-seqs --max-num-batched-tokens --kv-cache-dtype\n"
    "--block-size --quantization --dtype --enforce-eager --kv-cache-memory-bytes\n"
    "Other common vLLM flags are accepted and skipped (--list-flags); an unknown option\n"
    "is an error (exit 2) naming the nearest known one. After '--', a whole\n"
    "'vllm serve MODEL ...' line is read the same way, and anything else there is skipped.\n";

static void list_devices(void)
{
    size_t n;
    const hbm_plan_device *d = hbm_plan_devices(&n);
    printf("%-10s %-7s %10s  %s\n", "DEVICE", "KIND", "TOTAL", "SOURCE");
    for (size_t i = 0; i < n; i++)
        printf("%-10s %-7s %6.2f GiB  %.69s\n", d[i].name,
               d[i].platform == HBM_PLAN_PLATFORM_ASCEND ? "ascend" : "cuda",
               (double)d[i].total_bytes / 1073741824.0, d[i].source);
}

/* The devices a visible-device variable leaves, in its order, as vLLM's framework would
 * see them. CUDA takes indices or GPU- UUID prefixes and stops at the first entry it cannot
 * use; the Ascend runtime takes logic ids and refuses a list out of range or out of order.
 * Returns the count, or -1 with the reason in why. */
static long visible_list(hbm_obs *obs, hbm_vendor vendor, const char *val, size_t *out,
                         size_t cap, char *why, size_t whylen)
{
    long n = 0;
    int64_t last = -1;
    char *copy = hbm_xstrdup(val), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*t))
            t++;
        size_t l = strlen(t);
        while (l && isspace((unsigned char)t[l - 1]))
            t[--l] = 0;
        hbm_device *d = NULL;
        char *end;
        long long id = strtoll(t, &end, 10);
        if (l && !*end && end != t && id >= 0)
            d = hbm_obs_find_device(obs, id);
        else if (vendor == HBM_VENDOR_NVIDIA && !strncmp(t, "GPU-", 4))
            for (size_t k = 0; k < obs->ndevs && !d; k++)
                if (!strncmp(obs->devs[k].uuid, t, l))
                    d = &obs->devs[k];
        for (long k = 0; d && k < n; k++)
            if (&obs->devs[out[k]] == d)
                d = NULL; /* named twice: CUDA treats it as invalid */
        if (vendor == HBM_VENDOR_ASCEND && (!d || hbm_device_user_id(d) <= last)) {
            snprintf(why, whylen, "%s: \"%s\" %s", val, t,
                     !d ? "is not a logic id of this host (hbmctl status lists them)"
                        : "breaks the ascending order the Ascend runtime requires");
            free(copy);
            return -1;
        }
        if (!d) {
            /* CUDA sees the devices before an entry it cannot use, and none after it */
            snprintf(why, whylen, "CUDA stops at \"%s\": no such device here", t);
            break;
        }
        last = hbm_device_user_id(d);
        if ((size_t)n < cap)
            out[n++] = (size_t)(d - obs->devs);
    }
    free(copy);
    return n;
}

/* The live devices vLLM would use: the first tp x pp the visible-device variable leaves
 * (all devices in the backend's order when it is unset). */
static int live_device(const cli_common *cc, int64_t ndev, hbm_plan_input *in,
                       hbm_plan_holder **holders, int64_t **ids, char **visible, char *name,
                       size_t namelen, char **partial)
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
    hbm_vendor vendor = obs.devs[0].vendor;
    const char *var = hbm_vendor_visible_env(vendor);
    const char *val = var ? getenv(var) : NULL;
    size_t *use = hbm_xcalloc(obs.ndevs, sizeof *use);
    long nuse = (long)obs.ndevs;
    char why[256] = "";
    if (val) {
        nuse = visible_list(&obs, vendor, val, use, obs.ndevs, why, sizeof why);
        if (nuse < 0) {
            cli_errorf("--device auto: %s=%s", var, why);
            goto fail;
        }
        *visible = hbm_xasprintf("%s=%s", var, val);
    } else {
        for (size_t k = 0; k < obs.ndevs; k++)
            use[k] = k;
    }
    if (ndev > nuse) {
        cli_errorf("--device auto: TP x PP needs %lld devices but %s%s%s%s leaves %ld%s%s%s",
                   (long long)ndev, val ? var : "the host", val ? "=\"" : "", val ? val : "",
                   val ? "\"" : "", nuse, why[0] ? " (" : "", why, why[0] ? ")" : "");
        goto fail;
    }
    *ids = hbm_xcalloc((size_t)ndev, sizeof **ids);
    int64_t total = -1, free_min = -1;
    size_t nh = 0;
    for (int64_t i = 0; i < ndev; i++) {
        hbm_device *d = &obs.devs[use[i]];
        (*ids)[i] = hbm_device_user_id(d);
        hbm_plan_platform plat = d->vendor == HBM_VENDOR_ASCEND ? HBM_PLAN_PLATFORM_ASCEND
                                                                : HBM_PLAN_PLATFORM_CUDA;
        hbm_plan_devmem dm;
        hbm_err err = {{0}};
        if (hbm_plan_device_memory(d->name, plat, d->memory_total_bytes, d->memory_used_bytes,
                                   &dm, &err) < 0) {
            cli_errorf("--device auto: device %lld: %s", (long long)hbm_device_user_id(d),
                       err.msg);
            goto fail;
        }
        if (total < 0 || dm.total_bytes < total)
            total = dm.total_bytes;
        if (free_min < 0 || dm.free_bytes < free_min)
            free_min = dm.free_bytes;
        if (i == 0) {
            snprintf(name, namelen, "%s", d->name[0] ? d->name : "device");
            in->platform = plat;
            in->large_device = dm.large_device;
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
    in->device_ids = *ids;
    in->ndevice_ids = (size_t)ndev;
    in->visible_devices = *visible;
    in->live = true;
    if (obs.partial)
        in->live_partial = *partial = hbm_xstrdup(obs.partial_why);
    free(use);
    hbm_obs_free(&obs);
    return 0;
fail:
    free(use);
    hbm_obs_free(&obs);
    return -1;
}

static void list_flags(hbm_plan_engine e)
{
    size_t n;
    const hbm_plan_flag *f = hbm_plan_flags(e, &n);
    printf("%-44s %-6s %s\n", "FLAG", "VALUE", "USE");
    for (size_t i = 0; i < n; i++)
        printf("%-44s %-6s %s\n", f[i].name, f[i].value ? "yes" : "no",
               f[i].use == HBM_PLAN_FLAG_MODELLED     ? "read by the planner"
               : f[i].use == HBM_PLAN_FLAG_UNMODELLED ? "changes memory, not modelled (noted)"
                                                      : "no device memory: skipped");
}

/* A word after a flag that takes a value is that value unless it looks like an option
 * (negative numbers are values), as vLLM's parser reads it. */
static bool is_value(const char *w)
{
    return w && strcmp(w, "--") && (w[0] != '-' || !w[1] || isdigit((unsigned char)w[1]));
}

/* The engine's flags among plan's own options, in order, read later as `serve ...`. */
typedef struct vllm_words {
    char **w;
    int n;
    const char **own; /* plan's own option names, for suggestions */
    hbm_plan_engine engine;
} vllm_words;

/* An option not in plan's table: a vLLM flag the planner knows (and its value), else an
 * error; a typo must not pass silently. */
static int vllm_flag(void *ctx, char **words, int nwords)
{
    vllm_words *v = ctx;
    const char *a = words[0], *next = nwords > 1 ? words[1] : NULL;
    bool attached;
    const hbm_plan_flag *fl = hbm_plan_flag_find(v->engine, a, &attached);
    if (!fl) {
        const char *near = hbm_plan_flag_suggest(v->engine, a, v->own);
        cli_errorf("plan: unknown option \"%s\"%s%s%s; %s flags the planner does not "
                   "know go after '--' (hbmctl plan%s%s --list-flags)",
                   a, near ? " (did you mean " : "", near ? near : "", near ? "?)" : "",
                   v->engine == HBM_PLAN_ENGINE_VLLM ? "vLLM" : hbm_plan_engine_name(v->engine),
                   v->engine == HBM_PLAN_ENGINE_VLLM ? "" : " --engine ",
                   v->engine == HBM_PLAN_ENGINE_VLLM ? "" : hbm_plan_engine_name(v->engine));
        return -1;
    }
    v->w[v->n++] = words[0];
    if (fl->value && !attached && is_value(next)) {
        v->w[v->n++] = words[1];
        return 2;
    }
    return 1;
}

static const char *const platforms[] = {"cuda", "gpu", "ascend", "npu", NULL};
static const char *const samplers[] = {"flashinfer", "torch", NULL};

/* What plan's own options ask. */
typedef struct plan_args {
    cli_common cc;
    const char *device;
    int64_t mem, free;
    int platform; /* index in platforms, -1 when not given */
    int sampler;  /* index in samplers, -1 when not given */
    bool list_devices, list_flags;
    long serve;   /* planning backwards: requests to serve, 0 when not asked */
    const char *engine;
} plan_args;

/* --engine before the rest is parsed: it says whose flags the other options are. */
static int engine_of_argv(int argc, char **argv, hbm_plan_input *in)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        const char *name = NULL;
        if (!strcmp(argv[i], "--engine") && i + 1 < argc)
            name = argv[i + 1];
        else if (!strncmp(argv[i], "--engine=", 9))
            name = argv[i] + 9;
        hbm_err err = {{0}};
        if (name && hbm_plan_engine_parse(name, &in->engine, &err) < 0) {
            cli_errorf("%s", err.msg);
            return -1;
        }
    }
    return 0;
}

/* Parses argv into a and in (the vLLM flags, the model, a whole `vllm serve` line after
 * '--'). Returns CLI_CONTINUE or the exit code. */
static int parse(plan_args *a, hbm_plan_input *in, int argc, char **argv)
{
    cli_common_init(&a->cc);
    const cli_opt opts[] = {
        CLI_HEAD("device"),
        CLI_OPT(CLI_STRING, "device", 0, "NAME", &a->device,
                "a known device (910B1..910B4-1, 910C, 310P3[-48G], A100-40G/80G,\n"
                "A800, H100-80G, H800, H200, H20, B200, MI300X, L40S, L20, L4,\n"
                "RTX6000Ada, 4090, 3090, A10, A10G; --list-devices)"),
        CLI_FORM("--device auto",
                 "the live host: the first TP x PP devices that CUDA_VISIBLE_DEVICES /\n"
                 "ASCEND_RT_VISIBLE_DEVICES leaves (all when unset), their free\n"
                 "memory and holders"),
        CLI_OPT(CLI_SIZE, "mem", 0, "SIZE", &a->mem,
                "total memory as the framework sees it (e.g. 43.24GiB)", .min = 1,
                .why = "must be positive"),
        CLI_OPT(CLI_SIZE, "free", 0, "SIZE", &a->free,
                "free memory at start-up (default: all of it, or live)"),
        CLI_OPT(CLI_ENUM, "platform", 0, "P", &a->platform,
                "cuda or ascend (with --mem; default cuda)", .choices = platforms,
                .words = "cuda ascend"),
        CLI_OPT(CLI_STRING, "engine", 0, "E", &a->engine,
                "the serving engine whose start-up is planned: vllm (default) or\n"
                "sglang (its own flags, SGLang 0.2.0-0.5.6 rules) or mindie (its config\n"
                "keys as flags: --npuMemSize, --maxSeqLen, ...; its config.json\n"
                "after '--')"),
        CLI_OPT(CLI_STRING, "vllm-version", 0, "V", &in->engine_version,
                "rules of that release: vLLM 0.6.0-0.29.x, vllm-ascend 0.7.0-0.29.x\n"
                "on Ascend; a newer release gets the newest rules (said so), an\n"
                "older one is refused; default the newest"),
        CLI_OPT(CLI_STRING, "engine-version", 0, "V", &in->engine_version,
                "the same for the engine --engine names"),
        CLI_OPT(CLI_ENUM, "sampler", 0, "S", &a->sampler,
                "the top-k/top-p sampler vLLM V1 warms up on CUDA: flashinfer (used\n"
                "up to 0.10.1 when installed) or torch (later releases, or the log says\n"
                "\"FlashInfer is not available\"); default the release's",
                .choices = samplers, .words = "flashinfer torch"),
        CLI_OPT(CLI_FLAG, "offline", 0, NULL, &in->vllm.llm_class,
                "the launch is Python's vllm.LLM(...), not vllm serve: vLLM's\n"
                "offline batch defaults (more batched tokens) apply"),
        CLI_OPT(CLI_COUNT, "serve", 0, "N", &a->serve,
                "planning backwards: the cheapest launch (fewest devices, TP before\n"
                "PP, then the lowest utilisation) that serves N concurrent requests\n"
                "of --max-model-len tokens, printed as a whole vllm serve line and\n"
                "re-planned; exit 1 and the closest when none does",
                .min = 1, .why = "must be 1 or more"),
        CLI_OPT(CLI_FLAG, "list-devices", 0, NULL, &a->list_devices,
                "print the device table and exit"),
        CLI_OPT(CLI_FLAG, "list-flags", 0, NULL, &a->list_flags,
                "print the engine's flags accepted before '--' and what each does here"),
        CLI_HEAD("vLLM flags (same names, same defaults as vLLM for that version and device)"),
        CLI_TEXT(vllm_flags),
        CLI_HEAD("output"),
        CLI_GROUPS_HERE,
        CLI_OPTS_END,
    };
    if (engine_of_argv(argc, argv, in) < 0)
        return CLI_EXIT_ERROR;
    vllm_words v = {hbm_xcalloc((size_t)argc + 2, sizeof *v.w), 0, NULL, in->engine};
    v.w[v.n++] = "serve";
    cli_spec spec = {
        .cmd = "plan", .usage = "MODEL_DIR|config.json [OPTIONS] [vLLM FLAGS] [-- vllm serve ...]",
        .about = about, .opts = opts, .groups = CLI_G_JSON | CLI_G_SOURCE, .common = &a->cc,
        .exits = "exit: 0 vLLM starts, 1 it does not (the reasons and fixes are printed),\n"
                 "      2 could not look (unreadable model or safetensors header, bad flag, no "
                 "device)\n",
        .max_args = -1, .unknown = vllm_flag, .unknown_ctx = &v,
    };
    v.own = cli_opt_names(&spec);
    cli_args args;
    int rc = cli_parse(&spec, argc, argv, &args);
    int before = args.dash >= 0 ? args.dash : args.nargs;
    for (int i = 0; i < before; i++)
        v.w[v.n++] = args.args[i];
    hbm_err err = {{0}};
    if (rc == CLI_CONTINUE && a->list_flags) {
        list_flags(in->engine);
        rc = CLI_EXIT_OK;
    } else if (rc == CLI_CONTINUE && a->list_devices) {
        list_devices();
        rc = CLI_EXIT_OK;
    } else if (rc == CLI_CONTINUE &&
               (hbm_plan_args_from_argv(in, v.n, v.w, &err) < 0 ||
                (args.dash >= 0 &&
                 hbm_plan_args_from_argv(in, args.nargs - args.dash, args.args + args.dash,
                                         &err) < 0))) {
        cli_errorf("%s", err.msg);
        rc = CLI_EXIT_ERROR;
    }
    free(v.w);
    free(v.own);
    cli_args_free(&args);
    return rc;
}

/* The device memory to plan against: from the table, the live host, or --mem/--free. */
static int choose_device(plan_args *a, hbm_plan_input *in, hbm_plan_holder **holders,
                         int64_t **ids, char **visible, char *live_name, size_t namelen,
                         char **partial)
{
    if (a->platform >= 0)
        in->platform = a->platform < 2 ? HBM_PLAN_PLATFORM_CUDA : HBM_PLAN_PLATFORM_ASCEND;
    if (a->sampler >= 0)
        in->vllm.sampler = a->sampler == 0 ? HBM_PLAN_SAMPLER_FLASHINFER : HBM_PLAN_SAMPLER_TORCH;
    if (a->serve > 0 && a->device && !strcmp(a->device, "auto")) {
        cli_errorf("--serve chooses how many devices: give --device NAME or --mem SIZE "
                   "--free SIZE, not --device auto");
        return -1;
    }
    if (a->device && !strcmp(a->device, "auto")) {
        int64_t n = (in->tensor_parallel_size > 0 ? in->tensor_parallel_size : 1) *
                    (in->pipeline_parallel_size > 0 ? in->pipeline_parallel_size : 1);
        if (live_device(&a->cc, n, in, holders, ids, visible, live_name, namelen, partial) < 0)
            return -1;
        in->device_name = live_name;
    } else if (a->device) {
        const hbm_plan_device *d = hbm_plan_device_find(a->device);
        if (!d) {
            cli_errorf("--device: \"%s\" is not in the device table (hbmctl plan "
                       "--list-devices); use --mem SIZE for others",
                       a->device);
            return -1;
        }
        in->device_name = d->name;
        in->mem_total_bytes = d->total_bytes;
        in->large_device = d->large_class;
        if (a->platform < 0)
            in->platform = d->platform;
    }
    if (a->mem != HBM_UNKNOWN) {
        in->mem_total_bytes = a->mem;
        if (!a->device)
            in->large_device = a->mem >= 70 * HBM_GIB;
    }
    if (a->free != HBM_UNKNOWN)
        in->mem_free_bytes = a->free;
    if (in->platform == HBM_PLAN_PLATFORM_UNKNOWN)
        in->platform = HBM_PLAN_PLATFORM_CUDA;
    if (in->mem_total_bytes <= 0) {
        cli_errorf("plan: which device? give --device NAME, --device auto or --mem SIZE");
        return -1;
    }
    if (in->mem_free_bytes > in->mem_total_bytes) {
        cli_errorf("--free: %lld bytes is more than the device's %lld",
                   (long long)in->mem_free_bytes, (long long)in->mem_total_bytes);
        return -1;
    }
    return 0;
}

int cmd_plan(int argc, char **argv)
{
    plan_args a = {.mem = HBM_UNKNOWN, .free = HBM_UNKNOWN, .platform = -1, .sampler = -1};
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    int rc = parse(&a, &in, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (!in.model_path) {
        cli_errorf("plan: give a model directory or config.json (see hbmctl plan --help)");
        return CLI_EXIT_ERROR;
    }
    rc = CLI_EXIT_ERROR;
    hbm_plan_holder *holders = NULL;
    int64_t *ids = NULL;
    char *visible = NULL, *partial = NULL, live_name[64] = "";
    hbm_plan_result res;
    memset(&res, 0, sizeof res);
    hbm_err err = {{0}};
    if (choose_device(&a, &in, &holders, &ids, &visible, live_name, sizeof live_name,
                      &partial) < 0)
        goto out;
    in.serve_requests = a.serve > 0 ? a.serve : HBM_UNKNOWN;
    if ((a.serve > 0 ? hbm_plan_serve(&in, &res, &err) : hbm_plan_run(&in, &res, &err)) < 0) {
        cli_errorf("%s", err.msg);
        goto out;
    }
    if (a.cc.json) {
        cli_json_out(hbm_plan_result_to_json(&res));
    } else {
        cli_plan_report(stdout, &res, CLI_WIDTH, cli_color(stdout));
    }
    rc = (a.serve > 0 ? res.launch.serves : res.fits) ? CLI_EXIT_OK : CLI_EXIT_PROBLEM;
out:
    hbm_plan_result_free(&res);
    free(holders);
    free(ids);
    free(visible);
    free(partial);
    return rc;
}
