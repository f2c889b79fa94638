/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmacheck-report.c - rdmacheck-report(1): reads the JSON reports that
 * librdmacheck.so writes (one per process), symbolizes frames offline,
 * applies suppressions, merges identical findings across processes, and
 * prints them as text blocks (like the shim's), summary lines, or one
 * merged JSON document.  Exit status: 0 clean, 1 unsuppressed errors or
 * leaks remain, 2 usage or input errors, 3 a process died of a signal
 * (a report with status "crashed" or "killed"), whatever else it says.
 *
 * Owns: the walk of a report's JSON (values parsed by jansson), the
 * report model, text/JSON output.
 * Reuses src/symbolize/symbolize.c (offline symbolizer), src/report/suppress.c (matcher),
 * src/core/rules.c, src/core/options.c (rc_complain) and src/core/util.c (rc_warn).
 *
 * Memory: a report is read whole; jansson builds the tree of its top
 * level, findings left out, and of one finding at a time, which is
 * copied into the model (findings, stacks, objects, strings, all from its
 * arena) and freed.  Format 2's stacks index the top-level "frames"
 * (read before the first finding): each stack gets copies of its frames,
 * so the model is format 1's.  The file and the trees are freed once it
 * is loaded.
 * Reports that are regular files load in parallel.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "symbolize/buildid.h"
#include "report/fingerprint.h"
#include "core/rdmacheck.h"
#include "report/report.h"
#include "core/rules.h"
#include "unwind/stack.h"
#include "report/suppress.h"
#include "symbolize/symbolize.h"
#ifdef RR_HAVE_DWFL
#include "symbolize/dwfl.h"
#endif

#define RR_MAX_FILE (256u << 20)	/* bytes per report */

static const char *prog = "rdmacheck-report";

/* suppress.c references the stack depot, which an offline tool never
 * reaches (it matches frames already symbolized): a stub, not stack.c. */
unsigned rc_stack_frames(rc_stack_id id, const uintptr_t **pcs)
{
	(void)id;
	*pcs = NULL;
	return 0;
}

/*
 * A caller that must survive bad input points die_catch at its jmp_buf:
 * die() then jumps there, the message in die_msg, instead of exiting.
 * The threads that load reports do (load_all()), and so does
 * tests/fuzz/fuzz_report.c; free_reports() frees what was loaded.
 */
static __thread jmp_buf *die_catch;
static __thread char die_msg[PATH_MAX + 256];

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	if (die_catch) {
		va_start(ap, fmt);
		vsnprintf(die_msg, sizeof(die_msg), fmt, ap);
		va_end(ap);
		longjmp(*die_catch, 1);
	}
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xrealloc(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		die("out of memory");
	p = realloc(p, n && size ? n * size : 1);
	if (!p)
		die("out of memory");
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory");
	return p;
}

/*
 * Huge pages for big blocks: a 200 MB report is parsed in a fraction of
 * the time when its pages do not thrash the TLB.  Just a hint.
 */
#define HUGE_PAGE (2u << 20)

static void huge_pages(void *p, size_t size)
{
	const uintptr_t mask = ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & mask;
	uintptr_t hi = ((uintptr_t)p + size) & mask;

	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* ---- Arenas ------------------------------------------------------------ */

/*
 * Allocations freed all at once.  Chunks start at 64 KiB and double up to
 * 4 MiB, so that a small report costs little and a big one few chunks.
 */
#define CHUNK_MIN (64u << 10)
#define CHUNK_MAX (4u << 20)

struct chunk {
	struct chunk *next;
	size_t size, used;
	max_align_t data[];
};

struct arena {
	struct chunk *head;
	size_t next;		/* size of the next chunk */
};

/* n zeroed objects of size bytes. */
static void *aalloc(struct arena *a, size_t n, size_t size)
{
	struct chunk *c = a->head;
	size_t bytes;

	if (size && n > (SIZE_MAX / 2) / size)
		die("out of memory");
	bytes = (n * size + sizeof(max_align_t) - 1) &
		~(sizeof(max_align_t) - 1);
	if (!c || c->size - c->used < bytes) {
		size_t csize;

		if (a->next < CHUNK_MIN)
			a->next = CHUNK_MIN;
		csize = bytes > a->next / 4 ? bytes : a->next;
		c = malloc(sizeof(*c) + csize);
		if (!c)
			die("out of memory");
		c->size = csize;
		c->used = 0;
		if (csize >= HUGE_PAGE)
			huge_pages(c, sizeof(*c) + csize);
		if (csize != a->next && a->head) {
			/* Its own chunk, behind the one still filling. */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
			if (a->next < CHUNK_MAX)
				a->next *= 2;
		}
	}
	c->used += bytes;
	return memset((char *)c->data + c->used - bytes, 0, bytes);
}

static char *astrdup(struct arena *a, const char *s)
{
	return strcpy(aalloc(a, strlen(s) + 1, 1), s);
}

static void arena_free(struct arena *a)
{
	struct chunk *c, *next;

	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->next = 0;
}

/* ---- JSON reader ------------------------------------------------------ */

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

static void jbump_release(void)
{
	jbump_use(false);
	free(jbump);
	jbump = jbump_cur = jbump_end = NULL;
}

/* What is held while the document is read is freed when it is refused. */
struct jdoc {
	const char *path;
	char *start, *p, *end;
	json_t *root, *key;
	bool bump;		/* the findings' trees from the block */
	/* Each element of the top level's first "findings" array. */
	void (*finding)(void *arg, json_t *v, size_t idx);
	void *arg;
};

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
static void jd_decode(const json_t *v, char *d)
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
static char *jd_str(struct arena *a, const json_t *v)
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
static void jd_load(struct jdoc *jd, char *buf, size_t len)
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

static int hexval(unsigned char c)
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
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
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

static bool plain(unsigned char c)
{
	return plain_tab[c];
}

/* ---- Writers ------------------------------------------------------------ */

/* Numbers without printf(): most of the output is frames. */
static void put_u(FILE *o, unsigned long long v)
{
	char buf[24], *p = buf + sizeof(buf);

	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10));
	fwrite(p, 1, (size_t)(buf + sizeof(buf) - p), o);
}

/* "0x" and lowercase digits, as "0x%" PRIxPTR. */
static void put_x(FILE *o, uintptr_t v)
{
	char buf[2 + 2 * sizeof(v)], *p = buf + sizeof(buf);

	do
		*--p = "0123456789abcdef"[v & 15];
	while ((v >>= 4));
	*--p = 'x';
	*--p = '0';
	fwrite(p, 1, (size_t)(buf + sizeof(buf) - p), o);
}

/* Same escaping as the shim: invalid UTF-8 bytes become \u00XX. */
static void put_jstr(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *end;
	size_t l;

	if (!s) {
		fputs("null", f);
		return;
	}
	end = p + strlen(s);
	fputc('"', f);
	while (p < end) {
		for (l = 0; p + l < end && plain(p[l]) && p[l] != 0x7f; l++)
			;
		if (l) {
			fwrite(p, 1, l, f);
			p += l;
		} else if (*p == '"' || *p == '\\') {
			fputc('\\', f);
			fputc(*p++, f);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p++);
		} else if (*p < 0x80) {
			fputc(*p++, f);
		} else if ((l = utf8_len(p, end))) {
			fwrite(p, 1, l, f);
			p += l;
		} else {
			fprintf(f, "\\u%04x", *p++);
		}
	}
	fputc('"', f);
}

/* ---- The report model -------------------------------------------------- */

struct frame {
	uintptr_t pc;
	uintptr_t offset;
	const char *module;	/* may be NULL */
	const char *function;	/* may be NULL */
	const char *file;	/* may be NULL */
	unsigned line;
	bool has_offset;
	bool inlined;		/* symbolized offline into several frames */
	bool exact;		/* an interrupted pc (a fatal signal's first
				 * frame): named at pc, not at pc - 1 */
};

struct stack {
	struct frame *f;
	size_t n;
};

struct object {
	const char *kind;	/* JSON kind, e.g. "id" */
	const char *handle;
	const char *note;	/* may be NULL */
	bool created;
	long long created_tid;
	struct stack cstack;
	bool destroyed;
	long long destroyed_tid;
	struct stack dstack;
};

struct proc;

struct finding {
	const char *rule;
	int rule_idx;		/* index in rc_rules, or -1 if unknown */
	enum rc_severity sev;
	const char *call;	/* may be NULL */
	const char *message;
	unsigned long long count;
	bool suppressed;
	bool baselined;		/* its fingerprint is in the baseline */
	const char *fingerprint;	/* from the report, or computed */
	long long thread;	/* 0 when null */
	struct stack stack;
	struct object *objs;
	size_t nobjs;
	unsigned long long more_objects;
	struct proc *proc;
	/* Merging: the first of a group collects the others. */
	struct finding *merged_into;
	unsigned long long total;	/* merged count */
	size_t nocc;			/* merged occurrences */
	size_t nprocs;			/* distinct processes: proc, then */
	struct proc **more_procs;	/* these nprocs - 1 */
	size_t cap_procs;
};

struct summary {
	unsigned long long errors, warnings, leaks, suppressed;
	unsigned long long baselined;	/* not counted above */
};

struct proc {
	const char *path;
	/* While it loads: the file, and its top level without findings. */
	char *buf;
	json_t *root;
	struct strtab *names;
	struct arena arena;	/* everything it holds */
	long long pid;
	const char *exe;
	const char **argv;
	size_t argc;
	const char *status;
	int signal;		/* "killed" or "crashed": by this signal
				 * (0: not said) */
	bool halted;
	unsigned long long dropped;
	const char *host, *start_time, *end_time;	/* may be NULL */
	struct module_rec {
		const char *path, *build_id;	/* build_id may be NULL */
	} *mods;
	size_t nmods;
	struct summary sum;
	struct finding *f;
	size_t nf, cap_f;
};

static struct proc *procs;
static size_t nprocs, cap_procs;

/*
 * Typed field access with errors that name the file and the field: the
 * path to it ("findings[2].stack[0]"), formatted only for an error.
 */
#define CTX_DEPTH 8		/* findings[].objects[].created.stack[] */

/*
 * The strings of frames and objects' kinds repeat: a report's model keeps
 * each once.  The table lives while the report loads.
 */
struct strtab {
	const char **tab;	/* open addressing, at most half full */
	size_t cap, n;
	char *tmp;		/* a string decoded, before it is looked up */
	size_t tmp_cap;
};

static void strtab_free(struct strtab *t)
{
	free(t->tab);
	free(t->tmp);
	memset(t, 0, sizeof(*t));
}

