/* Credentials out of command lines and environments before anything is shown, exported or
 * logged: a snapshot is made to be pasted into an issue. */
#ifndef HBM_REDACT_H
#define HBM_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define HBM_REDACTED "<redacted>"

/* Words of [buf, buf + len) separated by sep ('\0' for /proc/PID/cmdline and environ, ' '
 * for a joined command line), joined by single spaces, with secrets replaced by
 * HBM_REDACTED; the number of words is kept:
 *   - the value of an option whose name says key, token, secret, password or credential
 *     (--api-key V, --hf-token=V, -token V);
 *   - the value of a NAME=value word whose NAME says the same (HF_TOKEN=V, also after
 *     --env=);
 *   - the user:password@ (or token@) part of a URL.
 * Returns an allocated string. */
char *hbm_redact_words(const char *buf, size_t len, char sep);

/* Whether an option or variable name (dashes and "=value" allowed) names a credential. */
bool hbm_redact_secret_name(const char *name, size_t len);

#endif
