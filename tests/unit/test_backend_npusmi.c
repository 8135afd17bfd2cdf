/* The npu-smi reader against every real sample (tests/fixtures/npu-smi, copied verbatim from
 * the public sources listed in tests/fixtures/npu-smi/SOURCES.md) and against broken input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hbm/npusmi.h"
#include "hbm/verdict.h"

#define FIX HBM_SOURCE_DIR "/tests/fixtures/npu-smi/"
#define MB (1024LL * 1024)

static void load(hbm_obs *obs, const char *file)
{
    char *path = hbm_xasprintf("%s%s", FIX, file), *text;
    size_t len;
    hbm_err err = {{0}};
    assert_int_equal(hbm_read_file(path, 1 << 20, &text, &len, &err), 0);
    hbm_obs_init(obs);
    int rc = hbm_npusmi_parse_info(obs, text, len, file, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    hbm_verdict_apply(obs);
    free(text);
    free(path);
}

static int parse_text(const char *text, hbm_err *err)
{
    hbm_obs obs;
    hbm_obs_init(&obs);
    int rc = hbm_npusmi_parse_info(&obs, text, strlen(text), "t.txt", err);
    hbm_obs_free(&obs);
    return rc;
}

static void mem_is(const hbm_device *d, int64_t used_mb, int64_t total_mb)
{
    assert_int_equal(d->memory_used_bytes, used_mb * MB);
    assert_int_equal(d->memory_total_bytes, total_mb * MB);
}

static void proc_is(const hbm_dproc *p, int64_t pid, const char *name, int64_t mb)
{
    assert_int_equal(p->pid, pid);
    assert_string_equal(p->name, name);
    assert_int_equal(p->memory_bytes, mb * MB);
}

static void s01_910b3_one_process(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "01-910B3-8card-npusmi25.2-1proc.txt");
    static const int64_t used[] = {3407, 3398, 3400, 3400, 21784, 3400, 3401, 3413};
    assert_int_equal(o.ndevs, 8);
    assert_string_equal(o.driver_version, "25.2.0");
    assert_false(o.partial);
    for (int i = 0; i < 8; i++) {
        const hbm_device *d = &o.devs[i];
        assert_int_equal(d->index, i);
        assert_int_equal(d->chip, 0);
        assert_string_equal(d->name, "910B3");
        assert_string_equal(d->health, "OK");
        mem_is(d, used[i], 65536);
        assert_int_equal(d->hugepages_used, 0);
        assert_int_equal(d->hugepages_total, 0);
        assert_true(d->procs_known);
        assert_int_equal(d->nprocs, i == 4 ? 1 : 0);
        assert_int_equal(d->verdict, i == 4 ? HBM_VERDICT_BUSY : HBM_VERDICT_FREE);
    }
    assert_string_equal(o.devs[0].bus_id, "0000:C1:00.0");
    assert_true(fabs(o.devs[0].power_watts - 94.8) < 1e-9);
    assert_true(fabs(o.devs[0].temperature_celsius - 36) < 1e-9);
    assert_true(fabs(o.devs[4].utilization_ratio - 0.25) < 1e-9);
    proc_is(&o.devs[4].procs[0], 1601114, "python", 18429);
    hbm_obs_free(&o);
}

static void s02_910b3_empty_names(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "02-910B3-8card-npusmi25.0rc1-8proc-emptyname.txt");
    static const int64_t pids[] = {1067983, 1070524, 1073093, 1075396,
                                   1077642, 1079652, 1082071, 1084428};
    assert_int_equal(o.ndevs, 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(o.devs[i].nprocs, 1);
        proc_is(&o.devs[i].procs[0], pids[i], "", i == 5 ? 56374 : 56373);
        assert_int_equal(o.devs[i].verdict, HBM_VERDICT_BUSY);
    }
    hbm_obs_free(&o);
}

static void s03_a3_two_dies(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "03-910_93-A3-8npu16chip-npusmi25.3rc1-multiproc.txt");
    assert_int_equal(o.ndevs, 16);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(o.devs[i].index, i / 2);
        assert_int_equal(o.devs[i].chip, i % 2);
        assert_int_equal(o.devs[i].phy_id, i);
        assert_string_equal(o.devs[i].name, "Ascend910");
        assert_int_equal(o.devs[i].memory_total_bytes, 65536 * MB);
    }
    mem_is(&o.devs[0], 3150, 65536);
    mem_is(&o.devs[1], 2886, 65536);
    assert_true(isnan(o.devs[1].power_watts)); /* die 1 prints '-' */
    assert_true(fabs(o.devs[0].power_watts - 166.6) < 1e-9);
    assert_string_equal(o.devs[3].bus_id, "0000:9B:00.0");
    /* NPU 4: one process per die. */
    assert_int_equal(o.devs[8].nprocs, 1);
    proc_is(&o.devs[8].procs[0], 1534604, "", 54963);
    proc_is(&o.devs[9].procs[0], 1539371, "", 55217);
    /* NPU 6 die 0: a 116 MB context entry of a pid working on die 1, plus its own worker. */
    assert_int_equal(o.devs[12].nprocs, 2);
    proc_is(&o.devs[12].procs[0], 1756550, "", 116);
    proc_is(&o.devs[12].procs[1], 1732918, "", 53740);
    proc_is(&o.devs[13].procs[0], 1756550, "", 54252);
    for (int i = 0; i < 8; i++)
        assert_int_equal(o.devs[i].verdict, HBM_VERDICT_FREE);
    for (int i = 8; i < 16; i++)
        assert_int_equal(o.devs[i].verdict, HBM_VERDICT_BUSY);
    hbm_obs_free(&o);
}

