/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize.c - pc -> module, offset, function, file:line, at report time.
 *
 * Modules are found with dl_iterate_phdr().  Each module's ELF file is
 * mmap()ed read-only once and kept mapped until exit (names point into it).
 * Function names come from .symtab, else from the .symtab of the build-id
 * debug file (/usr/lib/debug/.build-id/xx/yyyy.debug), else from .dynsym:
 * scanned for a module's first pcs, sorted for more.  file:line comes
 * from a small .debug_line reader (DWARF 2-5), one unit at a time:
 * .debug_aranges names the unit of a pc, so the first report of a
 * process does not read all of libc's line tables.  Compressed sections
 * (SHF_COMPRESSED, zlib) are inflated with a dlopen()ed libz.so.1 when
 * it is there, .debug_line only as far as the units read need (or whole
 * by libdeflate.so.0, when it is there, for a unit far into it).  Every
 * read of file data is bounds-checked: a stripped, truncated or corrupt
 * file gives NULLs, never a crash.  One mutex serialises everything;
 * results are cached per pc.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"		/* _GNU_SOURCE: dl_iterate_phdr */
#elif !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/leb128.h"
#include "core/rdmacheck.h"
#include "symbolize/symbolize.h"

/* DWARF constants (no dependency on libdw's dwarf.h). */
enum {
	DW_FORM_block2 = 0x03, DW_FORM_block4 = 0x04, DW_FORM_data2 = 0x05,
	DW_FORM_data4 = 0x06, DW_FORM_data8 = 0x07, DW_FORM_string = 0x08,
	DW_FORM_block = 0x09, DW_FORM_block1 = 0x0a, DW_FORM_data1 = 0x0b,
	DW_FORM_sdata = 0x0d, DW_FORM_strp = 0x0e, DW_FORM_udata = 0x0f,
	DW_FORM_strx = 0x1a, DW_FORM_data16 = 0x1e, DW_FORM_line_strp = 0x1f,
	DW_FORM_strx1 = 0x25, DW_FORM_strx2 = 0x26, DW_FORM_strx3 = 0x27,
	DW_FORM_strx4 = 0x28,
	DW_LNCT_path = 1, DW_LNCT_directory_index = 2,
	DW_LNS_copy = 1, DW_LNS_advance_pc = 2, DW_LNS_advance_line = 3,
	DW_LNS_set_file = 4, DW_LNS_const_add_pc = 8,
	DW_LNS_fixed_advance_pc = 9,
	DW_LNE_end_sequence = 1, DW_LNE_set_address = 2,
};

#define MAX_MAPS	10	/* file, debug file, inflated sections */
#define NO_FILE		UINT32_MAX

struct span {
	const uint8_t *p;
	size_t size;
};

struct sym {
	uint64_t addr, size;
	const char *name;
	int rank;			/* prefer GLOBAL > WEAK > LOCAL */
	bool owned;			/* name is a malloc()ed copy */
};

struct oname {
	struct oname *next;
	char s[];
};

struct lrow {
	uint64_t addr;
	uint32_t file;			/* index in module files, or NO_FILE */
	uint32_t line;
};

struct lseq {
	uint64_t lo, hi;		/* [lo, hi) */
	size_t first, count;		/* rows */
};

struct arange {
	uint64_t lo, hi;		/* [lo, hi) */
	uint64_t unit;			/* its unit (load_aranges) */
};

struct lfile {
	const char *comp, *dir, *name;	/* comp used when dir is relative */
	char *path;			/* joined on first use */
};

struct module {
	struct module *next;
	uintptr_t base;			/* l_addr: pc - base = file vaddr */
	char *name;			/* dlpi_name as found ("" = exe) */
	char *path;
	struct span img, dbg;		/* the file, its debug file */
	bool syms_done, lines_done;
	/* The symbol table names come from, scanned for a module's first
	 * SCAN_LOOKUPS pcs, then sorted into syms. */
	const Elf64_Sym *stab;
	size_t nstab;
	struct span sstr;
	unsigned scans;
	struct oname *onames;		/* names copied by the scans */
	struct sym *syms;
	size_t nsyms;
	struct lrow *rows;
	size_t nrows, rows_cap;
	struct lseq *seqs;
	size_t nseqs, seqs_cap;
	struct lfile *files;
	size_t nfiles, files_cap;
	/*
	 * Line tables are read a unit at a time, when a pc needs one; a
	 * compressed .debug_line is inflated only as far as that unit
	 * (dlz: dl.size grows), .debug_str only if a unit names a string
	 * in it.
	 */
	struct span dl, line_str, str;	/* .debug_line and its strings */
	struct zsec *dlz;		/* NULL: dl is all there */
	const struct span *limg;	/* the file they are in */
	bool str_done;
	bool lines_all;			/* all read (or none can be) */
	struct arange *ar;		/* by lo once ar_sorted */
	size_t nar;
	bool ar_sorted;
	unsigned ar_scans;
	uint64_t nranks;		/* units the aranges number */
	uint64_t *units;		/* offsets of the .debug_line units */
	uint64_t *ufirst;		/* each one's first address, or 0 */
	uint8_t *unit_done;
	size_t nunits, units_cap, ufirst_cap, done_cap;
	size_t scan_off;		/* where the next unit header is */
	bool scan_end;			/* no more units after it */
	size_t units_read;
	struct span maps[MAX_MAPS];	/* what to munmap on free */
	unsigned nmaps;
};

struct cache_ent {
	uintptr_t pc;			/* 0: empty */
	struct rc_frame f;
};

/* symbolizer=auto|libdw: libdw, dlopen()ed at report time
 * (symbolize_dw.c, linked into the shim only); false: read here. */
extern bool rc_symbolize_dw(const char *path, uintptr_t offset, bool plain,
			    struct rc_frame *out) __attribute__((weak));

static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static struct module *modules;
static struct cache_ent *cache;
static size_t cache_cap, cache_used;
static char *exe_path;

/*
 * libz.so.1 is dlopen()ed (no build dependency), so its z_stream is
 * mirrored here: the layout of zlib's ABI 1 (zlib.h, unchanged since
 * 1.0), which inflateInit2_() checks by its size and version "1".
 */
struct zstream {
	const uint8_t *next_in;
	unsigned avail_in;
	unsigned long total_in;
	uint8_t *next_out;
	unsigned avail_out;
	unsigned long total_out;
	const char *msg;
	void *state;
	void *zalloc, *zfree, *opaque;
	int data_type;
	unsigned long adler, reserved;
};

enum { Z_OK = 0, Z_STREAM_END = 1, Z_NO_FLUSH = 0 };

static int (*p_inflate_init2)(struct zstream *z, int wbits,
			      const char *version, int size);
static int (*p_inflate)(struct zstream *z, int flush);
static int (*p_inflate_end)(struct zstream *z);
static bool zlib_tried;

/*
 * libdeflate.so.0, when it is there, inflates a whole section three
 * times as fast as zlib (libc6-dbg's .debug_line: 2.9 against 9 ms), but
 * only whole: what a pc far into a section wants.
 */
static void *(*p_ldf_alloc)(void);
static int (*p_ldf_inflate)(void *d, const void *in, size_t in_nbytes,
			    void *out, size_t out_avail, size_t *out_nbytes);
static void *ldf;
static bool ldf_tried;

/* A compressed section inflated as far as its readers have needed. */
struct zsec {
	struct zstream z;
	uint8_t *buf;			/* ch_size bytes, mmap()ed */
	size_t cap;			/* ch_size */
	const uint8_t *src;		/* the deflate data */
	size_t srclen;
	bool live;			/* z is initialised, not at its end */
	bool ldf_failed;		/* libdeflate refused it: not again */
};

/* ---------------------------------------------------------------- ELF */

static void module_add_map(struct module *m, const void *p, size_t size)
{
	if (m->nmaps < MAX_MAPS) {
		m->maps[m->nmaps].p = p;
		m->maps[m->nmaps].size = size;
		m->nmaps++;
	}
}

