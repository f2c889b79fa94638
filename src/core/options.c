/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * options.c - RDMACHECK_OPTIONS: defaults and the parser, both driven by
 * the options.def table (a new option is one line there, nothing here).
 *
 * Syntax: "key=value:key=value".  The first '=' splits key from value, so
 * a value may contain '=' but never ':' (there is no escape).  Empty
 * entries ("a=1::b=2", a trailing ':') are ignored.  Problems are reported
 * once each on stderr and the previous value is kept; parsing never fails.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/options.h"
#include "core/rdmacheck.h"

struct rc_options rc_opt;

enum opt_type { OT_BOOL, OT_INT, OT_STR, OT_WORDS };

#define RC_OPT_KIND_BOOL OT_BOOL
#define RC_OPT_KIND_INT OT_INT
#define RC_OPT_KIND_STR OT_STR
#define RC_OPT_KIND_WORDS OT_WORDS

/* Default values as the parser sees them; STR defaults are strings. */
#define RC_OPT_DEF_BOOL(d) (long)(d), NULL
#define RC_OPT_DEF_INT(d) (long)(d), NULL
#define RC_OPT_DEF_STR(d) 0, d
#define RC_OPT_DEF_WORDS(d) 0, d
/* min, max and the words: a WORDS option's min is its words. */
#define RC_OPT_MM_BOOL(min, max) min, max, NULL
#define RC_OPT_MM_INT(min, max) min, max, NULL
#define RC_OPT_MM_STR(min, max) min, max, NULL
#define RC_OPT_MM_WORDS(min, max) 0, 0, min

struct opt_desc {
	const char *name;
	enum opt_type type;
	long idef;
	const char *sdef;
	long min, max;
	const char *words;	/* WORDS: the values, space-separated */
	size_t off;
	const char *help;
};

static const struct opt_desc opt_table[] = {
#define RC_OPT(type, name, def, min, max, help) \
	{ #name, RC_OPT_KIND_##type, RC_OPT_DEF_##type(def), \
	  RC_OPT_MM_##type(min, max), \
	  offsetof(struct rc_options, name), help },
#include "core/options.def"
#undef RC_OPT
};

#define NOPTS RC_ARRAY_SIZE(opt_table)

/* Strings we strdup()ed, so a second parse can free the first copy. */
static char *opt_owned[NOPTS];

static void *opt_field(const struct opt_desc *d)
{
	return (char *)&rc_opt + d->off;
}

void rc_complain(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int i, n;

	n = snprintf(buf, sizeof(buf), "rdmacheck: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	/* One line, whatever the input held. */
	for (i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20)
			buf[i] = '?';
	buf[n++] = '\n';
	/* One write(2): lines from threads do not interleave. */
	if (write(STDERR_FILENO, buf, n) < 0)
		return;
}

void rc_options_print_help(int fd)
{
	static const char head[] = "rdmacheck: RDMACHECK_OPTIONS=key=value:key=value... (current values):\n";
	char line[1024];
	unsigned i;
	int n;

	if (write(fd, head, sizeof(head) - 1) < 0)
		return;
	for (i = 0; i < NOPTS; i++) {
		const struct opt_desc *d = &opt_table[i];
		const void *v = opt_field(d);

		switch (d->type) {
		case OT_BOOL:
			n = snprintf(line, sizeof(line), "  %s=%d (0/1)\n",
				     d->name, *(const bool *)v);
			break;
		case OT_INT:
			n = snprintf(line, sizeof(line), "  %s=%d (%ld..%ld)\n",
				     d->name, *(const int *)v, d->min, d->max);
			break;
		default:
			n = snprintf(line, sizeof(line), "  %s=%s\n", d->name,
				     *(char *const *)v ? *(char *const *)v : "");
		}
		if (n < 0 || (size_t)n >= sizeof(line))
			n = (int)sizeof(line) - 1;
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      "      %s\n", d->help);
		if (n < 0 || (size_t)n >= sizeof(line))
			n = (int)sizeof(line) - 1;
		if (write(fd, line, (size_t)n) < 0)
			return;
	}
}