static void s04_first_gen_910_ddr_and_hbm(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "04-Ascend910-1stgen-name910B-8card-npusmi24.1-noproctable.txt");
    assert_int_equal(o.ndevs, 8);
    assert_string_equal(o.devs[0].name, "910B");
    mem_is(&o.devs[0], 1365, 32768);
    assert_int_equal(o.devs[0].ddr_used_bytes, 1197 * MB);
    assert_int_equal(o.devs[0].ddr_total_bytes, 13553 * MB);
    mem_is(&o.devs[1], 4, 32768);
    assert_false(o.devs[0].procs_known);
    hbm_obs_free(&o);
}

static void s05_310(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "05-310-1card-npusmi23.0-noproc.txt");
    assert_int_equal(o.ndevs, 1);
    assert_string_equal(o.devs[0].name, "310");
    mem_is(&o.devs[0], 577, 7759);
    assert_int_equal(o.devs[0].hugepages_used, 0);
    assert_int_equal(o.devs[0].hugepages_total, 969);
    assert_int_equal(o.devs[0].logic_id, 0);
    assert_true(o.devs[0].procs_known);
    assert_int_equal(o.devs[0].nprocs, 0);
    assert_int_equal(o.devs[0].verdict, HBM_VERDICT_FREE);
    hbm_obs_free(&o);
}

static void s07_910prob_narrow(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "07-Ascend910-1stgen-910ProB-1visible-npusmi23.0rc1-noproc.txt");
    assert_int_equal(o.ndevs, 1);
    assert_int_equal(o.devs[0].index, 2);
    assert_string_equal(o.devs[0].name, "910ProB");
    mem_is(&o.devs[0], 1, 32768);
    assert_int_equal(o.devs[0].ddr_used_bytes, 2322 * MB);
    assert_int_equal(o.devs[0].verdict, HBM_VERDICT_FREE);
    hbm_obs_free(&o);
}

static void s08_910b4_container(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "08-910B4-1card-npusmi24.1rc1-noproc-container.txt");
    assert_int_equal(o.ndevs, 1);
    mem_is(&o.devs[0], 2773, 32768);
    assert_string_equal(o.devs[0].bus_id, "0000:82:00.0");
    assert_int_equal(o.devs[0].verdict, HBM_VERDICT_FREE);
    hbm_obs_free(&o);
}

static void s09_wide_fragment(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "09-910B4-1card-npusmi26.0rc1-widelayout-pidincontainer-FRAGMENT.txt");
    assert_int_equal(o.ndevs, 1);
    assert_true(o.partial);
    mem_is(&o.devs[0], 2871, 32768);
    assert_true(fabs(o.devs[0].power_watts - 82.6) < 1e-9);
    assert_true(o.devs[0].procs_known);
    assert_int_equal(o.devs[0].nprocs, 0);
    hbm_obs_free(&o);
}