static bool map_file(struct module *m, const char *path, struct span *out)
{
	struct stat st;
	void *p;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return false;
	}
	p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return false;
	out->p = p;
	out->size = st.st_size;
	module_add_map(m, p, st.st_size);
	return true;
}

/* A usable 64-bit little-endian ELF header with a sane section table. */
static const Elf64_Ehdr *elf_hdr(const struct span *img)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img->p;

	if (!img->p || img->size < sizeof(*eh))
		return NULL;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return NULL;
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || !eh->e_shoff ||
	    eh->e_shoff > img->size ||
	    (eh->e_shoff & (sizeof(uint64_t) - 1)))
		return NULL;
	return eh;
}

static size_t elf_shnum(const struct span *img, const Elf64_Shdr **tab)
{
	const Elf64_Ehdr *eh = elf_hdr(img);
	const Elf64_Shdr *sh;
	size_t n, room;

	if (!eh)
		return 0;
	sh = (const Elf64_Shdr *)(img->p + eh->e_shoff);
	room = (img->size - eh->e_shoff) / sizeof(*sh);
	if (!room)
		return 0;
	n = eh->e_shnum ? eh->e_shnum : sh[0].sh_size;
	if (n > room)
		return 0;
	*tab = sh;
	return n;
}

/* The bytes of section s, if they lie in the file. */
static bool sec_span(const struct span *img, const Elf64_Shdr *s,
		     struct span *out)
{
	if (s->sh_type == SHT_NOBITS || s->sh_offset > img->size ||
	    s->sh_size > img->size - s->sh_offset)
		return false;
	out->p = img->p + s->sh_offset;
	out->size = s->sh_size;
	return true;
}

/* NUL-terminated string at off in a string section, or NULL. */
static const char *span_str(const struct span *sp, uint64_t off)
{
	if (!sp->p || off >= sp->size ||
	    !memchr(sp->p + off, 0, sp->size - off))
		return NULL;
	return (const char *)sp->p + off;
}

static const Elf64_Shdr *elf_find(const struct span *img, const char *name,
				  uint32_t type)
{
	const Elf64_Ehdr *eh = elf_hdr(img);
	const Elf64_Shdr *sh;
	struct span names;
	size_t n, i, stridx;

	n = elf_shnum(img, &sh);
	if (!n)
		return NULL;
	stridx = eh->e_shstrndx == SHN_XINDEX ? sh[0].sh_link : eh->e_shstrndx;
	if (stridx >= n || !sec_span(img, &sh[stridx], &names))
		return NULL;
	for (i = 1; i < n; i++) {
		const char *s;

		if (type != SHT_NULL) {
			if (sh[i].sh_type == type)
				return &sh[i];
			continue;
		}
		s = span_str(&names, sh[i].sh_name);
		if (s && !strcmp(s, name))
			return &sh[i];
	}
	return NULL;
}

static void load_zlib(void)
{
	void *h;

	if (zlib_tried)
		return;
	zlib_tried = true;
	h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	p_inflate_init2 = (int (*)(struct zstream *, int, const char *,
				   int))dlsym(h, "inflateInit2_");
	p_inflate = (int (*)(struct zstream *, int))dlsym(h, "inflate");
	p_inflate_end = (int (*)(struct zstream *))dlsym(h, "inflateEnd");
	if (!p_inflate || !p_inflate_end)
		p_inflate_init2 = NULL;
}

/*
 * Start inflating compressed section s (raw: its bytes).  The zlib
 * header is checked here and the deflate data after it inflated raw
 * (window bits -15): zlib's adler32 of the output would cost a sixth of
 * the inflation, and the readers bounds-check every byte anyway, so
 * corrupt data gives wrong or no names, never a crash.
 */
static struct zsec *zsec_open(const Elf64_Shdr *s, const struct span *raw)
{
	const Elf64_Chdr *ch = (const Elf64_Chdr *)raw->p;
	const uint8_t *d = raw->p + sizeof(*ch);
	struct zsec *zs;

	if (raw->size < sizeof(*ch) + 2 || (s->sh_offset & 7) ||
	    ch->ch_type != ELFCOMPRESS_ZLIB || !ch->ch_size ||
	    ch->ch_size > (1ull << 32) ||
	    raw->size - sizeof(*ch) - 2 > UINT32_MAX)
		return NULL;
	/* CMF, FLG: deflate, a window of at most 32 KiB, no dictionary. */
	if ((d[0] & 0x0f) != 8 || (d[0] >> 4) > 7 || (d[1] & 0x20) ||
	    ((unsigned)d[0] << 8 | d[1]) % 31)
		return NULL;
	load_zlib();
	if (!p_inflate_init2)
		return NULL;
	zs = calloc(1, sizeof(*zs));
	if (!zs)
		return NULL;
	zs->buf = mmap(NULL, ch->ch_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (zs->buf == MAP_FAILED) {
		free(zs);
		return NULL;
	}
	zs->cap = ch->ch_size;
	zs->src = d + 2;
	zs->srclen = raw->size - sizeof(*ch) - 2;
	zs->z.next_in = d + 2;
	zs->z.avail_in = (unsigned)(raw->size - sizeof(*ch) - 2);
	if (p_inflate_init2(&zs->z, -15, "1.2.13", (int)sizeof(zs->z))) {
		munmap(zs->buf, zs->cap);
		free(zs);
		return NULL;
	}
	zs->live = true;
	return zs;
}

/* Inflate until want bytes are out (or all, or an error); how many are. */
static size_t zsec_fill(struct zsec *zs, size_t want)
{
	if (want > zs->cap)
		want = zs->cap;
	while (zs->live && zs->z.total_out < want) {
		size_t room = want - zs->z.total_out;
		int ret;

		zs->z.next_out = zs->buf + zs->z.total_out;
		zs->z.avail_out = room > (1u << 30) ? 1u << 30 : room;
		ret = p_inflate(&zs->z, Z_NO_FLUSH);
		if (ret != Z_OK || !zs->z.avail_in) {
			/* The end, an error, or nothing more to read. */
			p_inflate_end(&zs->z);
			zs->live = false;
		}
	}
	return zs->z.total_out;
}

static bool load_libdeflate(void)
{
	void *h;

	if (!ldf_tried) {
		ldf_tried = true;
		h = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL);
		if (h) {
			p_ldf_alloc = (void *(*)(void))dlsym(h,
				"libdeflate_alloc_decompressor");
			p_ldf_inflate = (int (*)(void *, const void *, size_t,
						 void *, size_t, size_t *))
				dlsym(h, "libdeflate_deflate_decompress");
			if (p_ldf_alloc && p_ldf_inflate)
				ldf = p_ldf_alloc();
		}
	}
	/* Tests: the same results by zlib alone. */
	return ldf && !getenv("RDMACHECK_SYMBOLIZE_ZLIB_ONLY");
}

/*
 * All of zs by libdeflate, into a buffer of its own (*out) when zlib has
 * begun: what was read from zlib's stays where it is.  False if
 * libdeflate is not there or fails (zlib then goes on).
 */
