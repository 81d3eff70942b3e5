/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/bdi.c: the kernel's read-ahead for this mount (bdi.h): the mount's
 * device number out of mountinfo, and read_ahead_kb of its backing device
 * in sysfs. ops.c calls bdi_readahead() once, in the INIT exchange; nothing
 * here touches the mount itself (a stat of it would wait for our own loop).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bdi.h"

/* mountinfo's escapes (\040 for a blank, \011, \012, \134) undone in place. */
static void unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...": 1 and the numbers if it is ours. */
static int line_matches(char *line, const char *mountpoint, unsigned int *maj,
			unsigned int *min)
{
	char *save = NULL, *dev = NULL, *mp = NULL, *tok;
	int field = 0;

	for (tok = strtok_r(line, " ", &save); tok && field < 5;
	     tok = strtok_r(NULL, " ", &save), field++) {
		if (field == 2)
			dev = tok;
		else if (field == 4)
			mp = tok;
	}
	if (!dev || !mp)
		return 0;
	unescape(mp);
	if (strcmp(mp, mountpoint) != 0)
		return 0;
	return sscanf(dev, "%u:%u", maj, min) == 2;
}

int bdi_find(const char *mountinfo, const char *mountpoint, unsigned int *major,
	     unsigned int *minor)
{
	FILE *f = fopen(mountinfo, "re");
	char *line = NULL;
	size_t cap = 0;
	unsigned int a, b;
	int found = 0;

	if (!f)
		return -errno;
	/* the last match: a mount stacked on an older one at the same path */
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (line_matches(line, mountpoint, &a, &b)) {
			*major = a;
			*minor = b;
			found = 1;
		}
	}
	free(line);
	fclose(f);
	return found ? 0 : -ENOENT;
}

int bdi_set_readahead(const char *sysfs, unsigned int major, unsigned int minor,
		      unsigned int kb, unsigned int *was)
{
	char path[256], buf[32];
	ssize_t n;
	int fd, len, rc = 0;

	*was = 0;
	snprintf(path, sizeof(path), "%s/class/bdi/%u:%u/read_ahead_kb", sysfs, major, minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n > 0) {
		buf[n] = '\0';
		*was = (unsigned int)strtoul(buf, NULL, 10);
	}
	len = snprintf(buf, sizeof(buf), "%u\n", kb);
	if (pwrite(fd, buf, (size_t)len, 0) != len)
		rc = errno ? -errno : -EIO;
	close(fd);
	return rc;
}

int bdi_readahead(const char *mountinfo, const char *sysfs, const char *mountpoint,
		  unsigned int kb, unsigned int *was)
{
	unsigned int maj, min;
	int rc = bdi_find(mountinfo, mountpoint, &maj, &min);

	*was = 0;
	return rc < 0 ? rc : bdi_set_readahead(sysfs, maj, min, kb, was);
}
