/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * suppress.c - suppression entries: loading, parsing, matching a finding's
 * stack against them, and the per-entry hit counts shown at exit.
 *
 * Entries are only added at init, before any thread reports, so matching
 * reads them without a lock; hit counts are atomic.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/options.h"
#include "core/rdmacheck.h"
#include "report/suppress.h"

struct supp {
	char *text;		/* "rule:pattern" as shown to the user */
	char *rule;		/* id, or prefix when is_prefix */
	size_t rule_len;
	bool is_prefix;
	char *pattern;
	unsigned hits;
};

static struct supp *supps;
static unsigned nsupps;

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
	       c == '\v' || c == '\f';
}

/* Trim s[0..*len) in place of pointers; returns the new start. */
static const char *trim(const char *s, size_t *len)
{
	while (*len && is_space(*s)) {
		s++;
		(*len)--;
	}
	while (*len && is_space(s[*len - 1]))
		(*len)--;
	return s;
}

/* Does rule id select rule[0..len), a prefix when is_prefix? */
static bool rule_matches(const char *id, const char *rule, size_t len,
			 bool is_prefix)
{
	if (is_prefix)
		return !strncmp(id, rule, len);
	return strlen(id) == len && !memcmp(id, rule, len);
}

static bool rule_selects(const struct supp *s, enum rc_rule rule)
{
	return rule_matches(rc_rules[rule].id, s->rule, s->rule_len,
			    s->is_prefix);
}

static bool rule_known(const char *rule, size_t len, bool is_prefix)
{
	unsigned r;

	for (r = 0; r < RC_R_COUNT; r++)
		if (rule_matches(rc_rules[r].id, rule, len, is_prefix))
			return true;
	return false;
}

int rc_suppress_add_line(const char *line, const char *where,
			 unsigned lineno)
{
	const char *hash = strchr(line, '#');
	size_t len = hash ? (size_t)(hash - line) : strlen(line);
	const char *colon, *rule, *pat;
	size_t rlen, plen;
	struct supp *grown, *s;
	bool is_prefix;

	line = trim(line, &len);
	if (!len)
		return 0;
	colon = memchr(line, ':', len);
	if (!colon) {
		rc_complain("%s:%u: expected RULE:PATTERN, got '%.*s' (ignored)",
			    where, lineno, (int)len, line);
		return -1;
	}
	rlen = colon - line;
	rule = trim(line, &rlen);
	plen = len - (colon + 1 - line);
	pat = trim(colon + 1, &plen);
	if (!rlen || !plen) {
		rc_complain("%s:%u: empty %s in '%.*s' (ignored)", where,
			    lineno, rlen ? "pattern" : "rule", (int)len, line);
		return -1;
	}
	is_prefix = rule[rlen - 1] == '*';
	if (is_prefix)
		rlen--;
	if (memchr(rule, '*', rlen) || !rule_known(rule, rlen, is_prefix)) {
		rc_complain("%s:%u: unknown rule '%.*s' (ignored)", where,
			    lineno, (int)(rlen + is_prefix), rule);
		return -1;
	}

	grown = realloc(supps, (nsupps + 1) * sizeof(*supps));
	if (!grown)
		goto oom;
	supps = grown;
	s = &supps[nsupps];
	memset(s, 0, sizeof(*s));
	s->rule = strndup(rule, rlen);
	s->pattern = strndup(pat, plen);
	if (asprintf(&s->text, "%.*s:%s", (int)(rlen + is_prefix), rule,
		     s->pattern ? s->pattern : "") < 0)
		s->text = NULL;
	if (!s->rule || !s->pattern || !s->text) {
		free(s->rule);
		free(s->pattern);
		free(s->text);
		goto oom;
	}
	s->rule_len = rlen;
	s->is_prefix = is_prefix;
	nsupps++;
	return 1;
oom:
	rc_complain("%s:%u: out of memory (entry ignored)", where, lineno);
	return -1;
}

int rc_suppress_load(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int added = 0, err;

	if (!f)
		return -1;	/* the caller says what that means */
	errno = 0;
	while (getline(&line, &cap, f) >= 0)
		if (rc_suppress_add_line(line, path, ++lineno) > 0)
			added++;
	err = ferror(f) ? errno : 0;	/* a directory opens, then EISDIR */
	free(line);
	fclose(f);
	if (err) {
		errno = err;
		return -1;
	}
	return added;
}

unsigned rc_suppress_count(void)
{
	return nsupps;
}

static bool glob_hit(const char *pat, const char *s, bool try_base)
{
	const char *slash;

	if (!s)
		return false;
	if (!fnmatch(pat, s, 0))
		return true;
	if (try_base && (slash = strrchr(s, '/')) && slash[1])
		return !fnmatch(pat, slash + 1, 0);
	return false;
}