struct ctx {
	const char *path;
	struct arena *arena;	/* where the model goes */
	struct strtab *names;	/* the strings it has */
	/* Format 2: the top-level "frames" that stacks index (NULL
	 * before it is read, or without one). */
	const struct frame *frames;
	size_t nframes;
	unsigned depth;
	const char *key[CTX_DEPTH];
	long idx[CTX_DEPTH];	/* -1: a key alone */
};

static void ctx_where(const struct ctx *c, char *w, size_t len)
{
	unsigned i;
	size_t l;

	w[0] = '\0';
	for (i = 0; i < c->depth; i++) {
		l = strlen(w);
		if (c->idx[i] >= 0)
			snprintf(w + l, len - l, "%s%s[%ld]", l ? "." : "",
				 c->key[i], c->idx[i]);
		else
			snprintf(w + l, len - l, "%s%s", l ? "." : "",
				 c->key[i]);
	}
}

/*
 * Findings are converted while the rest of the file is still to be
 * parsed, but a bad one must be reported as if after the fields that come
 * before it: bad_field() then leaves its message here and jumps back.
 */
static __thread jmp_buf *field_catch;
static __thread char field_msg[PATH_MAX + 256]; /* the path, and more */

static void __attribute__((noreturn))
bad_field(const struct ctx *c, const char *key, const char *what)
{
	char where[160];

	ctx_where(c, where, sizeof(where));
	if (field_catch) {
		snprintf(field_msg, sizeof(field_msg), "%s: %s%s%s: %s",
			 c->path, where, *where && *key ? "." : "", key, what);
		longjmp(*field_catch, 1);
	}
	die("%s: %s%s%s: %s", c->path, where, *where && *key ? "." : "", key,
	    what);
}

/* The kinds of value a field may be: jansson's, booleans and numbers
 * taken together. */
enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

static enum jtype jtype_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return J_OBJ;
	case JSON_ARRAY:
		return J_ARR;
	case JSON_STRING:
		return J_STR;
	case JSON_INTEGER:
	case JSON_REAL:
		return J_NUM;
	case JSON_TRUE:
	case JSON_FALSE:
		return J_BOOL;
	default:
		return J_NULL;
	}
}

static const json_t *field(const struct ctx *c, const json_t *o,
			   const char *key, enum jtype t, bool required,
			   bool nullable)
{
	static const char *const tname[] = {
		[J_NULL] = "null", [J_BOOL] = "a boolean",
		[J_NUM] = "a number", [J_STR] = "a string",
		[J_ARR] = "an array", [J_OBJ] = "an object",
	};
	const json_t *v = json_object_get(o, key);
	char msg[64];

	if (!v) {
		if (required)
			bad_field(c, key, "missing");
		return NULL;
	}
	if (json_is_null(v) && nullable)
		return NULL;
	if (jtype_of(v) != t) {
		snprintf(msg, sizeof(msg), "expected %s%s, got %s", tname[t],
			 nullable ? " or null" : "", tname[jtype_of(v)]);
		bad_field(c, key, msg);
	}
	return v;
}

/* Copied into the model (c->arena). */
static const char *get_str(const struct ctx *c, const json_t *o,
			   const char *key, bool required, bool nullable)
{
	const json_t *v = field(c, o, key, J_STR, required, nullable);

	return v ? jd_str(c->arena, v) : NULL;
}

static uint64_t hash_text(const char *s);

/* A string that repeats: copied into the model once. */
static const char *get_name(const struct ctx *c, const json_t *o,
			    const char *key)
{
	const json_t *v = field(c, o, key, J_STR, false, true);
	struct strtab *t = c->names;
	size_t len, h, i;

	if (!v)
		return NULL;
	len = json_string_length(v);
	if (len >= t->tmp_cap) {
		t->tmp_cap = len + 64;
		t->tmp = xrealloc(t->tmp, t->tmp_cap, 1);
	}
	jd_decode(v, t->tmp);
	if (2 * (t->n + 1) > t->cap) {
		const char **old = t->tab;
		size_t oldcap = t->cap;

		t->cap = t->cap ? 2 * t->cap : 1024;
		t->tab = xcalloc(t->cap, sizeof(*t->tab));
		for (i = 0; i < oldcap; i++) {
			if (!old[i])
				continue;
			for (h = hash_text(old[i]) & (t->cap - 1); t->tab[h];
			     h = (h + 1) & (t->cap - 1))
				;
			t->tab[h] = old[i];
		}
		free(old);
	}
	for (h = hash_text(t->tmp) & (t->cap - 1); t->tab[h];
	     h = (h + 1) & (t->cap - 1))
		if (!strcmp(t->tab[h], t->tmp))
			return t->tab[h];
	t->n++;
	return t->tab[h] = astrdup(c->arena, t->tmp);
}

static long long get_int(const struct ctx *c, const json_t *o,
			 const char *key, bool required, bool nullable,
			 long long min, long long max)
{
	const json_t *v = field(c, o, key, J_NUM, required, nullable);
	json_int_t i;

	if (!v)
		return 0;
	if (!json_is_integer(v))
		bad_field(c, key, "expected an integer");
	i = json_integer_value(v);
	if (i < min || i > max)
		bad_field(c, key, "integer out of range");
	return i;
}

static bool get_bool(const struct ctx *c, const json_t *o,
		     const char *key, bool required)
{
	return json_is_true(field(c, o, key, J_BOOL, required, false));
}

/* "0x..." as the shim writes pc, offset and handle. */
static uintptr_t get_hex(const struct ctx *c, const json_t *o,
			 const char *key, bool required, bool *present)
{
	const json_t *v = field(c, o, key, J_STR, required, true);
	const char *s = v ? json_string_value(v) : NULL;
	uintptr_t x = 0;
	size_t i;

	if (present)
		*present = s != NULL;
	if (!s)
		return 0;
	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2] ||
	    strlen(s + 2) > sizeof(x) * 2)
		bad_field(c, key, "expected a \"0x...\" hex string");
	for (i = 2; s[i]; i++) {
		int h = hexval((unsigned char)s[i]);

		if (h < 0)
			bad_field(c, key, "expected a \"0x...\" hex string");
		x = x << 4 | (unsigned)h;
	}
	return x;
}

static void ctx_push(struct ctx *c, size_t *mark, const char *key, long idx)
{
	*mark = c->depth;
	if (c->depth == CTX_DEPTH)
		die("%s: nested too deep", c->path);
	c->key[c->depth] = key;
	c->idx[c->depth++] = idx;
}

static void ctx_pop(struct ctx *c, size_t mark)
{
	c->depth = mark;
}

static void load_frame(struct ctx *c, const json_t *fo, struct frame *fr)
{
	if (!json_is_object(fo))
		bad_field(c, "", "expected an object");
	fr->pc = get_hex(c, fo, "pc", true, NULL);
	fr->module = get_name(c, fo, "module");
	fr->offset = get_hex(c, fo, "offset", false, &fr->has_offset);
	fr->function = get_name(c, fo, "function");
	fr->file = get_name(c, fo, "file");
	fr->line = (unsigned)get_int(c, fo, "line", false, true, 0, UINT_MAX);
}

/*
 * A stack's elements are frame objects (format 1) or indices into the
 * top-level "frames" (format 2), which then comes before "findings": a
 * stack is copied out of it, so that the model is the same for both.
 */
static void load_stack(struct ctx *c, const json_t *o, const char *key,
		       struct stack *st)
{
	const json_t *a = field(c, o, key, J_ARR, false, true);
	size_t i, mark;

	st->n = 0;
	st->f = NULL;
	if (!a)
		return;
	st->f = aalloc(c->arena, json_array_size(a), sizeof(*st->f));
	for (i = 0; i < json_array_size(a); i++) {
		const json_t *fo = json_array_get(a, i);
		json_int_t idx;

		ctx_push(c, &mark, key, (long)i);
		if (!json_is_integer(fo)) {
			load_frame(c, fo, &st->f[i]);
			ctx_pop(c, mark);
			continue;
		}
		if (!c->frames)
			bad_field(c, "", "a frame index without \"frames\" "
				  "before \"findings\"");
		idx = json_integer_value(fo);
		if (idx < 0 || (uintmax_t)idx >= c->nframes)
			bad_field(c, "", "frame index out of range");
		st->f[i] = c->frames[idx];
		ctx_pop(c, mark);
	}
	st->n = json_array_size(a);
}

/* The formats this reader knows ("format" absent: 1). */
#define RR_FORMAT_MAX 2

static void check_format(struct ctx *c, const json_t *root)
{
	long long v = get_int(c, root, "format", false, true, 1, LLONG_MAX);

	if (v > RR_FORMAT_MAX)
		bad_field(c, "format", "newer than this rdmacheck-report "
			  "reads (1 or 2)");
}

/* The top-level "frames" of a format-2 report, when there is one. */
static void load_frames(struct ctx *c, const json_t *root)
{
	const json_t *a = field(c, root, "frames", J_ARR, false, true);
	struct frame *fs;
	size_t i, mark;

	if (!a)
		return;
	fs = aalloc(c->arena, json_array_size(a) + 1, sizeof(*fs));
	for (i = 0; i < json_array_size(a); i++) {
		ctx_push(c, &mark, "frames", (long)i);
		load_frame(c, json_array_get(a, i), &fs[i]);
		ctx_pop(c, mark);
	}
	c->frames = fs;
	c->nframes = json_array_size(a);
}

static enum rc_severity parse_sev(const struct ctx *c, const char *s)
{
	if (!strcmp(s, "error"))
		return RC_SEV_ERROR;
	if (!strcmp(s, "warning"))
		return RC_SEV_WARNING;
	if (!strcmp(s, "leak"))
		return RC_SEV_LEAK;
	bad_field(c, "severity", "expected \"error\", \"warning\" or \"leak\"");
}

static int rule_index(const char *id)
{
	int r;

	for (r = 0; r < RC_R_COUNT; r++)
		if (!strcmp(rc_rules[r].id, id))
			return r;
	return -1;
}

/* f: the finding, whose stack is loaded; "stack_ref": "finding" names it. */
static void load_object(struct ctx *c, const json_t *o, struct object *ob,
			const struct finding *f)
{
	const char *ref;
	const json_t *cr, *de;
	size_t mark;

	if (!json_is_object(o))
		bad_field(c, "", "expected an object");
	field(c, o, "kind", J_STR, true, false);
	ob->kind = get_name(c, o, "kind");
	ob->handle = get_str(c, o, "handle", true, false);
	get_hex(c, o, "handle", true, NULL);
	ob->note = get_str(c, o, "note", false, true);
	cr = field(c, o, "created", J_OBJ, false, true);
	de = field(c, o, "destroyed", J_OBJ, false, true);
	if (cr) {
		ctx_push(c, &mark, "created", -1);
		ob->created = true;
		ob->created_tid = get_int(c, cr, "thread", false, true, 0,
					  INT_MAX);
		load_stack(c, cr, "stack", &ob->cstack);
		ref = get_str(c, cr, "stack_ref", false, true);
		if (ref && strcmp(ref, "finding"))
			bad_field(c, "stack_ref", "expected \"finding\"");
		if (ref && ob->cstack.n)
			bad_field(c, "stack_ref", "with a non-empty stack");
		if (ref)
			ob->cstack = f->stack;
		ctx_pop(c, mark);
	}
	if (de) {
		ctx_push(c, &mark, "destroyed", -1);
		ob->destroyed = true;
		ob->destroyed_tid = get_int(c, de, "thread", false, true, 0,
					    INT_MAX);
		load_stack(c, de, "stack", &ob->dstack);
		ctx_pop(c, mark);
	}
}

