/* The shipped catalogue, loaded once per test group (cmocka group setup/teardown). */
#ifndef HBM_TEST_EXPLAIN_FIXTURE_H
#define HBM_TEST_EXPLAIN_FIXTURE_H

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

#endif
