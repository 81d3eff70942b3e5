/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/bdi.h: the kernel's read-ahead for a marufs mount (bdi.c). The kernel
 * gives a FUSE mount 128 KiB of read-ahead whatever max_readahead the INIT
 * reply asks (it takes the smaller), so a sequential read of a chunk is one
 * FUSE READ per 128 KiB. The mount's backing device's read_ahead_kb in
 * sysfs raises it, up to the 1 MiB a READ request carries (max_write).
 */
#ifndef MARUFS_BDI_H
#define MARUFS_BDI_H

/*
 * The device number (MAJOR:MINOR) of the mount on mountpoint, the last one
 * stacked there, read from mountinfo (a /proc/self/mountinfo text; octal
 * escapes in paths understood). 0, or -ENOENT: not mounted; -errno as the
 * file cannot be read.
 */
int bdi_find(const char *mountinfo, const char *mountpoint, unsigned int *major,
	     unsigned int *minor);
/*
 * Write kb to SYSFS/class/bdi/MAJOR:MINOR/read_ahead_kb (sysfs: "/sys",
 * or a test's folder); *was gets what it held (0 if unreadable). 0 or
 * -errno (-EACCES or -EROFS: not root, or a read-only sysfs).
 */
int bdi_set_readahead(const char *sysfs, unsigned int major, unsigned int minor,
		      unsigned int kb, unsigned int *was);

/*
 * Both for the mount on mountpoint: bdi_find() in mountinfo, then
 * bdi_set_readahead() under sysfs. 0 or -errno of the step that failed.
 */
int bdi_readahead(const char *mountinfo, const char *sysfs, const char *mountpoint,
		  unsigned int kb, unsigned int *was);

#endif
