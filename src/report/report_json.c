/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report_json.c - the JSON report of this process (interface.md), written
 * atomically: "<path>.tmp.<pid>", then rename(2).
 *
 * Format 2: each distinct frame is written once, in the top-level
 * "frames" (before "findings"), and every stack is an array of indices
 * into it (see the frame table below).
 *
 * Output goes through a fixed buffer flushed with write(2); no stdio.
 * Strings: valid UTF-8 is copied, control characters, '"' and '\' are
 * escaped, and each byte of invalid UTF-8 becomes \u00XX (so \u0080-\u00ff
 * in a string always stands for a raw byte, never for a character).
 *
 * Crash mode (from a fatal-signal handler): the collector lock is only
 * tried, nothing is allocated, and rc_symbolize() is not called (it
 * allocates and locks).  The fatal-signal finding, which the collector
 * never keeps, comes after the kept ones, and the summary counts it.
 * Frames get module and offset from a one-time parse of /proc/self/maps
 * into static tables (open/read only); function
 * and file are null, line 0, and "symbolized" is false; module + offset
 * still let an offline tool symbolize every frame.  The frame table is
 * mmap()ed in both modes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/buildid.h"
#include "report/fingerprint.h"
#include "core/options.h"
#include "core/rdmacheck.h"
#include "report/report_int.h"
#include "unwind/stack.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* ---- strings ---------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static unsigned utf8_len(const unsigned char *s, size_t n)
{
	unsigned len, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	/* Reject overlong forms, surrogates and code points > U+10FFFF. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

static void put_u00(struct rc_out *o, unsigned char c)
{
	char esc[6] = { '\\', 'u', '0', '0', "0123456789abcdef"[c >> 4],
			"0123456789abcdef"[c & 15] };

	rc_out_put(o, esc, sizeof(esc));
}

static void json_strn(struct rc_out *o, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;

	rc_out_putc(o, '"');
	while (n) {
		size_t run;
		unsigned len;

		/* Copy a run of plain ASCII at once, not byte by byte. */
		for (run = 0; run < n && s[run] >= 0x20 && s[run] < 0x7f &&
		     s[run] != '"' && s[run] != '\\'; run++)
			;
		if (run) {
			rc_out_put(o, (const char *)s, run);
			s += run;
			n -= run;
			continue;
		}
		switch (*s) {
		case '"':
			rc_out_puts(o, "\\\"");
			break;
		case '\\':
			rc_out_puts(o, "\\\\");
			break;
		case '\n':
			rc_out_puts(o, "\\n");
			break;
		case '\r':
			rc_out_puts(o, "\\r");
			break;
		case '\t':
			rc_out_puts(o, "\\t");
			break;
		default:
			if (*s < 0x20 || *s == 0x7f) {
				put_u00(o, *s);
				break;
			}
			len = utf8_len(s, n);
			if (!len) {
				put_u00(o, *s);
				break;
			}
			rc_out_put(o, (const char *)s, len);
			s += len;
			n -= len;
			continue;
		}
		s++;
		n--;
	}
	rc_out_putc(o, '"');
}

/* A string or null. */
static void json_str(struct rc_out *o, const char *str)
{
	if (str)
		json_strn(o, str, strlen(str));
	else
		rc_out_puts(o, "null");
}

static void json_hex(struct rc_out *o, uintptr_t v)
{
	rc_out_putc(o, '"');
	rc_out_hex(o, v);
	rc_out_putc(o, '"');
}

static void json_key(struct rc_out *o, const char *key)
{
	rc_out_putc(o, '"');
	rc_out_puts(o, key);
	rc_out_puts(o, "\": ");
}

/* ---- crash-mode frames: module + offset from /proc/self/maps --------- */

#define MAPS_MAX 1024
#define MAPS_PATHS 65536

struct map_ent {
	uintptr_t start, end, base;
	uintptr_t hdr_end;	/* end of the mapping at base (file offset
				 * 0, the ELF header), 0 if unreadable */
	unsigned path;		/* offset into paths */
};

/*
 * The executable mappings, parsed into static storage (a signal stack
 * has no room, and nothing is allocated).  Two: the documents' (under
 * json_lock) and the fatal-signal block's, which is printed without it.
 */
struct maps_tab {
	struct map_ent e[MAPS_MAX];
	unsigned n;
	bool loaded;
	char paths[MAPS_PATHS];
	char chunk[4096], line[PATH_MAX + 128], last[PATH_MAX];
};
static struct maps_tab doc_maps, sig_maps;

