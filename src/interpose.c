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

#include "interpose.h"
#include "options.h"
#include "report.h"
#include "wrap.h"

/* Declared for the newer exports that 44.0's headers lack. */
int rdma_resolve_addrinfo(struct rdma_cm_id *id, const char *node,
			  const char *service,
			  const struct rdma_addrinfo *hints);
int rdma_query_addrinfo(struct rdma_cm_id *id, struct rdma_addrinfo **info);
int rdma_write_cm_event(struct rdma_cm_id *id, enum rdma_cm_event_type event,
			int status, uint64_t arg);
int repoll_create(int size);
int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event);
int repoll_wait(int epfd, struct epoll_event *events, int maxevents,
		int timeout);

const struct rc_fn_info rc_fn_info[RC_FN_COUNT] = {
#define RC_API(how, ret, name, ver, fail, params, args, effect) \
	[RC_FN_##name] = { #name, ver, effect },
#include "rdmacm_api.def"
#undef RC_API
};

void *rc_real[RC_FN_COUNT];
int rc_verbosity;
RC_TLS int rc_busy;

/* Executable ranges of the modules whose calls count as internal. */
#define RC_MAX_RANGES 32
static struct {
	uintptr_t lo, hi;
} ranges[RC_MAX_RANGES];
static unsigned nranges;		/* published with release */
static uintptr_t known_bases[8];	/* modules already added */
static unsigned nknown;
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;

static int add_ranges_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t base = *(uintptr_t *)arg;
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
			n++;
		}
	}
	if (n != nranges) {
		__atomic_store_n(&nranges, n, __ATOMIC_RELEASE);
		return 1;
	}
	return 0;
}

/* Count the module holding addr as library code. */
static void add_module_of(const void *addr)
{
	Dl_info dli;
	uintptr_t base, pc = (uintptr_t)addr;
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
	dl_iterate_phdr(add_ranges_cb, &pc);
out:
	pthread_mutex_unlock(&ranges_lock);
}

bool rc_caller_internal(uintptr_t ra)
{
	unsigned i, n = __atomic_load_n(&nranges, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (ra >= ranges[i].lo && ra < ranges[i].hi)
			return true;
	return false;
}

void rc_interpose_init(void)
{
	add_module_of((void *)rc_interpose_init);
}

void *rc_resolve(enum rc_fn fn)
{
	const struct rc_fn_info *fi = &rc_fn_info[fn];
	const char *soname;
	int err = errno;	/* the caller's, not the loader's */
	void *p, *h;

	p = dlvsym(RTLD_NEXT, fi->name, fi->version);
	if (!p) {
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
		add_module_of(p);
		__atomic_store_n(&rc_real[fn], p, __ATOMIC_RELEASE);
	}
	/* Not cached when missing: the library may come later. */
	errno = err;
	return p;
}

void rc_trace_call(enum rc_fn fn, bool internal, const void *arg0)
{
	rc_report_note("%s%s%s%s", internal ? "[librdmacm] " : "",
		       rc_fn_info[fn].name,
		       rc_fn_info[fn].effect[0] ? ": " : "",
		       rc_fn_info[fn].effect);
}

/* Pure forwarders: no stack, no lock, no registry. */
#define RC_GEN_PASS(ret, name, fail, params, args)			\
ret name params								\
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
		rc_trace_call(RC_FN_##name, false, NULL);		\
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
ret name params								\
{									\
	ret (*fn) params = rc_real_fn(RC_FN_##name);			\
	RC_CALL(c);							\
	ret r;								\
									\
	if (RC_UNLIKELY(!fn)) {						\
		errno = ENOSYS;						\
		return fail;						\
	}								\
	if (!rc_check_id_call(RC_FN_##name, id, arg,			\
			(uintptr_t)__builtin_return_address(0), &c))	\
		return fail;						\
	r = RC_FWD(&c, fn args);					\
	rc_inside_end(&c);						\
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

#define RC_API(how, ret, name, ver, fail, params, args, effect) \
	RC_GEN_##how(ret, name, fail, params, args)
#include "rdmacm_api.def"
#undef RC_API
