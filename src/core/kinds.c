/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * kinds.c - the names of the object kinds (kinds.h).
 */
#include "core/kinds.h"

static const char *const kind_json[] = {
#define X(e, json, text) [RC_K_##e] = json,
	RC_KINDS(X)
#undef X
};

static const char *const kind_text[] = {
#define X(e, json, text) [RC_K_##e] = text,
	RC_KINDS(X)
#undef X
};

const char *rc_kind_json(enum rc_kind k)
{
	return (unsigned)k < RC_K_COUNT ? kind_json[k] : "unknown";
}

const char *rc_kind_text(enum rc_kind k)
{
	return (unsigned)k < RC_K_COUNT ? kind_text[k] : "object";
}
