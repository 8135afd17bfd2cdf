/* Shared by the fake drivers: a call that wedges, as a hung driver's does. */
#ifndef FAKE_HANG_H
#define FAKE_HANG_H

#include <jansson.h>
#include <time.h>

/* The scenario's "hang": {"CALL": SECONDS}: that call blocks this long (negative: for
 * ever) before it answers, as a wedged driver does. */
static void fake_hang(json_t *scn, const char *fn)
{
    json_t *v = json_object_get(json_object_get(scn, "hang"), fn);
    if (!json_is_number(v))
        return;
    double s = json_number_value(v);
    struct timespec ts = {s < 0 ? 3600 : (time_t)s, s < 0 ? 0 : (long)((s - (time_t)s) * 1e9)};
    do
        while (nanosleep(&ts, &ts) < 0)
            ;
    while (s < 0);
}

#endif