static void load_finding(struct ctx *c, const json_t *o, struct finding *f)
{
	const json_t *a;
	size_t i, mark;

	if (!json_is_object(o))
		bad_field(c, "", "expected an object");
	f->rule = get_str(c, o, "rule", true, false);
	if (!*f->rule)
		bad_field(c, "rule", "empty rule id");
	f->rule_idx = rule_index(f->rule);
	f->sev = parse_sev(c, get_str(c, o, "severity", true, false));
	f->call = get_str(c, o, "call", false, true);
	f->message = get_str(c, o, "message", true, false);
	f->count = (unsigned long long)get_int(c, o, "count", false, false,
					       1, LLONG_MAX);
	if (!f->count)
		f->count = 1;
	f->suppressed = get_bool(c, o, "suppressed", false);
	f->fingerprint = get_str(c, o, "fingerprint", false, true);
	if (f->fingerprint && !*f->fingerprint)
		bad_field(c, "fingerprint", "empty fingerprint");
	f->thread = get_int(c, o, "thread", false, true, 0, INT_MAX);
	f->more_objects = (unsigned long long)get_int(c, o, "more_objects",
						      false, true, 0,
						      LLONG_MAX);
	load_stack(c, o, "stack", &f->stack);
	/* Its first frame is where the signal struck, not a return address. */
	if (f->rule_idx == RC_R_FATAL_SIGNAL && f->stack.n)
		f->stack.f[0].exact = true;
	a = field(c, o, "objects", J_ARR, false, true);
	if (a) {
		f->nobjs = json_array_size(a);
		f->objs = aalloc(c->arena, f->nobjs, sizeof(*f->objs));
		for (i = 0; i < f->nobjs; i++) {
			ctx_push(c, &mark, "objects", (long)i);
			load_object(c, json_array_get(a, i), &f->objs[i], f);
			ctx_pop(c, mark);
		}
	}
}

static void load_summary(struct ctx *c, const json_t *o, struct summary *s)
{
	const json_t *so = field(c, o, "summary", J_OBJ, true, false);
	size_t mark;

	ctx_push(c, &mark, "summary", -1);
	s->errors = (unsigned long long)get_int(c, so, "errors", true, false,
						0, LLONG_MAX);
	s->warnings = (unsigned long long)get_int(c, so, "warnings", true,
						  false, 0, LLONG_MAX);
	s->leaks = (unsigned long long)get_int(c, so, "leaks", true, false, 0,
					       LLONG_MAX);
	s->suppressed = (unsigned long long)get_int(c, so, "suppressed", true,
						    false, 0, LLONG_MAX);
	ctx_pop(c, mark);
}

static void raise_to(unsigned long long *n, unsigned long long min)
{
	if (*n < min)
		*n = min;
}

/*
 * The summary also counts findings the shim did not keep, so it is the
 * base; but it never says less than the kept findings do, so that an
 * edited or inconsistent report cannot pass the gate.
 */
static void fix_summary(struct proc *p)
{
	struct summary kept = { 0 };
	size_t i;

	for (i = 0; i < p->nf; i++) {
		const struct finding *f = &p->f[i];

		if (f->suppressed)
			kept.suppressed += f->sev == RC_SEV_LEAK ? f->count : 1;
		else if (f->sev == RC_SEV_ERROR)
			kept.errors++;
		else if (f->sev == RC_SEV_WARNING)
			kept.warnings++;
		else
			kept.leaks += f->count;
	}
	raise_to(&p->sum.errors, kept.errors);
	raise_to(&p->sum.warnings, kept.warnings);
	raise_to(&p->sum.leaks, kept.leaks);
	raise_to(&p->sum.suppressed, kept.suppressed);
}

/* The whole file; sized by fstat() when it can, so never grown. */
static char *read_file(const char *path, size_t *len)
{
	bool is_stdin = !strcmp(path, "-");
	FILE *fp = is_stdin ? stdin : fopen(path, "rb");
	size_t cap = 65536, n = 0, r;
	struct stat st;
	char *buf;

	if (!fp)
		die("%s: cannot open: %s", path, strerror(errno));
	if (!fstat(fileno(fp), &st) && S_ISREG(st.st_mode) &&
	    st.st_size >= 0 && (uintmax_t)st.st_size < RR_MAX_FILE &&
	    (size_t)st.st_size >= cap)
		cap = (size_t)st.st_size + 1;
	buf = xrealloc(NULL, cap, 1);
	huge_pages(buf, cap);
	while ((r = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += r;
		if (n >= RR_MAX_FILE)
			die("%s: larger than %u bytes", path, RR_MAX_FILE);
		if (n == cap) {
			cap = cap < RR_MAX_FILE / 2 ? 2 * cap : RR_MAX_FILE;
			buf = xrealloc(buf, cap, 1);
			huge_pages(buf, cap);
		}
	}
	if (ferror(fp))
		die("%s: read error: %s", path, strerror(errno));
	if (!is_stdin)
		fclose(fp);
	*len = n;
	return buf;
}

/* One finding's tree at a time; the first error is kept for later. */
struct loading {
	struct proc *p;
	const struct jdoc *jd;	/* its top level so far */
	bool started;		/* "format" and "frames" looked at */
	const struct frame *frames;
	size_t nframes;
	bool failed;
	char msg[sizeof(field_msg)];
};

/* What the findings need from the top level before them. */
static void load_start(struct loading *l)
{
	struct ctx c = { .path = l->p->path, .arena = &l->p->arena,
			 .names = l->p->names };

	l->started = true;
	check_format(&c, l->jd->root);
	load_frames(&c, l->jd->root);
	l->frames = c.frames;
	l->nframes = c.nframes;
}

static void stream_finding(void *arg, json_t *o, size_t i)
{
	struct loading *l = arg;
	struct proc *p = l->p;
	struct ctx c = { .path = p->path, .arena = &p->arena,
			 .names = p->names };
	size_t mark;
	jmp_buf jb;

	if (l->failed)
		return;
	if (p->nf == p->cap_f) {
		p->cap_f = p->cap_f ? 2 * p->cap_f : 64;
		p->f = xrealloc(p->f, p->cap_f, sizeof(*p->f));
	}
	memset(&p->f[p->nf], 0, sizeof(p->f[p->nf]));
	ctx_push(&c, &mark, "findings", (long)i);
	if (setjmp(jb)) {
		field_catch = NULL;
		l->failed = true;
		memcpy(l->msg, field_msg, sizeof(l->msg));
		return;
	}
	field_catch = &jb;
	if (!l->started)
		load_start(l);
	c.frames = l->frames;
	c.nframes = l->nframes;
	load_finding(&c, o, &p->f[p->nf]);
	field_catch = NULL;
	p->nf++;
}

/* The report in buf[0..len), a buffer from malloc(), as process *p. */
static void load_into(struct proc *p, const char *path, char *buf,
		      size_t len)
{
	struct ctx c = { .path = path };
	struct loading l = { 0 };
	struct jdoc jd = {
		.path = path,
		.finding = stream_finding,
		.arg = &l,
		.bump = true,
	};
	const json_t *argv, *mods, *root;
	const char *tool;
	size_t i, mark;

	memset(p, 0, sizeof(*p));
	p->path = path;
	p->buf = buf;
	l.p = p;
	c.arena = &p->arena;
	c.names = p->names = xcalloc(1, sizeof(*p->names));
	l.jd = &jd;
	jd_load(&jd, buf, len);
	/* The model holds copies: the file and its tree can go. */
	free(p->buf);
	p->buf = NULL;
	root = p->root = jd.root;
	tool = get_str(&c, root, "tool", true, false);
	if (strcmp(tool, "rdmacheck"))
		bad_field(&c, "tool", "not an rdmacheck report");
	/* Also when no finding came (or "frames" came after them). */
	check_format(&c, root);
	if (!l.started)
		load_frames(&c, root);

	p->pid = get_int(&c, root, "pid", true, false, 0, INT_MAX);
	p->exe = get_str(&c, root, "exe", false, true);
	argv = field(&c, root, "argv", J_ARR, false, true);
	if (argv) {
		p->argc = json_array_size(argv);
		p->argv = aalloc(&p->arena, p->argc, sizeof(*p->argv));
		for (i = 0; i < p->argc; i++) {
			const json_t *s = json_array_get(argv, i);

			ctx_push(&c, &mark, "argv", (long)i);
			if (!json_is_string(s))
				bad_field(&c, "", "expected a string");
			p->argv[i] = jd_str(&p->arena, s);
			ctx_pop(&c, mark);
		}
	}
	p->status = get_str(&c, root, "status", true, false);
	if (strcmp(p->status, "exited") && strcmp(p->status, "crashed") &&
	    strcmp(p->status, "snapshot") && strcmp(p->status, "killed"))
		bad_field(&c, "status", "expected \"exited\", \"crashed\", "
			  "\"snapshot\" or \"killed\"");
	if (!strcmp(p->status, "killed") || !strcmp(p->status, "crashed"))
		p->signal = (int)get_int(&c, root, "signal", false, true, 0,
					 255);
	p->halted = get_bool(&c, root, "halted", false);
	p->host = get_str(&c, root, "host", false, true);
	p->start_time = get_str(&c, root, "start_time", false, true);
	p->end_time = get_str(&c, root, "end_time", false, true);
	mods = field(&c, root, "modules", J_ARR, false, true);
	if (mods) {
		p->nmods = json_array_size(mods);
		p->mods = aalloc(&p->arena, p->nmods, sizeof(*p->mods));
		for (i = 0; i < p->nmods; i++) {
			const json_t *m = json_array_get(mods, i);

			ctx_push(&c, &mark, "modules", (long)i);
			if (!json_is_object(m))
				bad_field(&c, "", "expected an object");
			p->mods[i].path = get_str(&c, m, "path", true, false);
			p->mods[i].build_id = get_str(&c, m, "build_id",
						      false, true);
			ctx_pop(&c, mark);
		}
	}
	p->dropped = (unsigned long long)get_int(&c, root, "findings_dropped",
						 false, true, 0, LLONG_MAX);
	load_summary(&c, root, &p->sum);
	/* Streamed: only its type is checked here, where it always was. */
	field(&c, root, "findings", J_ARR, true, false);
	if (l.failed)
		die("%s", l.msg);
	json_decref(p->root);
	p->root = NULL;
	strtab_free(p->names);
	free(p->names);
	p->names = NULL;
	fix_summary(p);
	/* Findings point back at their process once procs stops moving. */
}

/* The next process's report, in buf[0..len). */
static void load_report_buf(const char *path, char *buf, size_t len)
{
	if (nprocs == cap_procs) {
		cap_procs = cap_procs ? 2 * cap_procs : 16;
		procs = xrealloc(procs, cap_procs, sizeof(*procs));
	}
	/* Counted at once, so that free_reports() finds it after an error. */
	load_into(&procs[nprocs++], path, buf, len);
}

static void load_report(const char *path)
{
	size_t len;
	char *buf = read_file(path, &len);

	load_report_buf(path, buf, len);
}

/*
 * Loading many reports: each thread takes the next input, loads it into
 * its slot of procs[] and keeps die()'s message when it fails; the first
 * input that failed is reported once all are done, as if they had been
 * loaded one after the other.
 */
#define LOAD_THREADS 8

struct batch {
	char **paths;
	size_t n, next;		/* next is taken atomically */
	char **errs;		/* per input: why it failed, or NULL */
};

static void load_one(struct batch *b, size_t i)
{
	jmp_buf jb;
	size_t len;
	char *buf;

	if (setjmp(jb)) {
		die_catch = NULL;
		field_catch = NULL;
		b->errs[i] = strdup(die_msg);
		if (!b->errs[i])
			b->errs[i] = (char *)"out of memory";
		return;
	}
	die_catch = &jb;
	buf = read_file(b->paths[i], &len);
	load_into(&procs[i], b->paths[i], buf, len);
	die_catch = NULL;
}

static void *load_thread(void *arg)
{
	struct batch *b = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED)) < b->n)
		load_one(b, i);
	jbump_release();
	return NULL;
}