static void s11_oldest_310p3(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "11-310P3-1chip-npusmi22.0.0-drv22.0.2-noproctable.txt");
    assert_int_equal(o.ndevs, 1);
    assert_string_equal(o.driver_version, "22.0.2");
    mem_is(&o.devs[0], 932, 21534);
    assert_true(fabs(o.devs[0].power_watts - 16.7) < 1e-9);
    assert_string_equal(o.devs[0].bus_id, "0000:5E:00.0");
    hbm_obs_free(&o);
}

static void s12_310p3_subset(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "12-310P3-2npu-npusmi25.5.1-host-noproctable.txt");
    assert_int_equal(o.ndevs, 2);
    assert_int_equal(o.devs[0].index, 4);
    assert_int_equal(o.devs[1].index, 5);
    assert_int_equal(o.devs[0].logic_id, 0);
    assert_int_equal(o.devs[1].logic_id, 1);
    assert_true(isnan(o.devs[0].power_watts));
    mem_is(&o.devs[0], 1848, 21525);
    mem_is(&o.devs[1], 1849, 21525);
    hbm_obs_free(&o);
}

static void s13_hami_slice(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "13-310P3-hami-softslice-incontainer-npusmi25.5.1-npuid32768.txt");
    assert_int_equal(o.ndevs, 1);
    assert_int_equal(o.devs[0].index, 32768);
    mem_is(&o.devs[0], 0, 8192);
    hbm_obs_free(&o);
}

static void s14_duo_card(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "14-310P3-300IDuo-1card2chip-npusmi24.1rc2-npuid1792-noproc.txt");
    assert_int_equal(o.ndevs, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(o.devs[i].index, 1792);
        assert_int_equal(o.devs[i].chip, i);
        assert_int_equal(o.devs[i].logic_id, i);
        assert_true(o.devs[i].procs_known);
        assert_int_equal(o.devs[i].verdict, HBM_VERDICT_FREE);
    }
    mem_is(&o.devs[0], 1821, 44280);
    mem_is(&o.devs[1], 1041, 43693);
    hbm_obs_free(&o);
}

static void s16_310b1_soc(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "16-310B1-1chip-npusmi23.0rc3-busid-NA-hugepages.txt");
    assert_int_equal(o.ndevs, 1);
    assert_string_equal(o.devs[0].bus_id, "");
    assert_int_equal(o.devs[0].hugepages_used, 15);
    assert_int_equal(o.devs[0].hugepages_total, 15);
    mem_is(&o.devs[0], 7356, 11577);
    hbm_obs_free(&o);
}

static void s18_elided_fragment(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "18-910B1-8card-npusmi23.0rc2-FRAGMENT-elided.txt");
    assert_true(o.partial);
    assert_int_equal(o.ndevs, 3);
    assert_int_equal(o.devs[0].index, 0);
    assert_int_equal(o.devs[1].index, 1);
    assert_int_equal(o.devs[2].index, 7);
    mem_is(&o.devs[2], 4174, 65536);
    hbm_obs_free(&o);
}

static void s19_910b3_idle(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "19-910B3-8card-npusmi24.1rc1.b030-idle.txt");
    assert_int_equal(o.ndevs, 8);
    mem_is(&o.devs[0], 3318, 65536);
    mem_is(&o.devs[1], 3314, 65536);
    for (int i = 0; i < 8; i++)
        assert_int_equal(o.devs[i].verdict, HBM_VERDICT_FREE);
    hbm_obs_free(&o);
}

static void s21_vnpu(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "21-310P3-vNPU-310Pvir01-incontainer-npusmi22.0.4.txt");
    assert_int_equal(o.ndevs, 1);
    assert_int_equal(o.devs[0].index, 7);
    assert_string_equal(o.devs[0].name, "310Pvir01");
    mem_is(&o.devs[0], 249, 2690);
    assert_string_equal(o.devs[0].bus_id, "0000:00:07.0");
    hbm_obs_free(&o);
}

