/* The one word-wrapper of human output (doctor, clean, pick, status, explain, plan). */
#include <string.h>

#include "wrap.h"

/* Below this much room a word is not cut: pieces that short would not read. */
#define MIN_CUT 10

void cli_wrap_from(FILE *f, const char *text, int col, int hang, int width, bool cut)
{
    bool line_start = true;
    const char *p = text;
    for (;;) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (!w)
            break;
        if (!line_start && col + 1 + (int)w > width) {
            fprintf(f, "\n%*s", hang, "");
            col = hang;
            line_start = true;
        }
        if (!line_start) {
            fputc(' ', f);
            col++;
        }
        while (cut && line_start && col + (int)w > width && width - col > MIN_CUT) {
            int room = width - col;
            fwrite(p, 1, (size_t)room, f);
            fprintf(f, "\n%*s", hang, "");
            p += room;
            w -= (size_t)room;
            col = hang;
        }
        fwrite(p, 1, w, f);
        col += (int)w;
        p += w;
        line_start = false;
    }
    fputc('\n', f);
}

void cli_wrap(FILE *f, const char *label, int indent, const char *text)
{
    fprintf(f, "%-*s", indent, label);
    cli_wrap_from(f, text, indent, indent, CLI_WIDTH, true);
}

void cli_wrap_after(FILE *f, int indent, const char *lead, const char *text)
{
    int col = fprintf(f, "%*s%s", indent, "", lead);
    cli_wrap_from(f, text, col, col, CLI_WIDTH, true);
}
