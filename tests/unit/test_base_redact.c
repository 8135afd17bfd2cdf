/* The one redaction rule, class by class: each with the forms that must go and the words
 * that only look like them and must stay. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hbm/redact.h"

/* A joined command line (words split at spaces). */
static void is(const char *in, const char *want)
{
    char *got = hbm_redact_words(in, strlen(in), ' ', 0);
    assert_string_equal(got, want);
    free(got);
}

/* A free text: a log line, a label. */
static void text_is(const char *in, const char *want)
{
    char *got = hbm_redact_text(in, strlen(in));
    assert_string_equal(got, want);
    free(got);
}

/* /proc/PID/cmdline: arguments separated by NUL, given here as a NUL-joined literal. */
static void argv_is(const char *raw, size_t n, int flags, const char *want)
{
    char *got = hbm_redact_words(raw, n, '\0', flags);
    assert_string_equal(got, want);
    free(got);
}
#define ARGV_IS(lit, flags, want) argv_is(lit, sizeof lit - 1, flags, want)

static void secret(const char *name)
{
    if (!hbm_redact_secret_name(name, strlen(name)))
        fail_msg("%s should name a credential", name);
}

static void innocuous(const char *name)
{
    if (hbm_redact_secret_name(name, strlen(name)))
        fail_msg("%s should not name a credential", name);
}

