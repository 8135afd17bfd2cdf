/* Credentials out of command lines, environments, log lines and labels before anything is
 * shown, exported or logged: a snapshot is made to be pasted into an issue. One rule, in
 * src/host/redact.c, for every consumer (docs/safety.md, "Redaction and escaping"). */
#ifndef HBM_REDACT_H
#define HBM_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define HBM_REDACTED "<redacted>"

/* hbm_redact_words flags: the buffer was cut at a length limit, so a URL in its last word
 * with no '@' seen yet may still be in its user info. */
#define HBM_REDACT_CUT 1

/* Words of [buf, buf + len) separated by sep ('\0' for /proc/PID/cmdline and environ, ' '
 * for a joined command line), joined by single spaces, with secrets replaced by
 * HBM_REDACTED. A redacted word stays one word, so the number of words is kept. The classes
 * (each a NAME that says credential, hbm_redact_secret_name, and the syntax around it):
 *   - an option's value: --api-key V, --api-key=V, one word "--api-key V", --api-key -V;
 *   - NAME=value and NAME: value: environment words (HF_TOKEN=V, export X_TOKEN=V), URL
 *     query parameters (?token=V, &X-Amz-Signature=V), keyword arguments (api_key='V'),
 *     headers (Cookie: V), dict and JSON literals ({"api_key": "V"}, {'hf_token': ['V']});
 *   - the credential after an authorization scheme: Authorization: Bearer V, Basic V;
 *   - the user info of a URL of any scheme (scheme://user:pass@host, also with a '/' in the
 *     password, and cut before its '@').
 * Returns an allocated string, valid UTF-8: a byte that is none becomes the text "\xff". */
char *hbm_redact_words(const char *buf, size_t len, char sep, int flags);

/* One free text (a log line, a label value, a child program's output) under the same rule;
 * returns an allocated string, valid UTF-8 as above. */
char *hbm_redact_text(const char *s, size_t len);

/* Whether an option or variable name (dashes and "=value" allowed) names a credential: its
 * last part (split at - _ . and camelCase, after a trailing id or value) says key, token,
 * secret, password, passwd, passphrase, auth, bearer, cookie, credential, signature,
 * session (also sig, pass, pwd), unless a known safe name (--bos-token, --sort-key) or a
 * switch (--enable-auth, --allow-credentials). --max-num-batched-tokens and --tokenizer are
 * not credentials. */
bool hbm_redact_secret_name(const char *name, size_t len);

#endif
