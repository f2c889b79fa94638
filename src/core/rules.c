/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rules.c - the rule table (rc_rules[]) and severity names, generated from
 * rules.def so that a new rule is one line there.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "core/rules.h"

const struct rc_rule_info rc_rules[RC_R_COUNT] = {
#define RC_RULE(e, id, sev, summary) \
	[RC_R_##e] = { id, RC_SEV_##sev, summary },
#include "core/rules.def"
#undef RC_RULE
};

const char *rc_severity_name(enum rc_severity sev)
{
	switch (sev) {
	case RC_SEV_ERROR:
		return "error";
	case RC_SEV_WARNING:
		return "warning";
	case RC_SEV_LEAK:
		return "leak";
	}
	return "unknown";
}