void rc_options_defaults(void)
{
	unsigned i;

	for (i = 0; i < NOPTS; i++) {
		const struct opt_desc *d = &opt_table[i];

		switch (d->type) {
		case OT_BOOL:
			*(bool *)opt_field(d) = d->idef != 0;
			break;
		case OT_INT:
			*(int *)opt_field(d) = (int)d->idef;
			break;
		case OT_STR:
		case OT_WORDS:
			*(const char **)opt_field(d) = d->sdef;
			free(opt_owned[i]);
			opt_owned[i] = NULL;
			break;
		}
	}
}

static bool parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "1", "true", "yes" };
	static const char *const no[] = { "0", "false", "no" };
	unsigned i;

	for (i = 0; i < RC_ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = true;
			return true;
		}
		if (!strcasecmp(v, no[i])) {
			*out = false;
			return true;
		}
	}
	return false;
}

/* A full decimal: optional '-', digits only, no spaces, no overflow. */
static bool parse_int(const char *v, long min, long max, int *out)
{
	const char *p = v;
	char *end;
	long x;

	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || x < min || x > max)
		return false;
	*out = (int)x;
	return true;
}

static const struct opt_desc *find_opt(const char *key, size_t klen)
{
	unsigned i;

	for (i = 0; i < NOPTS; i++)
		if (strlen(opt_table[i].name) == klen &&
		    !memcmp(opt_table[i].name, key, klen))
			return &opt_table[i];
	return NULL;
}

/* Is v one of the space-separated words (one whole word)? */
static bool is_word(const char *words, const char *v)
{
	size_t n = strlen(v);

	while (*words) {
		size_t k = strcspn(words, " ");

		if (k == n && !memcmp(words, v, n))
			return true;
		words += k;
		words += strspn(words, " ");
	}
	return false;
}

/* Apply one "key=value" (not NUL-terminated; len bytes). */
static int apply_one(const char *ent, size_t len)
{
	const struct opt_desc *d;
	const char *eq = memchr(ent, '=', len);
	char val[1024];
	size_t klen, vlen;

	if (!eq) {
		rc_complain("RDMACHECK_OPTIONS: missing '=' in '%.*s' (ignored)",
			    (int)len, ent);
		return 1;
	}
	klen = eq - ent;
	vlen = len - klen - 1;
	d = find_opt(ent, klen);
	if (!d) {
		rc_complain("RDMACHECK_OPTIONS: unknown option '%.*s' (ignored)",
			    (int)klen, ent);
		return 1;
	}
	if (vlen >= sizeof(val)) {
		rc_complain("RDMACHECK_OPTIONS: value for %s longer than %zu bytes (ignored)",
			    d->name, sizeof(val) - 1);
		return 1;
	}
	memcpy(val, eq + 1, vlen);
	val[vlen] = '\0';

	switch (d->type) {
	case OT_BOOL:
		if (!parse_bool(val, (bool *)opt_field(d))) {
			rc_complain("RDMACHECK_OPTIONS: bad value '%s' for %s (expected 0/1/true/false/yes/no; keeping %d)",
				    val, d->name, *(bool *)opt_field(d));
			return 1;
		}
		break;
	case OT_INT:
		if (!parse_int(val, d->min, d->max, (int *)opt_field(d))) {
			rc_complain("RDMACHECK_OPTIONS: bad value '%s' for %s (expected %ld..%ld; keeping %d)",
				    val, d->name, d->min, d->max,
				    *(int *)opt_field(d));
			return 1;
		}
		break;
	case OT_WORDS:
		/* A bad word keeps the value, as a bad number does. */
		if (!is_word(d->words, val)) {
			rc_complain("RDMACHECK_OPTIONS: bad value '%s' for %s (expected one of: %s; keeping %s)",
				    val, d->name, d->words,
				    *(const char **)opt_field(d));
			return 1;
		}
		/* fall through - kept as a string */
	case OT_STR: {
		unsigned i = d - opt_table;
		char *copy;

		copy = strdup(val);
		if (!copy) {
			rc_complain("RDMACHECK_OPTIONS: out of memory for %s (ignored)",
				    d->name);
			return 1;
		}
		free(opt_owned[i]);
		opt_owned[i] = copy;
		*(const char **)opt_field(d) = copy;
		break;
	}
	}
	return 0;
}

