/*
 * A full disk without privileges, for the hub's tests (LD_PRELOAD this library): once
 * DLLM_ENOSPC_AFTER bytes have gone to regular files (descriptors above 2: not the program's
 * redirected output), write and pwrite write what still fits and then fail with ENOSPC, and
 * fallocate past it, fsync and fdatasync fail with ENOSPC too. statvfs and fstatvfs report the
 * space left: DLLM_ENOSPC_REPORT bytes (default DLLM_ENOSPC_AFTER) less what was written.
 */
#define _GNU_SOURCE /* RTLD_NEXT, the *64 declarations */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

static atomic_llong written;

/* A byte count from the environment, or -1 when unset or not a number. */
static long long env_bytes(const char *name)
{
    const char *s = getenv(name);
    char *end;
    long long v = s ? strtoll(s, &end, 10) : -1;
    return s && *s && !*end && v >= 0 ? v : -1;
}

/* The bytes still allowed (LLONG_MAX when no limit is set). */
static long long room(void)
{
    long long limit = env_bytes("DLLM_ENOSPC_AFTER");
    if (limit < 0)
        return LLONG_MAX;
    long long left = limit - atomic_load(&written);
    return left > 0 ? left : 0;
}

/* Whether fd is one of the files the limit applies to. */
static int counted(int fd)
{
    struct stat st;
    return fd > 2 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* The next definition of name after this library's. */
static void *next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* How much of a write of n bytes to fd may go through; -1 (errno ENOSPC) when nothing. */
static ssize_t allowed(int fd, size_t n)
{
    if (n == 0 || !counted(fd))
        return (ssize_t)n;
    long long left = room();
    if (left == 0) {
        errno = ENOSPC;
        return -1;
    }
    return (ssize_t)((long long)n < left ? (long long)n : left);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t))next("write");
    ssize_t k = allowed(fd, n);
    if (k < 0)
        return -1;
    ssize_t w = real(fd, buf, (size_t)k);
    if (w > 0 && counted(fd))
        atomic_fetch_add(&written, w);
    return w;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t, off_t))next("pwrite");
    ssize_t k = allowed(fd, n);
    if (k < 0)
        return -1;
    ssize_t w = real(fd, buf, (size_t)k, off);
    if (w > 0 && counted(fd))
        atomic_fetch_add(&written, w);
    return w;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    return pwrite(fd, buf, n, off);
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
    static int (*real)(int, int, off_t, off_t);
    if (!real)
        real = (int (*)(int, int, off_t, off_t))next("fallocate");
    if (counted(fd) && len > room()) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off_t off, off_t len)
{
    return fallocate(fd, mode, off, len);
}

/* fsync and fdatasync: ENOSPC once the limit is reached (space the kernel could not find). */
static int sync_with(const char *name, int fd)
{
    int (*real)(int) = (int (*)(int))next(name);
    if (counted(fd) && room() == 0) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd);
}

int fsync(int fd)
{
    return sync_with("fsync", fd);
}

int fdatasync(int fd)
{
    return sync_with("fdatasync", fd);
}

/* The free space reported: the real figures with f_bavail and f_bfree cut to what is left. */
static void report(struct statvfs *sv)
{
    long long total = env_bytes("DLLM_ENOSPC_REPORT");
    if (total < 0)
        total = env_bytes("DLLM_ENOSPC_AFTER");
    if (total < 0 || sv->f_frsize == 0)
        return;
    long long left = total - atomic_load(&written);
    fsblkcnt_t blocks = (fsblkcnt_t)(left > 0 ? left : 0) / sv->f_frsize;
    if (blocks < sv->f_bavail)
        sv->f_bavail = blocks;
    if (blocks < sv->f_bfree)
        sv->f_bfree = blocks;
}

int statvfs(const char *path, struct statvfs *sv)
{
    static int (*real)(const char *, struct statvfs *);
    if (!real)
        real = (int (*)(const char *, struct statvfs *))next("statvfs");
    int r = real(path, sv);
    if (r == 0)
        report(sv);
    return r;
}

int statvfs64(const char *path, struct statvfs64 *sv)
{
    return statvfs(path, (struct statvfs *)sv);
}

int fstatvfs(int fd, struct statvfs *sv)
{
    static int (*real)(int, struct statvfs *);
    if (!real)
        real = (int (*)(int, struct statvfs *))next("fstatvfs");
    int r = real(fd, sv);
    if (r == 0)
        report(sv);
    return r;
}

int fstatvfs64(int fd, struct statvfs64 *sv)
{
    return fstatvfs(fd, (struct statvfs *)sv);
}
