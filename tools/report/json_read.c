/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * json_read.c - rdmacheck-report: the JSON reader: a report's text walked in
 * place, values handed to jansson only where the model wants a tree, strings
 * unescaped into a per-thread bump buffer.
 */
#include "report_tool.h"

/*
 * jansson parses every value.  Around it, the report's top-level object
 * is walked here member by member, and its "findings" array element by
 * element, so that only one finding's tree exists at a time: a tree of
 * the whole of a 200 MB report would take several times its size.  Each
 * value is one json_loadb() with JSON_DISABLE_EOF_CHECK, which says in
 * error.position where the value ended.  A syntax error is reported as
 * FILE:LINE:COLUMN, counted from the start of the file as jansson counts
 * (lines from 1, columns in characters from 1).
 */

/*
 * jansson allocates each value, key and hash table of a finding's tree,
 * and frees them all together: while a finding is parsed, converted and
 * freed, its allocations come from a block of the thread's (the block
 * full, from malloc()), emptied afterwards.  Loading takes a fifth less
 * time.  Only a tree that nothing keeps may be allocated so.
 */
#define JBUMP_SIZE (1u << 20)

static __thread char *jbump, *jbump_cur, *jbump_end;
static __thread bool jbump_on;

static void *jbump_malloc(size_t n)
{
	size_t bytes = (n + 15) & ~(size_t)15;
	void *p;

	if (!jbump_on || bytes < n ||
	    (size_t)(jbump_end - jbump_cur) < bytes)
		return malloc(n);
	p = jbump_cur;
	jbump_cur += bytes;
	return p;
}

static void jbump_free(void *p)
{
	if ((char *)p < jbump || (char *)p >= jbump_end)
		free(p);
}

static void __attribute__((constructor)) jbump_init(void)
{
	json_set_alloc_funcs(jbump_malloc, jbump_free);
}

/* Its allocations from the block, or (on = false) from malloc() again. */
static void jbump_use(bool on)
{
	if (on && !jbump) {
		jbump = malloc(JBUMP_SIZE);
		jbump_end = jbump ? jbump + JBUMP_SIZE : NULL;
	}
	jbump_cur = jbump;
	jbump_on = on && jbump;
}

void jbump_release(void)
{
	jbump_use(false);
	free(jbump);
	jbump = jbump_cur = jbump_end = NULL;
}

static void jd_ws(struct jdoc *jd)
{
	while (jd->p < jd->end && (*jd->p == ' ' || *jd->p == '\t' ||
				   *jd->p == '\n' || *jd->p == '\r'))
		jd->p++;
}

/*
 * An error at line and column counted from p by jansson (line 1, column
 * 1: the character at p; column 0: the one before it).  Where p is, is
 * only counted now: lines from 1, columns in characters from 1, as
 * jansson counts them.
 */
static void __attribute__((noreturn))
jd_fail_at(struct jdoc *jd, int line, int col, const char *msg)
{
	const unsigned char *q = (const unsigned char *)jd->start;
	unsigned long pline = 1, pcol = 0;

	for (; q < (const unsigned char *)jd->p; q++) {
		if (*q == '\n') {
			pline++;
			pcol = 0;
		} else if ((*q & 0xc0) != 0x80) {
			pcol++;
		}
	}
	if (line <= 0)
		line = 1, col = 1;
	if (line == 1)
		pcol += (unsigned long)(col > 0 ? col : 0);
	else
		pline += (unsigned long)line - 1, pcol = (unsigned long)col;
	if (!pcol)
		pcol = 1;
	jbump_use(false);
	json_decref(jd->root);
	json_decref(jd->key);
	jd->root = jd->key = NULL;
	die("%s:%lu:%lu: malformed JSON: %s", jd->path, pline, pcol, msg);
}

/* What was expected at p, in jansson's words. */
static void __attribute__((noreturn))
jd_fail(struct jdoc *jd, const char *expected)
{
	char msg[64];

	snprintf(msg, sizeof(msg), "%s expected%s", expected,
		 jd->p < jd->end ? "" : " near end of file");
	/* At the end, jansson names the last character. */
	jd_fail_at(jd, 1, jd->p < jd->end ? 1 : 0, msg);
}

/* The value at p; p moves past it.  A string may hold "\u0000", which
 * ends it as a C string, as it always has. */
static json_t *jd_value(struct jdoc *jd)
{
	json_error_t e;
	json_t *v = json_loadb(jd->p, (size_t)(jd->end - jd->p),
			       JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK |
			       JSON_ALLOW_NUL, &e);

	if (!v)
		jd_fail_at(jd, e.line, e.column, e.text);
	jd->p += e.position;
	return v;
}

/* Past the ',' between values, or false at the closing character. */
static bool jd_next(struct jdoc *jd, char close, const char *expected)
{
	jd_ws(jd);
	if (jd->p < jd->end && *jd->p == ',') {
		jd->p++;
		jd_ws(jd);
		return true;
	}
	if (jd->p < jd->end && *jd->p == close) {
		jd->p++;
		return false;
	}
	jd_fail(jd, expected);
}

