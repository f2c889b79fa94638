/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * dwfl.c - symbolization with elfutils' libdw, for rdmacheck-report
 * (which links libdw: configure's HAVE_LIBDW) and for the shim (which
 * dlopen()s libdw.so.1 at report time, RC_DW_DLOPEN, so that its host
 * never sees libdw's symbols).  An offset in a module file becomes its
 * frames, innermost first, one per inline level as eu-addr2line -i shows
 * them, with C++ names demangled.  libdwfl's standard callbacks find
 * separate debug files by build id and .gnu_debuglink (and through
 * debuginfod when DEBUGINFOD_URLS is set), and read compressed (zlib,
 * zstd) sections.  Every libdw/libelf call goes through one table of
 * function pointers, described once in dw_api.def.  A pc's scopes come
 * from the ranges of its unit's children, kept per unit (libdw's
 * dwarf_getscopes() walks the whole unit for each).  Modules stay open
 * until rr_dwfl_close(); the callers serialise their calls.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/dwfl.h"

struct rc_dw_api {
#define RC_DW(ret, name, args) ret (*name) args;
#include "symbolize/dw_api.def"
#undef RC_DW
};

#ifdef RC_DW_DLOPEN
static struct rc_dw_api dw;
#else
static const struct rc_dw_api dw = {
#define RC_DW(ret, name, args) .name = name,
#include "symbolize/dw_api.def"
#undef RC_DW
};
#endif

static Dwfl_Callbacks callbacks;

/* One open module: a Dwfl of its own, as dwfl_report_offline() wants. */
/*
 * The address ranges of a compilation unit's children, in their order:
 * where the scopes of a pc start (scopes_of()).  Made on a unit's first
 * pc, kept for the others.
 */
struct dw_range {
	Dwarf_Addr lo, hi;
	Dwarf_Die die;
};

struct dw_cu {
	struct dw_cu *next;
	Dwarf_Off off;		/* the unit's DIE */
	bool whole;		/* false: libdw's dwarf_getscopes() */
	struct dw_range *r;
	size_t n;
};

struct dw_mod {
	struct dw_mod *next;
	char *path;
	Dwfl *dwfl;
	Dwfl_Module *mod;	/* NULL: the file could not be read */
	GElf_Addr low;
	bool dyn;
	struct dw_cu *cus;
};

static struct dw_mod *mods;

bool rr_dwfl_available(void)
{
	static int state;	/* 0 not tried, 1 usable, -1 not */

	if (state)
		return state > 0;
	state = -1;
#ifdef RC_DW_DLOPEN
	{
		/* RTLD_LOCAL: found by this handle only, never by the
		 * host's own lookups; kept loaded until exit. */
		void *h = dlopen("libdw.so.1", RTLD_LAZY | RTLD_LOCAL), *p;

		if (!h)
			return false;
#define RC_DW(ret, name, args)						\
		p = dlsym(h, #name);					\
		if (!p)							\
			return false;					\
		memcpy(&dw.name, &p, sizeof(p));
#include "symbolize/dw_api.def"
#undef RC_DW
	}
#endif
	callbacks.find_elf = dw.dwfl_build_id_find_elf;
	callbacks.find_debuginfo = dw.dwfl_standard_find_debuginfo;
	callbacks.section_address = dw.dwfl_offline_section_address;
	state = 1;
	return true;
}

/* __cxa_demangle from libstdc++, loaded (RTLD_LOCAL) when the first
 * mangled name is seen: a C++ host has it already. */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static char *demangle(const char *name)
{
	static demangle_fn fn;
	static bool looked;
	int status;
	char *d;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	if (!looked) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

		looked = true;
		if (h)
			fn = (demangle_fn)dlsym(h, "__cxa_demangle");
	}
	if (!fn)
		return NULL;
	d = fn(name, NULL, NULL, &status);
	if (status) {
		free(d);
		return NULL;
	}
	return d;
}

