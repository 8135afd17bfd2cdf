/* Pod attribution from the node's own state: one fixture tree (tests/fixtures/host/pods)
 * holds a containerd task bundle, a CRI-O container config, a cri-dockerd container's
 * labels, a pod whose container was removed (only /var/log/pods names it), a docker
 * container outside Kubernetes, and a runtime file that names another pod than the cgroup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/host.h"
#include "hbm/procfs.h"

#define ROOT HBM_SOURCE_DIR "/tests/fixtures/host/pods"

static hbm_pod pod_of(int pid)
{
    hbm_hproc p;
    hbm_err err;
    if (hbm_host_read_proc(ROOT, pid, &p, &err) != 0)
        fail_msg("pid %d: %s", pid, err.msg);
    hbm_pod pod = p.pod;
    hbm_hproc_free(&p);
    return pod;
}

static void expect(int pid, const char *ns, const char *name, const char *uid, const char *ctr)
{
    hbm_pod p = pod_of(pid);
    assert_string_equal(p.ns, ns);
    assert_string_equal(p.name, name);
    assert_string_equal(p.uid, uid);
    assert_string_equal(p.container, ctr);
}

static void test_containerd(void **state)
{
    (void)state;
    expect(2001, "inference", "qwen-serve-7d9f8-x2k4p", "0f4c2a51-8d3e-4b6a-9c1d-2e7f8a9b0c11",
           "vllm");
}

static void test_crio(void **state)
{
    (void)state;
    expect(2002, "research", "sglang-0", "1e5d3b62-9e4f-4c7b-8d2e-3f8a9b0c1d22", "sglang");
}

static void test_cri_dockerd(void **state)
{
    (void)state;
    expect(2003, "npu-jobs", "mindie-1", "2d6e4c73-af50-4d8c-9e3f-4a9b0c1d2e33", "mindie");
}

static void test_removed_container_from_pod_logs(void **state)
{
    (void)state;
    expect(2004, "ml", "vllm-orphan-0", "3c7f5d84-b061-4e9d-8f40-5b0c1d2e3f44", "vllm");
}

static void test_absent_is_empty(void **state)
{
    (void)state;
    expect(2005, "", "", "", "");  /* docker outside Kubernetes */
    expect(2006, "", "", "", "");  /* its labels name another pod uid than its cgroup */
}

static void test_several_containers_not_guessed(void **state)
{
    (void)state;
    /* The logs alone cannot say which of vllm and sidecar a process ran in. */
    hbm_pod p;
    hbm_host_pod_lookup(ROOT, "", "0f4c2a51-8d3e-4b6a-9c1d-2e7f8a9b0c11", &p);
    assert_string_equal(p.name, "qwen-serve-7d9f8-x2k4p");
    assert_string_equal(p.container, "");
    hbm_host_pod_lookup(ROOT, "../../etc", "", &p);
    assert_string_equal(p.name, "");
}

static void test_images(void **state)
{
    (void)state;
    hbm_pod p;
    hbm_err err;
    /* containerd's CRI plugin and CRI-O name the image in their own keys */
    const char *cd = "{\"annotations\": {\"io.kubernetes.cri.sandbox-namespace\": \"ml\","
                     "\"io.kubernetes.cri.sandbox-name\": \"vllm-0\","
                     "\"io.kubernetes.cri.image-name\": \"registry.example:5000/ml/vllm:v0.9.2\"}}";
    assert_int_equal(hbm_procfs_parse_pod_config(cd, strlen(cd), &p, &err), 0);
    assert_string_equal(p.image, "registry.example:5000/ml/vllm:v0.9.2");
    const char *crio = "{\"annotations\": {\"io.kubernetes.pod.namespace\": \"ml\","
                       "\"io.kubernetes.pod.name\": \"vllm-0\","
                       "\"io.kubernetes.cri-o.ImageName\": \"quay.io/ml/vllm@sha256:0a1b\"}}";
    assert_int_equal(hbm_procfs_parse_pod_config(crio, strlen(crio), &p, &err), 0);
    assert_string_equal(p.image, "quay.io/ml/vllm@sha256:0a1b");
    /* a value no image reference can be (a control byte, a space) is not taken */
    const char *bad = "{\"annotations\": {\"io.kubernetes.pod.namespace\": \"ml\","
                      "\"io.kubernetes.pod.name\": \"vllm-0\","
                      "\"io.kubernetes.cri-o.ImageName\": \"vllm\\u001b[2J latest\"}}";
    assert_int_equal(hbm_procfs_parse_pod_config(bad, strlen(bad), &p, &err), 0);
    assert_string_equal(p.name, "vllm-0");
    assert_string_equal(p.image, "");
}

static void test_parsers(void **state)
{
    (void)state;
    hbm_pod p;
    hbm_err err;
    const char *bad = "{\n \"annotations\": {\n  \"io.kubernetes.pod.name\": \n}";
    assert_int_equal(hbm_procfs_parse_pod_config(bad, strlen(bad), &p, &err), -1);
    assert_non_null(strstr(err.msg, "line 4, column 1"));
    const char *upper = "{\"annotations\": {\"io.kubernetes.pod.name\": \"Bad Name\","
                        "\"io.kubernetes.pod.namespace\": \"default\"}}";
    assert_int_equal(hbm_procfs_parse_pod_config(upper, strlen(upper), &p, &err), 0);
    assert_string_equal(p.name, "");
    const char *dir = "kube-system_coredns-5d78c9869d-abcde_6a1b2c3d-0000-4000-8000-000000000001";
    assert_int_equal(hbm_procfs_parse_pod_logdir(dir, strlen(dir), &p, &err), 0);
    assert_string_equal(p.ns, "kube-system");
    assert_string_equal(p.name, "coredns-5d78c9869d-abcde");
    assert_int_equal(hbm_procfs_parse_pod_logdir("a_b", 3, &p, &err), -1);
    assert_non_null(strstr(err.msg, "<namespace>_<pod>_<uid>"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_containerd),
        cmocka_unit_test(test_crio),
        cmocka_unit_test(test_cri_dockerd),
        cmocka_unit_test(test_removed_container_from_pod_logs),
        cmocka_unit_test(test_absent_is_empty),
        cmocka_unit_test(test_several_containers_not_guessed),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_parsers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
