/* One lease directory shared by every user of a host. Devices are shared by users, so their
 * leases must be too: hbmctl creates the directory 1777 (world-writable and sticky, like
 * /tmp and /run/lock: anyone may add a file, only its owner or root may remove it) and each
 * lease file 0666, and the flock is the truth. Modes of a directory or file that already
 * exists are left as the administrator set them; a user who cannot open a file is told who
 * owns what and how to configure it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hbm/lease.h"
#include "hbm/util.h"
#include "lease/lease_int.h"

static void owner_name(uid_t uid, char *buf, size_t n)
{
    struct passwd pw, *res = NULL;
    char tmp[1024];
    if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
        snprintf(buf, n, "%s (uid %u)", res->pw_name, (unsigned)uid);
    else
        snprintf(buf, n, "uid %u", (unsigned)uid);
}

/* "owned by root (uid 0), mode 0755" for the message of a permission failure. */
static void describe(const char *path, char *buf, size_t n)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(buf, n, "%s: %s", path, strerror(errno));
        return;
    }
    char who[96];
    owner_name(st.st_uid, who, sizeof who);
    snprintf(buf, n, "%s is owned by %s, mode %04o", path, who, (unsigned)(st.st_mode & 07777));
}

#define LEASE_DIR_HINT                                                                        \
    "Every user who takes leases must be able to create and open files there: as root, "   \
    "`install -d -m 1777 DIR` (on /run, a tmpfiles.d line `d /run/hbmctl 1777 root root -` " \
    "keeps it across reboots), or use a directory of your own with --lease-dir DIR or "     \
    "HBMCTL_LEASE_DIR=DIR (leases then exclude only users of the same directory)"

int lease_dir_prepare(const char *dir, hbm_err *err)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return hbm_err_set(err, "lease directory %s is not a directory", dir);
        return 0;
    }
    if (errno != ENOENT)
        return hbm_err_set(err, "lease directory %s: %s", dir, strerror(errno));
    char *tmp = hbm_xstrdup(dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(tmp, 0755);
        *p = '/';
        if (rc < 0 && errno != EEXIST)
            break;
    }
    free(tmp);
    if (mkdir(dir, 01777) == 0) {
        /* The umask took bits away: the mode is set explicitly. */
        if (chmod(dir, 01777) < 0)
            return hbm_err_set(err, "cannot make lease directory %s mode 1777: %s", dir,
                               strerror(errno));
        return 0;
    }
    if (errno == EEXIST)
        return 0;
    int e = errno;
    char parent[PATH_MAX], what[PATH_MAX + 128];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = '\0';
    else if (slash)
        slash[1] = '\0';
    else
        snprintf(parent, sizeof parent, ".");
    describe(parent, what, sizeof what);
    return hbm_err_set(err, "cannot create lease directory %s: %s (%s). " LEASE_DIR_HINT ".",
                       dir, strerror(e), what);
}

/* With fs.protected_regular the kernel refuses an O_CREAT open of an existing file in a
 * world-writable sticky directory unless the opener or the directory's owner owns it. A
 * file made by one user would then lock every other user out, root included: root hands
 * such a file to the directory's owner (same inode, so a lock on it is kept). */
static void adopt(int fd, const char *dir)
{
    struct stat fs, ds;
    if (geteuid() != 0 || fstat(fd, &fs) < 0 || stat(dir, &ds) < 0)
        return;
    if ((ds.st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH) && fs.st_uid != ds.st_uid &&
        fchown(fd, ds.st_uid, ds.st_gid) == 0)
        fchmod(fd, 0666);
}

int lease_file_open(const char *dir, const char *base, hbm_err *err)
{
    char path[512];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, base) >= sizeof path)
        return hbm_err_set(err, "lease directory path too long: %s", dir);
    int fd = -1, e = 0;
    /* Opened without O_CREAT first: with fs.protected_regular the kernel refuses an O_CREAT
     * open of another user's file in a sticky world-writable directory, even when it exists.
     * Created with O_EXCL only when missing. A racing creator makes the exclusive create fail: open again. */
    for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
        /* O_NONBLOCK: a FIFO planted here must not hold the open (the type check below
         * refuses it); on the regular file it changes nothing. */
        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0)
            break;
        e = errno;
        if (e != ENOENT)
            break;
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd >= 0) {
            if (fchmod(fd, 0666) < 0) { /* past the umask */
                e = errno;
                close(fd);
                return hbm_err_set(err, "cannot make %s mode 0666: %s", path, strerror(e));
            }
            break;
        }
        e = errno;
        if (e != EEXIST)
            break;
    }
    if (fd < 0) {
        char d[PATH_MAX + 128], f[PATH_MAX + 128] = "";
        describe(dir, d, sizeof d);
        if (e != ENOENT && e != ELOOP)
            describe(path, f, sizeof f);
        if (e == EACCES || e == EPERM || e == EROFS)
            return hbm_err_set(err, "cannot open lease file %s: %s (%s%s%s). " LEASE_DIR_HINT
                               ", and the files in it mode 0666.", path, strerror(e), d,
                               f[0] ? "; " : "", f);
        return hbm_err_set(err, "cannot open lease file %s: %s%s", path, strerror(e),
                           e == ELOOP ? " (a symbolic link: not a file hbmctl made)" : "");
    }
    /* A hard link to another file would have hbmctl write its lease into that file. */
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        close(fd);
        return hbm_err_set(err, "lease file %s is not a regular file with one link: not a "
                           "file hbmctl made; remove it", path);
    }
    adopt(fd, dir);
    return fd;
}

int lease_file_ensure(const char *dir, int64_t device, hbm_err *err)
{
    char base[64];
    snprintf(base, sizeof base, "device-%lld.lease", (long long)device);
    int fd = lease_file_open(dir, base, err);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

bool lease_dir_owned(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0 && st.st_uid == geteuid();
}

bool hbm_lease_pid_holds(const hbm_lease_info *info)
{
    struct stat want;
    if (info->pid <= 0 || stat(info->path, &want) < 0)
        return false;
    char fddir[64];
    snprintf(fddir, sizeof fddir, "/proc/%d/fd", info->pid);
    int dfd = open(fddir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return false;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return false;
    }
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] != '.' && fstatat(dfd, e->d_name, &st, 0) == 0)
            found = st.st_dev == want.st_dev && st.st_ino == want.st_ino;
    }
    closedir(d);
    return found;
}
