/* hbmctl plan: the preflight memory planner (docs/planner.md). The library predicts and
 * the preflight module fills the device (a table name, --mem/--free, or the live host);
 * this file parses, prints, and chooses the exit code: 0 fits, 1 does not fit, 2 could not
 * look. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hbm/preflight.h"
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
    "--num-gpu-blocks-override\n"
    "Other common vLLM flags are accepted and skipped (--list-flags); an unknown option\n"
    "is an error (exit 2) naming the nearest known one. After '--', a whole\n"
    "'vllm serve MODEL ...' line is read the same way, and anything else there is skipped.\n";

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
                "A800, H100-80G, H800, H200, H20, B200, MI300X, MI325X, L40S, L20, L4,\n"
                "A40, RTX6000Ada, 4090, 3090, A10, A10G; --list-devices)"),
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
        cli_plan_list_flags(in->engine);
        rc = CLI_EXIT_OK;
    } else if (rc == CLI_CONTINUE && a->list_devices) {
        cli_plan_list_devices();
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
    if (a.sampler >= 0)
        in.vllm.sampler = a.sampler == 0 ? HBM_PLAN_SAMPLER_FLASHINFER : HBM_PLAN_SAMPLER_TORCH;
    hbm_preflight_target t = {
        .device = a.device, .mem_bytes = a.mem, .free_bytes = a.free, .serve = a.serve,
        .platform = a.platform < 0   ? HBM_PLAN_PLATFORM_UNKNOWN
                    : a.platform < 2 ? HBM_PLAN_PLATFORM_CUDA
                                     : HBM_PLAN_PLATFORM_ASCEND,
    };
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_plan_result res;
    memset(&res, 0, sizeof res);
    hbm_err err = {{0}};
    int starts = -1;
    rc = CLI_EXIT_ERROR;
    if (hbm_preflight_target_live(&t) && !t.serve && !cli_observe(&a.cc, &obs))
        cli_errorf("--device auto: no live observation, so no free memory to plan with; use "
                   "--device NAME or --mem SIZE --free SIZE");
    else if ((starts = hbm_preflight_plan(&t, &obs, &in, &res, &err)) < 0)
        cli_errorf("%s", err.msg);
    else if (a.cc.json)
        cli_json_out(hbm_plan_result_to_json(&res));
    else
        cli_plan_report(stdout, &res, CLI_WIDTH, cli_color(stdout));
    if (starts >= 0)
        rc = starts ? CLI_EXIT_OK : CLI_EXIT_PROBLEM;
    hbm_plan_result_free(&res);
    hbm_obs_free(&obs);
    return rc;
}
