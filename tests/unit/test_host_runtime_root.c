/* A runtime whose state was moved from its default (tests/fixtures/host/data-root): Docker's
 * data root named by /etc/docker/daemon.json ("data-root": /data/docker) and
 * containers-storage's graphroot by /etc/containers/storage.conf (/data/containers), while the
 * default places hold old, empty stores. The containers are running, with their names and
 * images, not gone; the environment overrides the configuration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hbm/host.h"
#include "hbm/procfs.h"

#define ROOT HBM_SOURCE_DIR "/tests/fixtures/host/data-root"

static void expect(int pid, const char *state, const char *name, const char *image)
{
    hbm_hproc p;
    hbm_err err;
    if (hbm_host_read_proc(ROOT, pid, &p, &err) != 0)
        fail_msg("pid %d: %s", pid, err.msg);
    assert_string_equal(p.container_state, state);
    assert_string_equal(p.container_name, name);
    assert_string_equal(p.container_image, image);
    hbm_hproc_free(&p);
}

static void test_docker_data_root(void **state)
{
    (void)state;
    expect(3001, "running", "vllm-qwen", "vllm/vllm-openai:v0.8");
}

static void test_storage_graphroot(void **state)
{
    (void)state;
    expect(3002, "running", "sglang-0", "docker.io/lmsysorg/sglang:v0.4");
}

static void test_environment_first(void **state)
{
    (void)state;
    setenv("HBMCTL_DOCKER_ROOT", "/var/lib/docker", 1);
    expect(3001, "gone", "", "");
    unsetenv("HBMCTL_DOCKER_ROOT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_docker_data_root),
        cmocka_unit_test(test_storage_graphroot),
        cmocka_unit_test(test_environment_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