/*
 * Regular files load in parallel, on as many threads as there are CPUs;
 * anything else (standard input, a pipe) in order, in this thread.
 */
static void load_all(char **paths, size_t n)
{
	pthread_t tid[LOAD_THREADS];
	struct batch b = { .paths = paths, .n = n };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nthreads = n, started = 0, i;
	struct stat st;

	if (ncpu > 0 && nthreads > (size_t)ncpu)
		nthreads = (size_t)ncpu;
	if (nthreads > LOAD_THREADS)
		nthreads = LOAD_THREADS;
	for (i = 0; i < n && nthreads > 1; i++)
		if (!strcmp(paths[i], "-") || stat(paths[i], &st) ||
		    !S_ISREG(st.st_mode))
			nthreads = 1;
	if (nthreads <= 1) {
		for (i = 0; i < n; i++)
			load_report(paths[i]);
		return;
	}
	procs = xcalloc(n, sizeof(*procs));
	nprocs = cap_procs = n;
	b.errs = xcalloc(n, sizeof(*b.errs));
	/* This thread is one of them. */
	while (started + 1 < nthreads &&
	       !pthread_create(&tid[started], NULL, load_thread, &b))
		started++;
	load_thread(&b);
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < n; i++)
		if (b.errs[i])
			die("%s", b.errs[i]);
	free(b.errs);
}

/* ---- Offline symbolization -------------------------------------------- */

static struct arena names;	/* what the symbolizer found */


/* A frame to name, and the build id its report gives its module. */
struct symq_ent {
	struct frame *fr;
	const char *want;	/* NULL: not known */
	const struct proc *p;
};

static struct symq_ent *symq;
static size_t nsymq, capsymq;

static const char *build_id_of(const struct proc *p, const char *module)
{
	size_t i;

	for (i = 0; i < p->nmods; i++)
		if (!strcmp(p->mods[i].path, module))
			return p->mods[i].build_id;
	return NULL;
}

static void queue_stack(const struct proc *p, struct stack *st)
{
	size_t i;

	for (i = 0; i < st->n; i++) {
		struct frame *fr = &st->f[i];

		if (fr->function || !fr->module || !fr->has_offset)
			continue;
		if (nsymq == capsymq) {
			capsymq = capsymq ? capsymq * 2 : 64;
			symq = xrealloc(symq, capsymq, sizeof(*symq));
		}
		symq[nsymq].fr = fr;
		symq[nsymq].want = build_id_of(p, fr->module);
		symq[nsymq++].p = p;
	}
}

static int cmp_frame_module(const void *a, const void *b)
{
	const struct symq_ent *x = a, *y = b;
	int c = strcmp(x->fr->module, y->fr->module);

	if (c || x->want == y->want)
		return c;
	if (!x->want || !y->want)
		return x->want ? 1 : -1;
	return strcmp(x->want, y->want);
}

/* The build id of the file at path now ("" when it has none). */
static void file_build_id(const char *path, char *hex)
{
	struct stat st;
	void *img;
	int fd;

	hex[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && st.st_size > 0) {
		img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			   fd, 0);
		if (img != MAP_FAILED) {
			if (rc_build_id(img, (size_t)st.st_size, hex))
				hex[0] = '\0';
			munmap(img, (size_t)st.st_size);
		}
	}
	close(fd);
}

#ifdef RR_HAVE_DWFL
/*
 * libdw names inline levels: the frame takes the innermost, and the
 * levels around it are inserted after it once every frame is named
 * (expand_inlined), so that queued frame pointers stay valid.
 */
struct inl {
	struct frame *at;
	struct frame *f;	/* the outer levels, innermost first */
	unsigned n;
};
static struct inl *inls;
static size_t ninls, capinls;

static const char *sym_str(char *s)
{
	const char *r = s ? astrdup(&names, s) : NULL;

	free(s);
	return r;
}

static bool dw_symbolize_frame(struct frame *fr, uintptr_t offset)
{
	struct rr_sym syms[RR_INLINE_MAX];
	int n = rr_dwfl_symbolize(fr->module, offset, syms, RR_INLINE_MAX), i;
	struct frame *more;

	if (n <= 0)
		return false;
	fr->function = sym_str(syms[0].function);
	fr->file = sym_str(syms[0].file);
	fr->line = syms[0].line;
	if (!fr->function || rc_start_function(fr->module, fr->function)) {
		/* as the shim names libc's start code (symbolize.c) */
		fr->file = NULL;
		fr->line = 0;
	}
	if (n == 1 || rc_start_function(fr->module, fr->function)) {
		for (i = 1; i < n; i++) {
			free(syms[i].function);
			free(syms[i].file);
		}
		return true;
	}
	more = aalloc(&names, (size_t)n - 1, sizeof(*more));
	for (i = 1; i < n; i++) {
		more[i - 1] = *fr;
		more[i - 1].function = sym_str(syms[i].function);
		more[i - 1].file = sym_str(syms[i].file);
		more[i - 1].line = syms[i].line;
	}
	if (ninls == capinls) {
		capinls = capinls ? 2 * capinls : 16;
		inls = xrealloc(inls, capinls, sizeof(*inls));
	}
	inls[ninls].at = fr;
	inls[ninls].f = more;
	inls[ninls++].n = (unsigned)n - 1;
	fr->inlined = true;
	return true;
}

static int cmp_inl(const void *a, const void *b)
{
	const struct inl *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

static void expand_stack(struct arena *a, struct stack *st)
{
	size_t i, n = st->n, o = 0;
	struct frame *nf;
	struct inl key, *hit;

	for (i = 0; i < st->n; i++)
		if (st->f[i].inlined) {
			key.at = &st->f[i];
			hit = bsearch(&key, inls, ninls, sizeof(*inls),
				      cmp_inl);
			n += hit ? hit->n : 0;
		}
	if (n == st->n)
		return;
	nf = aalloc(a, n, sizeof(*nf));
	for (i = 0; i < st->n; i++) {
		nf[o++] = st->f[i];
		if (!st->f[i].inlined)
			continue;
		key.at = &st->f[i];
		hit = bsearch(&key, inls, ninls, sizeof(*inls), cmp_inl);
		if (hit) {
			memcpy(&nf[o], hit->f, hit->n * sizeof(*nf));
			o += hit->n;
		}
	}
	st->f = nf;
	st->n = n;
}

static void expand_inlined(void)
{
	size_t i, j, k;

	if (!ninls)
		return;
	qsort(inls, ninls, sizeof(*inls), cmp_inl);
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			struct finding *f = &procs[i].f[j];

			expand_stack(&procs[i].arena, &f->stack);
			for (k = 0; k < f->nobjs; k++) {
				expand_stack(&procs[i].arena,
					     &f->objs[k].cstack);
				expand_stack(&procs[i].arena,
					     &f->objs[k].dstack);
			}
		}
	free(inls);
	inls = NULL;
	ninls = capinls = 0;
}
#endif

/* Fill missing names; grouped by module so each file is loaded once. */
static void symbolize_all(void)
{
	char have[RC_BUILD_ID_MAX + 1];
	bool usable = false, same = true;
	struct stat st;
	size_t i, j, k;

	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			struct finding *f = &procs[i].f[j];

			queue_stack(&procs[i], &f->stack);
			for (k = 0; k < f->nobjs; k++) {
				queue_stack(&procs[i], &f->objs[k].cstack);
				queue_stack(&procs[i], &f->objs[k].dstack);
			}
		}
	if (nsymq)
		qsort(symq, nsymq, sizeof(*symq), cmp_frame_module);
	for (i = 0; i < nsymq; i++) {
		struct frame *fr = symq[i].fr;
		const char *want = symq[i].want;
		bool new_mod = i == 0 ||
			       strcmp(fr->module, symq[i - 1].fr->module);
		struct rc_frame out;
		/* Both readers name a return address's call, at offset - 1. */
		uintptr_t at = fr->offset + fr->exact;

		/* Only regular files: a module path may name a device now. */
		if (new_mod) {
			usable = !stat(fr->module, &st) && S_ISREG(st.st_mode);
			if (usable)
				file_build_id(fr->module, have);
		}
		/* A file rebuilt since the report would name the wrong
		 * functions: its frames keep module+offset. */
		if (new_mod || want != symq[i - 1].want) {
			same = !want || !usable || !strcmp(want, have);
			if (!same)
				fprintf(stderr, "%s: %s: %s has build id %s, not the report's %s: its frames are not symbolized\n",
					prog, symq[i].p->path, fr->module,
					*have ? have : "(none)", want);
		}
		if (!usable || !same)
			continue;
#ifdef RR_HAVE_DWFL
		if (dw_symbolize_frame(fr, at))
			continue;
#endif
		if (rc_symbolize_file(fr->module, at, &out))
			continue;
		if (out.function)
			fr->function = astrdup(&names, out.function);
		if (out.function && out.file) {
			fr->file = astrdup(&names, out.file);
			fr->line = out.line;
		}
	}
	free(symq);
	symq = NULL;
	nsymq = capsymq = 0;
