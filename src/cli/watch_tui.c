/* The full-screen view of `hbmctl watch` (ncurses): a device table with a memory history
 * strip, the processes of the selected device, optional details, and leak and threshold
 * events. Keys: q quit, s sort, up/down or digits pick a device, Enter details. */
#ifdef HBM_HAVE_NCURSES
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include <ncurses.h>

#include "watch_session.h"

/* A history strip of `width` cells, newest on the right, scaled to the device total. */
static void draw_strip(const hbm_watch_series *s, int64_t total, int y, int x, int width,
                       bool utf8)
{
    static const wchar_t bars[] = L" \u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588";
    static const char ascii[] = " .:-=+*#%@";
    int levels[HBM_WATCH_HISTORY]; /* wider strips are blank on their left: no history */
    if (width > HBM_WATCH_HISTORY) {
        x += width - HBM_WATCH_HISTORY;
        width = HBM_WATCH_HISTORY;
    }
    hbm_watch_strip(s, total, levels, width);
    for (int k = 0; k < width; k++) {
        if (utf8) {
            wchar_t cell[2] = {levels[k] < 0 ? L' ' : bars[levels[k]], L'\0'};
            mvaddnwstr(y, x + k, cell, 1);
        } else {
            mvaddch(y, x + k, (chtype)(levels[k] < 0 ? ' ' : ascii[levels[k]]));
        }
    }
}

static void fmt_pct(char *buf, size_t n, const hbm_device *d)
{
    if (d->memory_used_bytes >= 0 && d->memory_total_bytes > 0)
        snprintf(buf, n, "%3.0f%%",
                 100.0 * (double)d->memory_used_bytes / (double)d->memory_total_bytes);
    else
        snprintf(buf, n, "   -");
}

static void draw_processes(const watch_ctx *c, const hbm_device *d, int *row, int rows, int cols)
{
    char mem[32], desc[120];
    int y = *row;
    if (y >= rows - 2)
        return;
    attron(A_BOLD);
    mvprintw(y++, 0, "processes on device %lld (%zu)%s", (long long)hbm_device_user_id(d),
             d->nprocs, d->procs_truncated ? ", list may be cut (npu-smi shows 8)" : "");
    attroff(A_BOLD);
    if (y < rows - 2)
        mvprintw(y++, 0, "%8s  %-16s %11s  %-28s %-9s %s", "PID", "NAME", "MEMORY", "CONTAINER/POD",
                 "STATE", "LEAK");
    if (d->nprocs == 0 && y < rows - 2)
        mvprintw(y++, 0, "  %s", d->procs_known ? "no process" : "the source lists no processes");
    for (size_t i = 0; i < d->nprocs && y < rows - 2; i++) {
        const hbm_dproc *p = &d->procs[i];
        const hbm_watch_series *s = hbm_watch_find(&c->s.w, hbm_device_user_id(d), p->pid);
        char line[512], where[320];
        snprintf(line, sizeof line, "%8lld  %-16.16s %11s  %-28.28s %-9s %s", (long long)p->pid,
                 p->name[0] ? p->name : "-", cli_size(mem, sizeof mem, p->memory_bytes),
                 cli_proc_where(where, sizeof where, p), hbm_pid_state_name(p->state),
                 s ? hbm_watch_describe(s, desc, sizeof desc) : "-");
        if (s && s->det.st.leak)
            attron(COLOR_PAIR(HBM_WATCH_TONE_BAD) | A_BOLD);
        mvaddnstr(y++, 0, line, cols);
        if (s && s->det.st.leak)
            attroff(COLOR_PAIR(HBM_WATCH_TONE_BAD) | A_BOLD);
    }
    *row = y + 1;
}

static void draw_details(const watch_ctx *c, const hbm_device *d, int *row, int rows, int cols)
{
    const hbm_watch_series *s = hbm_watch_find(&c->s.w, hbm_device_user_id(d), HBM_UNKNOWN);
    char a[32], b[32], e[32], f[32];
    char lines[6][512];
    char ids[3][24];
    int64_t idv[3] = {d->index, d->chip, d->logic_id};
    for (int i = 0; i < 3; i++) {
        if (idv[i] < 0)
            snprintf(ids[i], sizeof ids[i], "-");
        else
            snprintf(ids[i], sizeof ids[i], "%lld", (long long)idv[i]);
    }
    int n = 0;
    snprintf(lines[n++], sizeof lines[0],
             "device %lld  index %s  chip %s  logic %s  bus %s  health %s",
             (long long)hbm_device_user_id(d), ids[0], ids[1], ids[2],
             d->bus_id[0] ? d->bus_id : "-", d->health[0] ? d->health : "-");
    snprintf(lines[n++], sizeof lines[0], "power %s W  temperature %s C  utilisation %s",
             isfinite(d->power_watts) ? (snprintf(a, sizeof a, "%.1f", d->power_watts), a) : "-",
             isfinite(d->temperature_celsius)
                 ? (snprintf(b, sizeof b, "%.0f", d->temperature_celsius), b)
                 : "-",
             isfinite(d->utilization_ratio)
                 ? (snprintf(e, sizeof e, "%.0f%%", d->utilization_ratio * 100), e)
                 : "-");
    snprintf(lines[n++], sizeof lines[0], "verdict %s: %s", hbm_verdict_name(d->verdict),
             d->reason[0] ? d->reason : "-");
    if (s && s->det.st.ready) {
        const hbm_leak_status *st = &s->det.st;
        snprintf(lines[n++], sizeof lines[0],
                 "leak detector: level %s  base %s  steps %d  step size %s  noise %s",
                 cli_size(a, sizeof a, st->level), cli_size(b, sizeof b, st->base), st->steps,
                 cli_size(e, sizeof e, st->step_bytes),
                 cli_size(f, sizeof f, isfinite(st->noise_bytes) ? (int64_t)st->noise_bytes
                                                                 : HBM_UNKNOWN));
    }
    for (int i = 0; i < n && *row < rows - 2; i++)
        mvaddnstr((*row)++, 0, lines[i], cols);
    (*row)++;
}