static void s24_process_table_fragment(void **st)
{
    (void)st;
    hbm_obs o;
    load(&o, "24-unknownchip-proctable-8procs-one-chip-tab-FRAGMENT.txt");
    assert_true(o.partial);
    assert_int_equal(o.ndevs, 1);
    const hbm_device *d = &o.devs[0];
    assert_int_equal(d->nprocs, 8);
    assert_true(d->procs_truncated);
    assert_int_equal(d->memory_used_bytes, HBM_UNKNOWN);
    proc_is(&d->procs[0], 47928, "python", 90);
    proc_is(&d->procs[6], 47881, "python", 4184);
    assert_int_equal(d->verdict, HBM_VERDICT_BUSY);
    assert_non_null(strstr(d->reason, "at most 8"));
    hbm_obs_free(&o);
}

static void vendor_template_is_refused(void **st)
{
    (void)st;
    char *text;
    size_t len;
    hbm_err err = {{0}};
    assert_int_equal(hbm_read_file(FIX "vendordoc-950-npu-smi-info-template-placeholders.txt",
                                   1 << 20, &text, &len, &err), 0);
    hbm_obs o;
    hbm_obs_init(&o);
    assert_int_equal(hbm_npusmi_parse_info(&o, text, len, "tpl.txt", &err), -1);
    assert_non_null(strstr(err.msg, "tpl.txt:7:"));
    assert_non_null(strstr(err.msg, "placeholder"));
    hbm_obs_free(&o);
    free(text);
}

static const char *HEAD =
    "+---------------------------+---------------+----------------------------------------------------+\n"
    "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n"
    "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\n"
    "+===========================+===============+====================================================+\n";

static void broken_inputs_name_the_line(void **st)
{
    (void)st;
    hbm_err err = {{0}};
    assert_int_equal(parse_text("", &err), -1);
    assert_non_null(strstr(err.msg, "t.txt:1: empty"));

    char *cut = hbm_xasprintf("%s| 0     910B3               | OK            | 94.8        36   ",
                              HEAD);
    assert_int_equal(parse_text(cut, &err), -1);
    assert_non_null(strstr(err.msg, "t.txt:5: the paste ends before any device"));
    free(cut);

    char *cols = hbm_xasprintf("%s| 0     910B3               | OK            | 94.8 | 36  |\n", HEAD);
    assert_int_equal(parse_text(cols, &err), -1);
    assert_non_null(strstr(err.msg, "t.txt:5: row has 4 cells"));
    free(cols);

    char *half = hbm_xasprintf(
        "%s| 0     910B3               | OK            | 94.8        36                0    / 0             |\n"
        "+===========================+===============+====================================================+\n",
        HEAD);
    assert_int_equal(parse_text(half, &err), -1);
    assert_non_null(strstr(err.msg, "t.txt:6:"));
    free(half);

    char *nan = hbm_xasprintf(
        "%s| 0     910B3               | OK            | 94.8        hot               0    / 0             |\n",
        HEAD);
    assert_int_equal(parse_text(nan, &err), -1);
    assert_non_null(strstr(err.msg, "t.txt:5: Temp(C) value 'hot'"));
    free(nan);

    char *tail = hbm_xasprintf(
        "%s| 0     910B3               | OK            | 94.8        36                0    / 0             |\n"
        "| 0                         | 0000:C1:00.0  | 0           0    / 0          3407 / 65536         |\n"
        "+===========================+===============+====================================================+\n"
        "junk", HEAD);
    size_t tlen = strlen(tail);
    tail[tlen - 2] = '\0'; /* binary after the table */
    hbm_obs o;
    hbm_obs_init(&o);
    assert_int_equal(hbm_npusmi_parse_info(&o, tail, tlen, "t.txt", &err), -1);
    assert_non_null(strstr(err.msg, "t.txt:8: binary data"));
    hbm_obs_free(&o);
    free(tail);

    assert_int_equal(parse_text("hello\nworld\n", &err), -1);
    assert_non_null(strstr(err.msg, "no npu-smi table"));

    char junk[4096];
    for (size_t i = 0; i < sizeof junk - 1; i++)
        junk[i] = (char)('!' + (i * 7919) % 90);
    junk[sizeof junk - 1] = '\0';
    assert_int_equal(parse_text(junk, &err), -1);
}

