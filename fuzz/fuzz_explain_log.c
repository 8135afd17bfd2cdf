/* Fuzz target for the explain log reader: arbitrary bytes, fed in chunks whose sizes come
 * from the input, through cleaning, keyword and pattern matching, templates, the live
 * checks (against an empty observation) and the JSON writer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/explain.h"

static hbm_catalog *catalog(void)
{
    static hbm_catalog *cat;
    if (!cat) {
        hbm_err err = {{0}};
        if (hbm_explain_catalog_load(HBM_SOURCE_DIR "/data/signatures.json", &cat, &err) < 0) {
            fprintf(stderr, "%s\n", err.msg);
            abort();
        }
    }
    return cat;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_catalog *cat = catalog();
    hbm_explain_scanner *s = hbm_explain_scanner_new(cat);
    size_t chunk = size ? (size_t)data[0] % 97 + 1 : 1;
    for (size_t off = 0; off < size; off += chunk)
        hbm_explain_scanner_feed(s, (const char *)data + off, size - off < chunk ? size - off : chunk);
    hbm_explain_report rep;
    hbm_explain_scanner_finish(s, &rep);
    hbm_explain_scanner_free(s);

    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_explain_live_apply(&rep, cat, &obs, NULL, "fuzz");
    json_t *j = hbm_explain_report_json(&rep);
    char *dump = json_dumps(j, 0);
    if (!dump)
        abort(); /* the JSON must always be writable, whatever the log held */
    free(dump);
    json_decref(j);
    hbm_explain_report_free(&rep);

    char line[512];
    size_t n = size < sizeof line - 1 ? size : sizeof line - 1;
    memcpy(line, data, n);
    line[n] = '\0';
    bool partial;
    hbm_explain_clean_line(line, n, &partial);
    return 0;
}
