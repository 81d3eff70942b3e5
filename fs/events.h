/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/events.h: the event subscription thread of a mount (events.c).
 */
#ifndef MARUFS_EVENTS_H
#define MARUFS_EVENTS_H

#include "mount.h"

struct events;

int events_start(struct mfs *m, struct events **out);
void events_stop(struct events *ev);
void events_free(struct events *ev);

#endif
