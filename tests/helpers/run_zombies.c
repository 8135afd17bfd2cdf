/* A zombie factory for the PID 1 test: makes N orphans that exit after their parent did,
 * so they become zombies of whatever adopted them (init or a subreaper), then checks that
 * the adopter reaps them. Usage: run_zombies N [SECONDS]. Exits 0 once no zombie is left in
 * /proc (polled for up to SECONDS, default 10), 1 if some remain, printing what it saw. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int count_zombies(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[300], buf[1024];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        char *p = strrchr(buf, ')');
        if (p && p[1] == ' ' && p[2] == 'Z')
            n++;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 5;
    int polls = (argc > 2 ? atoi(argv[2]) : 10) * 10;
    for (int i = 0; i < n; i++) {
        pid_t c = fork();
        if (c == 0) {
            if (fork() == 0) {
                usleep(200 * 1000); /* outlive the parent, then exit as an orphan */
                _exit(0);
            }
            _exit(0);
        }
        waitpid(c, NULL, 0);
    }
    usleep(400 * 1000);
    int z = -1;
    for (int t = 0; t < polls; t++) {
        z = count_zombies();
        if (z == 0)
            break;
        usleep(100 * 1000);
    }
    printf("run_zombies: %d orphans made, %d zombies left\n", n, z);
    return z == 0 ? 0 : 1;
}