#ifdef RR_HAVE_DWFL
	rr_dwfl_close();
	expand_inlined();
#endif
}

/* ---- Fingerprints ------------------------------------------------------ */

/* Findings whose report has none (crash reports, older reports). */
static void fingerprint_all(void)
{
	char hex[RC_FP_LEN + 1];
	struct rc_fp fp;
	size_t i, j, k;

	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			struct finding *f = &procs[i].f[j];

			if (f->fingerprint)
				continue;
			rc_fp_init(&fp, f->rule, f->call);
			for (k = 0; k < f->stack.n; k++) {
				const struct frame *fr = &f->stack.f[k];

				rc_fp_frame(&fp, fr->function, fr->file,
					    fr->module, fr->offset);
			}
			rc_fp_hex(&fp, hex);
			f->fingerprint = astrdup(&procs[i].arena, hex);
		}
}

/* ---- Suppressions ------------------------------------------------------ */

static unsigned long long weight(const struct finding *f)
{
	return f->sev == RC_SEV_LEAK ? f->count : 1;
}

static void take(unsigned long long *n, unsigned long long w)
{
	*n = *n > w ? *n - w : 0;
}

/* Take f's weight out of its class in p's summary. */
static void uncount(struct proc *p, const struct finding *f)
{
	if (f->sev == RC_SEV_ERROR)
		take(&p->sum.errors, 1);
	else if (f->sev == RC_SEV_WARNING)
		take(&p->sum.warnings, 1);
	else
		take(&p->sum.leaks, f->count);
}

static void apply_suppressions(void)
{
	struct rc_frame *frames = NULL;
	size_t cap = 0, i, j, k;

	for (i = 0; i < nprocs; i++) {
		struct proc *p = &procs[i];

		for (j = 0; j < p->nf; j++) {
			struct finding *f = &p->f[j];

			if (f->suppressed || f->rule_idx < 0)
				continue;
			if (f->stack.n > cap) {
				cap = f->stack.n;
				frames = xrealloc(frames, cap, sizeof(*frames));
			}
			for (k = 0; k < f->stack.n; k++) {
				const struct frame *fr = &f->stack.f[k];

				memset(&frames[k], 0, sizeof(frames[k]));
				frames[k].pc = fr->pc;
				frames[k].module = fr->module;
				frames[k].offset = fr->offset;
				frames[k].function = fr->function;
				frames[k].file = fr->file;
				frames[k].line = fr->line;
			}
			if (rc_suppress_match_frames((enum rc_rule)f->rule_idx,
						     f->call, frames,
						     (unsigned)f->stack.n) < 0)
				continue;
			/* Move its weight from its class to suppressed;
			 * counts of dropped findings stay as reported. */
			f->suppressed = true;
			uncount(p, f);
			p->sum.suppressed += weight(f);
		}
	}
	free(frames);
}

/* ---- Baselines --------------------------------------------------------- */

/*
 * --baseline=OLD: the fingerprints of OLD's findings, a set of strings.
 * OLD is what rdmacheck-report --format=json wrote, or shim reports (a
 * file or a directory), loaded as inputs are and fingerprinted the same
 * way (crash reports too, once symbolized).
 */
static char **base_tab;		/* open addressing, at most half full */
static size_t base_cap, base_n;
static bool have_baseline;

static uint64_t hash_text(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

static bool baseline_has(const char *fp)
{
	size_t h;

	if (!base_cap)
		return false;
	for (h = hash_text(fp) & (base_cap - 1); base_tab[h];
	     h = (h + 1) & (base_cap - 1))
		if (!strcmp(base_tab[h], fp))
			return true;
	return false;
}

static void baseline_add(const char *fp)
{
	char **old = base_tab;
	size_t oldcap = base_cap, i, h;

	if (baseline_has(fp))
		return;
	if (2 * (base_n + 1) > base_cap) {
		base_cap = base_cap ? 2 * base_cap : 64;
		base_tab = xcalloc(base_cap, sizeof(*base_tab));
		for (i = 0; i < oldcap; i++)
			if (old[i])
				for (h = hash_text(old[i]) & (base_cap - 1);
				     ; h = (h + 1) & (base_cap - 1))
					if (!base_tab[h]) {
						base_tab[h] = old[i];
						break;
					}
		free(old);
	}
	for (h = hash_text(fp) & (base_cap - 1); base_tab[h];
	     h = (h + 1) & (base_cap - 1))
		;
	base_tab[h] = strdup(fp);
	if (!base_tab[h])
		die("out of memory");
	base_n++;
}

/*
 * rdmacheck-report's own JSON: every finding carries its fingerprint.
 * Known to be one only once "tool" is read, so the findings' fingerprints
 * are kept until then, and the first finding without one.
 */
struct merged_fps {
	json_t *fps, *bad;
	size_t bad_idx;
};

static void merged_finding(void *arg, json_t *o, size_t i)
{
	struct merged_fps *m = arg;
	json_t *fp = json_object_get(o, "fingerprint");

	if (json_is_string(fp) && json_string_length(fp)) {
		if (json_array_append(m->fps, fp))
			die("out of memory");
	} else if (!m->bad) {
		m->bad = json_incref(o);
		m->bad_idx = i;
	}
}

static bool baseline_merged(const char *path)
{
	struct arena a = { 0 };
	struct ctx c = { .path = path, .arena = &a };
	struct merged_fps m = { .fps = json_array() };
	struct jdoc jd = { .path = path, .finding = merged_finding, .arg = &m };
	const json_t *tool;
	size_t len, i, mark;
	char *buf;

	if (!m.fps)
		die("out of memory");
	buf = read_file(path, &len);
	jd_load(&jd, buf, len);
	free(buf);
	tool = json_object_get(jd.root, "tool");
	if (!json_is_string(tool) ||
	    strcmp(json_string_value(tool), "rdmacheck-report")) {
		json_decref(m.fps);
		json_decref(m.bad);
		json_decref(jd.root);
		return false;
	}
	field(&c, jd.root, "findings", J_ARR, true, false);
	if (m.bad) {
		ctx_push(&c, &mark, "findings", (long)m.bad_idx);
		get_str(&c, m.bad, "fingerprint", true, false);
		bad_field(&c, "fingerprint", "empty fingerprint");
	}
	for (i = 0; i < json_array_size(m.fps); i++)
		baseline_add(json_string_value(json_array_get(m.fps, i)));
	json_decref(m.fps);
	json_decref(jd.root);
	arena_free(&a);
	return true;
}

static void add_dir(const char *dir);
static void free_reports(void);
static char **inputs;
static size_t ninputs, cap_inputs;

/* Before the inputs are loaded: procs[] is free for the baseline's. */
static void load_baseline(const char *path)
{
	struct stat st;
	size_t i, j;

	have_baseline = true;
	if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
		if (strcmp(path, "-") && baseline_merged(path))
			return;
		load_report(path);
	} else {
		add_dir(path);
		load_all(inputs, ninputs);
		for (i = 0; i < ninputs; i++)
			free(inputs[i]);
		ninputs = 0;
	}
	symbolize_all();
	fingerprint_all();
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++)
			baseline_add(procs[i].f[j].fingerprint);
	free_reports();
	free(procs);
	procs = NULL;
	cap_procs = 0;
}

static void free_baseline(void)
{
	size_t i;

	for (i = 0; i < base_cap; i++)
		free(base_tab[i]);
	free(base_tab);
	base_tab = NULL;
	base_cap = base_n = 0;
}

/* Findings already in the baseline leave the counts, as suppressed do. */
static void apply_baseline(void)
{
	size_t i, j;

	fingerprint_all();
	for (i = 0; have_baseline && i < nprocs; i++) {
		struct proc *p = &procs[i];

		for (j = 0; j < p->nf; j++) {
			struct finding *f = &p->f[j];

			if (f->suppressed || !baseline_has(f->fingerprint))
				continue;
			f->baselined = true;
			uncount(p, f);
			p->sum.baselined += weight(f);
		}
	}
}

/* ---- Merging ----------------------------------------------------------- */

/* Reports from more than one host: pids are shown as host:pid. */
static bool many_hosts;

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* A frame's identity: module+offset, or the pc without them. */
static bool same_frame(const struct frame *a, const struct frame *b)
{
	if (a->module || b->module)
		return same_str(a->module, b->module) &&
		       a->has_offset == b->has_offset &&
		       a->offset == b->offset;
	return a->pc == b->pc;
}

static bool same_stack(const struct stack *a, const struct stack *b)
{
	size_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (!same_frame(&a->f[i], &b->f[i]))
			return false;
	return true;
}

/* Two builds' identical findings merge: their fingerprints are equal. */
static bool same_finding(const struct finding *a, const struct finding *b)
{
	return a->suppressed == b->suppressed &&
	       !strcmp(a->fingerprint, b->fingerprint);
}

/* The i-th distinct process of a merged finding. */
static const struct proc *proc_at(const struct finding *f, size_t i)
{
	return i ? f->more_procs[i - 1] : f->proc;
}

/* Findings come process by process: p is new unless it came last. */
static void add_proc(struct finding *g, struct proc *p)
{
	if (proc_at(g, g->nprocs - 1) == p)
		return;
	if (g->nprocs - 1 == g->cap_procs) {
		g->cap_procs = g->cap_procs ? 2 * g->cap_procs : 4;
		g->more_procs = xrealloc(g->more_procs, g->cap_procs,
					 sizeof(*g->more_procs));
	}
	g->more_procs[g->nprocs++ - 1] = p;
}

/* FNV-1a. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	return s ? hash_bytes(h, s, strlen(s) + 1) : h;
}

/* Over what same_finding() compares. */
static uint64_t finding_hash(const struct finding *f)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = hash_str(h, f->fingerprint);
	return hash_bytes(h, &f->suppressed, sizeof(f->suppressed));
}

struct head {
	uint64_t hash;
	struct finding *f;	/* NULL: empty slot */
};

/*
 * Each finding joins the first earlier one with its fingerprint (computed
 * here for those that have none), found in a hash table of the groups'
 * first findings (open addressing, at most half full).
 */
