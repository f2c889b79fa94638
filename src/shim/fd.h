/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fd.h - the descriptors of event and completion channels (wrap_fd.c),
 * followed through close, dup2/dup3 and fcntl.
 */
#ifndef RC_SHIM_FD_H
#define RC_SHIM_FD_H

#include "shim/call.h"

/* Note and forget a channel's descriptor. */
void rc_fd_track(int fd, const struct rc_obj *o);
void rc_fd_untrack(int fd, uintptr_t h);
/*
 * Set while this thread is inside a real call that may close channel
 * descriptors (the destroys of ids, endpoints, event and completion
 * channels, a migrate away from a private channel): a close() there is the
 * library's own even when an interposer (a sanitizer's runtime) calls
 * close for it, so that its return address is not in the library, or when
 * a -Bsymbolic-functions librdmacm destroys a private channel without
 * calling our wrapper.  Neither library calls back into the program.
 */
extern RC_TLS int rc_lib_closing;
#define RC_FWD_CLOSING(c, call) ({					\
	rc_lib_closing++;						\
	__typeof__(call) rc_fwdc_ret_ = RC_FWD(c, call);		\
	rc_lib_closing--;						\
	rc_fwdc_ret_;							\
})
#define RC_FWDV_CLOSING(c, call) do {					\
	rc_lib_closing++;						\
	RC_FWDV(c, call);						\
	rc_lib_closing--;						\
} while (0)

#endif
