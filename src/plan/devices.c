/* The device table: memory each accelerator reports to the framework as its total (what
 * vLLM's MemorySnapshot reads from torch mem_get_info), not the marketing size. Sources
 * and the estimated rows are listed in docs/planner.md. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"

#define GIB(x) ((int64_t)((x) * 1073741824.0 + 0.5))

/* What vllm-ascend prints as `total memory` (torch.npu.mem_get_info) on every 64 GB Atlas
 * A2 log read (vllm-ascend#6250, #4594, #2667 within 12 MiB); torch_npu's OOM text says
 * "61.27 GiB total capacity" on some hosts, but the budget is taken from mem_get_info */
#define A2_64G_TOTAL 65452113920LL
#define A2_64G_SOURCE "vllm-ascend logs (#6250, #4594): total memory 65,452,113,920 B (60.96 GiB)"

static const hbm_plan_device table[] = {
    {"910B1", "Ascend910B1", HBM_PLAN_PLATFORM_ASCEND, A2_64G_TOTAL, false, A2_64G_SOURCE},
    {"910B2", "Ascend910B2,910B2C", HBM_PLAN_PLATFORM_ASCEND, A2_64G_TOTAL, false,
     A2_64G_SOURCE},
    {"910B3", "Ascend910B3,910B", HBM_PLAN_PLATFORM_ASCEND, A2_64G_TOTAL, false,
     A2_64G_SOURCE},
    {"910B4", "Ascend910B4", HBM_PLAN_PLATFORM_ASCEND, GIB(29.49), false,
     "memory the framework sees on a 32 GB 910B4: 29.49 GiB"},
    {"910B4-1", "Ascend910B4-1,910B4-64G", HBM_PLAN_PLATFORM_ASCEND, A2_64G_TOTAL, false,
     "estimate: 64 GB HBM as the other 64 GB Atlas A2 chips (60.96 GiB)"},
    {"910C", "A3,AtlasA3,Ascend910C,910_93,Ascend910_93", HBM_PLAN_PLATFORM_ASCEND,
     A2_64G_TOTAL, false,
     "vllm-ascend#5020 on an Atlas A3 die: total memory 65,452,113,920 B, as the A2 chips"},
    {"910", "Ascend910,910A,910ProB", HBM_PLAN_PLATFORM_ASCEND, GIB(29.49), false,
     "estimate: 32 GB HBM less the 2.51 GiB runtime share seen on the 910B4"},
    {"310P3", "Ascend310P3,310P,300IPro,300VPro,310P3-24G", HBM_PLAN_PLATFORM_ASCEND, GIB(22.12),
     false, "estimate: 24 GB per chip scaled as the 910B4 (0.9216)"},
    {"310P3-48G", "300IDuo,310P3-Duo", HBM_PLAN_PLATFORM_ASCEND, 44278LL << 20, false,
     "vLLM refusal on a 300I Duo chip: 16.58/43.24 GiB; 44278 MB in npu-smi"},
    {"A100-40G", "A100,A100-40GB,A100-SXM4-40GB,A100-PCIE-40GB", HBM_PLAN_PLATFORM_CUDA,
     GIB(39.38), false, "vLLM log (vllm#16570): total_gpu_memory 39.38GiB"},
    {"A100-80G", "A100-80GB,A100-SXM4-80GB,A100-PCIE-80GB", HBM_PLAN_PLATFORM_CUDA, GIB(79.15),
     false, "PyTorch OOM text: 79.15 GiB total capacity"},
    /* vLLM's small-batch exception matches "a100" in the device name: an A800 is large */
    {"A800", "A800-80G,A800-SXM4-80GB,A800-PCIE-80GB", HBM_PLAN_PLATFORM_CUDA, GIB(79.15), true,
     "estimate: the A100-80G's 79.15 GiB (the same 80 GB board)"},
    {"H100-80G", "H100,H100-80GB,H100-SXM,H100-PCIE", HBM_PLAN_PLATFORM_CUDA, GIB(79.18), true,
     "vLLM logs (llm-d): 79.18 GiB"},
    {"H800", "H800-80G,H800-SXM,H800-PCIE", HBM_PLAN_PLATFORM_CUDA, GIB(79.18), true,
     "estimate: the H100-80G's 79.18 GiB (the same 80 GB HBM3)"},
    {"H200", "H200-141G,H200-SXM,H20-141G", HBM_PLAN_PLATFORM_CUDA, GIB(139.81), true,
     "estimate: 143771 MiB less the driver share seen on the H100"},
    {"H20", "H20-96G", HBM_PLAN_PLATFORM_CUDA, GIB(94.99), true,
     "estimate: 97871 MiB less the driver share seen on the H100"},
    {"B200", "B200-180G,B200-SXM", HBM_PLAN_PLATFORM_CUDA, GIB(178.35), true,
     "PyTorch OOM text on 8x B200: total capacity of 178.35 GiB"},
    {"MI300X", "InstinctMI300X,AMDInstinctMI300X,MI300X-192G", HBM_PLAN_PLATFORM_CUDA,
     GIB(191.98), true, "PyTorch (ROCm) OOM text: HIP ... total capacity of 191.98 GiB"},
    {"MI325X", "InstinctMI325X,AMDInstinctMI325X,MI325X-256G", HBM_PLAN_PLATFORM_CUDA,
     GIB(255.98), true,
     "PyTorch (ROCm) OOM text on 8x MI325X: total capacity of 255.98 GiB (vllm#41962)"},
    {"MI355X", "InstinctMI355X,AMDInstinctMI355X,MI355X-288G", HBM_PLAN_PLATFORM_CUDA,
     GIB(288.0), true,
     "vLLM on ROCm requests 273.6 GiB at utilisation 0.95 (SemiAnalysisAI/InferenceX#2522)"},
    {"L40S", "L40S-48G,L40", HBM_PLAN_PLATFORM_CUDA, GIB(44.42), false,
     "PyTorch OOM text: total capacity of 44.42 GiB (8x L40S)"},
    {"L20", "L20-48G", HBM_PLAN_PLATFORM_CUDA, GIB(44.42), false,
     "estimate: the L40S's 44.42 GiB (48 GB GDDR6, 46068 MiB in nvidia-smi on both)"},
    {"A40", "A40-48G,A40-PCIE", HBM_PLAN_PLATFORM_CUDA, GIB(44.43), false,
     "vLLM 0.26.0 log: Free memory on device (44.17/44.43 GiB) (vireshkoli/"
     "LLM-Inference-Optimization results/logs/vllm-bf16.startup.log)"},
    {"RTX6000Ada", "RTX6000AdaGeneration,6000Ada,RTX6000-Ada", HBM_PLAN_PLATFORM_CUDA,
     GIB(44.43), false, "PyTorch OOM text: total capacity of 44.43 GiB (MTVCrafter#21)"},
    {"L4", "L4-24G", HBM_PLAN_PLATFORM_CUDA, GIB(22.03), false,
     "PyTorch OOM text: total capacity of 22.03 GiB on an L4 (evo2#190)"},
    {"RTXPRO6000", "RTXPRO6000Blackwell,RTXPRO6000BlackwellServerEdition,"
     "RTXPRO6000BlackwellWorkstationEdition,PRO6000", HBM_PLAN_PLATFORM_CUDA, GIB(94.97), true,
     "CUDA total=94.97 GiB on a 96 GB RTX PRO 6000 Blackwell, 97887 MiB in nvidia-smi "
     "(antirez/ds4#431)"},
    {"5090", "RTX5090,GeForceRTX5090,5090-32G", HBM_PLAN_PLATFORM_CUDA, GIB(31.40), false,
     "vLLM pre-check text: Free memory on device (30.5/31.4 GiB) (noonghunna/club-3090#1087)"},
    {"5080", "RTX5080,GeForceRTX5080,5080-16G", HBM_PLAN_PLATFORM_CUDA, 15816LL << 20, false,
     "estimate: 16 GB GDDR7 Blackwell, as the RTX 5060 Ti 16 GB's 15816 MiB CUDA-visible "
     "(Luce-Org/lucebox#407)"},
    {"4090", "RTX4090,GeForceRTX4090,4090-24G", HBM_PLAN_PLATFORM_CUDA, GIB(23.64), false,
     "PyTorch OOM text: total capacity of 23.64 GiB"},
    {"3090", "RTX3090,GeForceRTX3090", HBM_PLAN_PLATFORM_CUDA, GIB(23.58), false,
     "vLLM log (vllm#10517): total_gpu_memory=23.58GiB"},
    {"A10", "A10-24G", HBM_PLAN_PLATFORM_CUDA, GIB(22.05), false,
     "vLLM pre-check text: 22.05 GiB total (pytorch#175666)"},
    {"A10G", "A10G-24G", HBM_PLAN_PLATFORM_CUDA, GIB(22.05), false,
     "estimate: the A10's 22.05 GiB (the same 24 GB GDDR6, 23028 MiB in nvidia-smi)"},
};

