/* Fixed buffers that cut visibly: hbm_text_fitf marks what it left out and never splits a
 * character. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hbm/text.h"

static void test_fits_whole(void **state)
{
    (void)state;
    char buf[16];
    assert_false(hbm_text_fitf(buf, sizeof buf, "pid %d", 4242));
    assert_string_equal(buf, "pid 4242");
    /* exactly full: 15 bytes and the NUL */
    assert_false(hbm_text_fitf(buf, sizeof buf, "%s", "123456789012345"));
    assert_string_equal(buf, "123456789012345");
}

static void test_cut_is_marked(void **state)
{
    (void)state;
    char buf[16];
    assert_true(hbm_text_fitf(buf, sizeof buf, "%s", "1234567890123456"));
    assert_string_equal(buf, "123456789012...");
    assert_int_equal(strlen(buf), sizeof buf - 1);
}

static void test_cut_never_splits_a_character(void **state)
{
    (void)state;
    char buf[8];
    /* "ab" then three-byte characters: the fourth byte of the buffer falls inside one */
    assert_true(hbm_text_fitf(buf, sizeof buf, "ab%s", "\xe6\x98\xbe\xe5\xad\x98"));
    assert_string_equal(buf, "ab...");
    assert_true(hbm_text_fitf(buf, sizeof buf, "abcde%s", "\xe6\x98\xbe"));
    assert_string_equal(buf, "abcd...");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_whole),
        cmocka_unit_test(test_cut_is_marked),
        cmocka_unit_test(test_cut_never_splits_a_character),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
