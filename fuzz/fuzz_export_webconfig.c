/* The exporter's web config reader (a strict YAML subset) on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_webconfig w;
    hbm_err err;
    hbm_webconfig_parse((const char *)data, size, "fuzz.yml", &w, &err);
    return 0;
}
