/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * watchdog.h - the watchdog (watchdog.c): forwarded calls that may block
 * on an id's events, watched so that a hang is reported while it lasts.
 */
#ifndef RC_SHIM_WATCHDOG_H
#define RC_SHIM_WATCHDOG_H

#include "shim/call.h"

/* Watch a forwarded call that may block on id's events. */
int rc_watch_begin(struct rc_call *c, const struct rc_obj *id);
void rc_watch_end(int slot);
void rc_watch_atfork_child(void);

#endif
