/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * interpose.c - the interposition layer: resolving the real functions
 * (dlvsym, lazily and thread-safely), telling library-internal calls from
 * user calls by return address, and the forwarders generated from
 * rdmacm_api.def for every function that needs no hand-written wrapper.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "shim/interpose.h"
#include "core/options.h"
#include "report/report.h"
#include "shim/call.h"
#include "shim/settle.h"

#include "shim/rc_newer.h"

const struct rc_fn_info rc_fn_info[RC_FN_COUNT] = {
#define RC_API(how, ret, name, ver, fail, params, args, effect) \
	[RC_FN_##name] = { #name, ver, effect, !RC_IN_BASE_##name },
#include "shim/rdmacm_api.def"
#undef RC_API
};

void *rc_real[RC_FN_COUNT];
int rc_verbosity;
RC_TLS int rc_busy;

/*
 * Executable ranges of the modules whose calls count as internal, each
 * with the module it belongs to (enum rc_module).
 */
#define RC_MAX_RANGES 32
static struct {
	uintptr_t lo, hi;
	unsigned mod;
} ranges[RC_MAX_RANGES];
static unsigned nranges;		/* published with release */
/* What all ranges span, widened before nranges publishes a new one: most
 * calls come from the program's own text, outside it. */
static uintptr_t span_lo = UINTPTR_MAX, span_hi;
static uintptr_t known_bases[8];	/* modules already added */
static unsigned nknown;
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;

struct ranges_arg {
	uintptr_t pc;
	unsigned mod;
};

static int add_ranges_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ranges_arg *a = arg;
	uintptr_t base = a->pc;
	unsigned n = nranges;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		/* Match the module by its load address or by containment. */
		if (info->dlpi_addr + ph->p_vaddr > base ||
		    info->dlpi_addr + ph->p_vaddr + ph->p_memsz <= base)
			continue;
		if (n < RC_MAX_RANGES) {
			ranges[n].lo = info->dlpi_addr + ph->p_vaddr;
			ranges[n].hi = ranges[n].lo + ph->p_memsz;
			ranges[n].mod = a->mod;
			if (ranges[n].lo < span_lo)
				__atomic_store_n(&span_lo, ranges[n].lo,
						 __ATOMIC_RELAXED);
			if (ranges[n].hi > span_hi)
				__atomic_store_n(&span_hi, ranges[n].hi,
						 __ATOMIC_RELAXED);
			n++;
		}
	}
	if (n != nranges) {
		__atomic_store_n(&nranges, n, __ATOMIC_RELEASE);
		/* rc_caller_internal() answers otherwise from now on. */
		rc_stack_skip_changed();
		return 1;
	}
	return 0;
}

/* Count the module holding addr as library code of module mod. */
static void add_module_of(const void *addr, enum rc_module mod)
{
	struct ranges_arg a = { (uintptr_t)addr, mod };
	Dl_info dli;
	uintptr_t base;
	unsigned i;

	if (!dladdr(addr, &dli) || !dli.dli_fbase)
		return;
	base = (uintptr_t)dli.dli_fbase;
	pthread_mutex_lock(&ranges_lock);
	for (i = 0; i < nknown; i++)
		if (known_bases[i] == base)
			goto out;
	if (nknown < RC_ARRAY_SIZE(known_bases))
		known_bases[nknown++] = base;
	dl_iterate_phdr(add_ranges_cb, &a);
out:
	pthread_mutex_unlock(&ranges_lock);
}

enum rc_module rc_caller_module(uintptr_t ra)
{
	unsigned i, n = __atomic_load_n(&nranges, __ATOMIC_ACQUIRE);

	if (ra < __atomic_load_n(&span_lo, __ATOMIC_RELAXED) ||
	    ra >= __atomic_load_n(&span_hi, __ATOMIC_RELAXED))
		return RC_MOD_USER;
	for (i = 0; i < n; i++)
		if (ra >= ranges[i].lo && ra < ranges[i].hi)
			return ranges[i].mod;
	return RC_MOD_USER;
}

bool rc_caller_internal(uintptr_t ra)
{
	return rc_caller_module(ra) != RC_MOD_USER;
}

/* The library a table entry belongs to, by its symbol version. */
static enum rc_module module_of_fn(const struct rc_fn_info *fi)
{
	if (!strncmp(fi->version, "RDMACM", 6))
		return RC_MOD_RDMACM;
	if (!strncmp(fi->version, "IBVERBS", 7))
		return RC_MOD_VERBS;
	return RC_MOD_USER;	/* libc: its calls are not ours */
}

