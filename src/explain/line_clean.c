/* A log line's decoration taken off before it is matched: an RFC 3339 timestamp, a Docker
 * json-file or CRI record's frame, a syslog or journald prefix, and a paste's quote marks
 * and fences, so a message reads the same however it was shipped. */
#include <stdbool.h>
#include <string.h>

#include "explain_int.h"

static size_t digits(const char *s, size_t len, size_t at, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (at + i >= len || s[at + i] < '0' || s[at + i] > '9')
            return 0;
    return n;
}

/* Length of an RFC 3339 timestamp with its trailing space at the start of s, else 0:
 * 2024-08-03T02:38:39.123456789Z, 2024-08-03T02:38:39+08:00, "2024-08-03 02:38:39Z". */
static size_t rfc3339_prefix(const char *s, size_t len)
{
    size_t p = 0;
    if (!digits(s, len, p, 4) || p + 4 >= len || s[p + 4] != '-')
        return 0;
    p += 5;
    if (!digits(s, len, p, 2) || p + 2 >= len || s[p + 2] != '-')
        return 0;
    p += 3;
    if (!digits(s, len, p, 2) || p + 2 >= len || (s[p + 2] != 'T' && s[p + 2] != ' '))
        return 0;
    bool has_t = s[p + 2] == 'T';
    p += 3;
    for (int k = 0; k < 3; k++) {
        if (!digits(s, len, p, 2))
            return 0;
        p += 2;
        if (k < 2) {
            if (p >= len || s[p] != ':')
                return 0;
            p++;
        }
    }
    if (p < len && (s[p] == '.' || s[p] == ',') && p + 1 < len && s[p + 1] >= '0' &&
        s[p + 1] <= '9') {
        p++;
        while (p < len && s[p] >= '0' && s[p] <= '9')
            p++;
    }
    bool has_zone = false;
    if (p < len && s[p] == 'Z') {
        p++;
        has_zone = true;
    } else if (p < len && (s[p] == '+' || s[p] == '-') && digits(s, len, p + 1, 2)) {
        p += 3;
        if (p < len && s[p] == ':')
            p++;
        if (!digits(s, len, p, 2))
            return 0;
        p += 2;
        has_zone = true;
    }
    /* A plain "date time " could be an application's own format; only the container
     * forms (T separator or a zone) are decoration. */
    if (!has_t && !has_zone)
        return 0;
    if (p >= len || s[p] != ' ')
        return 0;
    return p + 1;
}

/* A docker json-file record, {"log":"text\n","stream":...}: the text, unescaped in place. */
static size_t json_log_record(char *line, size_t len)
{
    static const char head[] = "{\"log\":\"";
    if (len < sizeof head || memcmp(line, head, sizeof head - 1) != 0)
        return len;
    size_t w = 0, r = sizeof head - 1;
    for (; r < len && line[r] != '"'; r++) {
        char c = line[r];
        if (c == '\\' && r + 1 < len) {
            c = line[++r];
            c = c == 'n' || c == 't' || c == 'r' ? ' ' : c == 'u' ? '?' : c;
            if (line[r] == 'u')
                r += r + 4 < len ? 4 : 0; /* \uHHHH: escaped control or non-ASCII */
        }
        line[w++] = c;
    }
    while (w > 0 && line[w - 1] == ' ')
        w--;
    return w;
}

/* Length of a syslog or journald prefix, "Aug  3 02:38:39 host unit[123]: ", else 0. */
static size_t syslog_prefix(const char *s, size_t len)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    bool month = false;
    for (size_t m = 0; len > 15 && m < 12 && !month; m++)
        month = memcmp(s, months + 3 * m, 3) == 0;
    if (!month || s[3] != ' ' || s[6] != ' ' || s[9] != ':' || s[12] != ':' || s[15] != ' ' ||
        !digits(s, len, 7, 2) || !digits(s, len, 13, 2))
        return 0;
    size_t p = 16;
    while (p < len && s[p] != ' ' && s[p] != ':') /* the host */
        p++;
    size_t tag = ++p;
    while (p < len && s[p] != ' ' && s[p] != ':')
        p++;
    if (p == tag || p + 1 >= len || s[p] != ':' || s[p + 1] != ' ')
        return 0;
    return p + 2;
}

/* Text pasted into an issue or a chat, or shipped by a log collector: quote markers
 * ("> "), Markdown fences, docker's JSON records and a syslog or journald prefix are taken
 * off so they hide no match. (An application's own "date time" prefix stays: it is
 * content, and no pattern is anchored before it.) */
static size_t unpaste(char *line, size_t len)
{
    len = json_log_record(line, len);
    size_t p = 0;
    while (p < len && line[p] == '>') { /* "> ", ">> ", "> > " */
        p++;
        while (p < len && line[p] == ' ')
            p++;
    }
    if (len - p >= 3 && (memcmp(line + p, "```", 3) == 0 || memcmp(line + p, "~~~", 3) == 0))
        p = len; /* a fence, with or without its language */
    size_t d = syslog_prefix(line + p, len - p);
    p += d;
    memmove(line, line + p, len - p);
    return len - p;
}

size_t hbm_explain_clean_line(char *line, size_t len, bool *partial)
{
    *partial = false;
    size_t w = 0;
    for (size_t r = 0; r < len; r++) {
        unsigned char c = (unsigned char)line[r];
        if (c == 0x1b) { /* ANSI escape: CSI, OSC, or a two-byte sequence */
            if (r + 1 < len && line[r + 1] == '[') {
                r += 2;
                while (r < len && ((unsigned char)line[r] < 0x40 || (unsigned char)line[r] > 0x7e))
                    r++;
            } else if (r + 1 < len && line[r + 1] == ']') {
                r += 2;
                while (r < len && line[r] != '\a' &&
                       !(line[r] == 0x1b && r + 1 < len && line[r + 1] == '\\'))
                    r++;
                if (r < len && line[r] == 0x1b)
                    r++;
            } else {
                r++;
            }
            continue;
        }
        if (c == '\r' && r + 1 == len)
            break; /* CRLF line end */
        if (c == '\r' || c == '\0')
            c = ' ';
        line[w++] = (char)c;
    }
    w = unpaste(line, w);
    size_t skip = rfc3339_prefix(line, w);
    if (skip) {
        /* CRI (containerd, CRI-O): "TIME stdout F text"; P marks a partial record. */
        static const char *const streams[] = {"stdout ", "stderr "};
        for (size_t i = 0; i < 2; i++) {
            size_t sl = strlen(streams[i]);
            if (w - skip >= sl + 2 && memcmp(line + skip, streams[i], sl) == 0 &&
                (line[skip + sl] == 'F' || line[skip + sl] == 'P') &&
                (skip + sl + 1 == w || line[skip + sl + 1] == ' ')) {
                *partial = line[skip + sl] == 'P';
                skip += sl + 1 + (skip + sl + 1 < w);
                break;
            }
        }
        memmove(line, line + skip, w - skip);
        w -= skip;
    }
    line[w] = '\0';
    return w;
}