void rr_dwfl_close(void)
{
	struct dw_mod *m;

	while ((m = mods)) {
		mods = m->next;
		while (m->cus) {
			struct dw_cu *c = m->cus;

			m->cus = c->next;
			free(c->r);
			free(c);
		}
		if (m->dwfl)
			dw.dwfl_end(m->dwfl);
		free(m->path);
		free(m);
	}
}

static struct dw_mod *open_module(const char *path)
{
	struct dw_mod *m;
	GElf_Addr bias;
	GElf_Ehdr eh;
	Elf *elf;

	if (!rr_dwfl_available())
		return NULL;
	for (m = mods; m; m = m->next)
		if (!strcmp(m->path, path))
			return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->path = strdup(path);
	if (!m->path) {
		free(m);
		return NULL;
	}
	m->next = mods;
	mods = m;
	m->dwfl = dw.dwfl_begin(&callbacks);
	if (!m->dwfl)
		return m;
	m->mod = dw.dwfl_report_offline(m->dwfl, path, path, -1);
	if (dw.dwfl_report_end(m->dwfl, NULL, NULL) || !m->mod)
		return (m->mod = NULL), m;
	dw.dwfl_module_info(m->mod, NULL, &m->low, NULL, NULL, NULL, NULL,
			    NULL);
	elf = dw.dwfl_module_getelf(m->mod, &bias);
	m->dyn = elf && dw.gelf_getehdr(elf, &eh) && eh.e_type == ET_DYN;
	return m;
}

/* The name a DIE gives its function: linkage name demangled, else its
 * name; from the abstract origin for an inlined or out-of-line copy. */
static char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	Dwarf_Die origin;
	const char *n;
	char *d;

	n = dw.dwarf_formstring(dw.dwarf_attr_integrate(die,
			DW_AT_linkage_name, &at));
	if (!n)
		n = dw.dwarf_formstring(dw.dwarf_attr_integrate(die,
				DW_AT_MIPS_linkage_name, &at));
	if (n && (d = demangle(n)))
		return d;
	if (!n)
		n = dw.dwarf_diename(die);
	if (!n && dw.dwarf_attr(die, DW_AT_abstract_origin, &at) &&
	    dw.dwarf_formref_die(&at, &origin))
		return die_name(&origin);
	return n ? strdup(n) : NULL;
}

/* A file name as the built-in symbolizer gives it: a relative one joined
 * to the compilation directory. */
static char *join_dir(const char *dir, const char *file)
{
	char *p;

	if (!file)
		return NULL;
	/* DWARF 5 names the compilation directory as directory 0: libdw
	 * has joined it already, also when it is relative. */
	if (file[0] == '/' || !dir || !*dir ||
	    (!strncmp(file, dir, strlen(dir)) && file[strlen(dir)] == '/'))
		return strdup(file);
	p = malloc(strlen(dir) + strlen(file) + 2);
	if (p)
		strcat(strcat(strcpy(p, dir), "/"), file);
	return p;
}

static const char *comp_dir(Dwarf_Die *cu)
{
	Dwarf_Attribute at;

	return cu ? dw.dwarf_formstring(dw.dwarf_attr(cu, DW_AT_comp_dir,
						      &at)) : NULL;
}

/* DW_AT_call_file of an inlined subroutine, by the CU's file table. */
static const char *call_file(Dwarf_Die *die, Dwarf_Die *cu)
{
	Dwarf_Attribute at;
	Dwarf_Files *files;
	Dwarf_Word idx;
	size_t n;

	if (!dw.dwarf_attr(die, DW_AT_call_file, &at) ||
	    dw.dwarf_formudata(&at, &idx) ||
	    dw.dwarf_getsrcfiles(cu, &files, &n) || idx >= n)
		return NULL;
	return dw.dwarf_filesrc(files, idx, NULL, NULL);
}

static int call_line(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	Dwarf_Word l;

	if (!dw.dwarf_attr(die, DW_AT_call_line, &at) ||
	    dw.dwarf_formudata(&at, &l))
		return 0;
	return (int)l;
}

/*
 * dwarf_haspc() as dwarf_getscopes() uses it: 1 if a range of die holds
 * pc, 0 if none (or it has none), -1 on an error.
 */
