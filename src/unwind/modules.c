/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * modules.c - the map of the objects loaded now (modules.h): read from
 * dl_iterate_phdr(), kept in mmap()ed pages (no malloc: captures run
 * inside the program's allocator hooks too), replaced with a release
 * store, never freed: one map per dlopen() or dlclose() seen, a page or
 * two each.
 */
#include "config.h"		/* _GNU_SOURCE: dl_iterate_phdr */

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>

#include "core/rdmacheck.h"
#include "unwind/modules.h"

static _Atomic(struct rc_text_map *) texts;
static pthread_mutex_t text_lock = PTHREAD_MUTEX_INITIALIZER;

/* How often objects were loaded and unloaded: changes mean a new map. */
static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) +
		    sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1;
}

static int text_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct rc_text_map *m = arg;
	uintptr_t hdr = 0, hdr_lo = 0, hdr_hi = 0, lo;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			hdr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	for (i = 0; hdr && i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) &&
		    hdr - lo < ph->p_memsz) {
			hdr_lo = lo;
			hdr_hi = lo + ph->p_memsz;
		}
	}
	if (!hdr_hi)
		hdr = 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (m->n < m->cap) {
			struct rc_text_seg *t = &m->r[m->n];

			t->lo = info->dlpi_addr + ph->p_vaddr;
			t->hi = t->lo + ph->p_memsz;
			t->hdr = hdr;
			t->hdr_lo = hdr_lo;
			t->hdr_hi = hdr_hi;
		}
		m->n++;
	}
	return 0;
}

/*
 * The map of the objects loaded now: one dl_iterate_phdr() step to read
 * its counters, a new map when they moved.  Old maps are kept (a reader
 * may hold one): one per dlopen() or dlclose() seen, a page or two each.
 */
const struct rc_text_map *rc_modules_current(void)
{
	struct rc_text_map probe = { 0 }, *m;
	unsigned long long c[2] = { 0, 0 };
	size_t sz;
	unsigned i, j;

	dl_iterate_phdr(count_cb, c);
	m = atomic_load_explicit(&texts, memory_order_acquire);
	if (RC_LIKELY(m && m->adds == c[0] && m->subs == c[1]))
		return m;
	pthread_mutex_lock(&text_lock);
	m = atomic_load_explicit(&texts, memory_order_relaxed);
	if (m && m->adds == c[0] && m->subs == c[1])
		goto out;			/* another thread made it */
	dl_iterate_phdr(text_cb, &probe);
	sz = sizeof(*m) + (probe.n + 16) * sizeof(m->r[0]);
	m = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		m = NULL;
		goto out;
	}
	m->cap = probe.n + 16;
	m->adds = c[0];
	m->subs = c[1];
	dl_iterate_phdr(text_cb, m);
	if (m->n > m->cap)
		m->n = m->cap;
	for (i = 1; i < m->n; i++)		/* insertion sort: ~50 */
		for (j = i; j && m->r[j - 1].lo > m->r[j].lo; j--) {
			struct rc_text_seg t = m->r[j];

			m->r[j] = m->r[j - 1];
			m->r[j - 1] = t;
		}
	atomic_store_explicit(&texts, m, memory_order_release);
out:
	pthread_mutex_unlock(&text_lock);
	return m;
}

const struct rc_text_map *rc_modules_last(void)
{
	return atomic_load_explicit(&texts, memory_order_acquire);
}

void rc_modules_atfork_child(void)
{
	pthread_mutex_init(&text_lock, NULL);
}
