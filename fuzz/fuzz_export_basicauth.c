/* The exporter's Authorization header decoder (base64 to user and password, by length) on
 * arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "export/export_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_auth_creds c;
    hbm_basic_auth_decode((const char *)data, size, &c);
    return 0;
}