static bool frame_hit(const char *pat, const struct rc_frame *fr)
{
	unsigned i;

	if (glob_hit(pat, fr->function, false) ||
	    glob_hit(pat, fr->file, true) || glob_hit(pat, fr->module, true))
		return true;
	/* Inline levels are frames of the report too. */
	for (i = 0; i < fr->ninl; i++)
		if (frame_hit(pat, &fr->inl[i]))
			return true;
	return false;
}

static int hit(unsigned i)
{
	__atomic_fetch_add(&supps[i].hits, 1, __ATOMIC_RELAXED);
	return (int)i;
}

int rc_suppress_match_frames(enum rc_rule rule, const char *call,
			     const struct rc_frame *frames, unsigned n)
{
	unsigned i, k;

	for (i = 0; i < nsupps; i++) {
		if (!rule_selects(&supps[i], rule))
			continue;
		if (glob_hit(supps[i].pattern, call, false))
			return hit(i);
		for (k = 0; k < n; k++)
			if (frame_hit(supps[i].pattern, &frames[k]))
				return hit(i);
	}
	return -1;
}

int rc_suppress_match_pcs(enum rc_rule rule, const char *call,
			  const uintptr_t *pcs, unsigned n)
{
	struct rc_frame frames[RC_SUPPRESS_MAX_PCS];
	unsigned i;

	for (i = 0; i < nsupps; i++)
		if (rule_selects(&supps[i], rule))
			break;
	if (i == nsupps)
		return -1;	/* nothing for this rule: skip symbolizing */

	if (n > RC_SUPPRESS_MAX_PCS)
		n = RC_SUPPRESS_MAX_PCS;
	for (i = 0; i < n; i++)
		rc_symbolize(pcs[i], &frames[i]);
	return rc_suppress_match_frames(rule, call, frames, n);
}

unsigned rc_suppress_hits(unsigned idx)
{
	if (idx >= nsupps)
		return 0;
	return __atomic_load_n(&supps[idx].hits, __ATOMIC_RELAXED);
}

const char *rc_suppress_text(unsigned idx)
{
	return idx < nsupps ? supps[idx].text : NULL;
}

size_t rc_suppress_format_used(char *buf, size_t len, const char *prefix)
{
	size_t o = 0;
	unsigned i;
	int n;

	if (!len)
		return 0;
	buf[0] = '\0';
	for (i = 0; i < nsupps; i++) {
		unsigned h = rc_suppress_hits(i);

		if (!h)
			continue;
		if (!o) {
			n = snprintf(buf, len, "%sSuppressions used:\n%s  count rule:pattern\n",
				     prefix, prefix);
			if (n < 0 || (size_t)n >= len) {
				buf[0] = '\0';
				break;
			}
			o = n;
		}
		n = snprintf(buf + o, len - o, "%s%7u %s\n", prefix, h,
			     supps[i].text);
		if (n < 0 || (size_t)n >= len - o) {
			buf[o] = '\0';
			break;
		}
		o += n;
	}
	return o;
}

/* A glob matching s exactly: metacharacters escaped, and what a
 * suppression line cannot hold ('#', blanks, controls) matched by '?'. */
static size_t put_glob(char *d, size_t len, const char *s)
{
	size_t o = 0;

	for (; *s && o + 3 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '*' || c == '?' || c == '[' || c == '\\')
			d[o++] = '\\';
		d[o++] = c == '#' || c <= ' ' || c == 0x7f ? '?' : (char)c;
	}
	d[o] = '\0';
	return o;
}

size_t rc_suppress_suggest(char *buf, size_t len, enum rc_rule rule,
			   const char *call, const struct rc_frame *frames,
			   unsigned n)
{
	const char *id = rc_rules[rule].id, *pat = NULL, *slash;
	size_t o;
	unsigned i;

	if (len < strlen(id) + 8)
		return 0;
	for (i = 0; i < n && !pat; i++)
		pat = frames[i].function;
	for (i = 0; i < n && !pat; i++)
		if (frames[i].module) {
			slash = strrchr(frames[i].module, '/');
			pat = slash ? slash + 1 : frames[i].module;
		}
	if (!pat)
		pat = call ? call : "*";
	o = (size_t)snprintf(buf, len, "%s:", id);
	if (!strcmp(pat, "*")) {
		memcpy(buf + o, "*", 2);
		return o + 1;
	}
	return o + put_glob(buf + o, len - o, pat);
}

void rc_suppress_reset(void)
{
	unsigned i;

	for (i = 0; i < nsupps; i++) {
		free(supps[i].text);
		free(supps[i].rule);
		free(supps[i].pattern);
	}
	free(supps);
	supps = NULL;
	nsupps = 0;
}
