/* ncurses, loaded when the terminal view starts rather than linked, so the other commands
 * (`run` first of all, a container's PID 1) map neither it nor libtinfo. The entry points
 * the view's drawing (src/cli/watch_tui.c) calls are defined here under the library's own
 * names and forward to it; hbmctl exports no symbol, so the library never binds to these.
 * `stdscr` is this file's copy of the library's, taken after every newterm and set_term. */
#ifdef HBM_HAVE_NCURSES
#include <stdarg.h>
#include <stdbool.h>

#include <ncurses.h>

#include "hbm/libload.h"
#include "hbm/watch.h"

WINDOW *stdscr;

static struct {
    bool tried, ok;
    char why[300];
    WINDOW **stdscr;
    int (*cbreak)(void);
    int (*curs_set)(int);
    void (*delscreen)(SCREEN *);
    int (*endwin)(void);
    bool (*has_colors)(void);
    int (*init_pair)(NCURSES_PAIRS_T, NCURSES_COLOR_T, NCURSES_COLOR_T);
    int (*keypad)(WINDOW *, bool);
    SCREEN *(*newterm)(const char *, FILE *, FILE *);
    int (*noecho)(void);
    SCREEN *(*set_term)(SCREEN *);
    int (*start_color)(void);
    int (*use_default_colors)(void);
    int (*waddch)(WINDOW *, const chtype);
    int (*waddnstr)(WINDOW *, const char *, int);
    int (*waddnwstr)(WINDOW *, const wchar_t *, int);
    int (*wattr_off)(WINDOW *, attr_t, void *);
    int (*wattr_on)(WINDOW *, attr_t, void *);
    int (*werase)(WINDOW *);
    int (*wgetch)(WINDOW *);
    int (*wmove)(WINDOW *, int, int);
    int (*wrefresh)(WINDOW *);
    void (*wtimeout)(WINDOW *, int);
    int (*vw_printw)(WINDOW *, const char *, va_list);
} nc;

const char *hbm_watch_curses_load(void)
{
    if (nc.tried)
        return nc.ok ? NULL : nc.why;
    nc.tried = true;
    const hbm_dl_sym syms[] = {
        {"stdscr", (void **)&nc.stdscr},
        {"cbreak", (void **)&nc.cbreak},
        {"curs_set", (void **)&nc.curs_set},
        {"delscreen", (void **)&nc.delscreen},
        {"endwin", (void **)&nc.endwin},
        {"has_colors", (void **)&nc.has_colors},
        {"init_pair", (void **)&nc.init_pair},
        {"keypad", (void **)&nc.keypad},
        {"newterm", (void **)&nc.newterm},
        {"noecho", (void **)&nc.noecho},
        {"set_term", (void **)&nc.set_term},
        {"start_color", (void **)&nc.start_color},
        {"use_default_colors", (void **)&nc.use_default_colors},
        {"waddch", (void **)&nc.waddch},
        {"waddnstr", (void **)&nc.waddnstr},
        {"waddnwstr", (void **)&nc.waddnwstr},
        {"wattr_off", (void **)&nc.wattr_off},
        {"wattr_on", (void **)&nc.wattr_on},
        {"werase", (void **)&nc.werase},
        {"wgetch", (void **)&nc.wgetch},
        {"wmove", (void **)&nc.wmove},
        {"wrefresh", (void **)&nc.wrefresh},
        {"wtimeout", (void **)&nc.wtimeout},
        {"vw_printw", (void **)&nc.vw_printw},
    };
    nc.ok = hbm_dl_load("HBMCTL_NCURSES_LIB", "libncursesw.so.6", "libncursesw6", syms,
                        sizeof syms / sizeof *syms, nc.why, sizeof nc.why) != NULL;
    return nc.ok ? NULL : nc.why;
}

/* Reached only after hbm_watch_curses_load succeeded (watch_tui_run checks it first). */
SCREEN *newterm(const char *type, FILE *out, FILE *in)
{
    SCREEN *s = nc.newterm(type, out, in);
    stdscr = *nc.stdscr;
    return s;
}

SCREEN *set_term(SCREEN *s)
{
    SCREEN *old = nc.set_term(s);
    stdscr = *nc.stdscr;
    return old;
}

void delscreen(SCREEN *s)
{
    nc.delscreen(s);
    stdscr = NULL;
}

int mvprintw(int y, int x, const char *fmt, ...)
{
    if (nc.wmove(stdscr, y, x) == ERR)
        return ERR;
    va_list ap;
    va_start(ap, fmt);
    int rc = nc.vw_printw(stdscr, fmt, ap);
    va_end(ap);
    return rc;
}

int cbreak(void)
{
    return nc.cbreak();
}

int curs_set(int v)
{
    return nc.curs_set(v);
}

int endwin(void)
{
    return nc.endwin();
}

bool has_colors(void)
{
    return nc.has_colors();
}

int init_pair(NCURSES_PAIRS_T p, NCURSES_COLOR_T f, NCURSES_COLOR_T b)
{
    return nc.init_pair(p, f, b);
}

int keypad(WINDOW *w, bool on)
{
    return nc.keypad(w, on);
}

int noecho(void)
{
    return nc.noecho();
}

int start_color(void)
{
    return nc.start_color();
}

int use_default_colors(void)
{
    return nc.use_default_colors();
}

int waddch(WINDOW *w, const chtype ch)
{
    return nc.waddch(w, ch);
}

int waddnstr(WINDOW *w, const char *s, int n)
{
    return nc.waddnstr(w, s, n);
}

int waddnwstr(WINDOW *w, const wchar_t *s, int n)
{
    return nc.waddnwstr(w, s, n);
}

int wattr_off(WINDOW *w, attr_t a, void *o)
{
    return nc.wattr_off(w, a, o);
}

int wattr_on(WINDOW *w, attr_t a, void *o)
{
    return nc.wattr_on(w, a, o);
}

int werase(WINDOW *w)
{
    return nc.werase(w);
}

int wgetch(WINDOW *w)
{
    return nc.wgetch(w);
}

int wmove(WINDOW *w, int y, int x)
{
    return nc.wmove(w, y, x);
}

int wrefresh(WINDOW *w)
{
    return nc.wrefresh(w);
}

void wtimeout(WINDOW *w, int delay)
{
    nc.wtimeout(w, delay);
}

#endif