static void merge_all(bool merge)
{
	struct head *tab = NULL;
	size_t cap = 16, total = 0, i, j, h;
	uint64_t hash;

	fingerprint_all();
	many_hosts = false;
	for (i = 1; i < nprocs && !many_hosts; i++)
		many_hosts = !same_str(procs[i].host, procs[0].host);
	for (i = 0; i < nprocs; i++)
		total += procs[i].nf;
	if (merge) {
		while (cap < 2 * total)
			cap *= 2;
		tab = xcalloc(cap, sizeof(*tab));
	}
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			struct finding *f = &procs[i].f[j], *g;

			f->proc = &procs[i];
			f->total = f->count;
			f->nocc = 1;
			f->nprocs = 1;
			if (!merge)
				continue;
			hash = finding_hash(f);
			for (h = hash & (cap - 1); (g = tab[h].f);
			     h = (h + 1) & (cap - 1))
				if (tab[h].hash == hash && same_finding(g, f))
					break;
			if (!g) {
				tab[h].hash = hash;
				tab[h].f = f;
				continue;
			}
			f->merged_into = g;
			g->total += f->count;
			g->nocc++;
			add_proc(g, f->proc);
		}
	free(tab);
}

/*
 * One process, one report: the snapshots a process wrote before its exit
 * (or crash) report say less than it, so they give way to it, and of
 * snapshots alone the latest stands (errors stay, leaks are recounted in
 * each).  A process is (host, pid, start time); reports without a start
 * time are never collapsed.
 */
static int cmp_proc_key(const void *a, const void *b)
{
	const struct proc *x = *(struct proc *const *)a;
	const struct proc *y = *(struct proc *const *)b;
	int c;

	if (!x->start_time != !y->start_time)
		return x->start_time ? -1 : 1;
	if (!x->start_time)
		return 0;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	c = strcmp(x->host ? x->host : "", y->host ? y->host : "");
	return c ? c : strcmp(x->start_time, y->start_time);
}

/* Which of two reports of one process stands. */
static bool proc_later(const struct proc *x, const struct proc *y)
{
	bool xs = !strcmp(x->status, "snapshot");
	bool ys = !strcmp(y->status, "snapshot");

	if (xs != ys)
		return ys;
	return strcmp(x->end_time ? x->end_time : "",
		      y->end_time ? y->end_time : "") > 0;
}

static void collapse_snapshots(void)
{
	struct proc **ord, *keep;
	bool *drop;
	size_t i, j, k, n;

	if (nprocs < 2)
		return;
	ord = xcalloc(nprocs, sizeof(*ord));
	drop = xcalloc(nprocs, sizeof(*drop));
	for (i = 0; i < nprocs; i++)
		ord[i] = &procs[i];
	qsort(ord, nprocs, sizeof(*ord), cmp_proc_key);
	for (i = 0; i < nprocs; i = j) {
		for (j = i + 1; j < nprocs && ord[i]->start_time &&
		     !cmp_proc_key(&ord[i], &ord[j]); j++)
			;
		for (keep = ord[i], k = i + 1; k < j; k++)
			if (proc_later(ord[k], keep))
				keep = ord[k];
		/* Two exit reports of one process: both stay. */
		for (k = i; k < j; k++)
			if (ord[k] != keep && !strcmp(ord[k]->status,
						      "snapshot"))
				drop[ord[k] - procs] = true;
	}
	for (i = n = 0; i < nprocs; i++) {
		if (drop[i]) {
			free(procs[i].f);
			arena_free(&procs[i].arena);
			free(procs[i].buf);
			continue;
		}
		procs[n++] = procs[i];
	}
	nprocs = n;
	free(drop);
	free(ord);
}

/* Everything the reports hold, for a caller that loads many. */
static void free_reports(void)
{
	size_t i, j;

	for (i = 0; i < nprocs; i++) {
		for (j = 0; j < procs[i].nf; j++)
			free(procs[i].f[j].more_procs);
		free(procs[i].f);
		arena_free(&procs[i].arena);
		json_decref(procs[i].root);
		if (procs[i].names)
			strtab_free(procs[i].names);
		free(procs[i].names);
		free(procs[i].buf);
	}
	nprocs = 0;
	arena_free(&names);
	jbump_release();
	field_catch = NULL;
}

/* ---- Text output ------------------------------------------------------- */

static const char *kind_text(const char *json_kind)
{
	static const char *const k[][2] = {
#define X(e, json, text) { json, text },
		RC_KINDS(X)
#undef X
	};
	size_t i;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (!strcmp(k[i][0], json_kind))
			return k[i][1];
	return json_kind;
}

/* Strings from the reports: keep each block one line per line. */
static void put_safe(FILE *o, const char *s)
{
	size_t n;

	while (*s) {
		for (n = 0; (unsigned char)s[n] >= 0x20 && s[n] != 0x7f; n++)
			;
		fwrite(s, 1, n, o);
		s += n;
		if (*s) {
			fputc('?', o);
			s++;
		}
	}
}

/* --strip-path-prefix: source paths as the repository names them. */
static const char *strip_prefix;

/* Lexically, for display: "/a/./b" is "/a/b" and "/a/x/../b" is "/a/b"
 * (an out-of-tree build compiles "/top/build/../src/f.c"); out holds
 * strlen(p) + 1 bytes. */
static void normalize(const char *p, char *out)
{
	char *o = out;

	while (*p) {
		if (p[0] == '/' && p[1] == '.' && (p[2] == '/' || !p[2])) {
			p += 2;
		} else if (p[0] == '/' && p[1] == '.' && p[2] == '.' &&
			   (p[3] == '/' || !p[3]) && o > out) {
			char *slash = o;

			while (slash > out && *--slash != '/')
				;
			/* Not past the root, nor over a "..". */
			if (*slash != '/' || !strncmp(slash, "/../", 4) ||
			    !strcmp(slash, "/..")) {
				*o++ = *p++;
				continue;
			}
			o = slash;
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
}

/* With --strip-path-prefix: the path without the prefix, both compared
 * normalized, else as given. */
static const char *show_path(const char *path)
{
	static char *norm_prefix;
	size_t l = strip_prefix ? strlen(strip_prefix) : 0;
	char *norm;

	if (!path || !l)
		return path;
	if (!norm_prefix) {
		/* Kept to the end, as strip_prefix is. */
		norm_prefix = xrealloc(NULL, l + 1, 1);
		normalize(strip_prefix, norm_prefix);
	}
	norm = aalloc(&names, strlen(path) + 1, 1);
	normalize(path, norm);
	if (*norm_prefix && !strncmp(norm, norm_prefix, strlen(norm_prefix)))
		return norm + strlen(norm_prefix);
	return strncmp(path, strip_prefix, l) ? path : path + l;
}

static void put_frame(FILE *o, size_t i, const struct frame *fr)
{
	fputs("    #", o);
	put_u(o, i);
	fputc(' ', o);
	put_x(o, fr->pc);
	if (fr->function) {
		fputs(" in ", o);
		put_safe(o, fr->function);
	}
	if (fr->function && fr->file) {
		fputc(' ', o);
		put_safe(o, show_path(fr->file));
		if (fr->line) {
			fputc(':', o);
			put_u(o, fr->line);
		}
	} else if (fr->module) {
		fputs(" (", o);
		put_safe(o, fr->module);
		fputc('+', o);
		put_x(o, fr->offset);
		fputc(')', o);
	} else if (!fr->function) {
		fputs(" (<unknown module>)", o);
	}
	fputc('\n', o);
}

static void put_stack(FILE *o, const struct stack *st)
{
	size_t i;

	if (!st->n)
		fputs("    <no stack>\n", o);
	/* Not below main(), as the shim prints them. */
	for (i = 0; i < st->n; i++) {
		put_frame(o, i, &st->f[i]);
		if (st->f[i].function && !strcmp(st->f[i].function, "main"))
			break;
	}
}

static void put_thread(FILE *o, long long tid)
{
	if (tid)
		fprintf(o, "thread %lld", tid);
	else
		fputs("unknown thread", o);
}

static void put_obj_name(FILE *o, const struct object *ob)
{
	fputs("  ", o);
	put_safe(o, kind_text(ob->kind));
	fputc(' ', o);
	/* an rsocket goes by its number, as in the shim's own text */
	if (!strcmp(ob->kind, "rsocket") && !strncmp(ob->handle, "0x", 2))
		fprintf(o, "%lu", strtoul(ob->handle + 2, NULL, 16));
	else
		put_safe(o, ob->handle);
}

static void put_obj(FILE *o, const struct finding *f, const struct object *ob)
{
	bool note = ob->note && *ob->note;

	if (note || (!ob->created && !ob->destroyed)) {
		put_obj_name(o, ob);
		if (note) {
			fputc(' ', o);
			put_safe(o, ob->note);
			fputc(':', o);
		} else {
			fputs(" (no creation record)", o);
		}
		fputc('\n', o);
	}
	if (ob->created) {
		put_obj_name(o, ob);
		if (f->stack.n && same_stack(&ob->cstack, &f->stack)) {
			/* Grouped leaks: do not repeat the stack. */
			fputs(" was created by ", o);
			put_thread(o, ob->created_tid);
			fputs(" at the stack above\n", o);
		} else {
			fputs(" was created here (", o);
			put_thread(o, ob->created_tid);
			fputs("):\n", o);
			put_stack(o, &ob->cstack);
		}
	}
	if (ob->destroyed) {
		put_obj_name(o, ob);
		fputs(" was destroyed here (", o);
		put_thread(o, ob->destroyed_tid);
		fputs("):\n", o);
		put_stack(o, &ob->dstack);
	}
}

static const char *const sev_word[] = {
	[RC_SEV_ERROR] = "ERROR",
	[RC_SEV_WARNING] = "WARNING",
	[RC_SEV_LEAK] = "LEAK",
};

static void put_pids(FILE *o, const struct finding *f)
{
	size_t i;

	for (i = 0; i < f->nprocs; i++) {
		const struct proc *p = proc_at(f, i);

		fputs(i ? ", " : "", o);
		if (many_hosts) {
			put_safe(o, p->host ? p->host : "?");
			fputc(':', o);
		}
		fprintf(o, "%lld", p->pid);
	}
}

static void put_finding(FILE *o, const struct finding *f, bool merged)
{
	size_t i;

	if (merged)
		fputs("==merged== ", o);
	else
		fprintf(o, "==%lld== ", f->proc->pid);
	fprintf(o, "%s: rdmacheck: ", sev_word[f->sev]);
	put_safe(o, f->message);
	fputs(" [", o);
	put_safe(o, f->rule);
	fputs("]\n", o);
	put_stack(o, &f->stack);
	for (i = 0; i < f->nobjs; i++)
		put_obj(o, f, &f->objs[i]);
	if (f->more_objects)
		fprintf(o, "  ... and %llu more object%s\n", f->more_objects,
			f->more_objects == 1 ? "" : "s");
	if (merged) {
		if (f->sev == RC_SEV_LEAK)
			fprintf(o, "  %llu leaked object%s in total",
				f->total, f->total == 1 ? "" : "s");
		else
			fprintf(o, "  reported %zu time%s", f->nocc,
				f->nocc == 1 ? "" : "s");
		fprintf(o, " in %zu process%s (pid%s ", f->nprocs,
			f->nprocs == 1 ? "" : "es", f->nprocs == 1 ? "" : "s");
		put_pids(o, f);
		fputs(")\n", o);
	}
	fputc('\n', o);
}

static void put_summary(FILE *o, const char *prefix, const struct summary *s,
			const char *suffix)
{
	fprintf(o, "%srdmacheck: %llu errors, %llu warnings, %llu leaked objects (%llu suppressed",
		prefix, s->errors, s->warnings, s->leaks, s->suppressed);
	if (have_baseline)
		fprintf(o, ", %llu in the baseline", s->baselined);
	fprintf(o, ")%s\n", suffix);
}

static void total_summary(struct summary *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < nprocs; i++) {
		t->errors += procs[i].sum.errors;
		t->warnings += procs[i].sum.warnings;
		t->leaks += procs[i].sum.leaks;
		t->suppressed += procs[i].sum.suppressed;
		t->baselined += procs[i].sum.baselined;
	}
}

static void proc_prefix(char *buf, size_t len, const struct proc *p)
{
	snprintf(buf, len, "==%lld== ", p->pid);
}

/*
 * A process that a signal ended: a crash, or a kill with the default
 * action of a termination signal.  Its report says nothing of what the
 * program would have done next (the leak check of a crash never ran), so
 * it fails the gate however clean it looks: exit status 3, and in every
 * format.  Neither a suppression nor a baseline takes that away.
 */
static bool proc_died(const struct proc *p)
{
	return !strcmp(p->status, "crashed") || !strcmp(p->status, "killed");
}

/* "the process was killed by signal 15 (SIGTERM)", and the like. */
static void died_text(const struct proc *p, char *buf, size_t len)
{
	const char *name = rc_signal_name(p->signal);
	char sig[48];

	if (!p->signal)
		snprintf(sig, sizeof(sig), "a signal");
	else if (name)
		snprintf(sig, sizeof(sig), "signal %d (%s)", p->signal, name);
	else
		snprintf(sig, sizeof(sig), "signal %d", p->signal);
	if (!strcmp(p->status, "killed"))
		snprintf(buf, len, "the process was killed by %s", sig);
	else if (p->signal)
		snprintf(buf, len, "the process crashed: it died of %s", sig);
	else
		snprintf(buf, len, "the process crashed");
}

/* Whether a fatal-signal finding of p shows the crash already. */
static bool crash_shown(const struct proc *p)
{
	size_t j;

	for (j = 0; j < p->nf; j++)
		if (p->f[j].rule_idx == RC_R_FATAL_SIGNAL &&
		    !p->f[j].suppressed && !p->f[j].baselined)
			return true;
	return false;
}

static bool any_died(void)
{
	size_t i;

	for (i = 0; i < nprocs; i++)
		if (proc_died(&procs[i]))
			return true;
	return false;
}

/*
 * Notes on a process that the summary line cannot say; all: the ones
 * that do not explain the exit status too.
 */
static void put_proc_notes(FILE *o, const struct proc *p, bool all)
{
	char died[160];

	if (proc_died(p))
		died_text(p, died, sizeof(died));
	if (!strcmp(p->status, "crashed"))
		fprintf(o, "==%lld== rdmacheck: %s; this report was written from the signal handler\n",
			p->pid, died);
	else if (!strcmp(p->status, "killed"))
		fprintf(o, "==%lld== rdmacheck: %s\n", p->pid, died);
	if (!all)
		return;
	if (!strcmp(p->status, "snapshot"))
		fprintf(o, "==%lld== rdmacheck: a snapshot report; the process was still running\n",
			p->pid);
	if (p->halted)
		fprintf(o, "==%lld== rdmacheck: halted at the first error (halt_on_error)\n",
			p->pid);
	if (p->dropped)
		fprintf(o, "==%lld== rdmacheck: %llu findings were counted but not kept\n",
			p->pid, p->dropped);
}

static void put_total(FILE *o, size_t nunique, bool merge)
{
	struct summary t;
	char suffix[96];
	int n;

	total_summary(&t);
	n = snprintf(suffix, sizeof(suffix), " in %zu process%s", nprocs,
		     nprocs == 1 ? "" : "es");
	if (merge)
		snprintf(suffix + n, sizeof(suffix) - (size_t)n,
			 ", %zu unique finding%s", nunique,
			 nunique == 1 ? "" : "s");
	put_summary(o, "==total== ", &t, suffix);
}

static size_t count_unique(void)
{
	size_t n = 0, i, j;

	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++)
			if (!procs[i].f[j].merged_into &&
			    !procs[i].f[j].suppressed &&
			    !procs[i].f[j].baselined)
				n++;
	return n;
}