static uintptr_t parse_hex(const char **p)
{
	uintptr_t v = 0;

	for (;; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			v = v * 16 + (c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (c - 'a' + 10);
		else
			return v;
	}
}

/*
 * One line, "start-end perms offset dev inode path".  t->last holds the
 * path of the latest mapping of file offset 0 and last_base its address:
 * the module's load base.
 */
static void maps_line(struct maps_tab *t, const char *l,
		      uintptr_t *last_base, uintptr_t *last_end,
		      unsigned *paths_used)
{
	uintptr_t start, end, off;
	const char *perms, *path;
	struct map_ent *m;
	size_t plen;
	int field;

	start = parse_hex(&l);
	if (*l++ != '-')
		return;
	end = parse_hex(&l);
	if (*l++ != ' ')
		return;
	perms = l;
	while (*l && *l != ' ')
		l++;
	if (*l++ != ' ')
		return;
	off = parse_hex(&l);
	for (field = 0; field < 2; field++) {	/* dev, inode */
		while (*l == ' ')
			l++;
		while (*l && *l != ' ')
			l++;
	}
	while (*l == ' ')
		l++;
	path = l;
	if (*path != '/')
		return;		/* anonymous, [stack], [vdso], ... */
	plen = strlen(path);
	if (off == 0 && plen < sizeof(t->last)) {
		memcpy(t->last, path, plen + 1);
		*last_base = start;
		*last_end = perms[0] == 'r' ? end : 0;
	}
	if (perms[0] == ' ' || perms[1] == ' ' || perms[2] != 'x' ||
	    t->n == MAPS_MAX)
		return;
	m = &t->e[t->n];
	m->start = start;
	m->end = end;
	m->base = strcmp(t->last, path) ? start - off : *last_base;
	m->hdr_end = strcmp(t->last, path) ? 0 : *last_end;
	if (t->n && !strcmp(t->paths + t->e[t->n - 1].path, path)) {
		m->path = t->e[t->n - 1].path;
	} else {
		if (*paths_used + plen + 1 > MAPS_PATHS)
			return;
		memcpy(t->paths + *paths_used, path, plen + 1);
		m->path = *paths_used;
		*paths_used += plen + 1;
	}
	t->n++;
}

/* open/read only: this also runs in a fatal-signal handler. */
static void maps_load(struct maps_tab *t)
{
	uintptr_t last_base = 0, last_end = 0;
	unsigned paths_used = 0;
	size_t ll = 0;
	ssize_t r, i;
	int fd;

	t->loaded = true;
	t->n = 0;
	t->last[0] = '\0';
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while ((r = read(fd, t->chunk, sizeof(t->chunk))) > 0) {
		for (i = 0; i < r; i++) {
			if (t->chunk[i] != '\n') {
				if (ll < sizeof(t->line) - 1)
					t->line[ll++] = t->chunk[i];
				continue;
			}
			t->line[ll] = '\0';
			ll = 0;
			maps_line(t, t->line, &last_base, &last_end,
				  &paths_used);
		}
	}
	close(fd);
}

static const struct map_ent *map_of(struct maps_tab *t, uintptr_t pc)
{
	unsigned i;

	if (!t->loaded)
		maps_load(t);
	for (i = 0; i < t->n; i++)
		if (pc - 1 >= t->e[i].start && pc - 1 < t->e[i].end)
			return &t->e[i];
	return NULL;
}

static void crash_resolve(struct maps_tab *t, uintptr_t pc,
			  struct rc_frame *fr)
{
	const struct map_ent *m = map_of(t, pc);

	memset(fr, 0, sizeof(*fr));
	fr->pc = pc;
	if (m) {
		fr->module = t->paths + m->path;
		fr->offset = pc - m->base;
	}
}

void rc_crash_frame(uintptr_t pc, struct rc_frame *fr, bool fresh)
{
	if (fresh)
		maps_load(&sig_maps);
	crash_resolve(&sig_maps, pc, fr);
}

/*
 * The modules the document's frames name, each with a pc in it: their
 * build ids come from the ELF header mapped at the module's base.  Under
 * json_lock (both modes), so static.
 */
#define DOC_MODS 256
static struct doc_mod {
	const char *path;
	uintptr_t pc;
} doc_mods[DOC_MODS];
static unsigned ndoc_mods;

static void doc_mod_add(const char *path, uintptr_t pc)
{
	unsigned i;

	if (!path)
		return;
	for (i = 0; i < ndoc_mods; i++)
		if (doc_mods[i].path == path || !strcmp(doc_mods[i].path, path))
			return;
	if (ndoc_mods < DOC_MODS) {
		doc_mods[ndoc_mods].path = path;
		doc_mods[ndoc_mods++].pc = pc;
	}
}

static void json_module(struct rc_out *o, const char *path,
			const struct map_ent *m, bool first)
{
	char hex[RC_BUILD_ID_MAX + 1];
	bool id = m && m->hdr_end > m->base &&
		  !rc_build_id((const void *)m->base, m->hdr_end - m->base,
			       hex);

	rc_out_puts(o, first ? "\n    {" : ",\n    {");
	json_key(o, "path");
	json_str(o, path);
	rc_out_puts(o, ", ");
	json_key(o, "build_id");
	json_str(o, id ? hex : NULL);
	rc_out_putc(o, '}');
}

/*
 * The frames' modules by the names the frames give them, then every
 * other module mapped now (so that a crash report, which has no leak
 * findings, has them too), by its /proc/self/maps path.
 */
static void json_modules(struct rc_out *o)
{
	static bool covered[MAPS_MAX];
	unsigned i, j, n = 0;

	memset(covered, 0, sizeof(covered));
	rc_out_putc(o, '[');
	for (i = 0; i < ndoc_mods; i++) {
		const struct map_ent *m = map_of(&doc_maps, doc_mods[i].pc);

		for (j = 0; m && j < doc_maps.n; j++)
			if (doc_maps.e[j].path == m->path)
				covered[j] = true;
		json_module(o, doc_mods[i].path, m, !n++);
	}
	for (j = 0; j < doc_maps.n; j++) {
		if (covered[j] ||
		    (j && doc_maps.e[j - 1].path == doc_maps.e[j].path))
			continue;
		json_module(o, doc_maps.paths + doc_maps.e[j].path,
			    &doc_maps.e[j], !n++);
	}
	rc_out_puts(o, n ? "\n  ]" : "]");
}

/* ---- the document ----------------------------------------------------- */

/* One frame object, {"pc": ..., "line": N}, from fr. */
static void json_frame(struct rc_out *o, uintptr_t pc,
		       const struct rc_frame *fr)
{
	rc_out_putc(o, '{');
	json_key(o, "pc");
	json_hex(o, pc);
	rc_out_puts(o, ", ");
	json_key(o, "module");
	json_str(o, fr->module);
	rc_out_puts(o, ", ");
	json_key(o, "offset");
	json_hex(o, fr->offset);
	rc_out_puts(o, ", ");
	json_key(o, "function");
	json_str(o, fr->function);
	rc_out_puts(o, ", ");
	json_key(o, "file");
	json_str(o, fr->file);
	rc_out_puts(o, ", ");
	json_key(o, "line");
	rc_out_udec(o, fr->line);
	rc_out_putc(o, '}');
}

/*
 * The frame objects of one pc: its inline levels first (symbolize.h),
 * innermost first, each a frame of that pc, as rdmacheck-report writes
 * them; then the function that holds them.  One a line in "frames".
 */
static void json_pc_frames(struct rc_out *o, uintptr_t pc,
			   const struct rc_frame *fr)
{
	unsigned k;

	for (k = 0; k < fr->ninl; k++) {
		json_frame(o, pc, &fr->inl[k]);
		rc_out_puts(o, ",\n    ");
	}
	json_frame(o, pc, fr);
}

/*
 * Outside crash mode, each pc's frame objects are written once and then
 * copied: the symbolizer keeps a pc's names until exit, so the text stays
 * right from one document (snapshot) to the next.  Under json_lock, so
 * static.
 */
struct frame_text {
	uintptr_t pc;		/* 0: empty slot */
	struct rc_frame fr;
	char *text;
	size_t len;
};
static struct frame_text *ftext;
static size_t ftext_cap, ftext_used;

static size_t pc_slot(uintptr_t pc, size_t cap)
{
	return (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

/* The cached frame of pc, symbolized and written now if new; NULL
 * without memory. */
static const struct frame_text *frame_text(uintptr_t pc)
{
	struct frame_text *e;
	struct rc_out t;
	size_t k;

	if (!pc)
		return NULL;
	if (2 * (ftext_used + 1) > ftext_cap) {
		size_t cap = ftext_cap ? 2 * ftext_cap : 1024;
		struct frame_text *nt = calloc(cap, sizeof(*nt));

		if (!nt)
			return NULL;
		for (k = 0; k < ftext_cap; k++) {
			size_t j;

			if (!ftext[k].pc)
				continue;
			for (j = pc_slot(ftext[k].pc, cap); nt[j].pc;
			     j = (j + 1) & (cap - 1))
				;
			nt[j] = ftext[k];
		}
		free(ftext);
		ftext = nt;
		ftext_cap = cap;
	}
	for (k = pc_slot(pc, ftext_cap); ftext[k].pc;
	     k = (k + 1) & (ftext_cap - 1))
		if (ftext[k].pc == pc)
			return &ftext[k];
	e = &ftext[k];
	rc_symbolize(pc, &e->fr);
	rc_out_init_grow(&t);
	json_pc_frames(&t, pc, &e->fr);
	if (t.failed) {
		rc_out_free(&t);
		return NULL;
	}
	e->text = t.buf;
	e->len = t.len;
	e->pc = pc;
	ftext_used++;
	return e;
}

/* A pc's names outside crash mode: cached, or (without memory) now. */
static void frame_of(uintptr_t pc, struct rc_frame *fr)
{
	const struct frame_text *t = frame_text(pc);

	if (t)
		*fr = t->fr;
	else
		rc_symbolize(pc, fr);
}

/*
 * The document's frame table (format 2): the frame objects of each
 * distinct pc its stacks hold are written once, in the top-level
 * "frames", in the order the stacks first name them; a stack is the
 * array of their indices (a pc's 1 + ninl frames have consecutive ones).
 * 10^4 leak groups of 16 frames would otherwise repeat 32 MB of frames.
 *
 * pc -> first index is an open-addressing table, at most half full, and
 * the distinct pcs in index order, both in one mmap()ed block that is
 * doubled as pcs come: no malloc, so that the crash path has it too, and
 * memory for the distinct pcs only (a handful in 10^4 leak groups).
 * Under json_lock (both modes), so static.
 */
struct ft_slot {
	uintptr_t pc;		/* 0: empty */
	unsigned first, n;	/* its frames' indices: first .. first+n-1 */
};
static struct ft_slot *ft, ft_zero;	/* ft_zero: pc 0 (a stack may
					 * hold one) */
static size_t ft_cap;		/* slots; ft_pcs holds cap / 2 */
static uintptr_t *ft_pcs;	/* the distinct pcs, in index order */
static unsigned ft_npcs, ft_nframes;
static void *ft_map;
static size_t ft_map_len;

/* The stacks of f a document writes (stack_ref objects share f's). */
static unsigned finding_stacks(const struct rc_finding *f,
			       rc_stack_id ids[1 + 2 * RC_MAX_OBJS])
{
	unsigned i, n = 0, nobjs = f->nobjs < RC_MAX_OBJS ? f->nobjs :
				   RC_MAX_OBJS;

	ids[n++] = f->stack;
	for (i = 0; i < nobjs; i++) {
		const struct rc_objref *r = &f->objs[i];

		if (!(f->stack && r->created_stack == f->stack))
			ids[n++] = r->created_stack;
		if (r->destroyed)
			ids[n++] = r->destroyed_stack;
	}
	return n;
}

static struct ft_slot *ft_find(uintptr_t pc)
{
	size_t k;

	if (!pc)
		return &ft_zero;
	for (k = pc_slot(pc, ft_cap); ft[k].pc; k = (k + 1) & (ft_cap - 1))
		if (ft[k].pc == pc)
			return &ft[k];
	return &ft[k];
}

static void ft_free(void)
{
	if (ft_map)
		munmap(ft_map, ft_map_len);
	ft_map = NULL;
	ft = NULL;
	ft_cap = 0;
}

/* A table of cap slots with the pcs indexed so far; false without
 * memory (the old one stays). */
static bool ft_resize(size_t cap)
{
	size_t len = cap * sizeof(*ft) + cap / 2 * sizeof(*ft_pcs), i;
	struct ft_slot *old = ft;
	void *old_map = ft_map;
	size_t old_cap = ft_cap, old_len = ft_map_len;
	uintptr_t *old_pcs = ft_pcs;
	void *m;

	m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return false;
	ft_map = m;
	ft_map_len = len;
	ft = m;
	ft_cap = cap;
	ft_pcs = (uintptr_t *)(ft + cap);
	for (i = 0; i < old_cap; i++)
		if (old[i].pc)
			*ft_find(old[i].pc) = old[i];
	if (ft_npcs)
		memcpy(ft_pcs, old_pcs, ft_npcs * sizeof(*ft_pcs));
	if (old_map)
		munmap(old_map, old_len);
	return true;
}

/*
 * What one document holds: the findings kept, and the fatal-signal
 * finding of a crash report (extra, its stack the signal's slot), which
 * the collector never keeps.
 */
struct doc {
	const char *status;
	const struct rc_finding *fs;
	unsigned n;
	const struct rc_finding *extra;	/* may be NULL */
	int signal;			/* "crashed" or "killed": the signal */
	const struct rc_summary *s;
	unsigned dropped;
	bool halted, crash;
};

static const struct rc_finding *doc_finding(const struct doc *d, unsigned i)
{
	return i < d->n ? &d->fs[i] : d->extra;
}

static unsigned doc_nfindings(const struct doc *d)
{
	return d->n + (d->extra != NULL);
}

/* Index every pc of the findings' stacks; false without memory. */
static bool ft_build(const struct doc *d)
{
	rc_stack_id ids[1 + 2 * RC_MAX_OBJS];
	unsigned i, j, k, ns, n = doc_nfindings(d);
	bool crash = d->crash;

	ft_npcs = ft_nframes = 0;
	memset(&ft_zero, 0, sizeof(ft_zero));
	if (!ft_resize(256))
		return false;
	for (i = 0; i < n; i++) {
		ns = finding_stacks(doc_finding(d, i), ids);
		for (j = 0; j < ns; j++) {
			const uintptr_t *pcs;
			unsigned np = rc_stack_frames(ids[j], &pcs);

			for (k = 0; k < np; k++) {
				struct ft_slot *s = ft_find(pcs[k]);
				struct rc_frame fr;

				if (s->n)
					continue;
				if (pcs[k] && 2 * (ft_npcs + 1) > ft_cap) {
					if (!ft_resize(2 * ft_cap)) {
						ft_free();
						return false;
					}
					s = ft_find(pcs[k]);
				}
				s->pc = pcs[k];
				s->first = ft_nframes;
				s->n = 1;
				if (!crash) {
					frame_of(pcs[k], &fr);
					s->n += fr.ninl;
				}
				ft_nframes += s->n;
				ft_pcs[ft_npcs++] = pcs[k];
			}
		}
	}
	return true;
}

/* "frames": each indexed pc's frame objects, in index order. */
static void json_frames(struct rc_out *o, bool crash)
{
	unsigned i;

	rc_out_putc(o, '[');
	for (i = 0; i < ft_npcs; i++) {
		uintptr_t pc = ft_pcs[i];
		const struct frame_text *t = crash ? NULL : frame_text(pc);
		struct rc_frame fr;

		rc_out_puts(o, i ? ",\n    " : "\n    ");
		if (t) {
			doc_mod_add(t->fr.module, pc);
			rc_out_put(o, t->text, t->len);
			continue;
		}
		if (crash)
			crash_resolve(&doc_maps, pc, &fr);
		else
			rc_symbolize(pc, &fr);
		doc_mod_add(fr.module, pc);
		json_pc_frames(o, pc, &fr);
	}
	rc_out_puts(o, ft_npcs ? "\n  ]" : "]");
}

/* A stack: its frames' indices.  fp, when given, takes each frame's
 * symbolic parts (fingerprint.h), the inline levels included. */
static void json_stack(struct rc_out *o, rc_stack_id id, struct rc_fp *fp,
		       const char *sep)
{
	const uintptr_t *pcs;
	unsigned i, k, n = rc_stack_frames(id, &pcs);
	bool first = true;

	rc_out_putc(o, '[');
	for (i = 0; i < n; i++) {
		const struct ft_slot *s = ft_find(pcs[i]);
		struct rc_frame fr;

		for (k = 0; k < s->n; k++) {
			if (!first)
				rc_out_puts(o, sep);
			first = false;
			rc_out_udec(o, s->first + k);
		}
		if (!fp)
			continue;
		frame_of(pcs[i], &fr);
		for (k = 0; k < fr.ninl; k++)
			rc_fp_frame(fp, fr.inl[k].function, fr.inl[k].file,
				    fr.inl[k].module, fr.inl[k].offset);
		rc_fp_frame(fp, fr.function, fr.file, fr.module, fr.offset);
	}
	rc_out_putc(o, ']');
}

static void json_tid(struct rc_out *o, pid_t tid)
{
	if (tid)
		rc_out_dec(o, tid);
	else
		rc_out_puts(o, "null");
}

/*
 * Objects are most of a leak report (10^4 groups list 4 * 10^4 of them),
 * so each is one line without blanks ("key":value,...), and a note is
 * written only when there is one.
 */
static void json_ckey(struct rc_out *o, const char *key)
{
	rc_out_putc(o, '"');
	rc_out_puts(o, key);
	rc_out_puts(o, "\":");
}

static void json_where(struct rc_out *o, pid_t tid, rc_stack_id stack)
{
	rc_out_putc(o, '{');
	json_ckey(o, "thread");
	json_tid(o, tid);
	rc_out_putc(o, ',');
	json_ckey(o, "stack");
	json_stack(o, stack, NULL, ",");
	rc_out_putc(o, '}');
}

/*
 * An object of a grouped leak was created at the finding's own stack:
 * its "created" says so with "stack_ref": "finding" and an empty "stack"
 * rather than repeat the finding's.
 */
static void json_created_ref(struct rc_out *o, pid_t tid)
{
	rc_out_putc(o, '{');
	json_ckey(o, "thread");
	json_tid(o, tid);
	rc_out_puts(o, ",\"stack\":[],\"stack_ref\":\"finding\"}");
}

static void json_obj(struct rc_out *o, const struct rc_finding *f,
		     const struct rc_objref *r)
{
	rc_out_putc(o, '{');
	json_ckey(o, "kind");
	json_str(o, rc_kind_json(r->kind));
	rc_out_putc(o, ',');
	json_ckey(o, "handle");
	json_hex(o, r->handle);
	rc_out_putc(o, ',');
	if (r->kind == RC_K_RSOCKET) {
		/* the rsocket's number (its handle, in hex above) */
		json_ckey(o, "fd");
		rc_out_dec(o, (long long)r->handle);
		rc_out_putc(o, ',');
	}
	json_ckey(o, "created");
	if (f->stack && r->created_stack == f->stack)
		json_created_ref(o, r->created_tid);
	else
		json_where(o, r->created_tid, r->created_stack);
	rc_out_putc(o, ',');
	json_ckey(o, "destroyed");
	if (r->destroyed)
		json_where(o, r->destroyed_tid, r->destroyed_stack);
	else
		rc_out_puts(o, "null");
	if (r->note[0]) {
		rc_out_putc(o, ',');
		json_ckey(o, "note");
		json_str(o, r->note);
	}
	rc_out_putc(o, '}');
}

static void json_finding(struct rc_out *o, const struct rc_finding *f,
			 bool crash)
{
	const struct rc_rule_info *ri = &rc_rules[f->rule];
	unsigned i, nobjs = f->nobjs < RC_MAX_OBJS ? f->nobjs : RC_MAX_OBJS;
	char hex[RC_FP_LEN + 1];
	struct rc_fp fp;

	rc_out_puts(o, "    {");
	json_key(o, "rule");
	json_str(o, ri->id);
	rc_out_puts(o, ", ");
	json_key(o, "severity");
	json_str(o, rc_severity_name(rc_finding_severity(f)));
	rc_out_puts(o, ", ");
	json_key(o, "call");
	json_str(o, f->call);
	rc_out_puts(o, ", ");
	json_key(o, "message");
	json_str(o, f->message);
	rc_out_puts(o, ", ");
	json_key(o, "count");
	rc_out_udec(o, f->count);
	rc_out_puts(o, ", ");
	json_key(o, "suppressed");
	rc_out_puts(o, f->suppressed ? "true" : "false");
	rc_out_puts(o, ", ");
	json_key(o, "thread");
	json_tid(o, f->tid);
	rc_out_puts(o, ",\n      ");
	json_key(o, "stack");
	rc_fp_init(&fp, ri->id, f->call);
	json_stack(o, f->stack, crash ? NULL : &fp, ", ");
	/* Crash mode has no names: rdmacheck-report computes it offline. */
	rc_out_puts(o, ", ");
	json_key(o, "fingerprint");
	if (crash) {
		rc_out_puts(o, "null");
	} else {
		rc_fp_hex(&fp, hex);
		json_str(o, hex);
	}
	rc_out_puts(o, ",\n      ");
	json_key(o, "objects");
	rc_out_putc(o, '[');
	for (i = 0; i < nobjs; i++) {
		rc_out_puts(o, i ? ",\n" : "\n");
		json_obj(o, f, &f->objs[i]);
	}
	rc_out_puts(o, "]");
	if (f->more_objs) {
		rc_out_puts(o, ", ");
		json_key(o, "more_objects");
		rc_out_udec(o, f->more_objs);
	}
	rc_out_putc(o, '}');
}

static void json_opt_BOOL(struct rc_out *o, bool v)
{
	rc_out_puts(o, v ? "true" : "false");
}

static void json_opt_INT(struct rc_out *o, int v)
{
	rc_out_dec(o, v);
}

static void json_opt_STR(struct rc_out *o, const char *v)
{
	json_str(o, v ? v : "");
}

static void json_opt_WORDS(struct rc_out *o, const char *v)
{
	json_opt_STR(o, v);
}

static void json_options(struct rc_out *o)
{
	const char *sep = "";

	rc_out_putc(o, '{');
#define RC_OPT(type, name, def, min, max, help) \
	rc_out_puts(o, sep); \
	json_key(o, #name); \
	json_opt_##type(o, rc_opt.name); \
	sep = ", ";
#include "core/options.def"
#undef RC_OPT
	rc_out_putc(o, '}');
}

static void json_argv(struct rc_out *o)
{
	const char *p = rc_coll.cmdline, *end = p + rc_coll.cmdline_len;

	rc_out_putc(o, '[');
	while (p && p < end) {
		/* Arguments end in NUL, except maybe a truncated last one. */
		size_t n = strnlen(p, end - p);

		if (p != rc_coll.cmdline)
			rc_out_puts(o, ", ");
		json_strn(o, p, n);
		p += n + 1;
	}
	rc_out_putc(o, ']');
}

/* RFC 3339, UTC, milliseconds; by arithmetic, since gmtime_r() may lock. */
static void json_time(struct rc_out *o, const struct timespec *ts)
{
	long long days = ts->tv_sec / 86400, era, z;
	unsigned sod = (unsigned)(ts->tv_sec % 86400), doe, yoe, doy, mp;
	unsigned ms = (unsigned)(ts->tv_nsec / 1000000), d, m, i;
	long long y;
	char buf[32];
	unsigned v[6];

	/* Days since 1970-01-01 to a proleptic Gregorian date, counting
	 * 400-year eras from 0000-03-01. */
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y = (long long)yoe + era * 400 + (m <= 2);
	v[0] = (unsigned)y;
	v[1] = m;
	v[2] = d;
	v[3] = sod / 3600;
	v[4] = sod / 60 % 60;
	v[5] = sod % 60;
	/* "YYYY-MM-DDTHH:MM:SS.mmmZ" */
	for (i = 0; i < 4; i++)
		buf[i] = (char)('0' + v[0] / (i == 0 ? 1000 : i == 1 ? 100 :
					     i == 2 ? 10 : 1) % 10);
	for (i = 1; i < 6; i++) {
		buf[4 + 3 * (i - 1)] = "--T::"[i - 1];
		buf[5 + 3 * (i - 1)] = (char)('0' + v[i] / 10 % 10);
		buf[6 + 3 * (i - 1)] = (char)('0' + v[i] % 10);
	}
	buf[19] = '.';
	buf[20] = (char)('0' + ms / 100);
	buf[21] = (char)('0' + ms / 10 % 10);
	buf[22] = (char)('0' + ms % 10);
	buf[23] = 'Z';
	rc_out_putc(o, '"');
	rc_out_put(o, buf, 24);
	rc_out_putc(o, '"');
}

static void json_doc(struct rc_out *o, const struct doc *d)
{
	const struct rc_summary *s = d->s;
	unsigned i, n = doc_nfindings(d);
	bool crash = d->crash;
	struct timespec now;
	struct utsname u;

	/* Fresh: modules may have come or gone since the last document. */
	maps_load(&doc_maps);
	ndoc_mods = 0;
	clock_gettime(CLOCK_REALTIME, &now);
	rc_out_puts(o, "{\n  \"tool\": \"rdmacheck\",\n  ");
	json_key(o, "format");
	rc_out_udec(o, RC_REPORT_FORMAT);
	rc_out_puts(o, ",\n  ");
	json_key(o, "version");
	json_str(o, PACKAGE_VERSION);
	rc_out_puts(o, ",\n  ");
	json_key(o, "pid");
	rc_out_dec(o, getpid());
	rc_out_puts(o, ",\n  ");
	json_key(o, "host");
	json_str(o, uname(&u) ? NULL : u.nodename);
	rc_out_puts(o, ",\n  ");
	json_key(o, "start_time");
	json_time(o, &rc_coll.start);
	rc_out_puts(o, ",\n  ");
	json_key(o, "end_time");
	json_time(o, &now);
	rc_out_puts(o, ",\n  ");
	json_key(o, "exe");
	json_str(o, rc_coll.exe[0] ? rc_coll.exe : NULL);
	rc_out_puts(o, ",\n  ");
	json_key(o, "argv");
	json_argv(o);
	rc_out_puts(o, ",\n  ");
	json_key(o, "status");
	json_str(o, d->status);
	if (d->signal) {
		rc_out_puts(o, ",\n  ");
		json_key(o, "signal");
		rc_out_dec(o, d->signal);
	}
	if (d->halted) {
		rc_out_puts(o, ",\n  ");
		json_key(o, "halted");
		rc_out_puts(o, "true");
	}
	rc_out_puts(o, ",\n  ");
	json_key(o, "unwinder");
	json_str(o, rc_stack_unwinder());
	if (rc_coll.lib_path[0]) {
		/* Which kind of librdmacm ran: see interpose.c. */
		rc_out_puts(o, ",\n  ");
		json_key(o, "librdmacm");
		rc_out_puts(o, "{");
		json_key(o, "path");
		json_str(o, rc_coll.lib_path);
		rc_out_puts(o, ", ");
		json_key(o, "plt_self_calls");
		rc_out_dec(o, rc_coll.lib_self_calls);
		rc_out_puts(o, "}");
	}
	rc_out_puts(o, ",\n  ");
	json_key(o, "symbolized");
	rc_out_puts(o, crash ? "false" : "true");
	rc_out_puts(o, ",\n  ");
	json_key(o, "options");
	json_options(o);
	rc_out_puts(o, ",\n  ");
	/* Before the findings: a reader can resolve their stacks as it
	 * streams them. */
	json_key(o, "frames");
	json_frames(o, crash);
	rc_out_puts(o, ",\n  ");
	json_key(o, "findings");
	rc_out_puts(o, "[");
	for (i = 0; i < n; i++) {
		rc_out_puts(o, i ? ",\n" : "\n");
		json_finding(o, doc_finding(d, i), crash);
	}
	rc_out_puts(o, n ? "\n  ],\n  " : "],\n  ");
	json_key(o, "modules");
	json_modules(o);
	rc_out_puts(o, ",\n  ");
	json_key(o, "findings_dropped");
	rc_out_udec(o, d->dropped);
	rc_out_puts(o, ",\n  ");
	json_key(o, "summary");
	rc_out_puts(o, "{\"errors\": ");
	rc_out_udec(o, s->errors);
	rc_out_puts(o, ", \"warnings\": ");
	rc_out_udec(o, s->warnings);
	rc_out_puts(o, ", \"leaks\": ");
	rc_out_udec(o, s->leaks);
	rc_out_puts(o, ", \"suppressed\": ");
	rc_out_udec(o, s->suppressed);
	rc_out_puts(o, "}\n}\n");
}

/* The json option's path, expanded; false when it is too long or empty.
 * No stdio: also used in crash mode. */
static bool json_path(char *path, size_t len)
{
	rc_options_expand_path(rc_opt.json, path, len);
	return path[0] && strlen(path) < len - 1;
}

static void json_fail(const char *what, bool crash)
{
	static const char msg[] = "rdmacheck: cannot write the JSON report\n";
	static bool told;

	/* One message, not one per snapshot. */
	if (__atomic_exchange_n(&told, true, __ATOMIC_RELAXED))
		return;
	if (!crash)
		rc_report_file_error("cannot write the JSON report to '%s': "
				     "%m; no JSON report", what);
	else if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		return;
}

void rc_report_json_check(void)
{
	char path[PATH_MAX];

	/* Say at the start, not at exit, that the report will be lost. */
	if (rc_opt.json && *rc_opt.json && json_path(path, sizeof(path)) &&
	    rc_report_file_check(path))
		json_fail(path, false);
}

/* Write the document where path leads (report_file.c). */
static void json_write_file(const char *path, struct rc_report_file *f,
			    const struct doc *d, char *buf, size_t cap)
{
	bool crash = d->crash;
	struct rc_out o;
	bool ok;
	int fd;

	if (!ft_build(d)) {
		json_fail(path, crash);
		return;
	}
	fd = rc_report_file_open(path, f);
	if (fd < 0) {
		ft_free();
		json_fail(path, crash);
		return;
	}
	if (!crash && f->kind == RC_FILE_RENAME)
		rc_report_file_clean(f->final);
	rc_out_init_fd(&o, buf, cap, fd);
	json_doc(&o, d);
	ft_free();
	ok = rc_out_write(&o, fd) && !o.failed;
	if (rc_report_file_close(fd, f, ok))
		json_fail(f->final, crash);
}

/*
 * Take lock from a signal handler: a thread writing a report (or counting
 * a finding) is waited for, a bounded time; when the crashing thread holds
 * it itself, nothing can be done.
 */
static bool crash_lock(pthread_mutex_t *lock, bool mine)
{
	struct timespec ts = { 0, 1000000 };
	/* By the clock: other signals cut the naps short. */
	uint64_t end = rc_now_ms() + 10000;

	while (!mine) {
		if (!pthread_mutex_trylock(lock))
			return true;
		if (rc_now_ms() >= end)
			break;
		nanosleep(&ts, NULL);
	}
	return false;
}

/*
 * From a signal handler: static buffers (the lock makes them ours).
 * extra: the fatal-signal finding, counted as an error; sig its signal.
 */
static void write_json_crash(const char *status,
			     const struct rc_finding *extra, int sig)
{
	static struct rc_report_file f;
	static char path[PATH_MAX], buf[16384];
	static struct rc_summary sum;
	struct doc d = { .status = status, .extra = extra, .signal = sig,
			 .s = &sum, .crash = true };
	pid_t self = rc_gettid();

	if (!crash_lock(&rc_coll.json_lock,
			__atomic_load_n(&rc_coll.json_owner, __ATOMIC_RELAXED) ==
			self))
		return;
	if (!crash_lock(&rc_coll.lock, false)) {
		pthread_mutex_unlock(&rc_coll.json_lock);
		return;
	}
	/* halt_on_error wrote the report before its abort(). */
	if (!rc_coll.halted && json_path(path, sizeof(path))) {
		sum = rc_coll.sum;
		sum.errors += extra != NULL;
		d.fs = rc_coll.findings;
		d.n = rc_coll.nfindings;
		d.dropped = rc_coll.dropped;
		json_write_file(path, &f, &d, buf, sizeof(buf));
		rc_coll.crash_written = true;
	}
	pthread_mutex_unlock(&rc_coll.lock);
	pthread_mutex_unlock(&rc_coll.json_lock);
}

static void write_json(const char *status)
{
	char path[PATH_MAX], small[4096];
	struct doc d = { .crash = false };
	struct rc_report_file f;
	struct rc_finding *fs;
	struct rc_summary s;
	unsigned n, dropped;
	int sig;
	char *buf;
	bool halted;

	if (!json_path(path, sizeof(path))) {
		rc_report_file_error("JSON report path too long");
		return;
	}
	pthread_mutex_lock(&rc_coll.json_lock);
	if (rc_coll.crash_written) {
		/* A snapshot must not replace the crash report while the
		 * crashing thread lets the signal end the process. */
		pthread_mutex_unlock(&rc_coll.json_lock);
		return;
	}
	__atomic_store_n(&rc_coll.json_owner, rc_gettid(), __ATOMIC_RELAXED);
	/* Copy, so symbolizing and writing run without the lock. */
	pthread_mutex_lock(&rc_coll.lock);
	n = rc_coll.nfindings;
	fs = n ? malloc(n * sizeof(*fs)) : NULL;
	if (fs)
		memcpy(fs, rc_coll.findings, n * sizeof(*fs));
	dropped = rc_coll.dropped + (fs ? 0 : n);
	if (!fs)
		n = 0;
	s = rc_coll.sum;
	halted = rc_coll.halted;
	sig = rc_coll.signal;
	pthread_mutex_unlock(&rc_coll.lock);

	d.status = status;
	d.fs = fs;
	d.n = n;
	d.s = &s;
	d.dropped = dropped;
	d.halted = halted;
	d.signal = !strcmp(status, "killed") ? sig : 0;
	buf = malloc(65536);
	if (buf)
		json_write_file(path, &f, &d, buf, 65536);
	else
		json_write_file(path, &f, &d, small, sizeof(small));
	__atomic_store_n(&rc_coll.json_owner, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&rc_coll.json_lock);
	free(buf);
	free(fs);
}

void rc_report_write_json(const char *status, bool crash_safe)
{
	if (!rc_opt.json || !*rc_opt.json)
		return;
	if (crash_safe)
		write_json_crash(status, NULL, 0);
	else
		write_json(status);
}

void rc_json_crash(const struct rc_finding *extra, int sig)
{
	if (rc_opt.json && *rc_opt.json)
		write_json_crash("crashed", extra, sig);
}

void rc_json_crash_withdraw(void)
{
	/* The next report may replace it: the process went on. */
	__atomic_store_n(&rc_coll.crash_written, false, __ATOMIC_RELAXED);
}
