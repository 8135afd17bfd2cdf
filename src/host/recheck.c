/* Live re-checks right before a SysV segment is removed: the observation may be old, the
 * segment must be stale now. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/shm.h>

#include "hbm/host.h"

/* A zombie counts as dead: it can attach nothing any more. */
static bool pid_alive(int pid)
{
    if (pid <= 0 || (kill(pid, 0) < 0 && errno != EPERM))
        return false;
    uint64_t st;
    char state = 0;
    return hbm_host_starttime(NULL, pid, &st, &state) < 0 ? errno == EPERM : state != 'Z';
}

int hbm_host_sysv_stale_now(int shmid, int64_t key, char *why, size_t n)
{
    struct shmid_ds ds;
    if (shmctl(shmid, IPC_STAT, &ds) < 0) {
        snprintf(why, n, "segment id %d: %s", shmid,
                 errno == EINVAL || errno == EIDRM ? "already gone" : strerror(errno));
        return 0;
    }
    if ((int64_t)(uint32_t)ds.shm_perm.__key != (key & 0xffffffffLL)) {
        snprintf(why, n, "segment id %d now has another key: a different segment", shmid);
        return 0;
    }
    if (ds.shm_nattch != 0) {
        snprintf(why, n, "segment id %d is attached %lu time%s now", shmid,
                 (unsigned long)ds.shm_nattch, ds.shm_nattch == 1 ? "" : "s");
        return 0;
    }
    if (ds.shm_cpid <= 0 || pid_alive(ds.shm_cpid)) {
        snprintf(why, n, "segment id %d: its creator pid %d is alive (or not visible here)",
                 shmid, (int)ds.shm_cpid);
        return 0;
    }
    if (pid_alive(ds.shm_lpid)) {
        snprintf(why, n, "segment id %d: its last user pid %d is alive", shmid,
                 (int)ds.shm_lpid);
        return 0;
    }
    snprintf(why, n, "segment id %d: nattch 0, creator %d and last user %d gone", shmid,
             (int)ds.shm_cpid, (int)ds.shm_lpid);
    return 1;
}