static void same_device(const hbm_device *a, const hbm_device *b)
{
    assert_int_equal(a->index, b->index);
    assert_int_equal(a->chip, b->chip);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->bus_id, b->bus_id);
    assert_string_equal(a->health, b->health);
    assert_int_equal(a->memory_used_bytes, b->memory_used_bytes);
    assert_int_equal(a->memory_total_bytes, b->memory_total_bytes);
    assert_int_equal(a->hugepages_used, b->hugepages_used);
    assert_int_equal(a->ddr_used_bytes, b->ddr_used_bytes);
    assert_memory_equal(&a->power_watts, &b->power_watts, sizeof a->power_watts);
    assert_memory_equal(&a->utilization_ratio, &b->utilization_ratio, sizeof(double));
    /* A cut in the process table keeps the rows before it: a prefix of the full list. */
    assert_true(a->nprocs <= b->nprocs);
    for (size_t k = 0; k < a->nprocs; k++) {
        assert_int_equal(a->procs[k].pid, b->procs[k].pid);
        assert_int_equal(a->procs[k].memory_bytes, b->procs[k].memory_bytes);
        assert_string_equal(a->procs[k].name, b->procs[k].name);
    }
}

/* Every prefix of every real paste: no crash, no device that was cut, and once a device is
 * complete the paste is read (exit 2 only before that). */
static void cut_at_every_byte(void **st)
{
    (void)st;
    static const char *files[] = {
        "01-910B3-8card-npusmi25.2-1proc.txt",
        "02-910B3-8card-npusmi25.0rc1-8proc-emptyname.txt",
        "03-910_93-A3-8npu16chip-npusmi25.3rc1-multiproc.txt",
        "04-Ascend910-1stgen-name910B-8card-npusmi24.1-noproctable.txt",
        "05-310-1card-npusmi23.0-noproc.txt",
        "09-910B4-1card-npusmi26.0rc1-widelayout-pidincontainer-FRAGMENT.txt",
        "13-310P3-hami-softslice-incontainer-npusmi25.5.1-npuid32768.txt",
        "14-310P3-300IDuo-1card2chip-npusmi24.1rc2-npuid1792-noproc.txt",
        "18-910B1-8card-npusmi23.0rc2-FRAGMENT-elided.txt",
        "24-unknownchip-proctable-8procs-one-chip-tab-FRAGMENT.txt",
    };
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        hbm_obs full;
        load(&full, files[f]);
        char *path = hbm_xasprintf("%s%s", FIX, files[f]), *text;
        size_t len;
        hbm_err err = {{0}};
        assert_int_equal(hbm_read_file(path, 1 << 20, &text, &len, &err), 0);
        bool read_once = false;
        size_t cut_rows = 0;
        for (size_t n = 1; n < len; n++) {
            hbm_obs o;
            hbm_obs_init(&o);
            int rc = hbm_npusmi_parse_info(&o, text, n, files[f], &err);
            if (rc != 0) {
                if (read_once)
                    fail_msg("%s: prefix of %zu bytes refused after a shorter one was read: "
                             "%s", files[f], n, err.msg);
                hbm_obs_free(&o);
                continue;
            }
            read_once = true;
            assert_true(o.ndevs <= full.ndevs);
            for (size_t i = 0; i < o.ndevs; i++)
                same_device(&o.devs[i], &full.devs[i]);
            if (strstr(o.partial_why, "the paste ends inside"))
                cut_rows++;
            hbm_obs_free(&o);
        }
        assert_true(read_once);
        if (cut_rows == 0 && full.ndevs > 1)
            fail_msg("%s: no prefix was read as cut", files[f]);
        free(text);
        free(path);
        hbm_obs_free(&full);
    }
}

/* A paste that ends inside a border line: the devices before it are whole, but the
 * process table that would follow is missing, so the observation is partial. A complete
 * closing border (a version that prints no process table) is not. */
