/*
 * report-dwfl.c - rdmacheck-report's symbolizer when elfutils' libdw is
 * there (configure: HAVE_LIBDW; the tool then links it): an offset in a
 * module file becomes its frames, innermost first, one per inline level
 * as eu-addr2line -i shows them, with C++ names demangled.  libdwfl's
 * standard callbacks find separate debug files by build id and
 * .gnu_debuglink (and through debuginfod when DEBUGINFOD_URLS is set),
 * and read compressed (zlib, zstd) sections.  One module file is kept
 * open at a time: callers group frames by module.
 */
#include "config.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "report-dwfl.h"

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static Dwfl *dwfl;
static Dwfl_Module *mod;
static char *mod_path;
static GElf_Addr mod_low;
static bool mod_dyn;

/* __cxa_demangle from the libstdc++ the tool may already have. */
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
	if (dwfl)
		dwfl_end(dwfl);
	dwfl = NULL;
	mod = NULL;
	free(mod_path);
	mod_path = NULL;
}

static bool open_module(const char *path)
{
	GElf_Addr bias;
	GElf_Ehdr eh;
	Elf *elf;

	if (mod_path && !strcmp(mod_path, path))
		return mod != NULL;
	rr_dwfl_close();
	mod_path = strdup(path);
	dwfl = dwfl_begin(&callbacks);
	if (!dwfl || !mod_path)
		return false;
	mod = dwfl_report_offline(dwfl, path, path, -1);
	if (dwfl_report_end(dwfl, NULL, NULL) || !mod)
		return (mod = NULL), false;
	dwfl_module_info(mod, NULL, &mod_low, NULL, NULL, NULL, NULL, NULL);
	elf = dwfl_module_getelf(mod, &bias);
	mod_dyn = elf && gelf_getehdr(elf, &eh) && eh.e_type == ET_DYN;
	return true;
}

/* The name a DIE gives its function: linkage name demangled, else its
 * name; from the abstract origin for an inlined or out-of-line copy. */
static char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	Dwarf_Die origin;
	const char *n;
	char *d;

	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name,
						  &at));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die,
				DW_AT_MIPS_linkage_name, &at));
	if (n && (d = demangle(n)))
		return d;
	if (!n)
		n = dwarf_diename(die);
	if (!n && dwarf_attr(die, DW_AT_abstract_origin, &at) &&
	    dwarf_formref_die(&at, &origin))
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

	return cu ? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &at)) :
		    NULL;
}

/* DW_AT_call_file of an inlined subroutine, by the CU's file table. */
static const char *call_file(Dwarf_Die *die, Dwarf_Die *cu)
{
	Dwarf_Attribute at;
	Dwarf_Files *files;
	Dwarf_Word idx;
	size_t n;

	if (!dwarf_attr(die, DW_AT_call_file, &at) ||
	    dwarf_formudata(&at, &idx) || dwarf_getsrcfiles(cu, &files, &n) ||
	    idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static int call_line(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	Dwarf_Word l;

	if (!dwarf_attr(die, DW_AT_call_line, &at) || dwarf_formudata(&at, &l))
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

	if (max < 1 || !offset || !open_module(path))
		return -1;
	/* A return address: look up the call, one byte before. */
	addr = (mod_dyn ? mod_low : 0) + offset - 1;
	line = dwfl_module_getsrc(mod, addr);
	if (line) {
		file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		dir = dwfl_line_comp_dir(line);
	}
	cu = dwfl_module_addrdie(mod, addr, &bias);
	if (!dir)
		dir = comp_dir(cu);
	nscopes = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	/* The innermost scope that is a function or an inlined copy of
	 * one is a frame; its caller's position is its call_file:call_line,
	 * in the function or inlined copy that contains its concrete DIE
	 * (dwarf_getscopes_die: the scopes around a DIE, itself first). */
	for (i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_inlined_subroutine ||
		    tag == DW_TAG_subprogram)
			break;
	}
	while (i < nscopes && n < max) {
		Dwarf_Die die = scopes[i], *around = NULL;
		int tag = dwarf_tag(&die), na, j;

		out[n].function = die_name(&die);
		out[n].file = join_dir(dir, file);
		out[n].line = (unsigned)lineno;
		n++;
		if (tag != DW_TAG_inlined_subroutine)
			break;
		file = call_file(&die, cu);
		dir = comp_dir(cu);
		lineno = call_line(&die);
		na = dwarf_getscopes_die(&die, &around);
		free(scopes);
		scopes = around;
		nscopes = na;
		for (j = 1; j < na; j++) {
			tag = dwarf_tag(&around[j]);
			if (tag == DW_TAG_inlined_subroutine ||
			    tag == DW_TAG_subprogram)
				break;
		}
		i = j;
	}
	free(scopes);
	if (!n) {
		/* No DWARF for it: the symbol table. */
		const char *s = dwfl_module_addrname(mod, addr);
		char *d = demangle(s);

		out[0].function = d ? d : s ? strdup(s) : NULL;
		out[0].file = join_dir(dir, file);
		out[0].line = (unsigned)lineno;
		n = 1;
	}
	return n;
}