static bool zsec_whole(struct zsec *zs, uint8_t **out, size_t *size)
{
	uint8_t *buf = zs->buf;
	size_t n = 0;

	if (zs->ldf_failed || !load_libdeflate())
		return false;
	if (zs->z.total_out) {
		buf = mmap(NULL, zs->cap, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			return false;
	}
	/* 0: LIBDEFLATE_SUCCESS */
	if (p_ldf_inflate(ldf, zs->src, zs->srclen, buf, zs->cap, &n)) {
		if (buf != zs->buf)
			munmap(buf, zs->cap);
		zs->ldf_failed = true;
		return false;
	}
	*out = buf;
	*size = n;
	return true;
}

static void zsec_free(struct zsec *zs)
{
	if (!zs)
		return;
	if (zs->live)
		p_inflate_end(&zs->z);
	free(zs);
}

/*
 * Named section contents, inflated if SHF_COMPRESSED (zlib only).  With
 * lazy, a compressed one is only started: *lazy gets its stream, out its
 * buffer with the size inflated so far (0); else it is inflated whole.
 */
static bool elf_section_z(struct module *m, const struct span *img,
			  const char *name, struct span *out,
			  struct zsec **lazy)
{
	const Elf64_Shdr *s = elf_find(img, name, SHT_NULL);
	struct span raw;
	struct zsec *zs;
	bool ok;

	if (lazy)
		*lazy = NULL;
	if (!s || !sec_span(img, s, &raw))
		return false;
	if (!(s->sh_flags & SHF_COMPRESSED)) {
		*out = raw;
		return true;
	}
	if (m->nmaps >= MAX_MAPS || !(zs = zsec_open(s, &raw)))
		return false;
	module_add_map(m, zs->buf, zs->cap);
	out->p = zs->buf;
	if (lazy) {
		out->size = 0;
		*lazy = zs;
		return true;
	}
	if (!zsec_whole(zs, &zs->buf, &out->size))
		out->size = zsec_fill(zs, zs->cap);
	/* Whole or nothing, as the readers of these sections expect. */
	ok = out->size == zs->cap;
	zsec_free(zs);
	return ok;
}

static bool elf_section(struct module *m, const struct span *img,
			const char *name, struct span *out)
{
	return elf_section_z(m, img, name, out, NULL);
}

/* .gnu_debuglink: <dir>/<name>, <dir>/.debug/<name>, /usr/lib/debug<dir>. */
static void find_debuglink(struct module *m)
{
	static const char *const pre[] = { "", "", "/usr/lib/debug" };
	static const char *const mid[] = { "/", "/.debug/", "/" };
	char real[PATH_MAX], dir[PATH_MAX], path[2 * PATH_MAX + 32], *slash;
	struct span link;
	const char *name;
	unsigned i;

	if (!elf_section(m, &m->img, ".gnu_debuglink", &link) ||
	    !(name = span_str(&link, 0)) || !*name || strchr(name, '/') ||
	    !realpath(m->path, real))
		return;
	strcpy(dir, real);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = 0;
	for (i = 0; i < RC_ARRAY_SIZE(pre); i++) {
		snprintf(path, sizeof(path), "%s%s%s%s", pre[i], dir, mid[i],
			 name);
		/* Never the module itself (a link named after the file). */
		if (strcmp(path, real) && map_file(m, path, &m->dbg))
			return;
	}
}

/* The debug file of a module (by build-id, else by debuglink). */
static void find_debug_file(struct module *m)
{
	const Elf64_Shdr *sh;
	size_t n, i;

	n = elf_shnum(&m->img, &sh);
	for (i = 1; i < n; i++) {
		struct span notes;
		size_t off = 0;

		if (sh[i].sh_type != SHT_NOTE || (sh[i].sh_offset & 3) ||
		    !sec_span(&m->img, &sh[i], &notes))
			continue;
		while (notes.size - off >= sizeof(Elf64_Nhdr)) {
			const Elf64_Nhdr *nh = (const void *)(notes.p + off);
			size_t nsz = (nh->n_namesz + 3) & ~3ull;
			size_t dsz = (nh->n_descsz + 3) & ~3ull;
			const uint8_t *desc;
			char path[PATH_MAX], *q;
			uint32_t k;

			off += sizeof(*nh);
			if (nsz > notes.size - off ||
			    dsz > notes.size - off - nsz)
				break;
			desc = notes.p + off + nsz;
			off += nsz + dsz;
			if (nh->n_type != NT_GNU_BUILD_ID ||
			    nh->n_namesz != 4 || memcmp(desc - nsz, "GNU", 4) ||
			    nh->n_descsz < 2 || nh->n_descsz > 64)
				continue;
			q = path + sprintf(path,
					   "/usr/lib/debug/.build-id/%02x/",
					   desc[0]);
			for (k = 1; k < nh->n_descsz; k++)
				q += sprintf(q, "%02x", desc[k]);
			strcpy(q, ".debug");
			if (map_file(m, path, &m->dbg))
				return;
		}
	}
	find_debuglink(m);
}

/* -------------------------------------------------------------- symbols */

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	return y->rank - x->rank;
}

/*
 * A sorted table costs libc6-dbg's 10^4 symbols 6.6 M instructions; a
 * scan of them for one pc about 0.1 M: the first pcs of a module (a
 * report has a handful per module) are looked up by scanning.
 */
#define SCAN_LOOKUPS	16

/* The symbol table of type in img, if it is a sane one. */
static bool symtab_find(const struct span *img, uint32_t type,
			struct span *tab, struct span *strs)
{
	const Elf64_Shdr *sh, *s = elf_find(img, NULL, type);
	size_t nsh = elf_shnum(img, &sh);

	return s && s->sh_entsize == sizeof(Elf64_Sym) && s->sh_link < nsh &&
	       !(s->sh_offset & 7) && sec_span(img, s, tab) &&
	       sec_span(img, &sh[s->sh_link], strs);
}

/* A function symbol with a name (*name), else NULL. */
static const char *sym_name(const Elf64_Sym *es, const struct span *strs)
{
	unsigned t = ELF64_ST_TYPE(es->st_info);
	const char *name;

	if ((t != STT_FUNC && t != STT_GNU_IFUNC) ||
	    es->st_shndx == SHN_UNDEF || !es->st_value)
		return NULL;
	name = span_str(strs, es->st_name);
	return name && *name ? name : NULL;
}

static int sym_rank(const Elf64_Sym *es)
{
	unsigned bind = ELF64_ST_BIND(es->st_info);

	return bind == STB_GLOBAL ? 2 : bind == STB_WEAK;
}

/* The first table with a function symbol: .symtab, the debug file's,
 * .dynsym. */
static void pick_symtab(struct module *m)
{
	const struct span *img[] = { &m->img, &m->dbg, &m->img };
	const uint32_t type[] = { SHT_SYMTAB, SHT_SYMTAB, SHT_DYNSYM };
	struct span tab, strs;
	unsigned t;
	size_t i, n;

	for (t = 0; t < RC_ARRAY_SIZE(type); t++) {
		if (!symtab_find(img[t], type[t], &tab, &strs))
			continue;
		n = tab.size / sizeof(Elf64_Sym);
		for (i = 0; i < n; i++) {
			if (sym_name((const Elf64_Sym *)tab.p + i, &strs)) {
				m->stab = (const Elf64_Sym *)tab.p;
				m->nstab = n;
				m->sstr = strs;
				return;
			}
		}
	}
}

static bool load_symtab(struct module *m)
{
	const Elf64_Sym *es = m->stab;
	size_t n = m->nstab, i, k;

	m->syms = calloc(n ? n : 1, sizeof(*m->syms));
	if (!m->syms)
		return false;
	for (i = k = 0; i < n; i++) {
		const char *name = sym_name(&es[i], &m->sstr);

		if (!name)
			continue;
		/* "__libc_start_main@@GLIBC_2.34": drop the version. */
		if (strchr(name, '@') && name[0] != '@') {
			name = strndup(name, strchr(name, '@') - name);
			if (!name)
				continue;
			m->syms[k].owned = true;
		}
		m->syms[k].addr = es[i].st_value;
		m->syms[k].size = es[i].st_size;
		m->syms[k].name = name;
		m->syms[k].rank = sym_rank(&es[i]);
		k++;
	}
	if (!k) {
		free(m->syms);
		m->syms = NULL;
		return false;
	}
	qsort(m->syms, k, sizeof(*m->syms), sym_cmp);
	/* Keep the preferred name of each address. */
	for (i = n = 1; i < k; i++) {
		if (m->syms[i].addr != m->syms[n - 1].addr)
			m->syms[n++] = m->syms[i];
		else if (m->syms[i].owned)
			free((char *)m->syms[i].name);
	}
	m->nsyms = n;
	return true;
}

static void load_syms(struct module *m)
{
	m->syms_done = true;
	pick_symtab(m);
	/* Tests: sorted from the first pc. */
	if (m->stab && getenv("RDMACHECK_SYMBOLIZE_ALL_LINES"))
		load_symtab(m);
}

