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

/* The result (instead of -1) of a call that gave up because something it waited on did
 * not answer in time: a driver call, a child program. Callers that test "< 0" need not
 * care; those that do (observe: no other source is tried) compare with it. */
#define HBM_ERR_HUNG (-2)

/* Prepends "prefix: " to an existing message (for adding file or line context). */
int hbm_err_prefix(hbm_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
