/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marustat/pool.h: marud's metrics asked directly through libmaru
 * (STATS over the control socket), for a pool given by its URI.
 */
#ifndef MARUSTAT_POOL_H
#define MARUSTAT_POOL_H

struct maru_client;

/* A client of uri (key_file may be NULL); 0 or -errno with err filled. */
int pool_open(const char *uri, const char *key_file, struct maru_client **out, char *err,
	      unsigned int errlen);
/* marud's text, without the lines of this client's own families. */
int pool_fetch(struct maru_client *c, const char *uri, char **text, char *err,
	       unsigned int errlen);
void pool_close(struct maru_client *c);

#endif