/* Tests: every lookup by scanning (what the sorted table must match). */
static bool getenv_scan(void)
{
	return getenv("RDMACHECK_SYMBOLIZE_SCAN_SYMS") != NULL;
}

/* What lookup_sym() finds in the sorted table: the (at most) four
 * highest addresses at or below key, each with its preferred symbol. */
static const char *scan_sym(struct module *m, uint64_t key)
{
	struct sym best[4];
	unsigned nb = 0, b, k;
	struct oname *on;
	const char *name, *at;
	size_t i;

	for (i = 0; i < m->nstab; i++) {
		const Elf64_Sym *es = &m->stab[i];
		struct sym c;

		if (es->st_value > key ||
		    (nb == 4 && es->st_value < best[3].addr) ||
		    !(name = sym_name(es, &m->sstr)))
			continue;
		c.addr = es->st_value;
		c.size = es->st_size;
		c.name = name;
		c.rank = sym_rank(es);
		for (b = 0; b < nb && best[b].addr > c.addr; b++)
			;
		if (b < nb && best[b].addr == c.addr) {
			/* Sized first, then by binding, then the first. */
			if (sym_cmp(&c, &best[b]) < 0)
				best[b] = c;
			continue;
		}
		if (b == 4)
			continue;
		if (nb < 4)
			nb++;
		memmove(&best[b + 1], &best[b], (nb - 1 - b) * sizeof(*best));
		best[b] = c;
	}
	if (!nb)
		return NULL;
	name = NULL;
	if (!best[0].size) {
		name = best[0].name;	/* unsized: nearest preceding */
	} else {
		for (k = 0; k < nb && !name; k++)
			if (best[k].size && key - best[k].addr < best[k].size)
				name = best[k].name;
	}
	if (!name || !(at = strchr(name, '@')) || name[0] == '@')
		return name;
	/* Versioned: a copy without the version, kept with the module. */
	on = malloc(sizeof(*on) + (size_t)(at - name) + 1);
	if (!on)
		return NULL;
	memcpy(on->s, name, (size_t)(at - name));
	on->s[at - name] = 0;
	on->next = m->onames;
	m->onames = on;
	return on->s;
}

static const char *lookup_sym(struct module *m, uint64_t key)
{
	size_t lo = 0, hi, i, k;

	if (!m->syms) {
		if (!m->stab)
			return NULL;
		if (m->scans < SCAN_LOOKUPS || getenv_scan()) {
			m->scans++;
			return scan_sym(m, key);
		}
		if (!load_symtab(m)) {
			m->stab = NULL;
			return NULL;
		}
	}
	hi = m->nsyms;
	while (lo < hi) {		/* first symbol above key */
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].addr <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	i = lo - 1;
	if (!m->syms[i].size)
		return m->syms[i].name;	/* unsized: nearest preceding */
	/* Sized: it must contain key; a few earlier ones may enclose it. */
	for (k = 0; k < 4 && k <= i; k++) {
		const struct sym *s = &m->syms[i - k];

		if (s->size && key - s->addr < s->size)
			return s->name;
	}
	return NULL;
}

/* ----------------------------------------------------------- .debug_line */

struct rd {
	const uint8_t *p, *end;
	bool err;
};

static uint64_t rd_u(struct rd *r, unsigned n)
{
	uint64_t v;

	if ((size_t)(r->end - r->p) < n) {
		r->err = true;
		r->p = r->end;
		return 0;
	}
	v = rc_le_bytes(r->p, n);
	r->p += n;
	return v;
}

/*
 * A DWARF unit's initial length, 32- or 64-bit (*offsz: 4 or 8 byte
 * offsets in it); false for a reserved value or one past the section.
 */
static bool rd_unit_len(struct rd *r, uint64_t *len, unsigned *offsz)
{
	*len = rd_u(r, 4);
	*offsz = 4;
	if (*len == 0xffffffff) {
		*len = rd_u(r, 8);
		*offsz = 8;
	} else if (*len >= 0xfffffff0) {
		return false;
	}
	return !r->err && *len <= (uint64_t)(r->end - r->p);
}

static uint64_t rd_leb(struct rd *r, bool sign)
{
	uint64_t v;

	if (rc_leb128(&r->p, r->end, sign, &v))
		return v;
	r->err = true;
	r->p = r->end;
	return 0;
}

static uint64_t rd_uleb(struct rd *r)
{
	return rd_leb(r, false);
}

static int64_t rd_sleb(struct rd *r)
{
	return (int64_t)rd_leb(r, true);
}

static const char *rd_str(struct rd *r)
{
	const uint8_t *z = memchr(r->p, 0, r->end - r->p);
	const char *s = (const char *)r->p;

	if (!z) {
		r->err = true;
		r->p = r->end;
		return NULL;
	}
	r->p = z + 1;
	return s;
}

static void rd_skip(struct rd *r, uint64_t n)
{
	if (n > (uint64_t)(r->end - r->p)) {
		r->err = true;
		r->p = r->end;
		return;
	}
	r->p += n;
}

struct lctx {
	struct module *m;
	unsigned offsz;
};

/* .debug_str, inflated when a line table first names a string there. */
static const struct span *debug_str(struct module *m)
{
	if (!m->str_done) {
		m->str_done = true;
		if (!elf_section(m, m->limg, ".debug_str", &m->str))
			m->str.p = NULL;
	}
	return &m->str;
}

/* One DW_FORM value of a v5 entry; false for forms we cannot size. */
static bool rd_form(struct rd *r, const struct lctx *c, uint64_t form,
		    uint64_t *val, const char **s)
{
	*val = 0;
	*s = NULL;
	switch (form) {
	case DW_FORM_string:
		*s = rd_str(r);
		break;
	case DW_FORM_line_strp:
		*s = span_str(&c->m->line_str, rd_u(r, c->offsz));
		break;
	case DW_FORM_strp:
		*s = span_str(debug_str(c->m), rd_u(r, c->offsz));
		break;
	case DW_FORM_udata:
		*val = rd_uleb(r);
		break;
	case DW_FORM_sdata:
		*val = rd_sleb(r);
		break;
	case DW_FORM_data1:
	case DW_FORM_strx1:
		*val = rd_u(r, 1);
		break;
	case DW_FORM_data2:
	case DW_FORM_strx2:
		*val = rd_u(r, 2);
		break;
	case DW_FORM_strx3:
		*val = rd_u(r, 3);
		break;
	case DW_FORM_data4:
	case DW_FORM_strx4:
		*val = rd_u(r, 4);
		break;
	case DW_FORM_data8:
		*val = rd_u(r, 8);
		break;
	case DW_FORM_data16:
		rd_skip(r, 16);
		break;
	case DW_FORM_strx:
		rd_uleb(r);	/* needs .debug_str_offsets: name unknown */
		break;
	case DW_FORM_block:
		rd_skip(r, rd_uleb(r));
		break;
	case DW_FORM_block1:
		rd_skip(r, rd_u(r, 1));
		break;
	case DW_FORM_block2:
		rd_skip(r, rd_u(r, 2));
		break;
	case DW_FORM_block4:
		rd_skip(r, rd_u(r, 4));
		break;
	default:
		return false;
	}
	return !r->err;
}

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return true;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

static bool add_file(struct module *m, const char *comp, const char *dir,
		     const char *name)
{
	struct lfile *f;

	if (!grow((void **)&m->files, &m->files_cap, m->nfiles + 1,
		  sizeof(*m->files)))
		return false;
	f = &m->files[m->nfiles++];
	f->comp = comp;
	f->dir = dir;
	f->name = name ? name : "";
	f->path = NULL;
	return true;
}