static void put_proc_findings(FILE *o, const struct proc *p, bool merge)
{
	size_t j;

	for (j = 0; j < p->nf; j++)
		if (!p->f[j].suppressed && !p->f[j].merged_into &&
		    !p->f[j].baselined)
			put_finding(o, &p->f[j], merge);
}

static void put_proc_summary(FILE *o, const struct proc *p, bool notes)
{
	char prefix[32];

	put_proc_notes(o, p, notes);
	proc_prefix(prefix, sizeof(prefix), p);
	put_summary(o, prefix, &p->sum, "");
}

/*
 * Unmerged, each process's blocks are followed by its summary line, as
 * the shim prints them; merged blocks span processes, so all the
 * summary lines come after them.
 */
static void output_text(FILE *o, bool merge, bool summary_only)
{
	char used[8192];
	size_t i;

	for (i = 0; i < nprocs; i++) {
		if (!summary_only)
			put_proc_findings(o, &procs[i], merge);
		if (!merge)
			put_proc_summary(o, &procs[i], !summary_only);
	}
	if (!summary_only && rc_suppress_format_used(used, sizeof(used), ""))
		fputs(used, o);
	for (i = 0; merge && i < nprocs; i++)
		put_proc_summary(o, &procs[i], !summary_only);
	put_total(o, count_unique(), merge);
}

/* ---- JSON output ------------------------------------------------------- */

/*
 * Format 2, as the shim writes it: each distinct frame once, in the
 * top-level "frames", and stacks as arrays of indices into it.  Frames
 * are distinct by every field written (merged processes name the same
 * code at different pcs).
 */
static const struct frame **jframes;	/* open addressing, half full */
static size_t jframes_cap;
static const struct frame **jorder;	/* in index order */
static size_t jnframes, jorder_cap;
static unsigned *jindex;		/* per jframes slot */

static bool same_jframe(const struct frame *a, const struct frame *b)
{
	return a->pc == b->pc && a->has_offset == b->has_offset &&
	       a->offset == b->offset && a->line == b->line &&
	       same_str(a->module, b->module) &&
	       same_str(a->function, b->function) &&
	       same_str(a->file, b->file);
}

static uint64_t hash_jframe(const struct frame *fr)
{
	uint64_t h = (fr->pc ^ fr->offset * 31 ^ fr->line) *
		     0x9e3779b97f4a7c15ull;

	if (fr->function)
		h ^= hash_text(fr->function);
	return h ^ h >> 29;
}

/* The slot of fr: its own, or the empty one where it goes. */
static size_t jframe_slot(const struct frame *fr)
{
	size_t h;

	for (h = hash_jframe(fr) & (jframes_cap - 1); jframes[h];
	     h = (h + 1) & (jframes_cap - 1))
		if (same_jframe(jframes[h], fr))
			break;
	return h;
}

static void jframe_add(const struct frame *fr)
{
	size_t h, i;

	if (2 * (jnframes + 1) > jframes_cap) {
		const struct frame **old = jframes;
		unsigned *oldidx = jindex;
		size_t oldcap = jframes_cap;

		jframes_cap = jframes_cap ? 2 * jframes_cap : 1024;
		jframes = xcalloc(jframes_cap, sizeof(*jframes));
		jindex = xcalloc(jframes_cap, sizeof(*jindex));
		for (i = 0; i < oldcap; i++) {
			if (!old[i])
				continue;
			h = jframe_slot(old[i]);
			jframes[h] = old[i];
			jindex[h] = oldidx[i];
		}
		free(old);
		free(oldidx);
	}
	h = jframe_slot(fr);
	if (jframes[h])
		return;
	if (jnframes == jorder_cap) {
		jorder_cap = jorder_cap ? 2 * jorder_cap : 1024;
		jorder = xrealloc(jorder, jorder_cap, sizeof(*jorder));
	}
	jframes[h] = fr;
	jindex[h] = (unsigned)jnframes;
	jorder[jnframes++] = fr;
}

static void jframes_add_stack(const struct stack *st)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		jframe_add(&st->f[i]);
}

static void jframes_free(void)
{
	free(jframes);
	free(jindex);
	free(jorder);
	jframes = jorder = NULL;
	jindex = NULL;
	jframes_cap = jnframes = jorder_cap = 0;
}

static void put_jframe(FILE *o, const struct frame *fr)
{
	fputs("{\"pc\": \"", o);
	put_x(o, fr->pc);
	fputs("\", \"module\": ", o);
	put_jstr(o, fr->module);
	if (fr->has_offset) {
		fputs(", \"offset\": \"", o);
		put_x(o, fr->offset);
		fputc('"', o);
	} else {
		fputs(", \"offset\": null", o);
	}
	fputs(", \"function\": ", o);
	put_jstr(o, fr->function);
	fputs(", \"file\": ", o);
	put_jstr(o, fr->file);
	fputs(", \"line\": ", o);
	put_u(o, fr->line);
	fputc('}', o);
}

static void put_jstack(FILE *o, const struct stack *st)
{
	size_t i;

	fputc('[', o);
	for (i = 0; i < st->n; i++) {
		if (i)
			fputs(", ", o);
		put_u(o, jindex[jframe_slot(&st->f[i])]);
	}
	fputc(']', o);
}

static void put_jlife(FILE *o, const char *key, bool has, long long tid,
		      const struct stack *st)
{
	fprintf(o, ", \"%s\": ", key);
	if (!has) {
		fputs("null", o);
		return;
	}
	fputs("{\"thread\": ", o);
	if (tid)
		fprintf(o, "%lld", tid);
	else
		fputs("null", o);
	fputs(", \"stack\": ", o);
	put_jstack(o, st);
	fputc('}', o);
}