const hbm_plan_device *hbm_plan_devices(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

/* lower-case, without '-', '_' and spaces, and without a leading "nvidia"/"geforce" */
static void norm(const char *in, char *out, size_t n)
{
    size_t j = 0;
    for (; *in && j + 1 < n; in++)
        if (*in != '-' && *in != '_' && *in != ' ')
            out[j++] = (char)tolower((unsigned char)*in);
    out[j] = 0;
    static const char *const drop[] = {"nvidia", "geforce", "ascend"};
    for (size_t d = 0; d < 3; d++) {
        size_t l = strlen(drop[d]);
        if (!strncmp(out, drop[d], l) && out[l])
            memmove(out, out + l, strlen(out + l) + 1);
    }
}

const hbm_plan_device *hbm_plan_device_find(const char *name)
{
    if (!name || !*name)
        return NULL;
    char want[64], cand[64];
    norm(name, want, sizeof want);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        norm(table[i].name, cand, sizeof cand);
        if (!strcmp(want, cand))
            return &table[i];
        const char *a = table[i].aliases;
        while (a && *a) {
            const char *c = strchr(a, ',');
            size_t l = c ? (size_t)(c - a) : strlen(a);
            char one[64];
            snprintf(one, sizeof one, "%.*s", (int)l, a);
            norm(one, cand, sizeof cand);
            if (!strcmp(want, cand))
                return &table[i];
            a = c ? c + 1 : NULL;
        }
    }
    return NULL;
}

