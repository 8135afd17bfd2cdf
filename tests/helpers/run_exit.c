/* A child for exit-status tests: `run_exit N` exits with N; `run_exit -s SIG` ends itself
 * with signal SIG (number or name such as SEGV), default action restored first. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc == 2)
        return atoi(argv[1]);
    if (argc == 3 && strcmp(argv[1], "-s") == 0) {
        int sig = atoi(argv[2]);
        if (sig <= 0) {
            const char *n = argv[2];
            if (strncmp(n, "SIG", 3) == 0)
                n += 3;
            for (int s = 1; s < NSIG && sig <= 0; s++) {
                const char *abbrev = sigabbrev_np(s);
                if (abbrev && strcmp(abbrev, n) == 0)
                    sig = s;
            }
        }
        if (sig <= 0) {
            fprintf(stderr, "run_exit: unknown signal %s\n", argv[2]);
            return 2;
        }
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        pause();
        return 3;
    }
    fprintf(stderr, "usage: run_exit N | run_exit -s SIGNAL\n");
    return 2;
}
