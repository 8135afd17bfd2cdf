/* Nothing raw reaches a terminal: stdout and stderr are streams whose every byte passes
 * out_filter, so a string from outside (a process name, an argument, a label, a lease file,
 * a log line, a child's output, an error naming any of them) is escaped however a renderer
 * printed it. hbmctl's own colours pass because they carry a random per-process tag that no
 * outside string can know (cli_sgr). docs/safety.md, "Redaction and escaping". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "hbm/text.h"
#include "hbm/util.h"

#define TAG_LEN 16
#define PEND_MAX 64

typedef struct out_stream {
    int fd;
    char pend[PEND_MAX]; /* a character or a tagged colour cut by the stdio buffer */
    size_t npend;
} out_stream;

static char tag[TAG_LEN + 1];
static bool json_mode;
static FILE *raw_stdout;
static out_stream streams[2] = {{.fd = STDOUT_FILENO}, {.fd = STDERR_FILENO}};

/* The length of a tagged colour at s: ESC, the tag, '[', digits and ';', 'm'. 0: not one;
 * with more (the end cut it), PEND_MAX when its start matches so far. */
static size_t tagged_sgr(const char *s, size_t n)
{
    if (!tag[0] || json_mode)
        return 0;
    size_t k = 1;
    for (; k <= TAG_LEN; k++) {
        if (k == n)
            return PEND_MAX;
        if (s[k] != tag[k - 1])
            return 0;
    }
    if (k == n)
        return PEND_MAX;
    if (s[k++] != '[')
        return 0;
    for (; k < n && k < PEND_MAX - 1; k++) {
        if (s[k] == 'm')
            return k + 1;
        if ((s[k] < '0' || s[k] > '9') && s[k] != ';')
            return 0;
    }
    return k == n ? PEND_MAX : 0;
}

/* Copies s to the descriptor with every unsafe character escaped; returns how many bytes
 * at the end wait for more (a cut character or colour) unless final. */
static size_t out_filter(int fd, const char *s, size_t n, bool final)
{
    char buf[4096];
    size_t nb = 0, i = 0;
    while (i < n) {
        size_t len = 0, sgr = s[i] == '\033' ? tagged_sgr(s + i, n - i) : 0;
        long cp = 0;
        if (sgr == PEND_MAX && !final)
            break;
        if (!sgr || sgr == PEND_MAX)
            len = hbm_text_next(s + i, n - i, &cp);
        if (!sgr && !len && !final)
            break;
        char esc[PEND_MAX];
        const char *w = s + i;
        size_t wn;
        if (sgr && sgr != PEND_MAX) { /* our colour: ESC and what follows the tag */
            esc[0] = '\033';
            memcpy(esc + 1, s + i + 1 + TAG_LEN, sgr - 1 - TAG_LEN);
            w = esc;
            wn = sgr - TAG_LEN;
            len = sgr;
        } else if (!len || hbm_text_unsafe(cp)) {
            if (json_mode) /* only inside strings: DEL, C1, bidi controls */
                wn = (size_t)snprintf(esc, sizeof esc, "\\u%04lx", cp < 0 ? 0xfffdL : cp);
            else
                wn = hbm_text_escape(esc, len ? cp : -1, (unsigned char)s[i]);
            w = esc;
            len = len ? len : 1;
        } else {
            wn = len;
        }
        if (nb + wn > sizeof buf) {
            hbm_write_all(fd, buf, nb); /* a closed pipe drops the rest, as stdio would */
            nb = 0;
        }
        memcpy(buf + nb, w, wn);
        nb += wn;
        i += len;
    }
    hbm_write_all(fd, buf, nb);
    return n - i;
}

static ssize_t out_write(void *cookie, const char *p, size_t n)
{
    out_stream *o = cookie;
    size_t i = 0;
    /* first what waited, completed from the new bytes */
    while (o->npend && i < n) {
        o->pend[o->npend++] = p[i++];
        size_t left = out_filter(o->fd, o->pend, o->npend, o->npend == PEND_MAX);
        memmove(o->pend, o->pend + o->npend - left, left);
        o->npend = left;
    }
    if (i < n) {
        size_t left = out_filter(o->fd, p + i, n - i, false);
        memcpy(o->pend, p + n - left, left);
        o->npend = left;
    }
    return (ssize_t)n;
}

/* At a flush nothing waits: what was cut is escaped as it is. */
static void out_drain(out_stream *o)
{
    if (o->npend)
        out_filter(o->fd, o->pend, o->npend, true);
    o->npend = 0;
}

static int out_close(void *cookie)
{
    out_drain(cookie);
    return 0;
}

static void out_at_exit(void)
{
    fflush(stdout);
    fflush(stderr);
    out_drain(&streams[0]);
    out_drain(&streams[1]);
}

void cli_out_init(void)
{
    unsigned char r[TAG_LEN];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        srandom((unsigned)(ts.tv_nsec ^ getpid()));
        for (size_t i = 0; i < sizeof r; i++)
            r[i] = (unsigned char)random();
    }
    for (size_t i = 0; i < TAG_LEN; i++)
        tag[i] = "abcdefghijklmnopqrstuvwxyzABCDEF"[r[i] & 31];
    cookie_io_functions_t io = {.write = out_write, .close = out_close};
    FILE *out = fopencookie(&streams[0], "w", io);
    FILE *err = fopencookie(&streams[1], "w", io);
    if (!out || !err)
        return; /* no memory for two streams: hbmctl would not get far anyway */
    setvbuf(out, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
    setvbuf(err, NULL, _IONBF, 0);
    raw_stdout = stdout;
    stdout = out;
    stderr = err;
    atexit(out_at_exit);
}

const char *cli_sgr(int code)
{
    static char v[8][TAG_LEN + 8];
    static int codes[8];
    static size_t n;
    for (size_t i = 0; i < n; i++)
        if (codes[i] == code)
            return v[i];
    if (n == 8)
        return "";
    codes[n] = code;
    snprintf(v[n], sizeof v[n], "\033%s[%dm", tag, code);
    return v[n++];
}

bool cli_out_tty(FILE *f)
{
    int fd = f == stdout ? STDOUT_FILENO : f == stderr ? STDERR_FILENO : fileno(f);
    return fd >= 0 && isatty(fd);
}

void cli_json_print(json_t *j, size_t flags)
{
    fflush(stdout);
    json_mode = true;
    json_dumpf(j, stdout, flags);
    fflush(stdout);
    out_drain(&streams[0]);
    json_mode = false;
}

FILE *cli_raw_stdout(void)
{
    fflush(stdout);
    out_drain(&streams[0]);
    return raw_stdout ? raw_stdout : stdout;
}