/*
 * The shim writes each byte of invalid UTF-8 as \u0080..\u00ff, which
 * jansson would decode to characters.  They become \uf780..\uf7ff first,
 * private-use characters escaped in as many bytes (positions do not
 * move), which jd_str() turns back into the bytes.
 */
static void escape_bytes(char *p, char *end)
{
	char *q;

	while ((q = memchr(p, '\\', (size_t)(end - p)))) {
		if (end - q >= 6 && q[1] == 'u' && q[2] == '0' &&
		    q[3] == '0' && q[4] && strchr("89abcdefABCDEF", q[4])) {
			q[2] = 'f';
			q[3] = '7';
		}
		/* Past the escaped character: "\\u00ff" is no escape. */
		p = end - q > 2 ? q + 2 : end;
	}
}

/* A string of the report into d[0..length], its bytes restored. */
void jd_decode(const json_t *v, char *d)
{
	const char *s = json_string_value(v), *q, *end;
	size_t len = json_string_length(v);
	char *r = d;

	for (end = s + len; (q = memchr(s, 0xef, (size_t)(end - s)));) {
		memcpy(r, s, (size_t)(q - s));
		r += q - s;
		/* U+F780..U+F7FF is EF 9E 80..EF 9F BF. */
		if (end - q >= 3 && ((unsigned char)q[1] & 0xfe) == 0x9e) {
			*r++ = (char)(0x80 | (q[1] & 1) << 6 | (q[2] & 0x3f));
			s = q + 3;
		} else {
			*r++ = *q;
			s = q + 1;
		}
	}
	memcpy(r, s, (size_t)(end - s));
	r[end - s] = '\0';
}

/* A string of the report, copied into the model. */
char *jd_str(struct arena *a, const json_t *v)
{
	char *d = aalloc(a, json_string_length(v) + 1, 1);

	jd_decode(v, d);
	return d;
}

/*
 * The document in buf[0..len), which must be an object.  Its members but
 * the streamed findings go into jd->root (the first of equal keys wins,
 * as it always has); the findings array is there, left empty.
 */
void jd_load(struct jdoc *jd, char *buf, size_t len)
{
	bool streamed = false;
	const char *key;
	json_t *v;
	size_t n;

	jd->start = jd->p = buf;
	jd->end = buf + len;
	jbump_use(false);	/* after a report refused */
	escape_bytes(jd->p, jd->end);
	jd_ws(jd);
	if (jd->p == jd->end)
		jd_fail(jd, "'{'");
	if (*jd->p != '{') {
		/* jansson says what is wrong, or it is not an object. */
		json_decref(jd_value(jd));
		jd_ws(jd);
		if (jd->p != jd->end)
			jd_fail(jd, "end of file");
		die("%s: not a JSON object", jd->path);
	}
	jd->root = json_object();
	if (!jd->root)
		die("out of memory");
	jd->p++;
	jd_ws(jd);
	if (jd->p < jd->end && *jd->p == '}')
		jd->p++;
	else
		do {
			if (jd->p == jd->end || *jd->p != '"')
				jd_fail(jd, "string or '}'");
			jd->key = jd_value(jd);
			key = json_string_value(jd->key);
			jd_ws(jd);
			if (jd->p == jd->end || *jd->p != ':')
				jd_fail(jd, "':'");
			jd->p++;
			jd_ws(jd);
			if (!streamed && jd->p < jd->end && *jd->p == '[' &&
			    !strcmp(key, "findings")) {
				streamed = true;
				v = json_array();
				if (!v || json_object_set_new(jd->root, key, v))
					die("out of memory");
				jd->p++;
				jd_ws(jd);
				n = 0;
				if (jd->p < jd->end && *jd->p == ']')
					jd->p++;
				else
					do {
						jbump_use(jd->bump);
						v = jd_value(jd);
						jd->finding(jd->arg, v, n++);
						json_decref(v);
						jbump_use(false);
					} while (jd_next(jd, ']',
							 "',' or ']'"));
			} else {
				v = jd_value(jd);
				if (json_object_get(jd->root, key))
					json_decref(v);
				else if (json_object_set_new(jd->root, key, v))
					die("out of memory");
			}
			json_decref(jd->key);
			jd->key = NULL;
		} while (jd_next(jd, '}', "',' or '}'"));
	jd_ws(jd);
	if (jd->p != jd->end)
		jd_fail(jd, "end of file");
}

int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0. */
size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	size_t n, i;
	unsigned c = *p, cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/* Bytes a string holds as they are: ASCII but controls, '"' and '\\'. */
static const bool plain_tab[256] = {
	[0x20 ... '"' - 1] = true, ['"' + 1 ... '\\' - 1] = true,
	['\\' + 1 ... 0x7f] = true,
};

bool plain(unsigned char c)
{
	return plain_tab[c];
}

