/* The credential rule on command lines and environments, word by word. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hbm/redact.h"

static void is(const char *in, const char *want)
{
    char *got = hbm_redact_words(in, strlen(in), ' ');
    assert_string_equal(got, want);
    free(got);
}

static void options_and_values(void **st)
{
    (void)st;
    is("vllm serve m --api-key sk-1 --port 8000", "vllm serve m --api-key <redacted> --port 8000");
    is("x --hf-token=hf_abc --token t --password p --db-password=q",
       "x --hf-token=<redacted> --token <redacted> --password <redacted> --db-password=<redacted>");
    is("x --client-secret s --aws-credentials c -apikey k", "x --client-secret <redacted> "
       "--aws-credentials <redacted> -apikey <redacted>");
    /* counts and files named like keys are not credentials */
    is("x --max-num-batched-tokens 8192 --ssl-keyfile /k.pem --tokenizer t",
       "x --max-num-batched-tokens 8192 --ssl-keyfile /k.pem --tokenizer t");
    /* an option with no value before the next option: nothing to hide */
    is("x --api-key --port 1", "x --api-key --port 1");
    is("x --api-key", "x --api-key");
}

static void names_and_urls(void **st)
{
    (void)st;
    is("env HF_TOKEN=hf_1 OPENAI_API_KEY=sk-2 CUDA_VISIBLE_DEVICES=0,1 python3",
       "env HF_TOKEN=<redacted> OPENAI_API_KEY=<redacted> CUDA_VISIBLE_DEVICES=0,1 python3");
    is("docker run --env=HF_TOKEN=abc -e MY_SECRET=x img",
       "docker run --env=HF_TOKEN=<redacted> -e MY_SECRET=<redacted> img");
    is("curl http://alice:pw@h:80/p https://tok@github.com/x http://h/a@b",
       "curl http://<redacted>@h:80/p https://<redacted>@github.com/x http://h/a@b");
    is("--url=redis://u:p@r:6379/0,http://v:q@w", "--url=redis://<redacted>@r:6379/0,http://<redacted>@w");
    is("", "");
}

static void words_are_kept(void **st)
{
    (void)st;
    /* /proc/PID/cmdline: NUL-separated, empty arguments included */
    const char raw[] = "a\0--api-key\0s\0\0b=c";
    char *got = hbm_redact_words(raw, sizeof raw - 1, '\0');
    assert_string_equal(got, "a --api-key <redacted>  b=c");
    free(got);
    assert_true(hbm_redact_secret_name("--OPENAI_API_KEY=x", 18));
    assert_false(hbm_redact_secret_name("PWD", 3));
    assert_false(hbm_redact_secret_name("--max-tokens", 12));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(options_and_values),
        cmocka_unit_test(names_and_urls),
        cmocka_unit_test(words_are_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
