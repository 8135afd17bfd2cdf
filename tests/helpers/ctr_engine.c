/* An inference server and its engine inside a container (the e2e_docker_* and e2e_podman_*
 * tests copy it into their image): this process, the "server", forks a child titled
 * VLLM::EngineCore (the kernel keeps 15 bytes: VLLM::EngineCor) that opens DEVICE and keeps
 * it open, as a driver's context does, then writes the child's pid (in the container's PID
 * namespace) to PIDFILE.
 *   ctr_engine DEVICE PIDFILE [escape] [server-exits]
 * escape: the child moves itself out of its cgroup in the devices and freezer hierarchies
 * (cgroup v1; writing 0 to cgroup.procs moves the writer), and stays in the others.
 * server-exits: the server exits once the child is ready, leaving the engine to the
 * container's init. Both end themselves after 300 s so a failed test cannot leak them. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "doc_common.h"

static int leave_cgroup(const char *hierarchy)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/fs/cgroup/%s/cgroup.procs", hierarchy);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = write(fd, "0", 1) == 1 ? 0 : -1;
    close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ctr_engine DEVICE PIDFILE [escape] [server-exits]\n");
        return 2;
    }
    int escape = 0, server_exits = 0;
    for (int i = 3; i < argc; i++) {
        escape |= !strcmp(argv[i], "escape");
        server_exits |= !strcmp(argv[i], "server-exits");
    }
    int fd;
    pid_t c = fork_engine(&fd);
    if (c == 0) {
        if (open(argv[1], O_RDONLY | O_CLOEXEC) < 0)
            _exit(1);
        if (escape && (leave_cgroup("devices") < 0 || leave_cgroup("freezer") < 0))
            _exit(1);
        ready(fd);
        linger();
    }
    FILE *f = fopen(argv[2], "w");
    if (!f || fprintf(f, "%d\n", (int)c) < 0 || fclose(f) != 0)
        return 1;
    if (!server_exits)
        linger();
    return 0;
}
