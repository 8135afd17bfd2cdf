/* Errors: a caller-supplied buffer that a failing function fills with one message.
 * Convention in libhbm: functions return 0 on success and -1 on failure, with *err filled
 * (err may be NULL when the caller does not want the text). Library code never prints or exits. */
#ifndef HBM_ERR_H
#define HBM_ERR_H

#include <stddef.h>

typedef struct hbm_err {
    char msg[1024];
} hbm_err;

/* Formats the message into err (if non-NULL) and returns -1, so callers can
 * `return hbm_err_set(err, "...")`. */
int hbm_err_set(hbm_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "prefix: " to an existing message (for adding file or line context). */
int hbm_err_prefix(hbm_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
