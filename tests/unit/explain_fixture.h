/* The shipped catalogue, loaded once per test group (cmocka group setup/teardown). */
#ifndef HBM_TEST_EXPLAIN_FIXTURE_H
#define HBM_TEST_EXPLAIN_FIXTURE_H

#include <string.h>

#include "hbm/explain.h"

#define CATALOG HBM_SOURCE_DIR "/data/signatures.json"

static hbm_catalog *cat;

static int setup(void **state)
{
    (void)state;
    hbm_err err = {{0}};
    return hbm_explain_catalog_load(CATALOG, &cat, &err);
}

static int teardown(void **state)
{
    (void)state;
    hbm_explain_catalog_free(cat);
    return 0;
}

/* The report's finding of one catalogue entry, NULL when it has none. */
static inline const hbm_explain_finding *find(const hbm_explain_report *rep, const char *id)
{
    for (size_t i = 0; i < rep->nfindings; i++)
        if (strcmp(rep->findings[i].sig->id, id) == 0)
            return &rep->findings[i];
    return NULL;
}

/* Whether one of the rendered lines holds needle. */
static inline bool any_contains(char **v, size_t n, const char *needle)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(v[i], needle))
            return true;
    return false;
}

#endif
