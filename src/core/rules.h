/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rules.h - rule ids and their attributes, generated from rules.def.
 */
#ifndef RC_RULES_H
#define RC_RULES_H

enum rc_severity { RC_SEV_ERROR, RC_SEV_WARNING, RC_SEV_LEAK };

enum rc_rule {
#define RC_RULE(e, id, sev, summary) RC_R_##e,
#include "core/rules.def"
#undef RC_RULE
	RC_R_COUNT
};

struct rc_rule_info {
	const char *id;
	enum rc_severity severity;
	const char *summary;
};

extern const struct rc_rule_info rc_rules[RC_R_COUNT];

/* "error", "warning" or "leak". */
const char *rc_severity_name(enum rc_severity sev);

#endif
