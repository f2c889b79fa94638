/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsocket.h - rsockets (wrap_rsocket.c): the registry handle of an
 * rsocket and the check of a call on one.
 */
#ifndef RC_SHIM_RSOCKET_H
#define RC_SHIM_RSOCKET_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/interpose.h"

/* The registry handle of the rsocket numbered fd (odd, so never an
 * address; threads.c's are (tid << 3) | 1). */
#define RC_RS_HANDLE(fd) (((uintptr_t)(unsigned)(fd) << 3) | 3)
bool rc_rs_check(enum rc_fn fn, int s, uintptr_t ra);

#endif