static void names(void **st)
{
    (void)st;
    const char *yes[] = {"--api-key", "--hf-token", "token", "-apikey", "--password",
                         "--db-passwd", "--passphrase", "--auth", "--bearer", "--cookie",
                         "--client-credential", "--aws-credentials", "X-Amz-Signature",
                         "--session", "sig", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY",
                         "HF_TOKEN", "X_TOKEN", "apiKey", "accessToken", "AWSSecretKey",
                         "Authorization", "Proxy-Authorization", "oauth", "PGPASSWORD",
                         "MYSQL_PWD", "DB_PASS", "session_id", "api_key_value", "sessionid",
                         "--admin-api-key", "--use-auth-token", "--cache-api-key"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        secret(yes[i]);
    const char *no[] = {"--max-num-batched-tokens", "--tokenizer", "--disable-log-requests",
                        "tokenizer_mode", "--max-tokens", "max_tokens", "--ssl-keyfile",
                        "--api-key-file", "--key-path", "--session-len", "--tokenizer-mode",
                        "--return-tokens-as-token-ids", "--allow-credentials", "--enable-auth",
                        "--no-auth", "--bos-token", "--eos-token", "--pad-token", "--sort-key",
                        "cache_key", "PWD", "SSH_AUTH_SOCK", "XAUTHORITY", "XDG_SESSION_TYPE",
                        "TOKENIZERS_PARALLELISM", "--author", "--hotkey", "maxTokens",
                        "--kv-cache-dtype", "--skip-tokenizer-init", "--max-total-tokens",
                        "--port", "", "--"};
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        innocuous(no[i]);
}

static void options(void **st)
{
    (void)st;
    is("vllm serve m --api-key sk-1 --port 8000", "vllm serve m --api-key <redacted> --port 8000");
    is("x --hf-token=hf_abc --token t --password p --db-password=q",
       "x --hf-token=<redacted> --token <redacted> --password <redacted> --db-password=<redacted>");
    is("x --passphrase p --auth a --bearer b --session s --client-credential c",
       "x --passphrase <redacted> --auth <redacted> --bearer <redacted> --session <redacted> "
       "--client-credential <redacted>");
    /* a value that starts with '-' is still the value; the next option is not */
    is("x --api-key -X --port 1", "x --api-key <redacted> --port 1");
    is("x --api-key=-X", "x --api-key=<redacted>");
    is("x --api-key --port 1", "x --api-key --port 1");
    is("x --api-key", "x --api-key");
    /* counts, files and switches named like credentials keep their values */
    is("x --max-num-batched-tokens 8192 --ssl-keyfile /k.pem --tokenizer /models/x",
       "x --max-num-batched-tokens 8192 --ssl-keyfile /k.pem --tokenizer /models/x");
    is("x --disable-log-requests y --tokenizer-mode auto --allow-credentials z",
       "x --disable-log-requests y --tokenizer-mode auto --allow-credentials z");
    is("x --bos-token <s> --api-key-file /run/k", "x --bos-token <s> --api-key-file /run/k");
    /* --cookie session=...: the whole value */
    is("curl --cookie session=abc http://h/", "curl --cookie <redacted> http://h/");
}

static void argv_words(void **st)
{
    (void)st;
    /* one argument "--api-key X" stays one argument */
    ARGV_IS("a\0--api-key X\0--port\0" "1", 0, "a --api-key <redacted> --port 1");
    /* the value in the next argument, whatever its spaces */
    ARGV_IS("a\0--api-key\0s k\0\0b=c", 0, "a --api-key <redacted>  b=c");
    ARGV_IS("a\0--api-key\0-X", 0, "a --api-key <redacted>");
    ARGV_IS("a\0--api-key=x,y;z", 0, "a --api-key=<redacted>");
    ARGV_IS("a\0HF_TOKEN=a b,c", 0, "a HF_TOKEN=<redacted>");
    /* Authorization inside one argument of curl */
    ARGV_IS("curl\0-H\0Authorization: Bearer abc.def\0-H\0X-Api-Key: k1", 0,
            "curl -H Authorization: Bearer <redacted> -H X-Api-Key: <redacted>");
    ARGV_IS("curl\0-H\0Authorization: Basic dXNlcjpwdw==", 0,
            "curl -H Authorization: Basic <redacted>");
    ARGV_IS("x\0Bearer\0tok", 0, "x Bearer <redacted>");
    /* an empty value hides nothing and does not swallow the next word */
    ARGV_IS("x\0--api-key\0\0pos", 0, "x --api-key  pos");
}

static void env_words(void **st)
{
    (void)st;
    is("env HF_TOKEN=hf_1 OPENAI_API_KEY=sk-2 CUDA_VISIBLE_DEVICES=0,1 python3",
       "env HF_TOKEN=<redacted> OPENAI_API_KEY=<redacted> CUDA_VISIBLE_DEVICES=0,1 python3");
    is("docker run --env=HF_TOKEN=abc -e MY_SECRET=x img",
       "docker run --env=HF_TOKEN=<redacted> -e MY_SECRET=<redacted> img");
    text_is("export X_TOKEN=abc; export AWS_SECRET_ACCESS_KEY=def PWD=/home/a",
            "export X_TOKEN=<redacted>; export AWS_SECRET_ACCESS_KEY=<redacted> PWD=/home/a");
    text_is("TOKENIZERS_PARALLELISM=false SSH_AUTH_SOCK=/tmp/s MAX_TOKENS=9",
            "TOKENIZERS_PARALLELISM=false SSH_AUTH_SOCK=/tmp/s MAX_TOKENS=9");
}

static void urls(void **st)
{
    (void)st;
    is("curl http://alice:pw@h:80/p https://tok@github.com/x http://h/a@b",
       "curl http://<redacted>@h:80/p https://<redacted>@github.com/x http://h/a@b");
    is("--url=redis://u:p@r:6379/0,http://v:q@w",
       "--url=redis://<redacted>@r:6379/0,http://<redacted>@w");
    /* a '/' inside the password */
    is("x http://alice:pa/ss@mirror:8080/x", "x http://<redacted>@mirror:8080/x");
    is("x s3://AKIA:se/cr/et@bucket/key", "x s3://<redacted>@bucket/key");
    /* a port is no password: the path's '@' stays */
    is("x http://h:80/a@b", "x http://h:80/a@b");
    /* query parameters named like credentials */
    text_is("GET https://h/v1?token=abc&x=1&api_key=def#f",
            "GET https://h/v1?token=<redacted>&x=1&api_key=<redacted>"); /* '#' may be in one */
    text_is("https://b.s3.amazonaws.com/o?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=9f&a=b",
            "https://b.s3.amazonaws.com/o?X-Amz-Credential=<redacted>&X-Amz-Signature=<redacted>"
            "&a=b");
    text_is("https://acct.blob.core.windows.net/c?sv=2020&sig=abc%3D&se=1",
            "https://acct.blob.core.windows.net/c?sv=2020&sig=<redacted>&se=1");
    text_is("https://h/search?max_tokens=5&q=key", "https://h/search?max_tokens=5&q=key");
}

static void cut_urls(void **st)
{
    (void)st;
    /* the command line was cut at its length limit before the '@' */
    ARGV_IS("x\0--url\0http://alice:SECRETpart", HBM_REDACT_CUT, "x --url http://<redacted>");
    ARGV_IS("x\0--url\0https://tokenonly", HBM_REDACT_CUT, "x --url https://<redacted>");
    /* uncut: a host:port at the end is kept, a user:password-looking tail is not */
    ARGV_IS("x\0--url\0http://localhost:8000", 0, "x --url http://localhost:8000");
    ARGV_IS("x\0--url\0http://alice:SECRET", 0, "x --url http://<redacted>");
    ARGV_IS("x\0--url\0http://[::1]:8000", 0, "x --url http://[::1]:8000");
}

static void literals(void **st)
{
    (void)st;
    text_is("{\"api_key\": \"sk-1\", \"model\": \"m\"}", "{\"api_key\": \"<redacted>\", \"model\": \"m\"}");
    text_is("{\"apiKey\":\"sk-1\",\"maxTokens\":5}", "{\"apiKey\":\"<redacted>\",\"maxTokens\":5}");
    text_is("{\"password\" : \"a\\\"b\", \"n\": 1}", "{\"password\" : \"<redacted>\", \"n\": 1}");
    /* vLLM's non-default args line: a Python dict, lists kept parseable */
    text_is("INFO non-default args: {'model': '/m', 'api_key': ['sk-1', 'sk-2'], "
            "'hf_token': 'hf_x', 'max_num_batched_tokens': 8192, 'tokenizer_mode': 'auto'}",
            "INFO non-default args: {'model': '/m', 'api_key': ['<redacted>', '<redacted>'], "
            "'hf_token': '<redacted>', 'max_num_batched_tokens': 8192, 'tokenizer_mode': 'auto'}");
    /* older vLLM: args: Namespace(...) */
    text_is("args: Namespace(api_key='sk-1', hf_token=None, tokenizer='t', port=8000)",
            "args: Namespace(api_key='<redacted>', hf_token=None, tokenizer='t', port=8000)");
    text_is("{'credentials': {'aws': 'AKIA1'}}", "{'credentials': {'<redacted>': '<redacted>'}}");
    /* argv as a JSON list (a pod spec in a log) */
    text_is("args: [\"--api-key\", \"sk-1\", \"--port\", \"8000\"]",
            "args: [\"--api-key\", \"<redacted>\", \"--port\", \"8000\"]");
    text_is("args: [\"--api-key\", \"--port\", \"8000\"]", "args: [\"--api-key\", \"--port\", \"8000\"]");
}

static void log_lines(void **st)
{
    (void)st;
    text_is("Authorization: Bearer eyJhbGc.x.y rest", "Authorization: Bearer <redacted> rest");
    text_is("header authorization=Basic dXNlcjpwdw==", "header authorization=Basic <redacted>");
    text_is("sent Bearer abc to h", "sent Bearer <redacted> to h");
    text_is("Cookie: session=abc; csrftoken=def", "Cookie: <redacted>; csrftoken=<redacted>");
    text_is("started with --api-key sk-1 --port 1", "started with --api-key <redacted> --port 1");
    text_is("password: hunter2", "password: <redacted>");
    /* innocuous words */
    text_is("Avg prompt throughput: 5 tokens/s, max_tokens: 100, tokenizer: /m",
            "Avg prompt throughput: 5 tokens/s, max_tokens: 100, tokenizer: /m");
    text_is("--max-num-batched-tokens 8192 --disable-log-requests tokenizer_mode=auto",
            "--max-num-batched-tokens 8192 --disable-log-requests tokenizer_mode=auto");
    text_is("", "");
    /* idempotent: a redacted text read again is unchanged */
    text_is("--api-key <redacted> HF_TOKEN=<redacted> http://<redacted>@h",
            "--api-key <redacted> HF_TOKEN=<redacted> http://<redacted>@h");
    /* what is no UTF-8 becomes visible text, so JSON can carry it */
    text_is("py\xff\xc2 --api-key k \xe2\x80", "py\\xff\\xc2 --api-key <redacted> \\xe2\\x80");
    text_is("caf\xc3\xa9 \xe2\x80\xae", "caf\xc3\xa9 \xe2\x80\xae");
    /* a NUL byte in a log line is no delimiter of any kind */
    char nul[] = "api_key=[a\0b]";
    char *got = hbm_redact_text(nul, sizeof nul - 1);
    assert_string_equal(got, "api_key=[<redacted>]");
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names),      cmocka_unit_test(options),  cmocka_unit_test(argv_words),
        cmocka_unit_test(env_words),  cmocka_unit_test(urls),     cmocka_unit_test(cut_urls),
        cmocka_unit_test(literals),   cmocka_unit_test(log_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