void rc_interpose_init(void)
{
	unsigned i;

	add_module_of((void *)rc_interpose_init, RC_MOD_SELF);
	/* libc's functions may be called from a signal handler (close in a
	 * crash report): resolve them now, not on first use there. */
	for (i = 0; i < RC_FN_COUNT; i++)
		if (!strncmp(rc_fn_info[i].version, "GLIBC", 5))
			rc_real_fn((enum rc_fn)i);
}

/*
 * What kind of librdmacm is loaded: one whose calls to its own exports go
 * through the PLT (rdma-core's own build: the wrappers see them), or one
 * linked with -Bsymbolic-functions (Ubuntu's), whose internal calls never
 * reach us.  Counted from its relocations: JUMP_SLOT and GLOB_DAT entries
 * for rdma_* symbols the library defines itself.  The shim derives
 * ownership from call results either way; this is for the reader.
 */
static int lib_inspected;

struct inspect_arg {
	uintptr_t base;
	int count;
};

static uintptr_t dyn_addr(uintptr_t v, uintptr_t base)
{
	/* glibc relocates these entries in place; others may not. */
	return v < base ? v + base : v;
}

static int inspect_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct inspect_arg *a = arg;
	const ElfW(Dyn) *d = NULL;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	const ElfW(Rela) *rel[2] = { NULL, NULL };
	size_t relsz[2] = { 0, 0 }, i, j;
	int n;

	if (info->dlpi_addr != a->base)
		return 0;
	for (n = 0; n < info->dlpi_phnum; n++)
		if (info->dlpi_phdr[n].p_type == PT_DYNAMIC)
			d = (const void *)(info->dlpi_addr +
					   info->dlpi_phdr[n].p_vaddr);
	for (; d && d->d_tag != DT_NULL; d++) {
		uintptr_t v = dyn_addr(d->d_un.d_ptr, info->dlpi_addr);

		switch (d->d_tag) {
		case DT_SYMTAB:
			sym = (const void *)v;
			break;
		case DT_STRTAB:
			str = (const void *)v;
			break;
		case DT_JMPREL:
			rel[0] = (const void *)v;
			break;
		case DT_PLTRELSZ:
			relsz[0] = d->d_un.d_val;
			break;
		case DT_RELA:
			rel[1] = (const void *)v;
			break;
		case DT_RELASZ:
			relsz[1] = d->d_un.d_val;
			break;
		}
	}
	if (!sym || !str)
		return 1;
	a->count = 0;
	for (j = 0; j < 2; j++) {
		for (i = 0; rel[j] && i < relsz[j] / sizeof(ElfW(Rela)); i++) {
			unsigned type = ELF64_R_TYPE(rel[j][i].r_info);
			const ElfW(Sym) *s = &sym[ELF64_R_SYM(rel[j][i].r_info)];

			if ((type == R_X86_64_JUMP_SLOT ||
			     type == R_X86_64_GLOB_DAT) &&
			    s->st_shndx != SHN_UNDEF &&
			    !strncmp(str + s->st_name, "rdma_", 5))
				a->count++;
		}
	}
	return 1;
}

static void inspect_librdmacm(const void *fn)
{
	struct inspect_arg a = { 0, -1 };
	Dl_info dli;

	if (!dladdr(fn, &dli) || !dli.dli_fbase)
		return;
	/* A shared object's load base: what dl_iterate_phdr reports. */
	a.base = (uintptr_t)dli.dli_fbase;
	dl_iterate_phdr(inspect_cb, &a);
	if (a.count < 0)
		return;
	rc_report_set_librdmacm(dli.dli_fname, a.count);
	if (rc_verbosity >= 1)
		rc_report_note("librdmacm %s calls %s%d of its own exports "
			       "through the PLT%s", dli.dli_fname,
			       a.count ? "" : "none (", a.count,
			       a.count ? "; rdmacheck sees its internal calls"
			       : "): linked with -Bsymbolic-functions; "
			       "rdmacheck derives what the library owns from "
			       "the results of the program's calls");
}

