/* Credential redaction on arbitrary bytes, as /proc/PID/cmdline (NUL-separated), as a
 * joined command line read back from a snapshot and as a log line; and the reader of the
 * characters that the output filter and the exporter's labels escape. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hbm/redact.h"
#include "hbm/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    free(hbm_redact_words((const char *)data, size, '\0', 0));
    free(hbm_redact_words((const char *)data, size, ' ', HBM_REDACT_CUT));
    free(hbm_redact_text((const char *)data, size));
    hbm_redact_secret_name((const char *)data, size);
    /* the terminal-safety reader over the same bytes: every character and its escape */
    for (size_t i = 0; i < size;) {
        long cp;
        char esc[12];
        size_t len = hbm_text_next((const char *)data + i, size - i, &cp);
        if (!len || hbm_text_unsafe(cp))
            hbm_text_escape(esc, len ? cp : -1, data[i]);
        i += len ? len : 1;
    }
    return 0;
}