static void draw_servers(const watch_ctx *c, int *row, int rows, int cols)
{
    char line[600];
    bool stalled;
    for (size_t k = 0; *row < rows - 2 && watch_server_line(c, k, line, sizeof line, &stalled);
         k++) {
        if (stalled)
            attron(COLOR_PAIR(HBM_WATCH_TONE_BAD) | A_BOLD);
        mvaddnstr((*row)++, 0, line, cols);
        if (stalled)
            attroff(COLOR_PAIR(HBM_WATCH_TONE_BAD) | A_BOLD);
    }
}

static void draw(const watch_ctx *c, hbm_watch_view *v, bool utf8)
{
    erase();
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    char when[32];
    time_t t = (time_t)hbm_now_wall();
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    char head[400];
    snprintf(head, sizeof head, "hbmctl watch  %s  %s  every %.3gs  sample %ld  sort: %s",
             c->s.have_obs ? c->s.obs.hostname : "", c->s.have_obs ? c->s.obs.backend : "",
             c->interval,
             c->s.samples, hbm_watch_sort_name(v->sort));
    attron(A_BOLD);
    mvaddnstr(0, 0, head, cols);
    attroff(A_BOLD);
    mvaddnstr(0, cols - 9 > 0 ? cols - 9 : 0, when, cols > 9 ? 9 : cols);
    int row = 1;
    if (c->s.error[0]) {
        attron(COLOR_PAIR(HBM_WATCH_TONE_BAD));
        mvaddnstr(row++, 0, c->s.error, cols);
        attroff(COLOR_PAIR(HBM_WATCH_TONE_BAD));
    }
    row++;
    size_t idx[256];
    size_t n = hbm_watch_view_rows(&c->s, v, idx, 256);
    const int fixed = 4 + 1 + 12 + 1 + 23 + 1 + 4 + 1 + 11 + 1 + 22 + 1;
    int strip = hbm_watch_strip_cells(cols - fixed);
    char hdr[400];
    snprintf(hdr, sizeof hdr, "%4s %-12s %23s %4s %-11s %-22s %s", "ID", "NAME", "USED / TOTAL",
             "%", "VERDICT", "LEAK", strip ? "HISTORY" : "");
    attron(A_UNDERLINE);
    mvaddnstr(row++, 0, hdr, cols);
    attroff(A_UNDERLINE);
    const hbm_device *sel = NULL;
    for (size_t k = 0; k < n && row < rows - 2; k++) {
        const hbm_device *d = &c->s.obs.devs[idx[k]];
        int64_t id = hbm_device_user_id(d);
        const hbm_watch_series *s = hbm_watch_find(&c->s.w, id, HBM_UNKNOWN);
        char used[32], total[32], pair[64], pct[8], desc[160];
        snprintf(pair, sizeof pair, "%s / %s", cli_size(used, sizeof used, d->memory_used_bytes),
                 cli_size(total, sizeof total, d->memory_total_bytes));
        fmt_pct(pct, sizeof pct, d);
        bool is_sel = id == v->selected;
        if (is_sel)
            sel = d;
        char line[400];
        snprintf(line, sizeof line, "%4lld %-12.12s %23s %4s ", (long long)id,
                 d->name[0] ? d->name : "-", pair, pct);
        if (is_sel)
            attron(A_REVERSE);
        mvaddnstr(row, 0, line, cols);
        if (is_sel)
            attroff(A_REVERSE);
        int x = (int)strlen(line);
        if (x < cols) {
            attron(COLOR_PAIR(hbm_watch_verdict_tone(d->verdict)) | A_BOLD);
            mvaddnstr(row, x, hbm_verdict_name(d->verdict), cols - x);
            attroff(COLOR_PAIR(hbm_watch_verdict_tone(d->verdict)) | A_BOLD);
        }
        x += 12;
        if (x < cols) {
            bool leak = s && s->det.st.leak;
            if (leak)
                attron(COLOR_PAIR(HBM_WATCH_TONE_BAD) | A_BOLD);
            snprintf(line, sizeof line, "%-22.22s", s ? hbm_watch_describe(s, desc, sizeof desc)
                                                      : "-");
            mvaddnstr(row, x, line, cols - x);
            if (leak)
                attroff(COLOR_PAIR(HBM_WATCH_TONE_BAD) | A_BOLD);
        }
        x += 23;
        if (strip)
            draw_strip(s, d->memory_total_bytes, row, x, strip, utf8);
        row++;
    }
    if (c->s.have_obs && n == 0 && row < rows - 2)
        mvaddnstr(row++, 0, "no device to show", cols);
    draw_servers(c, &row, rows, cols);
    row++;
    if (sel && v->details)
        draw_details(c, sel, &row, rows, cols);
    if (sel)
        draw_processes(c, sel, &row, rows, cols);
    /* Events, newest last, above the key line. */
    int shown = rows - 2 - row;
    shown = shown < 0 ? 0 : shown > (int)c->s.nevents ? (int)c->s.nevents : shown;
    int first = rows - 2 - shown;
    for (size_t i = c->s.nevents - (size_t)shown; i < c->s.nevents; i++) {
        const hbm_watch_event *e = &c->s.events[i];
        bool leak = e->kind == HBM_WATCH_EV_LEAK || e->kind == HBM_WATCH_EV_STALL;
        char text[200];
        if (leak)
            attron(COLOR_PAIR(HBM_WATCH_TONE_BAD) | A_BOLD);
        mvaddnstr(first++, 0, watch_event_text(e, text, sizeof text), cols);
        if (leak)
            attroff(COLOR_PAIR(HBM_WATCH_TONE_BAD) | A_BOLD);
    }
    attron(A_REVERSE);
    mvaddnstr(rows - 1, 0,
              " q quit  s sort  up/down or digits pick a device  Enter details ", cols);
    attroff(A_REVERSE);
    refresh();
}

