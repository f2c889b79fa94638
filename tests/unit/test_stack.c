/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_stack.c - unit tests of stack capture, the stack depot and the
 * symbolizer (src/unwind/stack.c, src/symbolize/symbolize.c), which are linked
 * into this program.  Build with -g -rdynamic; any -O level works (loops that
 * must keep one call site have volatile bounds, so they are not unrolled).
 *
 * stack.c drops the leading frames in its "self range" (in the shim:
 * librdmacheck.so's text).  Here that would be this whole program, so main()
 * sets the range to the section "rc_test_shim", which holds only
 * fake_rdma_call(), our stand-in for an intercepted function.
 *
 * "test_stack --bench" prints the cost of a capture instead of testing.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#elif !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/rdmacheck.h"
#include "unwind/stack.h"
#include "symbolize/symbolize.h"

#define NOINLINE __attribute__((noinline))
/* Keeps calls from being tail calls, so every frame stays visible. */
#define KEEP() __asm__ volatile("" ::: "memory")

extern char __start_rc_test_shim[], __stop_rc_test_shim[];

static uintptr_t default_lo, default_hi;
static unsigned line_b, line_a, line_main;	/* lines of the call sites */
static rc_stack_id main_id;			/* main -> chain_a -> chain_b */

/* The "intercepted function": its frame must never appear in a stack. */
__attribute__((section("rc_test_shim"))) NOINLINE rc_stack_id
fake_rdma_call(void)
{
	rc_stack_id id = rc_stack_capture();

	KEEP();
	return id;
}

/* The same as a wrapper calls it: from its own frame, for fast_unwind. */
__attribute__((section("rc_test_shim"))) NOINLINE rc_stack_id
fake_rdma_call_at(void)
{
	rc_stack_id id = rc_stack_capture_at(1, __builtin_frame_address(0));

	KEEP();
	return id;
}

NOINLINE rc_stack_id chain_b(void)
{
	rc_stack_id id;

	id = fake_rdma_call(); line_b = __LINE__;
	KEEP();
	return id;
}

NOINLINE rc_stack_id chain_a(void)
{
	rc_stack_id id;

	id = chain_b(); line_a = __LINE__;
	KEEP();
	return id;
}

static void use_fake_shim_range(void)
{
	rc_stack_set_self_range((uintptr_t)__start_rc_test_shim,
				(uintptr_t)__stop_rc_test_shim);
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a, b;

	if (!s)
		return false;
	a = strlen(s);
	b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

static const char *exe_path(void)
{
	static char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static const char *frame_fn(rc_stack_id id, unsigned i)
{
	struct rc_frame f;
	const uintptr_t *pcs;
	unsigned n = rc_stack_frames(id, &pcs);

	if (i >= n)
		return NULL;
	rc_symbolize(pcs[i], &f);
	return f.function;
}

START_TEST(test_dedup)
{
	volatile unsigned two = 2;	/* no unrolling into two sites */
	rc_stack_id ids[3];
	unsigned i, before;

	before = rc_stack_depot_size();
	for (i = 0; i < two; i++)
		ids[i] = chain_a();		/* same call site twice */
	ids[2] = chain_a();			/* another call site */
	ck_assert_uint_ne(ids[0], 0);
	ck_assert_uint_eq(ids[0], ids[1]);
	ck_assert_uint_ne(ids[0], ids[2]);
	ck_assert_uint_ne(ids[2], 0);
	ck_assert_uint_eq(rc_stack_depot_size(), before + 2);
}
END_TEST

START_TEST(test_intern)
{
	const uintptr_t pcs[3] = { 0x1000, 0x2000, 0x3000 };
	const uintptr_t *got;
	rc_stack_id a, b, c;

	a = rc_stack_intern(pcs, 3);
	b = rc_stack_intern(pcs, 3);
	c = rc_stack_intern(pcs, 2);
	ck_assert_uint_ne(a, 0);
	ck_assert_uint_eq(a, b);
	ck_assert_uint_ne(a, c);
	ck_assert_uint_eq(rc_stack_frames(a, &got), 3);
	ck_assert_mem_eq(got, pcs, sizeof(pcs));
	ck_assert_uint_eq(rc_stack_intern(pcs, 0), 0);
	/* A captured stack, interned again, is the same entry. */
	a = chain_a();
	ck_assert_uint_eq(rc_stack_intern(got, rc_stack_frames(a, &got)), a);
}
END_TEST

START_TEST(test_starts_at_caller)
{
	rc_stack_id id = chain_a();
	const uintptr_t *pcs;
	unsigned n, i;
	Dl_info di;

	n = rc_stack_frames(id, &pcs);
	ck_assert_uint_ge(n, 3);
	ck_assert(dladdr((void *)(pcs[0] - 1), &di));
	ck_assert_str_eq(di.dli_sname, "chain_b");
	ck_assert(dladdr((void *)(pcs[1] - 1), &di));
	ck_assert_str_eq(di.dli_sname, "chain_a");
	for (i = 0; i < n; i++) {
		const char *fn = frame_fn(id, i);

		ck_assert(!fn || strcmp(fn, "fake_rdma_call"));
		ck_assert(!fn || strcmp(fn, "rc_stack_capture"));
	}
}
END_TEST

NOINLINE static rc_stack_id recurse(unsigned k)
{
	rc_stack_id id = k ? recurse(k - 1) : fake_rdma_call();

	KEEP();
	return id;
}

/* Ten frames "inside the shim" before the capture. */
__attribute__((section("rc_test_shim"))) NOINLINE static rc_stack_id
shim_recurse(unsigned k)
{
	rc_stack_id id = k ? shim_recurse(k - 1) : rc_stack_capture();

	KEEP();
	return id;
}

NOINLINE static rc_stack_id deep_app(unsigned k)
{
	rc_stack_id id = k ? deep_app(k - 1) : shim_recurse(10);

	KEEP();
	return id;
}

START_TEST(test_depth)
{
	const uintptr_t *pcs;
	rc_stack_id id;

	rc_stack_set_depth(3);
	id = chain_a();
	ck_assert_uint_eq(rc_stack_frames(id, &pcs), 3);
	ck_assert_str_eq(frame_fn(id, 0), "chain_b");
	rc_stack_set_depth(0);			/* clamped to 1 */
	ck_assert_uint_eq(rc_stack_frames(chain_a(), &pcs), 1);
	rc_stack_set_depth(1000);		/* clamped to 64 */
	ck_assert_uint_eq(rc_stack_frames(recurse(80), &pcs), 64);
	rc_stack_set_depth(16);
	id = recurse(40);
	ck_assert_uint_eq(rc_stack_frames(id, &pcs), 16);
	ck_assert_str_eq(frame_fn(id, 0), "recurse");
	/* More own frames than the initial slack: still the full depth. */
	id = deep_app(30);
	ck_assert_uint_eq(rc_stack_frames(id, &pcs), 16);
	ck_assert_str_eq(frame_fn(id, 0), "deep_app");
}
END_TEST

/* Our own dladdr arithmetic: load base (l_addr) of the object of pc. */
static uintptr_t load_base(uintptr_t pc)
{
	struct link_map *lm = NULL;
	Dl_info di;

	if (!dladdr1((void *)pc, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return 0;
	return lm->l_addr;
}

static void check_addr2line(const struct rc_frame *f)
{
	char cmd[PATH_MAX + 64], fn[256], loc[PATH_MAX];
	FILE *p;

	if (system("command -v addr2line >/dev/null 2>&1"))
		return;
	snprintf(cmd, sizeof(cmd), "addr2line -f -e '%s' %#lx", f->module,
		 (unsigned long)f->offset - 1);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert(fgets(fn, sizeof(fn), p));
	ck_assert(fgets(loc, sizeof(loc), p));
	pclose(p);
	fn[strcspn(fn, "\n")] = 0;
	loc[strcspn(loc, " \n")] = 0;
	ck_assert_str_eq(fn, f->function);
	snprintf(cmd, sizeof(cmd), "%s:%u", f->file, f->line);
	ck_assert_str_eq(loc, cmd);
}

START_TEST(test_symbolize_exe)
{
	static const char *const want[] = { "chain_b", "chain_a", "main" };
	const unsigned *lines[] = { &line_b, &line_a, &line_main };
	const uintptr_t *pcs;
	struct rc_frame f, g;
	unsigned n, i;

	n = rc_stack_frames(main_id, &pcs);
	ck_assert_uint_ge(n, 3);
	for (i = 0; i < 3; i++) {
		rc_symbolize(pcs[i], &f);
		ck_assert_uint_eq(f.pc, pcs[i]);
		ck_assert_str_eq(f.function, want[i]);
		ck_assert_str_eq(f.module, exe_path());
		ck_assert_uint_eq(f.offset, pcs[i] - load_base(pcs[i]));
		ck_assert_msg(ends_with(f.file, "/test_stack.c"), "file %s",
			      f.file);
		ck_assert_uint_eq(f.line, *lines[i]);
		check_addr2line(&f);
		/* Cached: the same strings again. */
		rc_symbolize(pcs[i], &g);
		ck_assert_ptr_eq(f.function, g.function);
		ck_assert_ptr_eq(f.file, g.file);
		/* The file alone gives the same answer. */
		ck_assert_int_eq(rc_symbolize_file(f.module, f.offset, &g), 0);
		ck_assert_str_eq(g.function, want[i]);
		ck_assert_uint_eq(g.line, *lines[i]);
	}
}
END_TEST

static rc_stack_id cmp_id;

static int cmp_capture(const void *a, const void *b)
{
	cmp_id = fake_rdma_call();
	return *(const int *)a - *(const int *)b;
}

START_TEST(test_symbolize_libc)
{
	int v[8] = { 5, 3, 7, 1, 2, 8, 6, 4 };
	const uintptr_t *pcs;
	struct rc_frame f;
	unsigned n, i, libc = 0, named = 0;

	qsort(v, 8, sizeof(v[0]), cmp_capture);
	n = rc_stack_frames(cmp_id, &pcs);
	ck_assert_uint_ge(n, 3);
	ck_assert_str_eq(frame_fn(cmp_id, 0), "cmp_capture");
	for (i = 0; i < n; i++) {
		rc_symbolize(pcs[i], &f);
		if (!f.module || strcmp(base_name(f.module), "libc.so.6"))
			continue;
		libc++;
		ck_assert_uint_eq(f.offset, pcs[i] - load_base(pcs[i]));
		if (f.function && strstr(f.function, "qsort"))
			named++;	/* qsort/qsort_r: in .dynsym at least */
	}
	ck_assert_uint_ge(libc, 1);
	ck_assert_uint_ge(named, 1);
}
END_TEST

/*
 * Line tables read a unit at a time (by .debug_aranges), a compressed
 * .debug_line inflated only as far as needed, and a module's first pcs
 * named by scanning its symbol table give what reading all of
 * .debug_line and sorting the symbol table gives: first at the libc
 * frames of a main thread's and another thread's stack (__libc_start_main,
 * start_thread, clone3: named only, see test_start_frames_unlined)
 * and at functions of different units (so that each is found lazily: an
 * offset no unit claims makes the symbolizer read them all), then at
 * offsets spread over the file, named once by the first pcs' scans and
 * once with every pc scanned (RDMACHECK_SYMBOLIZE_SCAN_SYMS); compressed
 * sections inflated by libdeflate when it is there, and by zlib alone
 * (RDMACHECK_SYMBOLIZE_ZLIB_ONLY).  In the
 * executable's few units, and in libc's some 4000 when libc6-dbg is
 * installed.
 */
struct lazy_ref {
	uintptr_t off;
	char *function, *file;
	unsigned line;
};

static bool str_same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

/* Symbolize r[0..n) in path, fresh (by another name: a new module). */
static void lazy_pass(const char *path, struct lazy_ref *r, unsigned n,
		      bool ref, const char *how)
{
	static unsigned seq;
	char link[64];
	struct rc_frame f;
	unsigned i;

	snprintf(link, sizeof(link), "/tmp/rc-unit-lazy.%d.%u", (int)getpid(),
		 seq++);
	unlink(link);
	ck_assert_int_eq(symlink(path, link), 0);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(rc_symbolize_file(link, r[i].off, &f), 0);
		if (ref) {
			r[i].function = f.function ? strdup(f.function) : NULL;
			r[i].file = f.file ? strdup(f.file) : NULL;
			r[i].line = f.line;
			continue;
		}
		ck_assert_msg(f.line == r[i].line &&
			      str_same(f.file, r[i].file) &&
			      str_same(f.function, r[i].function),
			      "%s+0x%lx: %s %s:%u %s, %s %s:%u at once", path,
			      (unsigned long)r[i].off, f.function, f.file,
			      f.line, how, r[i].function, r[i].file,
			      r[i].line);
	}
	unlink(link);
}

static void compare_lazy_lines(const char *path, void *const *fns,
			       unsigned nfns, const uintptr_t *offs,
			       unsigned noffs, bool must)
{
	enum { SWEEP = 4000, MAX = SWEEP + 32 };
	static struct lazy_ref r[MAX];
	struct rc_frame f;
	struct stat st;
	unsigned n = 0, i, with_line = 0, first;
	Dl_info di;

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(dladdr(fns[0], &di));
	ck_assert_int_eq(rc_symbolize_file(path, (uintptr_t)fns[0] -
					   (uintptr_t)di.dli_fbase + 5, &f), 0);
	ck_assert_msg(f.line || !must, "%s: no line at its first function",
		      path);
	if (!f.line) {
		/* libc without libc6-dbg */
		printf("%s: no line tables; not compared\n", path);
		return;
	}
	for (i = 0; i < noffs && n < MAX; i++)
		r[n++].off = offs[i];
	for (i = 0; i < nfns && n < MAX; i++) {
		ck_assert(dladdr(fns[i], &di));
		/* A return address just past the function's start. */
		r[n++].off = (uintptr_t)fns[i] - (uintptr_t)di.dli_fbase + 5;
	}
	first = n;
	for (i = 0; i < SWEEP && n < MAX; i++)
		r[n++].off = 1 + (uintptr_t)st.st_size / SWEEP * i;
	/* The reference: every unit at once, the symbol table sorted. */
	unsetenv("RDMACHECK_SYMBOLIZE_SCAN_SYMS");
	setenv("RDMACHECK_SYMBOLIZE_ALL_LINES", "1", 1);
	lazy_pass(path, r, n, true, "");
	unsetenv("RDMACHECK_SYMBOLIZE_ALL_LINES");
	for (i = 0; i < n; i++) {
		with_line += r[i].line != 0;
		if (i < first)
			ck_assert_msg(r[i].function && (i < noffs || r[i].line),
				      "%s+0x%lx: no line or function", path,
				      (unsigned long)r[i].off);
	}
	lazy_pass(path, r, n, false, "lazily");
	/* The first pcs alone in a fresh module, as in a first report. */
	lazy_pass(path, r, first, false, "first");
	/* Compressed sections inflated by zlib alone, not libdeflate. */
	setenv("RDMACHECK_SYMBOLIZE_ZLIB_ONLY", "1", 1);
	lazy_pass(path, r, first, false, "first by zlib");
	lazy_pass(path, r, n, false, "lazily by zlib");
	unsetenv("RDMACHECK_SYMBOLIZE_ZLIB_ONLY");
	setenv("RDMACHECK_SYMBOLIZE_SCAN_SYMS", "1", 1);
	lazy_pass(path, r, n, false, "scanned");
	unsetenv("RDMACHECK_SYMBOLIZE_SCAN_SYMS");
	for (i = 0; i < n; i++) {
		free(r[i].function);
		free(r[i].file);
	}
	printf("%s: %u offsets, %u with a line, the same all ways\n", path,
	       n, with_line);
}

static rc_stack_id thread_id;

static void *thread_capture(void *arg)
{
	(void)arg;
	thread_id = fake_rdma_call();
	return NULL;
}

/* The offsets in the module of fn of the frames of id in it. */
static unsigned frames_in(rc_stack_id id, void *fn, uintptr_t *offs,
			  unsigned max)
{
	const uintptr_t *pcs;
	Dl_info di, dj;
	unsigned n, i, k = 0;

	ck_assert(dladdr(fn, &di));
	n = rc_stack_frames(id, &pcs);
	for (i = 0; i < n && k < max; i++)
		if (dladdr((void *)(pcs[i] - 1), &dj) &&
		    dj.dli_fbase == di.dli_fbase)
			offs[k++] = pcs[i] - (uintptr_t)di.dli_fbase;
	return k;
}

START_TEST(test_symbolize_lazy_units)
{
	/* Functions of this program's units, and of libc's. */
	void *const mine[] = {
		(void *)compare_lazy_lines, (void *)rc_symbolize,
		(void *)rc_stack_frames, (void *)fake_rdma_call,
		(void *)rc_symbolize_file,
	};
	void *const libc[] = {
		(void *)qsort, (void *)fopen, (void *)nanosleep,
		(void *)strtod, (void *)pthread_create, (void *)mmap,
		(void *)open, (void *)printf,
	};
	uintptr_t offs[16];
	unsigned n;
	pthread_t t;
	Dl_info di;

	ck_assert(dladdr((void *)qsort, &di) && di.dli_fname);
	ck_assert_int_eq(pthread_create(&t, NULL, thread_capture, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	/* This test is built with -g. */
	n = frames_in(main_id, (void *)fake_rdma_call, offs, 8);
	n += frames_in(thread_id, (void *)fake_rdma_call, offs + n, 8);
	compare_lazy_lines(exe_path(), mine, sizeof(mine) / sizeof(mine[0]),
			   offs, n, true);
	/* __libc_start_call_main, __libc_start_main; start_thread, clone3 */
	n = frames_in(main_id, (void *)qsort, offs, 8);
	ck_assert_uint_ge(n, 2);
	n += frames_in(thread_id, (void *)qsort, offs + n, 8);
	ck_assert_uint_ge(n, 4);
	compare_lazy_lines(di.dli_fname, libc, sizeof(libc) / sizeof(libc[0]),
			   offs, n, false);
}
END_TEST

/*
 * libc's start code (under main and under a thread's start routine) is
 * named without a file:line, however the module is read, while a libc
 * frame between the program's own (qsort's, calling back) keeps its
 * line when libc6-dbg gives one.  Without libc6-dbg only the names are
 * checked.
 */
static unsigned start_frames(rc_stack_id id, bool offline)
{
	const uintptr_t *pcs;
	struct rc_frame f;
	unsigned n = rc_stack_frames(id, &pcs), i, seen = 0;

	for (i = 0; i < n; i++) {
		rc_symbolize(pcs[i], &f);
		if (offline && f.module)
			ck_assert_int_eq(rc_symbolize_file(f.module, f.offset,
							   &f), 0);
		if (!rc_start_function(f.module, f.function))
			continue;
		seen++;
		ck_assert_msg(!f.file && !f.line, "%s: %s:%u", f.function,
			      f.file, f.line);
	}
	return seen;
}

START_TEST(test_start_frames_unlined)
{
	int v[4] = { 3, 1, 4, 2 };
	const uintptr_t *pcs;
	struct rc_frame f;
	unsigned n, i, with_line = 0, in_libc = 0;
	pthread_t t;
	int offline;

	ck_assert(rc_start_function("/lib/libc.so.6", "start_thread"));
	ck_assert(rc_start_function("libc.so.6", "__libc_start_call_main"));
	ck_assert(rc_start_function("/lib/libc-2.31.so", "__clone3"));
	ck_assert(!rc_start_function("/lib/libc.so.6", "start_threads"));
	ck_assert(!rc_start_function("/lib/libc.so.6", "main"));
	ck_assert(!rc_start_function("/lib/libc.so.6", NULL));
	/* The program's own function of that name keeps its line. */
	ck_assert(!rc_start_function("/usr/bin/prog", "start_thread"));
	ck_assert(!rc_start_function("/usr/lib/libcrypto.so.3", "clone"));
	ck_assert(!rc_start_function(NULL, "start_thread"));
	ck_assert_int_eq(pthread_create(&t, NULL, thread_capture, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	for (offline = 0; offline < 2; offline++) {
		/* __libc_start_call_main, __libc_start_main */
		ck_assert_uint_ge(start_frames(main_id, offline), 2);
		/* start_thread, clone3 */
		ck_assert_uint_ge(start_frames(thread_id, offline), 2);
	}
	/* Not a start frame: the program's thread function, and qsort's. */
	n = rc_stack_frames(thread_id, &pcs);
	for (i = 0; i < n; i++) {
		rc_symbolize(pcs[i], &f);
		if (f.function && !strcmp(f.function, "thread_capture"))
			break;
	}
	ck_assert_uint_lt(i, n);
	ck_assert(f.file && f.line);
	qsort(v, 4, sizeof(v[0]), cmp_capture);
	n = rc_stack_frames(cmp_id, &pcs);
	for (i = 0; i < n; i++) {
		rc_symbolize(pcs[i], &f);
		if (!f.module || strcmp(base_name(f.module), "libc.so.6") ||
		    rc_start_function(f.module, f.function))
			continue;
		in_libc++;
		with_line += f.file && f.line;
	}
	ck_assert_uint_ge(in_libc, 1);
	/* Whether libc has lines at all: those of qsort itself. */
	rc_symbolize((uintptr_t)qsort + 5, &f);
	if (f.line)
		ck_assert_uint_ge(with_line, 1);
	else
		printf("libc without libc6-dbg: its lines not checked\n");
}
END_TEST

START_TEST(test_garbage)
{
	uintptr_t bad[4] = { 0, 1, 0, UINTPTR_MAX };
	const uintptr_t *pcs;
	struct rc_frame f;
	void *page;
	unsigned i;

	page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(page, MAP_FAILED);
	munmap(page, 4096);
	bad[2] = (uintptr_t)page + 16;
	for (i = 0; i < RC_ARRAY_SIZE(bad); i++) {
		rc_symbolize(bad[i], &f);
		ck_assert_uint_eq(f.pc, bad[i]);
		ck_assert_ptr_null(f.module);
		ck_assert_ptr_null(f.function);
		ck_assert_ptr_null(f.file);
		ck_assert_uint_eq(f.line, 0);
	}
	ck_assert_uint_eq(rc_stack_frames(0, &pcs), 0);
	ck_assert_ptr_null(pcs);
	ck_assert_uint_eq(rc_stack_frames(0xfffffff0u, &pcs), 0);
	ck_assert_int_eq(rc_symbolize_file("/nonexistent/x", 16, &f), -1);
}
END_TEST

/* Corrupt copies of real files: the symbolizer must survive them all. */
static void fuzz_file(const char *src, unsigned rounds, uintptr_t off)
{
	char tmp[] = "/tmp/rc_test_stack_XXXXXX";
	struct stat st;
	unsigned char *orig, *buf;
	struct rc_frame f;
	unsigned r, k;
	int fd;

	fd = open(src, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	orig = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert_ptr_ne(orig, MAP_FAILED);
	close(fd);
	buf = malloc(st.st_size);
	ck_assert_ptr_nonnull(buf);
	srand(12345);
	for (r = 0; r < rounds; r++) {
		size_t len = st.st_size;
		const Elf64_Ehdr *eh = (const void *)orig;

		memcpy(buf, orig, len);
		if (r % 4 == 0) {
			len = (size_t)rand() % len;
		} else {
			for (k = 0; k < 1 + r % 16; k++) {
				size_t at;

				/* Mostly the headers and section table. */
				if (rand() % 2)
					at = (size_t)rand() % 64;
				else if (rand() % 2)
					at = eh->e_shoff + (size_t)rand() %
					     (eh->e_shnum * sizeof(Elf64_Shdr));
				else
					at = (size_t)rand() % len;
				if (at < len)
					buf[at] = (unsigned char)rand();
			}
		}
		fd = mkstemp(tmp);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
		close(fd);
		rc_symbolize_file(tmp, off, &f);
		rc_symbolize_file(tmp, (uintptr_t)rand() % st.st_size, &f);
		unlink(tmp);
		strcpy(tmp, "/tmp/rc_test_stack_XXXXXX");
	}
	free(buf);
	munmap(orig, st.st_size);
}

START_TEST(test_malformed_elf)
{
	static const char text[] = "hello, world: not an ELF file at all, "
				   "just some text that is long enough.\n";
	const uintptr_t *pcs;
	struct rc_frame f;
	char tmp[] = "/tmp/rc_test_stack_XXXXXX";
	int fd;

	rc_stack_frames(main_id, &pcs);
	rc_symbolize(pcs[0], &f);
	fuzz_file(exe_path(), 400, f.offset);

	/* Not ELF, empty, a directory. */
	fd = mkstemp(tmp);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(rc_symbolize_file(tmp, 16, &f), -1);
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1),
			 (ssize_t)sizeof(text) - 1);
	close(fd);
	rc_symbolize_file(tmp, 16, &f);
	ck_assert_ptr_null(f.function);
	unlink(tmp);
	ck_assert_int_eq(rc_symbolize_file("/tmp", 16, &f), -1);
}
END_TEST

/*
 * A stripped copy of this program: names from .dynsym (-rdynamic), no
 * lines; with a .gnu_debuglink'ed debug file next to it: names and lines.
 * Skipped when objcopy or strip is missing.
 */
START_TEST(test_stripped_debuglink)
{
	char dir[] = "/tmp/rc_test_stack_XXXXXX", cmd[4 * PATH_MAX];
	char prog[PATH_MAX];
	const uintptr_t *pcs;
	struct rc_frame f, g;

	if (system("command -v objcopy >/dev/null 2>&1 && "
		   "command -v strip >/dev/null 2>&1"))
		return;
	rc_stack_frames(main_id, &pcs);
	rc_symbolize(pcs[0], &f);		/* chain_b */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && cp '%s' prog && objcopy --only-keep-debug prog "
		 "prog.dbg && strip -s prog >/dev/null 2>&1", dir, exe_path());
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(rc_symbolize_file(prog, f.offset, &g), 0);
	ck_assert_str_eq(g.function, "chain_b");
	ck_assert_ptr_null(g.file);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && objcopy --add-gnu-debuglink=prog.dbg prog", dir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(rc_symbolize_file(prog, f.offset, &g), 0);
	ck_assert_str_eq(g.function, "chain_b");
	ck_assert_uint_eq(g.line, line_b);
	ck_assert(ends_with(g.file, "/test_stack.c"));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_malformed_libc)
{
	const uintptr_t *pcs;
	struct rc_frame f;
	unsigned n, i;

	qsort((int[2]){ 2, 1 }, 2, sizeof(int), cmp_capture);
	n = rc_stack_frames(cmp_id, &pcs);
	for (i = 0; i < n; i++) {
		rc_symbolize(pcs[i], &f);
		if (f.module && !strcmp(base_name(f.module), "libc.so.6")) {
			fuzz_file(f.module, 60, f.offset);
			return;
		}
	}
	ck_abort_msg("no libc frame");
}
END_TEST

#define NTHREADS 4
#define NSITES 8
static rc_stack_id thread_ids[NTHREADS][NSITES];

static void *thread_main(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg, r, k;
	volatile unsigned nsites = NSITES;	/* one call site, not 8 */

	for (r = 0; r < 300; r++) {
		for (k = 0; k < nsites; k++) {
			rc_stack_id id = recurse((k + t) % NSITES);
			unsigned s = (k + t) % NSITES;

			if (!r)
				thread_ids[t][s] = id;
			else if (thread_ids[t][s] != id)
				thread_ids[t][s] = 0;	/* inconsistent */
		}
	}
	return NULL;
}

START_TEST(test_threads)
{
	pthread_t th[NTHREADS];
	unsigned t, k, j, before = rc_stack_depot_size();

	for (t = 0; t < NTHREADS; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, thread_main,
						(void *)(uintptr_t)t), 0);
	for (t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	for (k = 0; k < NSITES; k++) {
		ck_assert_uint_ne(thread_ids[0][k], 0);
		for (t = 1; t < NTHREADS; t++)
			ck_assert_uint_eq(thread_ids[t][k], thread_ids[0][k]);
		for (j = 0; j < k; j++)
			ck_assert_uint_ne(thread_ids[0][j], thread_ids[0][k]);
	}
	ck_assert_uint_eq(rc_stack_depot_size(), before + NSITES);
}
END_TEST

/* Resident private memory: file pages (code, unwind tables) aside. */
static long anon_kib(void)
{
	long size = 0, res = 0, shared = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld %ld", &size, &res, &shared) != 3)
			res = shared = 0;
		fclose(f);
	}
	return (res - shared) * (sysconf(_SC_PAGESIZE) / 1024);
}

struct first_capture {
	long kib;
	rc_stack_id ids[12];
};

static void *first_capture_thread(void *arg)
{
	struct first_capture *fc = arg;
	volatile unsigned twelve = 12;
	long r0 = anon_kib();
	unsigned i;

	fc->ids[0] = chain_a();
	fc->kib = anon_kib() - r0;
	for (i = 1; i < twelve; i++)	/* one site: libgcc, then libunwind */
		fc->ids[i] = chain_a();
	return NULL;
}

/*
 * libunwind's unw_backtrace() fills a 256 KiB frame cache for each thread
 * on its first call: a thread's first captures must not pay for it.  And
 * the unwinder they use instead gives the same frames.
 */
START_TEST(test_thread_first_capture)
{
	struct first_capture fc;
	pthread_t t;
	unsigned i;

	ck_assert_str_eq(rc_stack_unwinder(), "libunwind");
	ck_assert_int_eq(pthread_create(&t, NULL, first_capture_thread, &fc),
			 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_lt(fc.kib, 64);
	ck_assert_uint_ne(fc.ids[0], 0);
	ck_assert_uint_ne(fc.ids[1], 0);
	for (i = 2; i < 12; i++)
		ck_assert_uint_eq(fc.ids[i], fc.ids[1]);
}
END_TEST

START_TEST(test_libgcc_fallback)
{
	volatile unsigned two = 2;
	rc_stack_id ids[2];
	unsigned i;

	ck_assert_str_eq(rc_stack_unwinder(), "libunwind");
	for (i = 0; i < two; i++) {
		ck_assert_int_eq(rc_stack_use_unwinder(i ? "libgcc" :
						       "libunwind"), 0);
		ck_assert_str_eq(rc_stack_unwinder(),
				 i ? "libgcc" : "libunwind");
		ids[i] = chain_a();	/* one call site, both unwinders */
	}
	/* The same frames, so the same depot entry. */
	ck_assert_uint_eq(ids[0], ids[1]);
	ck_assert_str_eq(frame_fn(ids[1], 0), "chain_b");
	ck_assert_int_eq(rc_stack_use_unwinder("none"), 0);
	ck_assert_uint_eq(chain_a(), 0);
	ck_assert_int_eq(rc_stack_use_unwinder("bogus"), -1);
	ck_assert_int_eq(rc_stack_use_unwinder("libunwind"), 0);
}
END_TEST

NOINLINE static rc_stack_id recurse_at(unsigned k)
{
	rc_stack_id id = k ? recurse_at(k - 1) : fake_rdma_call_at();

	KEEP();
	return id;
}

/*
 * This program is built with frame pointers: the walk gives the frames
 * CFI unwinding gives, and needs no unwinder at all.  libcheck's frames
 * (below the test function) have none: the walk stops in them.
 */
START_TEST(test_fast_same_frames)
{
	volatile unsigned three = 3, k;
	const uintptr_t *pcs[3];
	rc_stack_id ids[3][3];
	unsigned i, n[3], ours;

	for (i = 0; i < three; i++) {
		rc_stack_set_fast(i > 0);
		if (i == 2)
			ck_assert_int_eq(rc_stack_use_unwinder("none"), 0);
		for (k = 0; k < three; k++)	/* 2, 7 and 18 levels */
			ids[i][k] = recurse_at(k * k * 3 + 1 + k * 2);
	}
	rc_stack_set_fast(false);
	ck_assert_int_eq(rc_stack_use_unwinder("libunwind"), 0);
	for (k = 0; k < three; k++) {
		ours = k * k * 3 + 2 + k * 2 + 1;	/* and the test's */
		for (i = 0; i < three; i++) {
			n[i] = rc_stack_frames(ids[i][k], &pcs[i]);
			ck_assert_uint_ge(n[i], ours < 16 ? ours : 16);
		}
		ck_assert_str_eq(frame_fn(ids[0][k], 0), "recurse_at");
		ck_assert_str_eq(frame_fn(ids[0][k], ours - 1 < 15 ?
					  ours - 1 : 15), ours - 1 < 15 ?
				 "test_fast_same_frames_fn" : "recurse_at");
		ck_assert_uint_eq(ids[2][k], ids[1][k]);
		ck_assert_mem_eq(pcs[1], pcs[0], n[1] * sizeof(uintptr_t));
	}
	/* All 16 frames ours: the very same stack. */
	ck_assert_uint_eq(ids[1][2], ids[0][2]);
	/* Without a frame the walk cannot start: the usual unwinder runs. */
	rc_stack_set_fast(true);
	ck_assert_int_eq(rc_stack_use_unwinder("none"), 0);
	ck_assert_uint_eq(rc_stack_capture_at(1, NULL), 0);
	ck_assert_int_eq(rc_stack_use_unwinder("libunwind"), 0);
	ck_assert_uint_ne(rc_stack_capture_at(1, NULL), 0);
	rc_stack_set_fast(false);
}
END_TEST

/*
 * Frame records that lie: the walk keeps the frames before the first bad
 * one and never reads outside the stack (these would fault).
 */
NOINLINE static unsigned fast_from(const uintptr_t *rec)
{
	const uintptr_t *pcs;
	unsigned n;

	rc_stack_set_fast(true);
	n = rc_stack_frames(rc_stack_capture_at(2, rec), &pcs);
	rc_stack_set_fast(false);
	KEEP();
	return n;
}

START_TEST(test_fast_garbage)
{
	uintptr_t rec[4], pc = (uintptr_t)chain_a + 1;
	void *unmapped = mmap(NULL, 4096, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(unmapped, MAP_FAILED);
	ck_assert_int_eq(rc_stack_use_unwinder("none"), 0);
	/* next: above us but outside the stack (unmapped). */
	rec[0] = (uintptr_t)unmapped > (uintptr_t)rec ?
		 (uintptr_t)unmapped : (uintptr_t)-4096;
	rec[1] = pc;
	ck_assert_uint_eq(fast_from(rec), 1);
	rec[0] = (uintptr_t)-16;			/* the top of memory */
	ck_assert_uint_eq(fast_from(rec), 1);
	rec[0] = (uintptr_t)&rec[2] + 3;		/* misaligned */
	ck_assert_uint_eq(fast_from(rec), 1);
	rec[0] = (uintptr_t)&rec[0];			/* a loop */
	ck_assert_uint_eq(fast_from(rec), 1);
	rec[0] = 16;					/* down, to page 0 */
	ck_assert_uint_eq(fast_from(rec), 1);
	/* next record fine, its return address is not code: one frame. */
	rec[0] = (uintptr_t)&rec[2];
	rec[2] = 0;
	rec[3] = (uintptr_t)unmapped;
	ck_assert_uint_eq(fast_from(rec), 1);
	rec[3] = pc;					/* two good frames */
	ck_assert_uint_eq(fast_from(rec), 2);
	/* Not even the first frame is good: the usual unwinder ("none"). */
	rec[1] = 0x1234;
	ck_assert_uint_eq(fast_from(rec), 0);
	ck_assert_uint_eq(fast_from((const uintptr_t *)unmapped), 0);
	ck_assert_uint_eq(fast_from((const uintptr_t *)16), 0);
	/* A first frame in our own text: no frame pointers there. */
	rec[1] = (uintptr_t)fake_rdma_call + 1;
	ck_assert_uint_eq(fast_from(rec), 0);
	ck_assert_int_eq(rc_stack_use_unwinder("libunwind"), 0);
	munmap(unmapped, 4096);
}
END_TEST

/* fast_from's capture, its id: the same site and frame each time. */
NOINLINE static rc_stack_id fast_id(const uintptr_t *rec)
{
	rc_stack_id id;

	rc_stack_set_fast(true);
	id = rc_stack_capture_at(2, rec);
	rc_stack_set_fast(false);
	KEEP();
	return id;
}

/*
 * fast_unwind: a site's capture from one frame over an unchanged chain
 * of frame records repeats its last walk (src/unwind/stack.c, last_fp_walk)
 * from the third time on (the second keeps it); any word the walk read
 * that changed, the return address that stopped it included, makes it
 * walk again, as does another depth.
 */
START_TEST(test_fast_repeat)
{
	uintptr_t rec[6], pc = (uintptr_t)chain_a + 1;
	const uintptr_t *pcs;
	rc_stack_id id[3], again;
	unsigned long r0;
	unsigned i;

	ck_assert_int_eq(rc_stack_use_unwinder("none"), 0);
	rec[0] = (uintptr_t)&rec[2];
	rec[1] = pc;
	rec[2] = (uintptr_t)&rec[4];
	rec[3] = pc;
	rec[4] = 0;
	rec[5] = 0x1234;	/* not code: read, and the walk stops */
	r0 = rc_stack_cfi_repeats();
	for (i = 0; i < 3; i++)
		id[i] = fast_id(rec);
	ck_assert_uint_eq(rc_stack_cfi_repeats() - r0, 1);
	ck_assert_uint_eq(rc_stack_frames(id[0], &pcs), 2);
	ck_assert_uint_eq(id[1], id[0]);
	ck_assert_uint_eq(id[2], id[0]);
	/* The word that stopped the walk is code now: three frames. */
	rec[5] = pc;
	r0 = rc_stack_cfi_repeats();
	again = fast_id(rec);
	ck_assert_uint_eq(rc_stack_cfi_repeats(), r0);
	ck_assert_uint_eq(rc_stack_frames(again, &pcs), 3);
	ck_assert_uint_eq(fast_id(rec), again);		/* kept anew */
	ck_assert_uint_eq(rc_stack_cfi_repeats() - r0, 1);
	/* A return address in the middle. */
	rec[3] = (uintptr_t)chain_b + 1;
	again = fast_id(rec);
	ck_assert_uint_eq(rc_stack_cfi_repeats() - r0, 1);
	ck_assert_uint_eq(rc_stack_frames(again, &pcs), 3);
	ck_assert_uint_eq(pcs[1], (uintptr_t)chain_b + 1);
	/* A link: the chain ends one record early. */
	ck_assert_uint_eq(fast_id(rec), again);
	ck_assert_uint_eq(rc_stack_cfi_repeats() - r0, 2);
	rec[2] = 8;
	again = fast_id(rec);
	ck_assert_uint_eq(rc_stack_cfi_repeats() - r0, 2);
	ck_assert_uint_eq(rc_stack_frames(again, &pcs), 2);
	/* Another depth. */
	ck_assert_uint_eq(fast_id(rec), again);
	rc_stack_set_depth(1);
	ck_assert_uint_eq(rc_stack_frames(fast_id(rec), &pcs), 1);
	ck_assert_uint_eq(rc_stack_cfi_repeats() - r0, 3);
	rc_stack_set_depth(16);
	ck_assert_int_eq(rc_stack_use_unwinder("libunwind"), 0);
}
END_TEST

/* The address of a local of a frame that is gone when we look. */
static volatile uintptr_t gone_at;

NOINLINE static const void *gone_local(void)
{
	volatile char here[64];

	here[0] = 1;
	gone_at = (uintptr_t)here;
	return (const void *)gone_at;
}

static volatile int on_altstack;

static void altstack_handler(int sig)
{
	char local[16] = { 0 };

	(void)sig;
	on_altstack = rc_stack_holds(local, sizeof(local)) ? 1 : 2;
}

/*
 * rc_stack_holds (rc_peek's fast path): a caller's local, yes; the heap,
 * a frame below ours, a range past the stack's top, or a local on a
 * signal stack, no.
 */
START_TEST(test_stack_holds)
{
	char local[32] = { 0 }, *heap = malloc(32);
	static char alt[64 * 1024];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) }, old;
	struct sigaction sa, osa;
	uintptr_t lo, hi;

	ck_assert(rc_stack_holds(local, sizeof(local)));
	ck_assert(!rc_stack_holds(heap, 32));
	ck_assert(!rc_stack_holds(alt, 16));
	ck_assert(!rc_stack_holds(gone_local(), 8));
	ck_assert(!rc_stack_holds(local, (size_t)-1));
	rc_stack_get_self_range(&lo, &hi);	/* our text: not the stack */
	ck_assert(!rc_stack_holds((const void *)lo, 8));
	free(heap);
	ck_assert_int_eq(sigaltstack(&ss, &old), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = altstack_handler;
	sa.sa_flags = SA_ONSTACK;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, &osa), 0);
	raise(SIGUSR1);
	ck_assert_int_eq(on_altstack, 2);
	ck_assert_int_eq(sigaction(SIGUSR1, &osa, NULL), 0);
	ck_assert_int_eq(sigaltstack(&old, NULL), 0);
}
END_TEST

START_TEST(test_default_self_range)
{
	const uintptr_t *pcs;
	struct rc_frame f;
	unsigned n;

	/* The default range is this program's text: all of it is dropped. */
	ck_assert_uint_le(default_lo, (uintptr_t)chain_a);
	ck_assert_uint_gt(default_hi, (uintptr_t)chain_a);
	rc_stack_set_self_range(default_lo, default_hi);
	n = rc_stack_frames(chain_a(), &pcs);
	use_fake_shim_range();
	ck_assert_uint_ge(n, 1);
	ck_assert(pcs[0] - default_lo >= default_hi - default_lo);
	/* libc's __libc_start_call_main (or a shared libcheck). */
	rc_symbolize(pcs[0], &f);
	ck_assert_ptr_nonnull(f.module);
	ck_assert_str_ne(f.module, exe_path());
}
END_TEST

/*
 * Hide libunwind.so.8 (bind-mount /dev/null over it in a private mount
 * namespace) and run ourselves: the capture must fall back to libgcc.
 * Skipped (passes) where no mount namespace can be made.
 */
START_TEST(test_no_libunwind)
{
	char lib[PATH_MAX], cmd[3 * PATH_MAX];
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	void *sym = h ? dlsym(h, "unw_backtrace") : NULL;
	Dl_info di;
	int st;

	if (!sym || !dladdr(sym, &di) || !realpath(di.dli_fname, lib))
		return;
	/* As root "unshare -m"; else perhaps in a user namespace (-rm). */
	snprintf(cmd, sizeof(cmd),
		 "for u in 'unshare -m' 'unshare -rm'; do "
		 "$u true 2>/dev/null && exec $u sh -c "
		 "'mount --bind /dev/null %s || exit 77; "
		 "exec %s --no-libunwind-child'; done; exit 77",
		 lib, exe_path());
	st = system(cmd);
	ck_assert(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77 || WEXITSTATUS(st) == 127)
		return;			/* cannot hide it here */
	ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

static int no_libunwind_child(void)
{
	rc_stack_id id = chain_a();

	if (strcmp(rc_stack_unwinder(), "libgcc") ||
	    rc_stack_use_unwinder("libunwind") != -1)
		return 1;
	return id && frame_fn(id, 0) && !strcmp(frame_fn(id, 0), "chain_b") ?
	       0 : 2;
}

START_TEST(test_fork_child)
{
	pid_t pid;
	int status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		rc_stack_atfork_child();
		rc_symbolize_atfork_child();
		_exit(chain_a() && frame_fn(recurse(3), 0) ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

typedef int (*unw_bt_fn)(void **, int);

/* At depth 16 below the capture: time full captures and bare unwinds. */
NOINLINE static void bench_leaf(unsigned iters, unw_bt_fn bt)
{
	void *buf[64];
	double t0, t1, t2;
	const uintptr_t *pcs;
	unsigned i, nfr;
	double cap = 1e30, raw = 1e30;
	int rep;

	for (rep = 0; rep < 7; rep++) {
		t0 = now_ns();
		for (i = 0; i < iters; i++)
			fake_rdma_call();
		t1 = now_ns();
		if (bt)
			for (i = 0; i < iters; i++)
				bt(buf, 18);	/* as a capture: 16 + ours */
		t2 = now_ns();
		if ((t1 - t0) / iters < cap)
			cap = (t1 - t0) / iters;
		if ((t2 - t1) / iters < raw)
			raw = (t2 - t1) / iters;
	}
	nfr = rc_stack_frames(fake_rdma_call(), &pcs);
	printf("unwinder %s, %u frames: capture+depot hit %.1f ns",
	       rc_stack_unwinder(), nfr, cap);
	if (bt)
		printf("; bare unw_backtrace(18) %.1f ns; so depot hit + "
		       "skipping ~%.1f ns", raw, cap - raw);
	printf(" (best of 7 x %u)\n", iters);
	KEEP();
}

/* The same with fast_unwind: the frame-pointer walk. */
NOINLINE static void bench_fast_leaf(unsigned iters)
{
	double t0, best = 1e30;
	unsigned i;
	int rep;

	rc_stack_set_fast(true);
	for (rep = 0; rep < 7; rep++) {
		t0 = now_ns();
		for (i = 0; i < iters; i++)
			fake_rdma_call_at();
		t0 = (now_ns() - t0) / iters;
		if (t0 < best)
			best = t0;
	}
	rc_stack_set_fast(false);
	printf("fast_unwind, 16 frames: capture+depot hit %.1f ns "
	       "(best of 7 x %u)\n", best, iters);
	KEEP();
}

NOINLINE static void bench_fast_chain(unsigned k, unsigned iters)
{
	if (k)
		bench_fast_chain(k - 1, iters);
	else
		bench_fast_leaf(iters);
	KEEP();
}

/* The depot alone: a hit for a stored 16-frame stack. */
static void bench_intern(unsigned iters)
{
	uintptr_t pcs[16];
	double t0, best = 1e30;
	unsigned i, sum = 0;
	int rep;

	for (i = 0; i < 16; i++)
		pcs[i] = 0x401000 + 0x40 * i;
	sum += rc_stack_intern(pcs, 16);
	for (rep = 0; rep < 7; rep++) {
		t0 = now_ns();
		for (i = 0; i < iters; i++) {
			sum += rc_stack_intern(pcs, 16);
			KEEP();
		}
		t0 = (now_ns() - t0) / iters;
		if (t0 < best)
			best = t0;
	}
	printf("depot hit (hash + lookup), 16 frames: %.1f ns "
	       "(best of 7 x %u; %u)\n", best, iters, sum ? 1 : 0);
}

NOINLINE static void bench_chain(unsigned k, unsigned iters, unw_bt_fn bt)
{
	if (k)
		bench_chain(k - 1, iters, bt);
	else
		bench_leaf(iters, bt);
	KEEP();
}

static int bench(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	unw_bt_fn bt = h ? (unw_bt_fn)dlsym(h, "unw_backtrace") : NULL;

	rc_stack_set_depth(16);
	bench_chain(20, 1000, bt);	/* warm up */
	bench_chain(20, 1000000, bt);
	bench_fast_chain(20, 1000000);
	bench_intern(10000000);
	if (!rc_stack_use_unwinder("libgcc"))
		bench_chain(20, 20000, NULL);
	rc_stack_use_unwinder("libunwind");
	return 0;
}

int main(int argc, char **argv)
{
	Suite *s = suite_create("stack");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nfail;

	rc_stack_init();
	rc_stack_get_self_range(&default_lo, &default_hi);
	use_fake_shim_range();
	main_id = chain_a(); line_main = __LINE__;

	if (argc > 1 && !strcmp(argv[1], "--bench"))
		return bench();
	if (argc > 1 && !strcmp(argv[1], "--no-libunwind-child"))
		return no_libunwind_child();

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dedup);
	tcase_add_test(tc, test_intern);
	tcase_add_test(tc, test_starts_at_caller);
	tcase_add_test(tc, test_depth);
	tcase_add_test(tc, test_symbolize_exe);
	tcase_add_test(tc, test_symbolize_libc);
	tcase_add_test(tc, test_symbolize_lazy_units);
	tcase_add_test(tc, test_start_frames_unlined);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_malformed_elf);
	tcase_add_test(tc, test_malformed_libc);
	tcase_add_test(tc, test_stripped_debuglink);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_thread_first_capture);
	tcase_add_test(tc, test_libgcc_fallback);
	tcase_add_test(tc, test_fast_same_frames);
	tcase_add_test(tc, test_fast_garbage);
	tcase_add_test(tc, test_fast_repeat);
	tcase_add_test(tc, test_stack_holds);
	tcase_add_test(tc, test_default_self_range);
	tcase_add_test(tc, test_no_libunwind);
	tcase_add_test(tc, test_fork_child);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail ? EXIT_FAILURE : EXIT_SUCCESS;
}