static void put_jfinding(FILE *o, const struct finding *f)
{
	size_t i;

	fputs("    {\"rule\": ", o);
	put_jstr(o, f->rule);
	fprintf(o, ", \"severity\": \"%s\", \"call\": ",
		rc_severity_name(f->sev));
	put_jstr(o, f->call);
	fputs(", \"message\": ", o);
	put_jstr(o, f->message);
	fprintf(o, ", \"count\": %llu, \"occurrences\": %zu, \"suppressed\": %s, \"processes\": [",
		f->total, f->nocc, f->suppressed ? "true" : "false");
	for (i = 0; i < f->nprocs; i++)
		fprintf(o, "%s%lld", i ? ", " : "", proc_at(f, i)->pid);
	fputs("],\n      \"stack\": ", o);
	put_jstack(o, &f->stack);
	fputs(", \"fingerprint\": ", o);
	put_jstr(o, f->fingerprint);
	if (have_baseline)
		fprintf(o, ", \"baselined\": %s",
			f->baselined ? "true" : "false");
	fputs(",\n      \"objects\": [", o);
	for (i = 0; i < f->nobjs; i++) {
		const struct object *ob = &f->objs[i];

		fprintf(o, "%s\n        {\"kind\": ", i ? "," : "");
		put_jstr(o, ob->kind);
		fputs(", \"handle\": ", o);
		put_jstr(o, ob->handle);
		put_jlife(o, "created", ob->created, ob->created_tid,
			  &ob->cstack);
		put_jlife(o, "destroyed", ob->destroyed, ob->destroyed_tid,
			  &ob->dstack);
		if (ob->note) {
			fputs(", \"note\": ", o);
			put_jstr(o, ob->note);
		}
		fputc('}', o);
	}
	fputc(']', o);
	if (f->more_objects)
		fprintf(o, ", \"more_objects\": %llu", f->more_objects);
	fputc('}', o);
}

static void put_jsummary(FILE *o, const struct summary *s)
{
	fprintf(o, "{\"errors\": %llu, \"warnings\": %llu, \"leaks\": %llu, \"suppressed\": %llu",
		s->errors, s->warnings, s->leaks, s->suppressed);
	if (have_baseline)
		fprintf(o, ", \"baselined\": %llu", s->baselined);
	fputc('}', o);
}

static void output_json(FILE *o)
{
	struct summary t;
	bool first = true;
	size_t i, j, k;

	/* The frames of the stacks put_jfinding() writes. */
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			const struct finding *f = &procs[i].f[j];

			if (f->merged_into)
				continue;
			jframes_add_stack(&f->stack);
			for (k = 0; k < f->nobjs; k++) {
				if (f->objs[k].created)
					jframes_add_stack(&f->objs[k].cstack);
				if (f->objs[k].destroyed)
					jframes_add_stack(&f->objs[k].dstack);
			}
		}
	fprintf(o, "{\n  \"tool\": \"rdmacheck-report\",\n  \"format\": %d,\n  \"version\": \"%s\",\n  \"processes\": [",
		RC_REPORT_FORMAT, PACKAGE_VERSION);
	for (i = 0; i < nprocs; i++) {
		const struct proc *p = &procs[i];

		fprintf(o, "%s\n    {\"pid\": %lld, \"exe\": ", i ? "," : "",
			p->pid);
		put_jstr(o, p->exe);
		fputs(", \"argv\": [", o);
		for (j = 0; j < p->argc; j++) {
			if (j)
				fputs(", ", o);
			put_jstr(o, p->argv[j]);
		}
		fputs("], \"status\": ", o);
		put_jstr(o, p->status);
		if (!strcmp(p->status, "killed") || p->signal)
			fprintf(o, ", \"signal\": %d", p->signal);
		fputs(", \"host\": ", o);
		put_jstr(o, p->host);
		fputs(", \"start_time\": ", o);
		put_jstr(o, p->start_time);
		fputs(", \"end_time\": ", o);
		put_jstr(o, p->end_time);
		fprintf(o, ", \"halted\": %s, \"findings_dropped\": %llu, \"report\": ",
			p->halted ? "true" : "false", p->dropped);
		put_jstr(o, p->path);
		fputs(", \"summary\": ", o);
		put_jsummary(o, &p->sum);
		fputc('}', o);
	}
	fputs("\n  ],\n  \"frames\": [", o);
	for (i = 0; i < jnframes; i++) {
		fputs(i ? ",\n    " : "\n    ", o);
		put_jframe(o, jorder[i]);
	}
	fputs(jnframes ? "\n  ],\n  \"findings\": [" : "],\n  \"findings\": [",
	      o);
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			const struct finding *f = &procs[i].f[j];

			if (f->merged_into)
				continue;
			fputs(first ? "\n" : ",\n", o);
			first = false;
			put_jfinding(o, f);
		}
	total_summary(&t);
	fputs("\n  ],\n  \"summary\": ", o);
	put_jsummary(o, &t);
	fputs("\n}\n", o);
	jframes_free();
}

#include "report-formats.c"

/* ---- Arguments --------------------------------------------------------- */

static void add_input(char *path)
{
	if (ninputs == cap_inputs) {
		cap_inputs = cap_inputs ? 2 * cap_inputs : 16;
		inputs = xrealloc(inputs, cap_inputs, sizeof(*inputs));
	}
	inputs[ninputs++] = path;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.json directly in dir, sorted by name. */
static void add_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t first = ninputs, l;
	char *path;

	if (!d)
		die("%s: cannot open directory: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		l = strlen(de->d_name);
		if (l <= 5 || strcmp(de->d_name + l - 5, ".json"))
			continue;
		if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
			die("out of memory");
		add_input(path);
	}
	closedir(d);
	if (ninputs == first)
		die("%s: no *.json report in this directory", dir);
	qsort(inputs + first, ninputs - first, sizeof(*inputs), cmp_str);
}

static void usage(FILE *o)
{
	fprintf(o,
		"Usage: %s [OPTION]... REPORT.json|DIR...\n"
		"Render and merge rdmacheck JSON reports (a DIR means every *.json in it,\n"
		"- standard input).\n"
		"\n"
		"  -m, --merge              show identical findings once, across processes;\n"
		"                           a process's snapshots give way to its exit report\n"
		"  -f, --format=FORMAT      text (default), json (the merged result as one\n"
		"                           JSON document), junit, sarif or github\n"
		"  -j, --json               the same as --format=json\n"
		"  -b, --baseline=OLD       report and fail only on findings whose fingerprint\n"
		"                           is not in OLD (a report, a directory of them, or\n"
		"                           what --format=json wrote)\n"
		"  -s, --suppressions=FILE  mark findings matching FILE suppressed\n"
		"      --strip-path-prefix=PREFIX  remove PREFIX from source paths\n"
		"      --gen-suppressions   write a suppression file silencing the findings\n"
		"      --summary            print only the summary lines\n"
		"  -o, --output=FILE        write to FILE instead of stdout\n"
		"  -h, --help               show this help\n"
		"  -V, --version            show the version\n"
		"\n"
		"Exit status: 0 when no unsuppressed error or leak remains, 1 when\n"
		"some do, 2 on usage or input errors, 3 when a process died of a signal\n"
		"(a report with status crashed or killed), whatever its findings.\n",
		prog);
}

int main(int argc, char **argv)
{
	enum { OPT_SUMMARY = 256, OPT_STRIP, OPT_GEN };
	enum { F_TEXT, F_JSON, F_JUNIT, F_SARIF, F_GITHUB };
	static const char *const formats[] = {
		[F_TEXT] = "text", [F_JSON] = "json", [F_JUNIT] = "junit",
		[F_SARIF] = "sarif", [F_GITHUB] = "github",
	};
	static const struct option longopts[] = {
		{ "merge", no_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ "baseline", required_argument, NULL, 'b' },
		{ "strip-path-prefix", required_argument, NULL, OPT_STRIP },
		{ "gen-suppressions", no_argument, NULL, OPT_GEN },
		{ "suppressions", required_argument, NULL, 's' },
		{ "summary", no_argument, NULL, OPT_SUMMARY },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool merge = false, summary_only = false, gen = false, died;
	const char *outpath = NULL, *baseline = NULL;
	int format = F_TEXT;
	size_t k;
	struct summary t;
	struct stat st;
	FILE *o = stdout;
	int c;

	while ((c = getopt_long(argc, argv, "mjf:b:s:o:hV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'm':
			merge = true;
			break;
		case 'j':
			format = F_JSON;
			break;
		case 'f':
			for (k = 0; k < sizeof(formats) / sizeof(*formats); k++)
				if (!strcmp(optarg, formats[k]))
					break;
			if (k == sizeof(formats) / sizeof(*formats))
				die("unknown format '%s' (text, json, junit, sarif or github)",
				    optarg);
			format = (int)k;
			break;
		case 'b':
			baseline = optarg;
			break;
		case OPT_STRIP:
			strip_prefix = optarg;
			break;
		case OPT_GEN:
			gen = true;
			break;
		case 's':
			if (rc_suppress_load(optarg) < 0)
				die("cannot read the suppressions file '%s': "
				    "%s", optarg, strerror(errno));
			break;
		case OPT_SUMMARY:
			summary_only = true;
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
#ifdef RR_HAVE_DWFL
			printf("%s %s (symbolizer: libdw)\n", prog,
			       PACKAGE_VERSION);
#else
			printf("%s %s (symbolizer: built-in)\n", prog,
			       PACKAGE_VERSION);
#endif
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no report given\n", prog);
		usage(stderr);
		return 2;
	}
	if (format != F_TEXT && summary_only)
		die("--summary is for the text format");
	if (gen && (format != F_TEXT || summary_only))
		die("--gen-suppressions writes a suppression file: no --format or --summary");
	/* The baseline first, while procs[] is free. */
	if (baseline)
		load_baseline(baseline);
	for (; optind < argc; optind++) {
		if (!stat(argv[optind], &st) && S_ISDIR(st.st_mode))
			add_dir(argv[optind]);
		else
			add_input(argv[optind]);
	}
	load_all(inputs, ninputs);
	/* Merged output shows each process once. */
	if (merge || format == F_JSON || format == F_SARIF)
		collapse_snapshots();

	/* Suppressions and fingerprints use function and file names. */
	if (!summary_only || rc_suppress_count() || merge || baseline)
		symbolize_all();
	apply_suppressions();
	apply_baseline();
	/* JSON and SARIF always list each finding once. */
	merge_all(merge || format == F_JSON || format == F_SARIF);

	if (outpath && !(o = fopen(outpath, "w")))
		die("%s: cannot create: %s", outpath, strerror(errno));
	switch (gen ? -1 : format) {
	case -1:
		output_gen_suppressions(o);
		break;
	case F_JSON:
		output_json(o);
		break;
	case F_JUNIT:
		output_junit(o, merge);
		break;
	case F_SARIF:
		output_sarif(o);
		break;
	case F_GITHUB:
		output_github(o, merge);
		break;
	default:
		output_text(o, merge, summary_only);
	}
	if (fflush(o) || ferror(o) || (o != stdout && fclose(o)))
		die("%s: write error: %s", outpath ? outpath : "stdout",
		    strerror(errno));

	total_summary(&t);
	died = any_died();
	free_reports();
	free_baseline();
	return died ? 3 : t.errors || t.leaks ? 1 : 0;
}