int watch_tui_run(watch_ctx *c)
{
    setlocale(LC_ALL, "");
    hbm_watch_view v;
    hbm_watch_view_init(&v);
    bool utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    if (hbm_watch_session_sample(&c->s) < 0) {
        cli_errorf("%s", c->s.error);
        return CLI_EXIT_ERROR;
    }
    const char *why = hbm_watch_curses_load();
    if (why) {
        cli_errorf("watch: cannot start the terminal view: %s", why);
        return CLI_EXIT_ERROR;
    }
    SCREEN *scr = newterm(NULL, cli_raw_stdout(), stdin); /* ncurses escapes what it draws */
    if (!scr) {
        cli_errorf("watch: cannot start the terminal view (TERM=%s)",
                   getenv("TERM") ? getenv("TERM") : "");
        return CLI_EXIT_ERROR;
    }
    set_term(scr);
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    if (has_colors() && cli_color(stdout)) {
        start_color();
        use_default_colors();
        init_pair(HBM_WATCH_TONE_FREE, COLOR_GREEN, -1);
        init_pair(HBM_WATCH_TONE_BUSY, COLOR_YELLOW, -1);
        init_pair(HBM_WATCH_TONE_ODD, COLOR_MAGENTA, -1);
        init_pair(HBM_WATCH_TONE_BAD, COLOR_RED, -1);
    }
    timeout(100);
    double next = hbm_now_mono() + c->interval;
    bool quit = false;
    draw(c, &v, utf8);
    while (!quit) {
        int ch = getch();
        bool redraw = false;
        switch (ch) {
        case 'q':
        case 'Q':
            quit = true;
            break;
        case 's':
        case 'S':
            v.sort = (v.sort + 1) % HBM_WATCH_SORT_N;
            redraw = true;
            break;
        case KEY_UP:
        case 'k':
            hbm_watch_view_move(&v, &c->s, -1);
            redraw = true;
            break;
        case KEY_DOWN:
        case 'j':
            hbm_watch_view_move(&v, &c->s, 1);
            redraw = true;
            break;
        case '\n':
        case '\r':
        case KEY_ENTER:
            v.details = !v.details;
            redraw = true;
            break;
        case KEY_RESIZE:
            redraw = true;
            break;
        default:
            if (ch >= '0' && ch <= '9') {
                hbm_watch_view_digit(&v, &c->s, (char)ch, hbm_now_mono());
                redraw = true;
            }
            break;
        }
        if (quit)
            break;
        if (hbm_now_mono() >= next) {
            hbm_watch_session_sample(&c->s);
            next += c->interval;
            if (next < hbm_now_mono())
                next = hbm_now_mono() + c->interval;
            redraw = true;
            if (c->count > 0 && c->s.samples >= c->count)
                quit = true;
        }
        if (redraw)
            draw(c, &v, utf8);
    }
    endwin();
    delscreen(scr);
    return c->s.problem_seen ? CLI_EXIT_PROBLEM : CLI_EXIT_OK;
}
#endif