/* v5 directory or file table; for dirs, *dirs gets the strings. */
static bool read_entries_v5(struct rd *r, const struct lctx *c, bool files,
			    const char ***dirs, uint64_t *ndirs)
{
	uint64_t fmt[2 * 16], count, i, v, val;
	unsigned nfmt = rd_u(r, 1), k;
	const char *s;

	if (nfmt > 16)
		return false;
	for (k = 0; k < 2 * nfmt; k++)
		fmt[k] = rd_uleb(r);
	count = rd_uleb(r);
	if (r->err || count > (uint64_t)(r->end - r->p))
		return false;
	if (!files) {
		*dirs = calloc(count ? count : 1, sizeof(**dirs));
		if (!*dirs)
			return false;
		*ndirs = count;
	}
	for (i = 0; i < count; i++) {
		const char *path = NULL;
		uint64_t dir = 0;

		for (k = 0; k < nfmt; k++) {
			if (!rd_form(r, c, fmt[2 * k + 1], &val, &s))
				return false;
			v = fmt[2 * k];
			if (v == DW_LNCT_path)
				path = s;
			else if (v == DW_LNCT_directory_index)
				dir = val;
		}
		/*
		 * Directory 0 is the compilation directory: relative to
		 * it are the others, not itself.
		 */
		if (!files) {
			(*dirs)[i] = path;
		} else if (!add_file(c->m, dir && *ndirs ? (*dirs)[0] : NULL,
				     dir < *ndirs ? (*dirs)[dir] : NULL,
				     path)) {
			return false;
		}
	}
	return true;
}

static bool add_row(struct module *m, uint64_t addr, uint32_t file,
		    uint64_t line)
{
	struct lrow *row;

	if (!grow((void **)&m->rows, &m->rows_cap, m->nrows + 1,
		  sizeof(*m->rows)))
		return false;
	row = &m->rows[m->nrows++];
	row->addr = addr;
	row->file = file;
	row->line = line <= UINT32_MAX ? (uint32_t)line : 0;
	return true;
}

/* Close a sequence: keep it unless it is empty or a discarded (0) one. */
static bool end_seq(struct module *m, size_t first, uint64_t end)
{
	struct lseq *q;

	if (m->nrows == first || !m->rows[first].addr ||
	    m->rows[first].addr >= end || end == UINT64_MAX) {
		m->nrows = first;
		return true;
	}
	if (!grow((void **)&m->seqs, &m->seqs_cap, m->nseqs + 1,
		  sizeof(*m->seqs)))
		return false;
	q = &m->seqs[m->nseqs++];
	q->lo = m->rows[first].addr;
	q->hi = end;
	q->first = first;
	q->count = m->nrows - first;
	return true;
}

/*
 * One line-number program unit at r; r->p is left at its end.  A bad unit
 * is skipped; false only when its length is unusable, which ends the walk.
 */
static bool parse_unit(struct lctx *c, struct rd *r)
{
	struct module *m = c->m;
	const uint8_t *unit_end, *prog;
	uint64_t len, hlen, addr = 0, file, fbase, nfiles0, ndirs = 0;
	const char **dirs = NULL;
	unsigned ver, asz = 8, min_len, line_range, opbase, i;
	uint8_t std_len[256];
	int line_base;
	uint64_t line;		/* wraps: advances are signed LEB128s */
	size_t first = m->nrows;
	struct rd u;

	if (!rd_unit_len(r, &len, &c->offsz))
		return false;
	unit_end = r->p + len;
	u.p = r->p;
	u.end = unit_end;
	u.err = false;
	r->p = unit_end;

	ver = rd_u(&u, 2);
	if (ver < 2 || ver > 5)
		return true;		/* skip unknown versions */
	if (ver >= 5) {
		asz = rd_u(&u, 1);
		rd_u(&u, 1);		/* segment selector size */
	}
	hlen = rd_u(&u, c->offsz);
	if (u.err || hlen > (uint64_t)(u.end - u.p))
		return true;
	prog = u.p + hlen;
	min_len = rd_u(&u, 1);
	if (ver >= 4)
		rd_u(&u, 1);		/* max ops per insn: VLIW only */
	rd_u(&u, 1);			/* default_is_stmt */
	line_base = (int8_t)rd_u(&u, 1);
	line_range = rd_u(&u, 1);
	opbase = rd_u(&u, 1);
	if (u.err || !line_range || !opbase)
		return true;
	memset(std_len, 0, sizeof(std_len));
	for (i = 1; i < opbase; i++)
		std_len[i] = rd_u(&u, 1);

	fbase = m->nfiles;
	if (ver >= 5) {
		if (!read_entries_v5(&u, c, false, &dirs, &ndirs) ||
		    !read_entries_v5(&u, c, true, &dirs, &ndirs))
			goto out;
		nfiles0 = 0;		/* v5 file numbers start at 0 */
	} else {
		size_t cap = 0;

		for (;;) {
			const char *d = rd_str(&u);

			if (!d || !*d)
				break;
			if (!grow((void **)&dirs, &cap, ndirs + 1,
				  sizeof(*dirs)))
				goto out;
			dirs[ndirs++] = d;
		}
		for (;;) {
			const char *name = rd_str(&u);
			uint64_t d;

			if (!name || !*name)
				break;
			d = rd_uleb(&u);
			rd_uleb(&u);	/* mtime */
			rd_uleb(&u);	/* length */
			if (!add_file(m, NULL,
				      d && d <= ndirs ? dirs[d - 1] : NULL,
				      name))
				goto out;
		}
		nfiles0 = 1;
	}
	if (u.err || prog > u.end)
		goto out;

	u.p = prog;
	file = 1;
	line = 1;
#define ROW_FILE() (file - nfiles0 < m->nfiles - fbase ? \
		    (uint32_t)(fbase + file - nfiles0) : NO_FILE)
	while (u.p < u.end && !u.err) {
		unsigned op = rd_u(&u, 1);

		if (op >= opbase) {
			unsigned adj = op - opbase;

			addr += (uint64_t)(adj / line_range) * min_len;
			line += (uint64_t)(line_base + (int)(adj % line_range));
			if (!add_row(m, addr, ROW_FILE(), line))
				goto out;
			continue;
		}
		switch (op) {
		case 0: {
			uint64_t elen = rd_uleb(&u);
			const uint8_t *next;
			unsigned sub;

			if (!elen || elen > (uint64_t)(u.end - u.p))
				goto out;
			next = u.p + elen;
			sub = rd_u(&u, 1);
			if (sub == DW_LNE_end_sequence) {
				if (!end_seq(m, first, addr))
					goto out;
				addr = 0;
				file = 1;
				line = 1;
				first = m->nrows;
			} else if (sub == DW_LNE_set_address) {
				unsigned n = ver >= 5 ? asz : elen - 1;

				addr = (n == 4 || n == 8) ? rd_u(&u, n) : 0;
			}
			u.p = next;
			break;
		}
		case DW_LNS_copy:
			if (!add_row(m, addr, ROW_FILE(), line))
				goto out;
			break;
		case DW_LNS_advance_pc:
			addr += rd_uleb(&u) * min_len;
			break;
		case DW_LNS_advance_line:
			line += (uint64_t)rd_sleb(&u);
			break;
		case DW_LNS_set_file:
			file = rd_uleb(&u);
			break;
		case DW_LNS_const_add_pc:
			addr += (uint64_t)((255 - opbase) / line_range) *
				min_len;
			break;
		case DW_LNS_fixed_advance_pc:
			addr += rd_u(&u, 2);
			break;
		default:
			/* Known no-operand ones and unknown: skip operands. */
			for (i = 0; i < std_len[op]; i++)
				rd_uleb(&u);
			break;
		}
	}
#undef ROW_FILE
out:
	m->nrows = first;		/* drop an unterminated sequence */
	free(dirs);
	return true;
}

