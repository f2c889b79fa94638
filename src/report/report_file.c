/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report_file.c - where a report file goes.  A regular file (or a new
 * path) is replaced atomically: a temporary file in the same directory,
 * then rename(2), and temporaries a killed process left behind are
 * removed.  A FIFO, a character device or a socket is written directly
 * and never replaced (json=/dev/stdout works).  A symbolic link is
 * followed: its target is written, the link stays.  Anything else (a
 * directory, a path we cannot write) gives one clear message and no
 * report; the program goes on, and file_errors decides whether that
 * is an error (exit status 2) or a warning.  rc_report_file_check() asks
 * the same question at start, before anything is written.
 *
 * Everything up to rc_report_file_open() and rc_report_file_close() is
 * async-signal-safe (lstat, readlink, open, rename): the crash handler
 * writes through here too.  rc_report_file_clean() is not.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "core/options.h"
#include "report/report_int.h"

static bool copy(char *dst, size_t len, const char *a, size_t an,
		 const char *b)
{
	size_t bn = strlen(b);

	if (an + bn + 1 > len)
		return false;
	memmove(dst, a, an);
	memcpy(dst + an, b, bn + 1);
	return true;
}

/*
 * Follow path's symbolic links to the file they name, into dst.  Magic
 * links under /proc (/dev/stdout is /proc/self/fd/1) cannot be followed by
 * name: their target is the open file itself, so they are written
 * directly.
 */
static enum rc_file_kind resolve(const char *path, char *dst, size_t len)
{
	char link[PATH_MAX];
	struct stat st;
	const char *slash;
	ssize_t n;
	int hops;

	if (!copy(dst, len, path, strlen(path), ""))
		return RC_FILE_NONE;
	for (hops = 0; hops < 40; hops++) {
		if (lstat(dst, &st))
			return errno == ENOENT ? RC_FILE_RENAME : RC_FILE_NONE;
		if (!S_ISLNK(st.st_mode))
			break;
		if (!strncmp(dst, "/proc/", 6))
			return stat(dst, &st) ? RC_FILE_NONE : RC_FILE_DIRECT;
		n = readlink(dst, link, sizeof(link) - 1);
		if (n <= 0)
			return RC_FILE_NONE;
		link[n] = 0;
		slash = strrchr(dst, '/');
		if (link[0] == '/' || !slash) {
			if (!copy(dst, len, link, n, ""))
				return RC_FILE_NONE;
		} else if (!copy(dst, len, dst, slash + 1 - dst, link)) {
			return RC_FILE_NONE;
		}
	}
	if (hops == 40) {
		errno = ELOOP;
		return RC_FILE_NONE;
	}
	if (S_ISREG(st.st_mode))
		return RC_FILE_RENAME;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return RC_FILE_NONE;
	}
	return RC_FILE_DIRECT;	/* FIFO, device, socket */
}

int rc_report_file_check(const char *path)
{
	char final[PATH_MAX], dir[PATH_MAX];
	const char *slash;

	switch (resolve(path, final, sizeof(final))) {
	case RC_FILE_NONE:
		return -1;
	case RC_FILE_DIRECT:
		return access(final, W_OK);
	default:
		break;
	}
	/* Replaced by rename(2): the directory must take a new file. */
	slash = strrchr(final, '/');
	if (!slash)
		return access(".", W_OK | X_OK);
	if (!copy(dir, sizeof(dir), final, slash - final + 1, "")) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return access(dir, W_OK | X_OK);
}

/* "<final>.tmp.<pid>". */
static bool tmp_name(const char *final, char *tmp, size_t len)
{
	unsigned seq = rc_path_seq;	/* the pid alone: no suffix */
	char pid[16];

	rc_path_seq = 0;
	rc_options_expand_path("%p", pid, sizeof(pid));
	rc_path_seq = seq;
	return copy(tmp, len, final, strlen(final), ".tmp.") &&
	       copy(tmp, len, tmp, strlen(tmp), pid);
}

int rc_report_file_open(const char *path, struct rc_report_file *f)
{
	int fd;

	f->kind = resolve(path, f->final, sizeof(f->final));
	if (f->kind == RC_FILE_NONE)
		return -1;
	if (f->kind == RC_FILE_DIRECT) {
		/* No reader on a FIFO: fail rather than block the exit. */
		fd = open(f->final, O_WRONLY | O_CLOEXEC | O_NONBLOCK |
			  O_APPEND);
		if (fd >= 0)
			fcntl(fd, F_SETFL, O_APPEND);
		return fd;
	}
	if (!tmp_name(f->final, f->tmp, sizeof(f->tmp))) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

int rc_report_file_close(int fd, const struct rc_report_file *f, bool ok)
{
	int err;

	ok = !close(fd) && ok;
	if (f->kind == RC_FILE_DIRECT)
		return ok ? 0 : -1;
	if (ok && !rename(f->tmp, f->final))
		return 0;
	err = errno;
	unlink(f->tmp);
	errno = err;
	return -1;
}

/*
 * Temporaries "<final>.tmp.<pid>" of processes that are gone (killed while
 * they wrote their report): nobody will rename them.
 */
void rc_report_file_clean(const char *final)
{
	const char *slash = strrchr(final, '/');
	char dir[PATH_MAX], p[PATH_MAX];
	size_t blen;
	const char *base, *rest;
	struct dirent *e;
	char *end;
	long pid;
	DIR *d;

	if (slash) {
		if (!copy(dir, sizeof(dir), final, slash - final + 1, ""))
			return;
		base = slash + 1;
	} else {
		copy(dir, sizeof(dir), ".", 1, "");
		base = final;
	}
	blen = strlen(base);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, base, blen) ||
		    strncmp(e->d_name + blen, ".tmp.", 5))
			continue;
		rest = e->d_name + blen + 5;
		pid = strtol(rest, &end, 10);
		if (end == rest || *end || pid <= 0 || pid == getpid() ||
		    !kill(pid, 0) || errno != ESRCH)
			continue;
		if (copy(p, sizeof(p), dir, strlen(dir), e->d_name))
			unlink(p);
	}
	closedir(d);
}
