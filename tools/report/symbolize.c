/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize.c - rdmacheck-report: offline symbolization of the model's frames
 * (libdw or src/symbolize/symbolize.c), inline levels included.
 */
#include "report_tool.h"

struct arena names;	/* what the symbolizer found */

/* A frame to name, and the build id its report gives its module. */
struct symq_ent {
	struct frame *fr;
	const char *want;	/* NULL: not known */
	const struct proc *p;
};

static struct symq_ent *symq;
static size_t nsymq, capsymq;

static const char *build_id_of(const struct proc *p, const char *module)
{
	size_t i;

	for (i = 0; i < p->nmods; i++)
		if (!strcmp(p->mods[i].path, module))
			return p->mods[i].build_id;
	return NULL;
}

static void queue_stack(const struct proc *p, struct stack *st)
{
	size_t i;

	for (i = 0; i < st->n; i++) {
		struct frame *fr = &st->f[i];

		if (fr->function || !fr->module || !fr->has_offset)
			continue;
		if (nsymq == capsymq) {
			capsymq = capsymq ? capsymq * 2 : 64;
			symq = xrealloc(symq, capsymq, sizeof(*symq));
		}
		symq[nsymq].fr = fr;
		symq[nsymq].want = build_id_of(p, fr->module);
		symq[nsymq++].p = p;
	}
}

static int cmp_frame_module(const void *a, const void *b)
{
	const struct symq_ent *x = a, *y = b;
	int c = strcmp(x->fr->module, y->fr->module);

	if (c || x->want == y->want)
		return c;
	if (!x->want || !y->want)
		return x->want ? 1 : -1;
	return strcmp(x->want, y->want);
}

/* The build id of the file at path now ("" when it has none). */
static void file_build_id(const char *path, char *hex)
{
	struct stat st;
	void *img;
	int fd;

	hex[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && st.st_size > 0) {
		img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			   fd, 0);
		if (img != MAP_FAILED) {
			if (rc_build_id(img, (size_t)st.st_size, hex))
				hex[0] = '\0';
			munmap(img, (size_t)st.st_size);
		}
	}
	close(fd);
}

#ifdef RR_HAVE_DWFL
/*
 * libdw names inline levels: the frame takes the innermost, and the
 * levels around it are inserted after it once every frame is named
 * (expand_inlined), so that queued frame pointers stay valid.
 */
struct inl {
	struct frame *at;
	struct frame *f;	/* the outer levels, innermost first */
	unsigned n;
};
static struct inl *inls;
static size_t ninls, capinls;

static const char *sym_str(char *s)
{
	const char *r = s ? astrdup(&names, s) : NULL;

	free(s);
	return r;
}

static bool dw_symbolize_frame(struct frame *fr, uintptr_t offset)
{
	struct rr_sym syms[RR_INLINE_MAX];
	int n = rr_dwfl_symbolize(fr->module, offset, syms, RR_INLINE_MAX), i;
	struct frame *more;

	if (n <= 0)
		return false;
	fr->function = sym_str(syms[0].function);
	fr->file = sym_str(syms[0].file);
	fr->line = syms[0].line;
	if (!fr->function || rc_start_function(fr->module, fr->function)) {
		/* as the shim names libc's start code (symbolize.c) */
		fr->file = NULL;
		fr->line = 0;
	}
	if (n == 1 || rc_start_function(fr->module, fr->function)) {
		for (i = 1; i < n; i++) {
			free(syms[i].function);
			free(syms[i].file);
		}
		return true;
	}
	more = aalloc(&names, (size_t)n - 1, sizeof(*more));
	for (i = 1; i < n; i++) {
		more[i - 1] = *fr;
		more[i - 1].function = sym_str(syms[i].function);
		more[i - 1].file = sym_str(syms[i].file);
		more[i - 1].line = syms[i].line;
	}
	if (ninls == capinls) {
		capinls = capinls ? 2 * capinls : 16;
		inls = xrealloc(inls, capinls, sizeof(*inls));
	}
	inls[ninls].at = fr;
	inls[ninls].f = more;
	inls[ninls++].n = (unsigned)n - 1;
	fr->inlined = true;
	return true;
}