static void cut_inside_a_border(void **st)
{
    (void)st;
    static const char *files[] = {"04-Ascend910-1stgen-name910B-8card-npusmi24.1-noproctable.txt",
                                  "01-910B3-8card-npusmi25.2-1proc.txt"};
    for (size_t f = 0; f < 2; f++) {
        char *path = hbm_xasprintf("%s%s", FIX, files[f]), *text;
        size_t len;
        hbm_err err = {{0}};
        assert_int_equal(hbm_read_file(path, 1 << 20, &text, &len, &err), 0);
        /* The last border of the device table (04: the end of the paste; 01: before its
         * process table), cut after 20 of its bytes. */
        const char *proc = strstr(text, "| NPU     Chip");
        const char *stop = proc ? proc : text + len;
        const char *b = stop;
        while (b > text && !(b[-1] == '\n' && b[0] == '+'))
            b--;
        if (proc) /* the border before the process header closes the device table */
            for (b--; b > text && !(b[-1] == '\n' && b[0] == '+'); b--)
                ;
        hbm_obs o;
        hbm_obs_init(&o);
        assert_int_equal(hbm_npusmi_parse_info(&o, text, (size_t)(b - text) + 20, files[f], &err), 0);
        assert_true(o.ndevs > 0);
        assert_true(o.partial);
        assert_non_null(strstr(o.partial_why, "ends inside a border line"));
        hbm_obs_free(&o);
        if (!proc) { /* whole, it is not partial */
            hbm_obs_init(&o);
            assert_int_equal(hbm_npusmi_parse_info(&o, text, len, files[f], &err), 0);
            assert_false(o.partial);
            hbm_obs_free(&o);
        }
        free(text);
        free(path);
    }
}

static void layout_is_read_from_the_header(void **st)
{
    (void)st;
    /* Columns in an order no sample has, with an extra column: still read by label. */
    const char *text =
        "+----------------+----------+-----------------------------------------------+\n"
        "| Name   NPU     | Health   | Temp(C)     Power(W)    Future(x)              |\n"
        "| Bus-Id         | Chip     | HBM-Usage(MB)       AICore(%)                   |\n"
        "+================+==========+===============================================+\n"
        "| 910B9  3       | OK       | 41          120.5       7                      |\n"
        "| 0000:01:00.0   | 0        | 5000 / 98304        12                          |\n"
        "+================+==========+===============================================+\n";
    hbm_obs o;
    hbm_obs_init(&o);
    hbm_err err = {{0}};
    if (hbm_npusmi_parse_info(&o, text, strlen(text), "new.txt", &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(o.ndevs, 1);
    assert_int_equal(o.devs[0].index, 3);
    assert_string_equal(o.devs[0].name, "910B9");
    assert_true(fabs(o.devs[0].power_watts - 120.5) < 1e-9);
    assert_true(fabs(o.devs[0].temperature_celsius - 41) < 1e-9);
    assert_true(fabs(o.devs[0].utilization_ratio - 0.12) < 1e-9);
    mem_is(&o.devs[0], 5000, 98304);
    hbm_obs_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(s01_910b3_one_process),
        cmocka_unit_test(s02_910b3_empty_names),
        cmocka_unit_test(s03_a3_two_dies),
        cmocka_unit_test(s04_first_gen_910_ddr_and_hbm),
        cmocka_unit_test(s05_310),
        cmocka_unit_test(s07_910prob_narrow),
        cmocka_unit_test(s08_910b4_container),
        cmocka_unit_test(s09_wide_fragment),
        cmocka_unit_test(s11_oldest_310p3),
        cmocka_unit_test(s12_310p3_subset),
        cmocka_unit_test(s13_hami_slice),
        cmocka_unit_test(s14_duo_card),
        cmocka_unit_test(s16_310b1_soc),
        cmocka_unit_test(s18_elided_fragment),
        cmocka_unit_test(s19_910b3_idle),
        cmocka_unit_test(s21_vnpu),
        cmocka_unit_test(s24_process_table_fragment),
        cmocka_unit_test(vendor_template_is_refused),
        cmocka_unit_test(broken_inputs_name_the_line),
        cmocka_unit_test(layout_is_read_from_the_header),
        cmocka_unit_test(cut_at_every_byte),
        cmocka_unit_test(cut_inside_a_border),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
