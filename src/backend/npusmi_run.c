/* The npu-smi backend: runs `npu-smi info` (and `-m`, `-t topo` for logic ids and
 * topology) when the DCMI library is not loadable but the tool is on PATH. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hbm/backend.h"
#include "hbm/npusmi.h"

static const char *tool(void)
{
    const char *t = getenv("HBMCTL_NPU_SMI");
    return t && *t ? t : "npu-smi";
}

static int npusmi_available(hbm_err *err)
{
    const char *t = tool();
    if (strchr(t, '/'))
        return access(t, X_OK) == 0 ? 1 : (hbm_err_set(err, "%s not executable", t), 0);
    const char *path = getenv("PATH");
    if (!path)
        return hbm_err_set(err, "npu-smi not on PATH (PATH unset)"), 0;
    char *copy = hbm_xstrdup(path), *save = NULL;
    int found = 0;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char *p = hbm_xasprintf("%s/%s", *dir ? dir : ".", t);
        found = access(p, X_OK) == 0;
        free(p);
    }
    free(copy);
    if (!found)
        hbm_err_set(err, "npu-smi not on PATH");
    return found;
}

/* Runs the tool with arguments, capturing stdout (bounded). */
static int capture(char *const argv[], char **out, size_t *len, hbm_err *err)
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
        hbm_err_set(err, "%s %s exited with status %d%s%s", argv[0], argv[1],
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

static int npusmi_observe(hbm_obs *obs, hbm_err *err)
{
    char *text;
    size_t len;
    char *info[] = {(char *)tool(), "info", NULL};
    if (capture(info, &text, &len, err) < 0)
        return -1;
    int rc = hbm_npusmi_parse_info(obs, text, len, "npu-smi info", err);
    free(text);
    if (rc < 0)
        return -1;
    /* Logic ids and topology are extras: the main table is still right without them. */
    char *map[] = {(char *)tool(), "info", "-m", NULL};
    if (capture(map, &text, &len, NULL) == 0) {
        hbm_npusmi_parse_map(obs, text, len, "npu-smi info -m", NULL);
        free(text);
    }
    char *topo[] = {(char *)tool(), "info", "-t", "topo", NULL};
    if (capture(topo, &text, &len, NULL) == 0) {
        hbm_npusmi_parse_topo(obs, text, len, "npu-smi info -t topo", NULL);
        free(text);
    }
    return 0;
}

const hbm_backend hbm_backend_npusmi = {
    .name = "npu-smi",
    .available = npusmi_available,
    .observe = npusmi_observe,
};
