/* The web config reader: the subset it accepts, what it refuses (naming line and key), and
 * bcrypt checks through libcrypt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/export.h"

/* bcrypt of "s3cret", cost 8 */
#define HASH "$2b$08$J3SILwHZYlCK50ocjuDusOGprXPBMUUmX8aycDnLBd1.4IDj0wyAK"

static int parse(const char *text, hbm_webconfig *w, hbm_err *err)
{
    return hbm_webconfig_parse(text, strlen(text), "web.yml", w, err);
}

static void test_accepts(void **state)
{
    (void)state;
    hbm_webconfig w;
    hbm_err err;
    const char *t = "---\n# comment\ntls_server_config:\n  cert_file: a b.crt  # trailing\n"
                    "  key_file: 'it''s.key'\n\nbasic_auth_users:\n  prom: " HASH "\n"
                    "  \"x#y\": \"" HASH "\"\n";
    assert_int_equal(parse(t, &w, &err), 0);
    assert_string_equal(w.cert_file, "a b.crt");
    assert_string_equal(w.key_file, "it's.key");
    assert_int_equal(w.nusers, 2);
    assert_string_equal(w.users[1].name, "x#y");
    assert_int_equal(hbm_webconfig_check(&w, "prom", "s3cret"), 0);
    assert_int_equal(hbm_webconfig_check(&w, "prom", "s3cret "), -1);
    assert_int_equal(hbm_webconfig_check(&w, "nobody", "s3cret"), -1);
}

static void refused(const char *text, const char *want)
{
    hbm_webconfig w;
    hbm_err err;
    assert_int_equal(parse(text, &w, &err), -1);
    if (!strstr(err.msg, want))
        fail_msg("'%s' does not say '%s'", err.msg, want);
}

static void test_refuses(void **state)
{
    (void)state;
    refused("tls_server_config:\n  min_version: TLS13\n",
            "web.yml:2: tls_server_config.min_version: not supported");
    refused("tls_config:\n", "web.yml:1: tls_config: not supported");
    refused("  cert_file: x\n", "web.yml:1: cert_file: indented without a section");
    refused("basic_auth_users:\n  a: $2b$08$short\n", "basic_auth_users.a: not a bcrypt hash");
    refused("basic_auth_users:\n  a: " HASH "\n  a: " HASH "\n", "web.yml:3: basic_auth_users.a: listed twice");
    refused("tls_server_config:\n  cert_file: \"x\n", "web.yml:2: tls_server_config.cert_file: unterminated");
    refused("tls_server_config:\n  key_file: k\n", "tls_server_config.cert_file: missing");
    refused("tls_server_config: {cert_file: x}\n", "tls_server_config: want a mapping below it");
    refused("basic_auth_users:\n  a: [1]\n", "basic_auth_users.a: want a plain or quoted string");
    refused("basic_auth_users:\n  a:b\n", "web.yml:2: want 'key: value'");
    /* a file that secures nothing: no users, no TLS (comments, empty sections) */
    refused("", "web.yml: enables neither TLS (tls_server_config) nor basic auth");
    refused("# all commented out\n# basic_auth_users:\n", "web.yml: enables neither");
    refused("tls_server_config:\nbasic_auth_users:\n", "web.yml: enables neither");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts),
        cmocka_unit_test(test_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