static int cmp_inl(const void *a, const void *b)
{
	const struct inl *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

static void expand_stack(struct arena *a, struct stack *st)
{
	size_t i, n = st->n, o = 0;
	struct frame *nf;
	struct inl key, *hit;

	for (i = 0; i < st->n; i++)
		if (st->f[i].inlined) {
			key.at = &st->f[i];
			hit = bsearch(&key, inls, ninls, sizeof(*inls),
				      cmp_inl);
			n += hit ? hit->n : 0;
		}
	if (n == st->n)
		return;
	nf = aalloc(a, n, sizeof(*nf));
	for (i = 0; i < st->n; i++) {
		nf[o++] = st->f[i];
		if (!st->f[i].inlined)
			continue;
		key.at = &st->f[i];
		hit = bsearch(&key, inls, ninls, sizeof(*inls), cmp_inl);
		if (hit) {
			memcpy(&nf[o], hit->f, hit->n * sizeof(*nf));
			o += hit->n;
		}
	}
	st->f = nf;
	st->n = n;
}

static void expand_inlined(void)
{
	size_t i, j, k;

	if (!ninls)
		return;
	qsort(inls, ninls, sizeof(*inls), cmp_inl);
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			struct finding *f = &procs[i].f[j];

			expand_stack(&procs[i].arena, &f->stack);
			for (k = 0; k < f->nobjs; k++) {
				expand_stack(&procs[i].arena,
					     &f->objs[k].cstack);
				expand_stack(&procs[i].arena,
					     &f->objs[k].dstack);
			}
		}
	free(inls);
	inls = NULL;
	ninls = capinls = 0;
}
#endif

/* Fill missing names; grouped by module so each file is loaded once. */
void symbolize_all(void)
{
	char have[RC_BUILD_ID_MAX + 1];
	bool usable = false, same = true;
	struct stat st;
	size_t i, j, k;

	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			struct finding *f = &procs[i].f[j];

			queue_stack(&procs[i], &f->stack);
			for (k = 0; k < f->nobjs; k++) {
				queue_stack(&procs[i], &f->objs[k].cstack);
				queue_stack(&procs[i], &f->objs[k].dstack);
			}
		}
	if (nsymq)
		qsort(symq, nsymq, sizeof(*symq), cmp_frame_module);
	for (i = 0; i < nsymq; i++) {
		struct frame *fr = symq[i].fr;
		const char *want = symq[i].want;
		bool new_mod = i == 0 ||
			       strcmp(fr->module, symq[i - 1].fr->module);
		struct rc_frame out;
		/* Both readers name a return address's call, at offset - 1. */
		uintptr_t at = fr->offset + fr->exact;

		/* Only regular files: a module path may name a device now. */
		if (new_mod) {
			usable = !stat(fr->module, &st) && S_ISREG(st.st_mode);
			if (usable)
				file_build_id(fr->module, have);
		}
		/* A file rebuilt since the report would name the wrong
		 * functions: its frames keep module+offset. */
		if (new_mod || want != symq[i - 1].want) {
			same = !want || !usable || !strcmp(want, have);
			if (!same)
				fprintf(stderr, "%s: %s: %s has build id %s, not the report's %s: its frames are not symbolized\n",
					prog, symq[i].p->path, fr->module,
					*have ? have : "(none)", want);
		}
		if (!usable || !same)
			continue;
#ifdef RR_HAVE_DWFL
		if (dw_symbolize_frame(fr, at))
			continue;
#endif
		if (rc_symbolize_file(fr->module, at, &out))
			continue;
		if (out.function)
			fr->function = astrdup(&names, out.function);
		if (out.function && out.file) {
			fr->file = astrdup(&names, out.file);
			fr->line = out.line;
		}
	}
	free(symq);
	symq = NULL;
	nsymq = capsymq = 0;
#ifdef RR_HAVE_DWFL
	rr_dwfl_close();
	expand_inlined();
#endif
}