static int die_has(Dwarf_Die *die, Dwarf_Addr pc)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	if (!dw.dwarf_hasattr(die, DW_AT_low_pc) &&
	    !dw.dwarf_hasattr(die, DW_AT_ranges))
		return 0;
	while ((off = dw.dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		if (pc >= lo && pc < hi)
			return 1;
	return off < 0 ? -1 : 0;
}

/* The tags whose children dwarf_getscopes() looks into. */
static bool may_hold_scopes(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit: case DW_TAG_module:
	case DW_TAG_lexical_block: case DW_TAG_with_stmt:
	case DW_TAG_catch_block: case DW_TAG_try_block:
	case DW_TAG_entry_point: case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram: case DW_TAG_namespace:
	case DW_TAG_class_type: case DW_TAG_structure_type:
		return true;
	default:
		return false;
	}
}

/* The ranges of cu's children, made once; NULL: not to be had. */
static struct dw_cu *cu_ranges(struct dw_mod *m, Dwarf_Die *cu)
{
	Dwarf_Off off = dw.dwarf_dieoffset(cu);
	struct dw_cu *c;
	Dwarf_Die kid;
	size_t cap = 0;
	int more;

	for (c = m->cus; c; c = c->next)
		if (c->off == off)
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->off = off;
	c->next = m->cus;
	m->cus = c;
	if (getenv("RDMACHECK_DWFL_GETSCOPES"))
		return c;		/* tests: libdw's own walk */
	for (more = dw.dwarf_child(cu, &kid); !more;
	     more = dw.dwarf_siblingof(&kid, &kid)) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t o = 0;

		/* An imported (dwz) unit's children count as the unit's
		 * own: libdw's walk knows them. */
		if (dw.dwarf_tag(&kid) == DW_TAG_imported_unit)
			return c;
		if (!dw.dwarf_hasattr(&kid, DW_AT_low_pc) &&
		    !dw.dwarf_hasattr(&kid, DW_AT_ranges))
			continue;
		while ((o = dw.dwarf_ranges(&kid, o, &base, &lo, &hi)) > 0) {
			if (c->n == cap) {
				struct dw_range *r;

				cap = cap ? 2 * cap : 64;
				r = realloc(c->r, cap * sizeof(*r));
				if (!r)
					return c;
				c->r = r;
			}
			c->r[c->n].lo = lo;
			c->r[c->n].hi = hi;
			c->r[c->n++].die = kid;
		}
		if (o < 0)
			return c;
	}
	c->whole = more > 0;
	return c;
}

#define DW_DEPTH 64

/*
 * The scopes that hold pc, outermost (a child of cu) first, as
 * dwarf_getscopes() finds them: the first child of each that holds pc,
 * looked into if dwarf_getscopes() would.  Without walking the whole
 * unit each time (a unit of a C program's headers has thousands of
 * children): its children's ranges are kept.  How many, 0 for none;
 * -1 when only libdw's walk can say.
 */
static int scopes_of(struct dw_mod *m, Dwarf_Die *cu, Dwarf_Addr pc,
		     Dwarf_Die *chain)
{
	struct dw_cu *c = cu_ranges(m, cu);
	Dwarf_Die kid;
	size_t i;
	int n = 0, more, has;

	if (!c || !c->whole)
		return -1;
	for (i = 0; i < c->n; i++)
		if (pc >= c->r[i].lo && pc < c->r[i].hi)
			break;
	if (i == c->n)
		return 0;
	/* The first child with a range that holds pc, by DIE order: ranges
	 * of one child are together, children in order. */
	chain[n++] = c->r[i].die;
	while (may_hold_scopes(dw.dwarf_tag(&chain[n - 1])) &&
	       dw.dwarf_haschildren(&chain[n - 1]) > 0) {
		for (more = dw.dwarf_child(&chain[n - 1], &kid); !more;
		     more = dw.dwarf_siblingof(&kid, &kid)) {
			has = die_has(&kid, pc);
			if (has < 0)
				return -1;
			if (has)
				break;
		}
		if (more < 0)
			return -1;
		if (more)
			break;		/* no child holds it */
		if (n == DW_DEPTH)
			return -1;
		chain[n++] = kid;
	}
	return n;
}

