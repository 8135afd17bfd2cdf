/* The command line an audit record names: "hbmctl" and the command's words, joined by
 * spaces, a credential among them redacted, the number of words kept. */
#include "helpers.h"

#include <stdlib.h>

#include "hbm/audit.h"
#include "hbm/redact.h"

static void test_command(void **state)
{
    (void)state;
    char *argv[] = {"clean", "--apply", "--pid", "42"};
    char *c = hbm_audit_command(4, argv);
    assert_string_equal(c, "hbmctl clean --apply --pid 42");
    free(c);
    c = hbm_audit_command(0, argv);
    assert_string_equal(c, "hbmctl");
    free(c);
}

static void test_command_redacted(void **state)
{
    (void)state;
    char *argv[] = {"probe", "--http", "http://user:s3cret@host:8000/health", "--api-key",
                    "sk-live-1234"};
    char *c = hbm_audit_command(5, argv);
    assert_null(strstr(c, "s3cret"));
    assert_null(strstr(c, "sk-live-1234"));
    assert_non_null(strstr(c, "--api-key " HBM_REDACTED));
    assert_true(strncmp(c, "hbmctl probe --http ", 20) == 0);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_command),
        cmocka_unit_test(test_command_redacted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
