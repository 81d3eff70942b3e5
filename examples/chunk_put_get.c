/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * examples/chunk_put_get.c: the smallest complete libmaru client. It stores a
 * local file as one KV chunk in the pool's root directory (create a pending
 * version, write it, publish), reads it back through a lease, compares the
 * bytes and says which data path moved them.
 *
 *   usage: chunk_put_get URI FILE NAME
 *   e.g.   chunk_put_get maru+unix:///run/marud.sock kv.bin 0123abcd.bin
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <maru/libmaru.h>

static const char *path_name(enum maru_data_path p)
{
	switch (p) {
	case MARU_DATA_SHM: return "shm";
	case MARU_DATA_RDMA: return "rdma";
	case MARU_DATA_TCP: return "tcp";
	default: return "auto";
	}
}

/* Whole file into memory. */
static int slurp(const char *path, unsigned char **out, size_t *len)
{
	struct stat st;
	unsigned char *buf;
	size_t n = 0;
	ssize_t k;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && n < (size_t)st.st_size) {
		k = read(fd, buf + n, (size_t)st.st_size - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	*out = buf;
	*len = n;
	return 0;
}

static int put(struct maru_client *c, const char *name, const unsigned char *data, size_t len)
{
	struct maru_file *f;
	ssize_t n;
	int rc;

	rc = maru_file_create(c, MARU_ROOT_ID, name, 0644, getuid(), getgid(), 0, len, &f);
	if (rc)
		return rc;
	n = maru_file_pwrite(f, data, len, 0);
	rc = n < 0 ? (int)n : (size_t)n != len ? -EIO : maru_file_publish(f);
	maru_file_close(f);
	return rc;
}

static int get_compare(struct maru_client *c, const char *name, const unsigned char *data,
		       size_t len)
{
	struct maru_file *f;
	unsigned char *back;
	ssize_t n;
	int rc;

	rc = maru_file_open(c, MARU_ROOT_ID, name, &f);
	if (rc)
		return rc;
	back = malloc(len + 1);
	n = back ? maru_file_pread(f, back, len + 1, 0) : -ENOMEM;
	if (n < 0)
		rc = (int)n;
	else if ((size_t)n != len || memcmp(back, data, len))
		rc = -EILSEQ;
	free(back);
	maru_file_close(f);
	return rc;
}

int main(int argc, char **argv)
{
	struct maru_client_opts opts;
	struct maru_pool_info info;
	struct maru_client *c;
	unsigned char *data = NULL;
	size_t len = 0;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: chunk_put_get URI FILE NAME\n");
		return 2;
	}
	rc = slurp(argv[2], &data, &len);
	if (rc) {
		fprintf(stderr, "chunk_put_get: %s: %s\n", argv[2], maru_strerror(rc));
		return 1;
	}
	maru_client_opts_init(&opts, sizeof(opts));
	opts.uri = argv[1];
	opts.client_name = "chunk_put_get";
	/* A request polls for its reply up to 50 us before sleeping (the
	 * default): serial calls like these run several times faster where
	 * waking a thread is slow. 0 saves the CPU instead. */
	opts.spin_us = 50;
	rc = maru_client_new(&opts, &c);
	if (rc) {
		fprintf(stderr, "chunk_put_get: %s: %s\n", argv[1], maru_strerror(rc));
		free(data);
		return 1;
	}
	rc = put(c, argv[3], data, len);
	if (!rc)
		rc = get_compare(c, argv[3], data, len);
	if (!rc && !maru_client_pool_info(c, &info))
		printf("stored %zu bytes as /%s and read them back over %s\n", len, argv[3],
		       path_name(info.data_path));
	if (rc)
		fprintf(stderr, "chunk_put_get: %s: %s\n", argv[3],
			rc == -EILSEQ ? "bytes read back differ" : maru_strerror(rc));
	maru_client_free(c);
	free(data);
	return rc ? 1 : 0;
}