/* "H100-80G" -> "h100", "910B4" -> "910b4", "A100-40G" -> "a100" */
static void family(const char *name, char *out, size_t n)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s", name);
    char *dash = strchr(tmp, '-');
    if (dash)
        *dash = 0;
    norm(tmp, out, n);
}

/* The framework sees a little less than the driver (A100 0.985, H100 0.994, 910B4 0.92 of
 * it), never more: a row outside that is another memory size of the same chip. */
static bool size_fits(const hbm_plan_device *t, int64_t driver_total)
{
    return driver_total <= 0 || ((double)t->total_bytes <= 1.005 * (double)driver_total &&
                                 (double)t->total_bytes >= 0.90 * (double)driver_total);
}

const hbm_plan_device *hbm_plan_device_match(const char *driver_name, int64_t driver_total)
{
    const hbm_plan_device *exact = hbm_plan_device_find(driver_name);
    if (exact && size_fits(exact, driver_total))
        return exact; /* else the same chip in another size (a 310P3 in a 300I Duo) */
    if (!driver_name || !*driver_name)
        return NULL;
    char want[128], fam[64];
    norm(driver_name, want, sizeof want);
    const hbm_plan_device *best = NULL;
    size_t best_len = 0;
    int64_t best_gap = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        family(table[i].name, fam, sizeof fam);
        size_t l = strlen(fam);
        if (l < 2 || !strstr(want, fam))
            continue;
        int64_t gap = driver_total > 0 ? llabs(driver_total - table[i].total_bytes) : 0;
        if (l > best_len || (l == best_len && gap < best_gap)) {
            best = &table[i];
            best_len = l;
            best_gap = gap;
        }
    }
    return best;
}

int hbm_plan_device_memory(const char *driver_name, hbm_plan_platform platform, bool wsl2,
                           int64_t driver_total, int64_t driver_used, hbm_plan_devmem *out,
                           hbm_err *err)
{
    memset(out, 0, sizeof *out);
    if (driver_total <= 0 || driver_used < 0)
        return hbm_err_set(err, "%s reports no memory figures",
                           driver_name && *driver_name ? driver_name : "the device");
    const hbm_plan_device *t = hbm_plan_device_match(driver_name, driver_total);
    if (t && !size_fits(t, driver_total))
        t = NULL;
    out->row = t;
    out->total_bytes = t && !wsl2 ? t->total_bytes : driver_total;
    out->free_bytes = out->total_bytes - driver_used;
    if (out->free_bytes < 0)
        out->free_bytes = 0;
    out->large_device = t ? t->large_class
                          : platform == HBM_PLAN_PLATFORM_CUDA &&
                                out->total_bytes >= 70 * HBM_GIB &&
                                !(driver_name && strstr(driver_name, "A100"));
    return 0;
}
