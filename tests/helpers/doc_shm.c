/* Real shared memory for the clean tests. Processes it leaves behind end after 300 s.
 *   doc_shm sysv-dead SIZE      create a segment and exit: creator dead, never attached
 *   doc_shm sysv-attach SHMID   attach an existing segment and stay
 *   doc_shm sysv-detached SIZE  create, attach, detach and stay: creator alive, nattch 0
 *   doc_shm posix-map PATH      create PATH (4 KiB), map it, close the fd and stay
 *   doc_shm posix-open PATH     create PATH and keep it open (no mapping)
 * Prints the segment id (sysv-dead), "ID PID" (sysv-detached) or the staying pid. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include "doc_common.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: doc_shm MODE ARG\n");
        return 2;
    }
    const char *m = argv[1];
    if (strcmp(m, "sysv-dead") == 0 || strcmp(m, "sysv-detached") == 0) {
        if (strcmp(m, "sysv-detached") == 0)
            background();
        int id = shmget(IPC_PRIVATE, (size_t)atol(argv[2]), IPC_CREAT | 0600);
        if (id < 0) {
            perror("shmget");
            return 1;
        }
        if (strcmp(m, "sysv-dead") == 0) {
            printf("%d\n", id);
            return 0;
        }
        void *a = shmat(id, NULL, 0);
        if (a == (void *)-1 || shmdt(a) < 0) {
            perror("shmat");
            return 1;
        }
        report("%d %d\n", id, (int)getpid());
        linger();
    }
    if (strcmp(m, "sysv-attach") == 0) {
        background();
        void *a = shmat(atoi(argv[2]), NULL, 0);
        if (a == (void *)-1) {
            perror("shmat");
            return 1;
        }
        report("%d\n", (int)getpid());
        linger();
    }
    if (strcmp(m, "posix-map") == 0 || strcmp(m, "posix-open") == 0) {
        background();
        int fd = open(argv[2], O_RDWR | O_CREAT, 0600);
        if (fd < 0 || ftruncate(fd, 4096) < 0) {
            perror(argv[2]);
            return 1;
        }
        if (strcmp(m, "posix-map") == 0) {
            void *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (a == MAP_FAILED) {
                perror("mmap");
                return 1;
            }
            close(fd);
        }
        report("%d\n", (int)getpid());
        linger();
    }
    fprintf(stderr, "doc_shm: unknown mode %s\n", m);
    return 2;
}