static bool is_function(Dwarf_Die *die)
{
	int tag = dw.dwarf_tag(die);

	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram;
}

int rr_dwfl_symbolize(const char *path, uintptr_t offset,
		      struct rr_sym *out, int max)
{
	Dwarf_Die chain[DW_DEPTH];
	int depth;
	Dwarf_Die *cu, *scopes = NULL;
	GElf_Addr addr, bias = 0;
	const char *file = NULL, *dir = NULL;
	Dwfl_Line *line;
	int n = 0, nscopes, i, lineno = 0;
	struct dw_mod *m;
	Dwfl_Module *mod;

	if (max < 1 || !offset)
		return -1;
	m = open_module(path);
	if (!m || !m->mod)
		return -1;
	mod = m->mod;
	/* A return address: look up the call, one byte before. */
	addr = (m->dyn ? m->low : 0) + offset - 1;
	line = dw.dwfl_module_getsrc(mod, addr);
	if (line) {
		file = dw.dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		dir = dw.dwfl_line_comp_dir(line);
	}
	cu = dw.dwfl_module_addrdie(mod, addr, &bias);
	if (!dir)
		dir = comp_dir(cu);
	depth = cu ? scopes_of(m, cu, addr - bias, chain) : 0;
	if (depth >= 0) {
		/* The innermost function or inlined copy, then each one's
		 * caller: the function or copy around it. */
		for (i = depth - 1; i >= 0 && !is_function(&chain[i]); i--)
			;
		while (i >= 0 && n < max) {
			Dwarf_Die *die = &chain[i];

			out[n].function = die_name(die);
			out[n].file = join_dir(dir, file);
			out[n].line = (unsigned)lineno;
			n++;
			if (dw.dwarf_tag(die) != DW_TAG_inlined_subroutine)
				break;
			file = call_file(die, cu);
			dir = comp_dir(cu);
			lineno = call_line(die);
			for (i--; i >= 0 && !is_function(&chain[i]); i--)
				;
		}
		nscopes = 0;
	} else {
		nscopes = dw.dwarf_getscopes(cu, addr - bias, &scopes);
	}
	/* The innermost scope that is a function or an inlined copy of
	 * one is a frame; its caller's position is its call_file:call_line,
	 * in the function or inlined copy that contains its concrete DIE
	 * (dwarf_getscopes_die: the scopes around a DIE, itself first). */
	for (i = 0; i < nscopes; i++) {
		int tag = dw.dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_inlined_subroutine ||
		    tag == DW_TAG_subprogram)
			break;
	}
	while (i < nscopes && n < max) {
		Dwarf_Die die = scopes[i], *around = NULL;
		int tag = dw.dwarf_tag(&die), na, j;

		out[n].function = die_name(&die);
		out[n].file = join_dir(dir, file);
		out[n].line = (unsigned)lineno;
		n++;
		if (tag != DW_TAG_inlined_subroutine)
			break;
		file = call_file(&die, cu);
		dir = comp_dir(cu);
		lineno = call_line(&die);
		na = dw.dwarf_getscopes_die(&die, &around);
		free(scopes);
		scopes = around;
		nscopes = na;
		for (j = 1; j < na; j++) {
			tag = dw.dwarf_tag(&around[j]);
			if (tag == DW_TAG_inlined_subroutine ||
			    tag == DW_TAG_subprogram)
				break;
		}
		i = j;
	}
	free(scopes);
	if (!n) {
		/* No DWARF for it: the symbol table. */
		const char *s = dw.dwfl_module_addrname(mod, addr);
		char *d = demangle(s);

		out[0].function = d ? d : s ? strdup(s) : NULL;
		out[0].file = join_dir(dir, file);
		out[0].line = (unsigned)lineno;
		n = 1;
	}
	return n;
}
