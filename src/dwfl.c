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
 * function pointers, described once in dw_api.def.  Modules stay open
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

#include "dwfl.h"

struct rc_dw_api {
#define RC_DW(ret, name, args) ret (*name) args;
#include "dw_api.def"
#undef RC_DW
};

#ifdef RC_DW_DLOPEN
static struct rc_dw_api dw;
#else
static const struct rc_dw_api dw = {
#define RC_DW(ret, name, args) .name = name,
#include "dw_api.def"
#undef RC_DW
};
#endif

static Dwfl_Callbacks callbacks;

/* One open module: a Dwfl of its own, as dwfl_report_offline() wants. */
struct dw_mod {
	struct dw_mod *next;
	char *path;
	Dwfl *dwfl;
	Dwfl_Module *mod;	/* NULL: the file could not be read */
	GElf_Addr low;
	bool dyn;
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
#include "dw_api.def"
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

/* 1: a SHF_COMPRESSED .debug_* section; 0: none; 2: no .debug_info. */
static int elf_compressed(Elf *elf)
{
	bool info = false, z = false;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstr;

	if (!elf || dw.elf_getshdrstrndx(elf, &shstr))
		return 2;
	while ((scn = dw.elf_nextscn(elf, scn))) {
		const char *n;

		if (!dw.gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = dw.elf_strptr(elf, shstr, sh.sh_name);
		if (!n || strncmp(n, ".debug_", 7))
			continue;
		info |= !strcmp(n, ".debug_info");
		z |= (sh.sh_flags & SHF_COMPRESSED) != 0;
	}
	return info ? z : 2;
}

int rr_dwfl_compressed(const char *path)
{
	struct dw_mod *m = open_module(path);
	const char *link, *file = NULL;
	char *dbg_name = NULL;
	GElf_Addr bias, low;
	GElf_Word crc = 0;
	void **user;
	Elf *elf, *dbg;
	int r, fd;

	if (!m || !m->mod)
		return -1;
	elf = dw.dwfl_module_getelf(m->mod, &bias);
	r = elf_compressed(elf);
	if (r != 2)
		return r;
	/* The separate debug file, as libdwfl will find it, but only its
	 * section headers are read here (dwfl_module_getdwarf would
	 * inflate). */
	dw.dwfl_module_info(m->mod, &user, &low, NULL, NULL, NULL, &file,
			    NULL);
	link = dw.dwelf_elf_gnu_debuglink(elf, &crc);
	fd = dw.dwfl_standard_find_debuginfo(m->mod, user, path, low, file,
					     link, crc, &dbg_name);
	free(dbg_name);
	if (fd < 0)
		return 0;
	dbg = dw.elf_begin(fd, ELF_C_READ_MMAP, NULL);
	r = elf_compressed(dbg);
	if (dbg)
		dw.elf_end(dbg);
	close(fd);
	return r == 1;
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

int rr_dwfl_symbolize(const char *path, uintptr_t offset,
		      struct rr_sym *out, int max)
{
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
	nscopes = cu ? dw.dwarf_getscopes(cu, addr - bias, &scopes) : 0;
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
