/* The one word-wrapper of human output. */
#ifndef HBM_CLI_WRAP_H
#define HBM_CLI_WRAP_H

#include <stdbool.h>
#include <stdio.h>

/* The width of human output. */
#define CLI_WIDTH 100

/* Writes the words of text (split at spaces) on a line that already holds col columns,
 * breaking before a word that would pass width; continuation lines are indented by hang.
 * With cut, a word too wide for a line (a log line, a JSON value) is cut at the margin;
 * without, it is kept whole (a path or a command to copy). Ends the line. */
void cli_wrap_from(FILE *f, const char *text, int col, int hang, int width, bool cut);

/* label padded to indent columns, then text wrapped at CLI_WIDTH under it (words cut). */
void cli_wrap(FILE *f, const char *label, int indent, const char *text);

/* indent spaces, then lead, then text wrapped at CLI_WIDTH, hanging under its first word
 * (words cut). */
void cli_wrap_after(FILE *f, int indent, const char *lead, const char *text);

#endif
