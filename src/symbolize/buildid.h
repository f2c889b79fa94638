/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * buildid.h - the GNU build id of an ELF image in memory (a loaded
 * module's first mapping, or a file read into memory): what tells a
 * report's module from a rebuilt file of the same name.
 */
#ifndef RC_BUILDID_H
#define RC_BUILDID_H

#include <stddef.h>

/* Hex digits of the longest build id kept (SHA-1 ids have 40). */
#define RC_BUILD_ID_MAX 128

/*
 * The build id note of the ELF image img[0..size), as lowercase hex into
 * hex (RC_BUILD_ID_MAX + 1 bytes).  Reads only inside the image; no
 * allocation, no locks, so also for a signal handler.  0, or -1 when the
 * image is not a native ELF or has no build id.
 */
int rc_build_id(const void *img, size_t size, char *hex);

#endif
