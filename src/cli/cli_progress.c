#include "cli_progress.h"

int cli_progress_add_url(void *dst, const char *value, char *why, size_t whylen)
{
    (void)why;
    (void)whylen;
    hbm_progress_servers_add(dst, value);
    return 0;
}
