/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * merge.c - rdmacheck-report: merging identical findings across processes.
 */
#include "report_tool.h"

/* Reports from more than one host: pids are shown as host:pid. */
bool many_hosts;

bool same_str(const char *a, const char *b)
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

bool same_stack(const struct stack *a, const struct stack *b)
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
const struct proc *proc_at(const struct finding *f, size_t i)
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

/*
 * Each finding joins the first earlier one with its fingerprint (computed
 * here for those that have none), found in a hash table of the groups'
 * first findings (open addressing, at most half full).
 */
void merge_all(bool merge)
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

void collapse_snapshots(void)
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
void free_reports(void)
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

