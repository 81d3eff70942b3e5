// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/integration/tools/syslog_shim.c: an LD_PRELOAD module that catches
 * a daemon's syslog: openlog(), syslog() and vsyslog() (and glibc's
 * fortified __syslog_chk / __vsyslog_chk) append one line each,
 * "IDENT: MESSAGE", to the file $SYSLOG_SHIM_FILE instead of /dev/log,
 * so a case can read what a daemonized marud logged (whose stderr is
 * /dev/null) without a syslog daemon. The environment, and so the shim,
 * survives an execv of the same program.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

void __vsyslog_chk(int prio, int flag, const char *fmt, va_list ap);
void __syslog_chk(int prio, int flag, const char *fmt, ...);

static char ident[64] = "?";

void openlog(const char *id, int option, int facility)
{
	(void)option;
	(void)facility;
	snprintf(ident, sizeof(ident), "%s", id ? id : "?");
}

void vsyslog(int prio, const char *fmt, va_list ap)
{
	const char *path = getenv("SYSLOG_SHIM_FILE");
	char line[4096];
	int n, m, fd;

	(void)prio;
	if (!path)
		return;
	n = snprintf(line, sizeof(line), "%s: ", ident);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		return;
	n += m < (int)sizeof(line) - n - 1 ? m : (int)sizeof(line) - n - 2;
	line[n++] = '\n';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) != n)
		n = -1;
	close(fd);
}

void syslog(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsyslog(prio, fmt, ap);
	va_end(ap);
}

void __vsyslog_chk(int prio, int flag, const char *fmt, va_list ap)
{
	(void)flag;
	vsyslog(prio, fmt, ap);
}

void __syslog_chk(int prio, int flag, const char *fmt, ...)
{
	va_list ap;

	(void)flag;
	va_start(ap, fmt);
	vsyslog(prio, fmt, ap);
	va_end(ap);
}
