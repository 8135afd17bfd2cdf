/* A tree member that leaves a SysV segment behind: creates one (IPC_PRIVATE, 64 KiB),
 * attaches and detaches it (so its last user is itself), writes the id to FILE and waits
 * to be stopped. Usage: run_shm FILE. */
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: run_shm FILE\n");
        return 2;
    }
    int id = shmget(IPC_PRIVATE, 64 * 1024, IPC_CREAT | 0600);
    if (id < 0) {
        perror("shmget");
        return 1;
    }
    void *p = shmat(id, NULL, 0);
    if (p != (void *)-1)
        shmdt(p);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return 1;
    fprintf(f, "%d\n", id);
    fclose(f);
    if (rename(tmp, argv[1]) < 0)
        return 1;
    for (;;)
        pause();
}