static int seq_cmp(const void *a, const void *b)
{
	const struct lseq *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

static int ar_cmp(const void *a, const void *b)
{
	const struct arange *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int u64_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* The number of off among the n sorted offs (its index). */
static uint64_t rank_of(const uint64_t *offs, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (offs[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * .debug_aranges: address ranges -> their compilation unit's offset in
 * .debug_info.  Reading that unit's DW_AT_stmt_list would mean inflating
 * all of a compressed .debug_info, so units are numbered instead by the
 * order of those offsets, which is the order of their .debug_line units
 * as compilers and linkers write them.  A unit found so is trusted only
 * if its lines cover the pc (lines_for()).
 */
static void load_aranges(struct module *m, const struct span *img)
{
	struct span sec;
	uint64_t *offs;
	size_t cap = 0, i, n = 0;
	struct rd r;

	if (!elf_section(m, img, ".debug_aranges", &sec))
		return;
	r.p = sec.p;
	r.end = sec.p + sec.size;
	r.err = false;
	while (r.p < r.end && !r.err) {
		const uint8_t *set = r.p, *set_end;
		uint64_t len, info;
		unsigned offsz, ver, asz, seg;
		size_t hdr, tuple;

		if (!rd_unit_len(&r, &len, &offsz))
			break;
		set_end = r.p + len;
		ver = rd_u(&r, 2);
		info = rd_u(&r, offsz);
		asz = rd_u(&r, 1);
		seg = rd_u(&r, 1);
		if (r.err || ver != 2 || (asz != 4 && asz != 8) || seg) {
			r.p = set_end;
			r.err = false;
			continue;
		}
		/* Tuples start at a multiple of their size from the set. */
		tuple = 2 * asz;
		hdr = (size_t)(r.p - set);
		r.p = set + (hdr + tuple - 1) / tuple * tuple;
		while (r.p <= set_end && (size_t)(set_end - r.p) >= tuple) {
			uint64_t lo = rd_u(&r, asz), l = rd_u(&r, asz);

			if (!lo && !l)
				break;
			if (!lo || lo + l < lo)
				continue;	/* discarded, or nonsense */
			if (!grow((void **)&m->ar, &cap, n + 1,
				  sizeof(*m->ar)))
				goto fail;
			m->ar[n].lo = lo;
			m->ar[n].hi = lo + l;
			m->ar[n++].unit = info;
		}
		r.p = set_end;
	}
	if (!n)
		goto fail;
	m->nar = n;
	/* The sets come in the order of their units, most often: then
	 * their ranks are counted, not sorted out. */
	for (i = 1; i < n && m->ar[i - 1].unit <= m->ar[i].unit; i++)
		;
	if (i == n) {
		uint64_t prev = m->ar[0].unit, rank = 0;

		for (i = 0; i < n; i++) {
			rank += m->ar[i].unit != prev;
			prev = m->ar[i].unit;
			m->ar[i].unit = rank;
		}
		m->nranks = rank + 1;
		return;
	}
	offs = malloc(n * sizeof(*offs));
	if (!offs)
		goto fail;
	for (i = 0; i < n; i++)
		offs[i] = m->ar[i].unit;
	qsort(offs, n, sizeof(*offs), u64_cmp);
	for (cap = 0, i = 0; i < n; i++)	/* unique */
		if (!cap || offs[cap - 1] != offs[i])
			offs[cap++] = offs[i];
	for (i = 0; i < n; i++)
		m->ar[i].unit = rank_of(offs, cap, m->ar[i].unit);
	free(offs);
	m->nranks = cap;
	return;
fail:
	free(m->ar);
	m->ar = NULL;
	m->nar = 0;
}

/*
 * The range that claims key (the last one to start at or below it),
 * or NULL.  Sorting libc's 4500 ranges costs more than a scan of them
 * for each of a report's few pcs that a unit read so far does not
 * cover: they are sorted from the SCAN_LOOKUPS'th such pc.
 */
static const struct arange *find_arange(struct module *m, uint64_t key)
{
	const struct arange *a = NULL;
	size_t lo = 0, hi = m->nar, i;

	if (!m->ar_sorted && m->ar_scans < SCAN_LOOKUPS) {
		m->ar_scans++;
		/* As the (stable) sort would order them: ties, the last. */
		for (i = 0; i < m->nar; i++)
			if (m->ar[i].lo <= key && (!a || m->ar[i].lo >= a->lo))
				a = &m->ar[i];
		return a && key < a->hi ? a : NULL;
	}
	if (!m->ar_sorted) {
		qsort(m->ar, m->nar, sizeof(*m->ar), ar_cmp);
		m->ar_sorted = true;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ar[mid].lo <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && key < m->ar[lo - 1].hi ? &m->ar[lo - 1] : NULL;
}

/*
 * The address of the first DW_LNE_set_address in the unit whose contents
 * (after unit_length, offsz its size) are [p, end), or 0: the header is
 * skipped by its header_length, then a few opcodes are stepped over.
 */
static uint64_t unit_first_addr(const uint8_t *p, const uint8_t *end,
				unsigned offsz)
{
	struct rd u = { p, end, false };
	unsigned ver, asz = 8, opbase, n;
	const uint8_t *lens, *prog;
	uint64_t hlen;

	ver = rd_u(&u, 2);
	if (ver < 2 || ver > 5)
		return 0;
	if (ver >= 5) {
		asz = rd_u(&u, 1);
		rd_u(&u, 1);
	}
	hlen = rd_u(&u, offsz);
	if (u.err || hlen > (uint64_t)(u.end - u.p))
		return 0;
	prog = u.p + hlen;
	rd_skip(&u, ver >= 4 ? 5 : 4);	/* min_len .. line_range */
	opbase = rd_u(&u, 1);
	lens = u.p;
	if (u.err || !opbase || (size_t)(prog - lens) < opbase - 1u)
		return 0;
	u.p = prog;
	for (n = 0; n < 8 && u.p < u.end && !u.err; n++) {
		unsigned op = rd_u(&u, 1), i;

		if (op >= opbase)
			continue;
		if (op == 0) {
			uint64_t elen = rd_uleb(&u);
			const uint8_t *next = u.p + elen;

			if (!elen || elen > (uint64_t)(u.end - u.p))
				return 0;
			if (rd_u(&u, 1) == DW_LNE_set_address) {
				unsigned sz = ver >= 5 ? asz : elen - 1;

				return (sz == 4 || sz == 8) ? rd_u(&u, sz) : 0;
			}
			u.p = next;
			continue;
		}
		for (i = 0; i < lens[op - 1]; i++)
			rd_uleb(&u);
	}
	return 0;
}

/*
 * More of a compressed .debug_line: want bytes, or all; false if none.
 * Past an eighth of it, all of it at once when libdeflate can.
 */
static bool dl_more(struct module *m, size_t want)
{
	size_t had = m->dl.size, n;
	uint8_t *buf;

	if (!m->dlz)
		return false;
	if (want > m->dlz->cap / 8 && m->nmaps < MAX_MAPS &&
	    zsec_whole(m->dlz, &buf, &n)) {
		if (buf != m->dlz->buf)
			module_add_map(m, buf, m->dlz->cap);
		m->dl.p = buf;
		m->dl.size = n;
		zsec_free(m->dlz);
		m->dlz = NULL;
		return n > had;
	}
	m->dl.size = zsec_fill(m->dlz, want);
	if (!m->dlz->live) {
		zsec_free(m->dlz);
		m->dlz = NULL;
	}
	return m->dl.size > had;
}

/*
 * Where each .debug_line unit there is so far starts, and its first
 * address: from the headers and first opcodes only.  False when out of
 * memory (then lines_for() reads everything).
 */
static bool scan_units(struct module *m)
{
	struct rd r = { m->dl.p + m->scan_off, m->dl.p + m->dl.size, false };

	while (!m->scan_end && r.p < r.end) {
		uint64_t off = (uint64_t)(r.p - m->dl.p), len;
		unsigned offsz;

		if (!rd_unit_len(&r, &len, &offsz)) {
			/* Not all there yet, or the end of the walk. */
			m->scan_end = !m->dlz;
			break;
		}
		if (!grow((void **)&m->units, &m->units_cap, m->nunits + 1,
			  sizeof(*m->units)) ||
		    !grow((void **)&m->ufirst, &m->ufirst_cap, m->nunits + 1,
			  sizeof(*m->ufirst)) ||
		    !grow((void **)&m->unit_done, &m->done_cap,
			  m->nunits + 1, 1))
			return false;
		m->ufirst[m->nunits] = unit_first_addr(r.p, r.p + len, offsz);
		m->unit_done[m->nunits] = 0;
		m->units[m->nunits++] = off;
		r.p += len;
		m->scan_off = (size_t)(r.p - m->dl.p);
	}
	if (!m->dlz && r.p >= r.end)
		m->scan_end = true;
	return true;
}

static void read_all_units(struct module *m);

/*
 * The next piece of a compressed .debug_line (16 KiB, or a quarter of
 * what is out: a main thread's first frames are in libc's first 4 KiB,
 * zlib takes 0.3 M instructions for 16 KiB), and its units;
 * false at the end, or when out of memory: then all are read.
 */
static bool more_units(struct module *m)
{
	size_t n = m->nunits, step;

	for (;;) {
		if (!scan_units(m)) {
			read_all_units(m);
			return false;
		}
		if (m->nunits > n)
			return true;
		step = m->dl.size / 4 > (16u << 10) ? m->dl.size / 4 :
		       16u << 10;
		if (!dl_more(m, m->dl.size + step))
			return false;
	}
}

/* The number of units: so far, or as many again per byte to come. */
static size_t units_expected(const struct module *m)
{
	if (!m->dlz || !m->dl.size)
		return m->nunits;
	return (size_t)((double)m->nunits * m->dlz->cap / m->dl.size);
}

/* Read unit i (once), keeping the sequences sorted. */
static void read_unit(struct module *m, size_t i)
{
	struct lctx c = { .m = m };
	struct rd r = { m->dl.p + m->units[i], m->dl.p + m->dl.size, false };
	size_t nseqs = m->nseqs;

	if (m->unit_done[i])
		return;
	/* Each unit read re-sorts the sequences: past 64 units and an
	 * eighth of them, one pass over the rest is cheaper. */
	if (++m->units_read > 64 && m->units_read * 8 > units_expected(m)) {
		read_all_units(m);
		return;
	}
	m->unit_done[i] = 1;
	parse_unit(&c, &r);
	if (m->nseqs != nseqs)
		qsort(m->seqs, m->nseqs, sizeof(*m->seqs), seq_cmp);
}

/* Read every unit not read yet: without aranges, or when they mislead. */
static void read_all_units(struct module *m)
{
	struct lctx c = { .m = m };
	struct rd r;
	size_t i;

	m->lines_all = true;
	dl_more(m, SIZE_MAX);
	if (m->nar && !scan_units(m))
		m->scan_end = false;	/* out of memory: the rest in one */
	for (i = 0; i < m->nunits; i++) {
		if (m->unit_done[i])
			continue;
		m->unit_done[i] = 1;
		r.p = m->dl.p + m->units[i];
		r.end = m->dl.p + m->dl.size;
		r.err = false;
		parse_unit(&c, &r);
	}
	/* Past the units listed (all of them without aranges). */
	r.p = m->dl.p + m->scan_off;
	r.end = m->dl.p + m->dl.size;
	r.err = false;
	while (r.p < r.end && !r.err)
		if (!parse_unit(&c, &r))
			break;
	if (m->nseqs)
		qsort(m->seqs, m->nseqs, sizeof(*m->seqs), seq_cmp);
}

static void load_lines(struct module *m)
{
	const struct span *img = &m->img;

	m->lines_done = true;
	if (!elf_section_z(m, img, ".debug_line", &m->dl, &m->dlz)) {
		img = &m->dbg;
		if (!elf_section_z(m, img, ".debug_line", &m->dl, &m->dlz)) {
			m->lines_all = true;
			return;
		}
	}
	m->limg = img;
	if (!elf_section(m, img, ".debug_line_str", &m->line_str))
		m->line_str.p = NULL;
	if (getenv("RDMACHECK_SYMBOLIZE_ALL_LINES"))
		return;		/* tests: the whole-section reader */
	load_aranges(m, img);
}

static const char *file_path(struct lfile *f)
{
	size_t n;

	if (f->path)
		return f->path;
	if (f->name[0] == '/' || (!f->dir && !f->comp))
		return f->name;
	n = (f->comp ? strlen(f->comp) : 0) + (f->dir ? strlen(f->dir) : 0) +
	    strlen(f->name) + 3;
	f->path = malloc(n);
	if (!f->path)
		return f->name;
	if (!f->dir)
		snprintf(f->path, n, "%s/%s", f->comp, f->name);
	else if (f->dir[0] == '/' || !f->comp)
		snprintf(f->path, n, "%s/%s", f->dir, f->name);
	else
		snprintf(f->path, n, "%s/%s/%s", f->comp, f->dir, f->name);
	return f->path;
}

/* The row for key in the units read so far, or NULL. */
static const struct lrow *find_row(const struct module *m, uint64_t key)
{
	size_t lo = 0, hi = m->nseqs, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->seqs[mid].lo <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Overlaps are rare; look back at a few earlier sequences. */
	for (k = 0; k < 4 && k < lo; k++) {
		const struct lseq *q = &m->seqs[lo - 1 - k];
		const struct lrow *rows = m->rows + q->first;
		size_t a = 0, b = q->count;

		if (key >= q->hi)
			continue;
		while (a < b) {
			size_t mid = a + (b - a) / 2;

			if (rows[mid].addr <= key)
				a = mid + 1;
			else
				b = mid;
		}
		if (a)
			return &rows[a - 1];
	}
	return NULL;
}

/*
 * Make sure the unit that covers key is read: the one whose first
 * address is the last at or below key, most often, else the one
 * .debug_aranges names by number, or a neighbour (a unit without aranges
 * shifts the numbers), else all of them, as without aranges.  Of a
 * compressed .debug_line, only as much is inflated as the units known so
 * far need: up to the unit of that number, then more while key is not
 * found.  glibc's csu/ units, those of every stack's first frames, come
 * early in libc's.
 */
static void lines_for(struct module *m, uint64_t key)
{
	static const int near[] = { 0, -1, 1, -2, 2 };
	size_t i, seen = 0, best = SIZE_MAX;
	const struct arange *a;
	uint64_t j;

	if (m->lines_all || find_row(m, key))
		return;
	if (!m->nar) {
		read_all_units(m);
		return;
	}
	a = find_arange(m, key);
	if (!a) {
		read_all_units(m);	/* no unit claims key */
		return;
	}
	j = a->unit;
	/* Far into the section, by the unit's number: all at once. */
	if (m->dlz && j * 8 > m->nranks)
		dl_more(m, SIZE_MAX);
	while (m->nunits <= j + 2 && more_units(m))
		;
	while (!m->lines_all) {
		/* The best start among the units found since last time. */
		for (; seen < m->nunits; seen++)
			if (m->ufirst[seen] && m->ufirst[seen] <= key &&
			    (best == SIZE_MAX ||
			     m->ufirst[seen] >= m->ufirst[best]))
				best = seen;
		if (best != SIZE_MAX) {
			read_unit(m, best);
			if (m->lines_all || find_row(m, key))
				return;
		}
		for (i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
			uint64_t k = j + near[i];

			if (k >= m->nunits)
				continue;
			read_unit(m, k);
			if (m->lines_all || find_row(m, key))
				return;
		}
		if (!more_units(m))
			break;
	}
	if (!m->lines_all)
		read_all_units(m);
}

static void lookup_line(struct module *m, uint64_t key, struct rc_frame *out)
{
	const struct lrow *row;

	lines_for(m, key);
	row = find_row(m, key);
	if (!row || !row->line || row->file == NO_FILE ||
	    row->file >= m->nfiles)
		return;
	out->file = file_path(&m->files[row->file]);
	out->line = row->line;
}

/* -------------------------------------------------------------- modules */

static void module_free(struct module *m)
{
	size_t i;

	if (!m)
		return;
	while (m->onames) {
		struct oname *on = m->onames;

		m->onames = on->next;
		free(on);
	}
	for (i = 0; i < m->nfiles; i++)
		free(m->files[i].path);
	for (i = 0; i < m->nsyms; i++)
		if (m->syms[i].owned)
			free((char *)m->syms[i].name);
	for (i = 0; i < m->nmaps; i++)
		munmap((void *)m->maps[i].p, m->maps[i].size);
	zsec_free(m->dlz);
	free(m->files);
	free(m->ar);
	free(m->units);
	free(m->ufirst);
	free(m->unit_done);
	free(m->rows);
	free(m->seqs);
	free(m->syms);
	free(m->path);
	free(m->name);
	free(m);
}

/*
 * The module's DWARF (its debug file's, else its own) is there and not
 * compressed: what makes libdw cheap (symbolize_dw.c).  Section headers
 * only.
 */
static bool plain_dwarf(const struct module *m)
{
	const Elf64_Shdr *s = NULL;

	if (m->dbg.p)
		s = elf_find(&m->dbg, ".debug_info", SHT_NULL);
	if (!s)
		s = elf_find(&m->img, ".debug_info", SHT_NULL);
	return s && s->sh_type != SHT_NOBITS &&
	       !(s->sh_flags & SHF_COMPRESSED);
}

/* file: what to read (differs from path for the executable). */
static struct module *module_open(const char *name, const char *path,
				  const char *file, uintptr_t base)
{
	struct module *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->base = base;
	m->name = strdup(name);
	m->path = strdup(path);
	if (!m->name || !m->path) {
		module_free(m);
		return NULL;
	}
	if (map_file(m, file, &m->img))
		find_debug_file(m);
	return m;
}

struct find_mod {
	uintptr_t addr;
	uintptr_t base;
	char name[PATH_MAX];
	bool found;
};

static int find_mod_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_mod *fm = arg;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || fm->addr < lo ||
		    fm->addr - lo >= ph->p_memsz)
			continue;
		fm->base = info->dlpi_addr;
		snprintf(fm->name, sizeof(fm->name), "%s",
			 info->dlpi_name ? info->dlpi_name : "");
		fm->found = true;
		return 1;
	}
	return 0;
}

static const char *get_exe_path(void)
{
	char buf[PATH_MAX];
	ssize_t n;

	if (exe_path)
		return exe_path;
	n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	exe_path = strdup(buf);
	return exe_path;
}

static struct module *module_for(uintptr_t addr)
{
	struct find_mod fm = { .addr = addr };
	struct module *m;
	const char *path;

	if (!dl_iterate_phdr(find_mod_cb, &fm) || !fm.found)
		return NULL;
	for (m = modules; m; m = m->next)
		if (m->base == fm.base && !strcmp(m->name, fm.name))
			return m;
	/* The executable: /proc/self/exe still works if it was replaced. */
	path = fm.name[0] ? fm.name : get_exe_path();
	if (!path)
		return NULL;
	m = module_open(fm.name, path, fm.name[0] ? path : "/proc/self/exe",
			fm.base);
	if (!m)
		return NULL;
	m->next = modules;
	modules = m;
	return m;
}

/*
 * libc's start code, under main() and under a thread's start routine.
 * Its frames get no file:line: those lines are the C library's own
 * plumbing, the same in every stack, and libc's line table is compressed
 * with the units of these functions far into it, so that looking them up
 * made a process's first report inflate most of it (2-4 ms).  A finding's
 * fingerprint then no longer depends on whether libc6-dbg is installed.
 * Only in libc: a program may well call a function of its own
 * start_thread.
 */
static const char *const start_functions[] = {
	"__libc_start_main", "__libc_start_main_impl",
	"__libc_start_call_main", "start_thread", "clone", "__clone",
	"clone3", "__clone3",
};

bool rc_start_function(const char *module, const char *name)
{
	const char *base;
	size_t i;

	if (!module || !name)
		return false;
	base = strrchr(module, '/');
	base = base ? base + 1 : module;
	/* libc.so.6; libc-2.31.so before glibc 2.34 */
	if (strncmp(base, "libc.so", 7) && strncmp(base, "libc-", 5))
		return false;
	for (i = 0; i < RC_ARRAY_SIZE(start_functions); i++)
		if (!strcmp(name, start_functions[i]))
			return true;
	return false;
}

static void fill_frame(struct module *m, uintptr_t pc, struct rc_frame *out)
{
	uint64_t key = pc - 1 - m->base;

	out->module = m->path;
	out->offset = pc - m->base;
	if (!m->syms_done)
		load_syms(m);
	out->function = lookup_sym(m, key);
	if (rc_start_function(m->path, out->function))
		return;
	if (!m->lines_done)
		load_lines(m);
	lookup_line(m, key, out);
}

/* ---------------------------------------------------------------- cache */

static size_t cache_slot(uintptr_t pc, size_t cap)
{
	return (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static struct cache_ent *cache_find(uintptr_t pc)
{
	size_t i;

	if (!cache)
		return NULL;
	for (i = cache_slot(pc, cache_cap); cache[i].pc;
	     i = (i + 1) & (cache_cap - 1))
		if (cache[i].pc == pc)
			return &cache[i];
	return NULL;
}

static void cache_put(const struct rc_frame *f)
{
	struct cache_ent *nc;
	size_t i, j, ncap;

	if (2 * (cache_used + 1) > cache_cap) {
		ncap = cache_cap ? 2 * cache_cap : 256;
		nc = calloc(ncap, sizeof(*nc));
		if (!nc)
			return;
		for (i = 0; i < cache_cap; i++) {
			if (!cache[i].pc)
				continue;
			for (j = cache_slot(cache[i].pc, ncap); nc[j].pc;
			     j = (j + 1) & (ncap - 1))
				;
			nc[j] = cache[i];
		}
		free(cache);
		cache = nc;
		cache_cap = ncap;
	}
	for (i = cache_slot(f->pc, cache_cap); cache[i].pc;
	     i = (i + 1) & (cache_cap - 1))
		;
	cache[i].pc = f->pc;
	cache[i].f = *f;
	cache_used++;
}

void rc_symbolize(uintptr_t pc, struct rc_frame *out)
{
	struct cache_ent *ce;
	struct module *m;

	memset(out, 0, sizeof(*out));
	out->pc = pc;
	if (pc < 2)
		return;
	pthread_mutex_lock(&sym_lock);
	ce = cache_find(pc);
	if (ce) {
		*out = ce->f;
	} else {
		m = module_for(pc - 1);
		if (m && rc_symbolize_dw &&
		    rc_symbolize_dw(m->path, pc - m->base, plain_dwarf(m),
				    out)) {
			/* libdw's start code too (see start_functions) */
			if (rc_start_function(out->module, out->function)) {
				out->file = NULL;
				out->line = 0;
				out->inl = NULL;
				out->ninl = 0;
			}
		} else if (m) {
			fill_frame(m, pc, out);
		}
		cache_put(out);
	}
	pthread_mutex_unlock(&sym_lock);
}

int rc_symbolize_file(const char *path, uintptr_t offset,
		      struct rc_frame *out)
{
	static struct module *last;
	static struct stat last_st;
	struct stat st;
	int ret = -1;

	memset(out, 0, sizeof(*out));
	out->pc = offset;
	if (stat(path, &st))
		return -1;
	pthread_mutex_lock(&sym_lock);
	/* Keep the last file while it is the same, unchanged file. */
	if (!last || strcmp(last->path, path) || st.st_dev != last_st.st_dev ||
	    st.st_ino != last_st.st_ino || st.st_size != last_st.st_size ||
	    st.st_mtim.tv_sec != last_st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != last_st.st_mtim.tv_nsec) {
		module_free(last);
		last = module_open(path, path, path, 0);
		last_st = st;
	}
	if (last && last->img.p) {
		if (offset >= 1)
			fill_frame(last, offset, out);
		else
			out->module = last->path;
		ret = 0;
	}
	pthread_mutex_unlock(&sym_lock);
	return ret;
}

void rc_symbolize_atfork_child(void)
{
	pthread_mutex_init(&sym_lock, NULL);
}
