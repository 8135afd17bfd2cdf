/* Child programs whose output hbmctl reads (npu-smi, scontrol). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hbm/util.h"

int hbm_run_capture(char *const argv[], char **out, size_t *len, hbm_err *err)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return hbm_err_set(err, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return hbm_err_set(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(pfd[1], STDOUT_FILENO);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t cap = 65536, n = 0;
    char *buf = hbm_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= (16u << 20))
                break;
            cap *= 2;
            buf = hbm_xrealloc(buf, cap);
        }
        ssize_t r = read(pfd[0], buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(pfd[0]);
    buf[n] = '\0';
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *first = hbm_xstrndup(buf, 200);
        hbm_err_set(err, "%s %s exited with status %d%s%s", argv[0], argv[1] ? argv[1] : "",
                    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                    n ? ": " : "", hbm_trim(first));
        free(first);
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}
