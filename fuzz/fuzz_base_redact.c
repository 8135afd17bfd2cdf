/* Credential redaction on arbitrary bytes, as /proc/PID/cmdline (NUL-separated) and as a
 * joined command line read back from a snapshot, and as a
 * log line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hbm/redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    free(hbm_redact_words((const char *)data, size, '\0', 0));
    free(hbm_redact_words((const char *)data, size, ' ', HBM_REDACT_CUT));
    free(hbm_redact_text((const char *)data, size));
    hbm_redact_secret_name((const char *)data, size);
    return 0;
}
