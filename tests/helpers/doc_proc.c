/* Real processes for the doctor/clean tests. Every process it leaves behind ends itself
 * after 300 s (alarm) so a failed test cannot leak it for long.
 *   doc_proc orphan [ignore-term]  a child titled VLLM::EngineCor outlives its parent;
 *                                  prints the child's pid
 *   doc_proc zombie                a child exits and is never reaped; prints "ZOMBIE PARENT"
 *   doc_proc dstate                a process in uninterruptible sleep: a vfork parent waits
 *                                  (state D) while its child lives; prints "PARENT CHILD"
 *   doc_proc sleep                 a plain live process; prints its pid */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "doc_common.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: doc_proc orphan [ignore-term] | zombie | sleep\n");
        return 2;
    }
    if (strcmp(argv[1], "orphan") == 0) {
        int fd;
        pid_t c = fork_engine(&fd);
        if (c == 0) {
            if (argc > 2 && strcmp(argv[2], "ignore-term") == 0)
                signal(SIGTERM, SIG_IGN);
            ready(fd);
            linger();
        }
        printf("%d\n", (int)c);
        return 0;
    }
    if (strcmp(argv[1], "zombie") == 0) {
        background();
        pid_t c = fork();
        if (c < 0)
            return 1;
        if (c == 0)
            _exit(0);
        report("%d %d\n", (int)c, (int)getpid());
        linger();
    }
    if (strcmp(argv[1], "dstate") == 0) {
        background();
        pid_t me = getpid();
        /* The vfork child only makes system calls until it dies: it reports both pids and
         * pauses; the parent stays in D until then (alarm, or the test's SIGKILL). */
        pid_t c = vfork();
        if (c == 0) {
            char buf[64];
            int n = snprintf(buf, sizeof buf, "%d %d\n", (int)me, (int)getpid());
            if (write(report_fd, buf, (size_t)n) != n)
                _exit(1);
            alarm(300);
            for (;;)
                pause();
        }
        _exit(0);
    }
    if (strcmp(argv[1], "sleep") == 0) {
        background();
        report("%d\n", (int)getpid());
        linger();
    }
    fprintf(stderr, "doc_proc: unknown mode %s\n", argv[1]);
    return 2;
}