int rc_options_parse(const char *s)
{
	int problems = 0;

	while (s && *s) {
		const char *end = strchr(s, ':');
		size_t len = end ? (size_t)(end - s) : strlen(s);

		if (len)
			problems += apply_one(s, len);
		s += len;
		if (*s == ':')
			s++;
	}
	return problems;
}

/* Append s[0..n) whole; false when it does not fit. */
static bool expand_put(char *buf, unsigned len, unsigned *o, const char *s,
		       size_t n)
{
	if (*o + n >= len)
		return false;
	memcpy(buf + *o, s, n);
	*o += n;
	return true;
}

__thread unsigned rc_path_seq __attribute__((tls_model("initial-exec")));

/* Append the decimal v. */
static bool expand_udec(char *buf, unsigned len, unsigned *o, unsigned v)
{
	char d[16];
	unsigned n = 0;

	do
		d[sizeof(d) - ++n] = '0' + v % 10;
	while ((v /= 10));
	return expand_put(buf, len, o, d + sizeof(d) - n, n);
}

/*
 * %p the pid, %h the host name, %q{VAR} the value of VAR ("" when
 * unset), %n the snapshot number, %% a '%'.  No stdio and no allocation:
 * this runs in the crash handler too (uname(2) is async-signal-safe;
 * getenv only reads).
 */
char *rc_options_expand_path(const char *tmpl, char *buf, unsigned len)
{
	bool seq_used = false, fits = true;
	unsigned o = 0;

	if (!len)
		return buf;
	for (; tmpl && *tmpl && o + 1 < len; tmpl++) {
		if (tmpl[0] == '%' && tmpl[1] == 'p') {
			if (!expand_udec(buf, len, &o, (unsigned)getpid()))
				break;
			tmpl++;
		} else if (tmpl[0] == '%' && tmpl[1] == 'n') {
			seq_used = true;
			if (!expand_udec(buf, len, &o, rc_path_seq))
				break;
			tmpl++;
		} else if (tmpl[0] == '%' && tmpl[1] == 'h') {
			struct utsname u;

			if (!uname(&u) && !expand_put(buf, len, &o, u.nodename,
						      strlen(u.nodename)))
				break;
			tmpl++;
		} else if (tmpl[0] == '%' && tmpl[1] == 'q' &&
			   tmpl[2] == '{' && strchr(tmpl + 3, '}')) {
			const char *end = strchr(tmpl + 3, '}'), *v = NULL;
			char name[256];
			size_t n = (size_t)(end - tmpl - 3);

			if (n < sizeof(name)) {
				memcpy(name, tmpl + 3, n);
				name[n] = '\0';
				v = getenv(name);
			}
			if (v && !expand_put(buf, len, &o, v, strlen(v)))
				break;
			tmpl = end;
		} else if (tmpl[0] == '%' && tmpl[1] == '%') {
			buf[o++] = '%';
			tmpl++;
		} else {
			buf[o++] = *tmpl;
		}
	}
	if (tmpl && *tmpl)
		fits = false;
	/* A snapshot's name differs from the exit report's, always. */
	if (rc_path_seq && !seq_used && o)
		fits = fits && expand_put(buf, len, &o, ".snapshot.", 10) &&
		       expand_udec(buf, len, &o, rc_path_seq);
	buf[o] = '\0';
	/* Cut short, it could be the exit report's name: none at all. */
	if (!fits && rc_path_seq)
		buf[0] = '\0';
	return buf;
}
