/* The CPU time a command takes, user + system, from wait4: what bench/scan compares for
 * fuser and lsof beside the in-process figures of the scan and its floor. CPU time, not
 * wall time, so the other work on a loaded machine does not enter the ratios.
 *   cpu_time CMD [ARG...]  runs CMD with stdin, stdout and stderr on /dev/null and prints
 *                          its CPU milliseconds (its status is ignored) */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cpu_time CMD [ARG...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("cpu_time: fork");
        return 2;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
            _exit(127);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("cpu_time: wait4");
        return 2;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        fprintf(stderr, "cpu_time: cannot run %s\n", argv[1]);
        return 2;
    }
    double ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    printf("%.3f\n", ms);
    return 0;
}