void *rc_resolve(enum rc_fn fn)
{
	const struct rc_fn_info *fi = &rc_fn_info[fn];
	const char *soname;
	int err = errno;	/* the caller's, not the loader's */
	void *p, *h;

	/* After us in the search order comes our extension object, which
	 * defines the newer functions: ask the library for those. */
	if (fi->ext)
		p = NULL;
	else if (!strncmp(fi->version, "GLIBC_", 6))
		/*
		 * libc's functions (close, dup2, fcntl) may be interposed
		 * after us too (librspreload's, unversioned, which dlvsym
		 * skips): the next definition, as the program would call.
		 */
		p = dlsym(RTLD_NEXT, fi->name);
	else
		p = dlvsym(RTLD_NEXT, fi->name, fi->version);
	if (!p && module_of_fn(fi) != RC_MOD_USER) {
		/*
		 * A library dlopen()ed with RTLD_LOCAL is not in the global
		 * scope that RTLD_NEXT searches: ask for it by name, without
		 * loading it.
		 */
		soname = strncmp(fi->version, "IBVERBS", 7) ?
			 "librdmacm.so.1" : "libibverbs.so.1";
		h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			p = dlvsym(h, fi->name, fi->version);
			dlclose(h);
		}
	}
	if (p) {
		if (module_of_fn(fi) != RC_MOD_USER)
			add_module_of(p, module_of_fn(fi));
		__atomic_store_n(&rc_real[fn], p, __ATOMIC_RELEASE);
		if (!strncmp(fi->version, "RDMACM", 6) &&
		    !__atomic_exchange_n(&lib_inspected, 1, __ATOMIC_ACQ_REL))
			inspect_librdmacm(p);
	}
	/* Not cached when missing: the library may come later. */
	errno = err;
	return p;
}

void rc_trace_call(enum rc_fn fn, unsigned mod, const void *arg0)
{
	static const char *const by[] = {
		[RC_MOD_USER] = "", [RC_MOD_SELF] = "[rdmacheck] ",
		[RC_MOD_RDMACM] = "[librdmacm] ", [RC_MOD_VERBS] = "[libibverbs] ",
	};

	rc_report_note("%s%s%s%s", mod < RC_ARRAY_SIZE(by) ? by[mod] : "",
		       rc_fn_info[fn].name,
		       rc_fn_info[fn].effect[0] ? ": " : "",
		       rc_fn_info[fn].effect);
}

/* An extension object's code is ours too (classification, stacks). */
void rc_ext_register(const void *addr)
{
	add_module_of(addr, RC_MOD_SELF);
}

/* Pure forwarders: no stack, no lock, no registry. */
#define RC_GEN_PASS(ret, name, fail, params, args)			\
ret RC_NAME(name) RC_PARAMS(name, params)				\
{									\
	ret (*fn) params = rc_real_fn(RC_FN_##name);			\
									\
	if (RC_UNLIKELY(!fn)) {						\
		errno = ENOSYS;						\
		return fail;						\
	}								\
	if (RC_UNLIKELY(rc_verbosity >= 2)) {				\
		int err = errno;					\
									\
		rc_trace_call(RC_FN_##name, RC_MOD_USER, NULL);		\
		errno = err;						\
	}								\
	return fn args;							\
}

/*
 * The first argument must be a live cm id when the user calls; for CHECKP
 * the second (connection parameters or private data) must not belong to
 * an acked event.
 */
#define RC_GEN_CHECK_ARG(ret, name, fail, params, args, arg)		\
ret RC_NAME(name) RC_PARAMS(name, params)				\
{									\
	ret (*fn) params = rc_real_fn(RC_FN_##name);			\
	RC_CALL(c);							\
	ret r;								\
									\
	if (RC_UNLIKELY(!fn)) {						\
		errno = ENOSYS;						\
		return fail;						\
	}								\
	if (!rc_check_id_call(RC_FN_##name, id, arg, RC_RA(name), &c))	\
		return fail;						\
	r = RC_FWD(&c, fn args);					\
	rc_inside_end(&c);						\
	/* A synchronous id: what librdmacm keeps in it may change. */	\
	if (c.id_flags & RC_F_SYNC)					\
		rc_settle_id(&c, (struct rdma_cm_id *)id);		\
	return r;							\
}

#define RC_SECOND_(a, b, ...) b
#define RC_SECOND(args) RC_SECOND_ args

#define RC_GEN_CHECK(ret, name, fail, params, args)			\
	RC_GEN_CHECK_ARG(ret, name, fail, params, args, NULL)
#define RC_GEN_CHECKP(ret, name, fail, params, args)			\
	RC_GEN_CHECK_ARG(ret, name, fail, params, args, RC_SECOND(args))

#define RC_GEN_WRAP(ret, name, fail, params, args)
#define RC_GEN_WRAPV(ret, name, fail, params, args)
#define RC_GEN_OP(ret, name, fail, params, args)
/* In wrap_rsocket.c. */
#define RC_GEN_RSOCK(ret, name, fail, params, args)

#define RC_API(how, ret, name, ver, fail, params, args, effect) \
	RC_GEN_##how(ret, name, fail, params, args)
#include "shim/rdmacm_api.def"
#undef RC_API
