/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * json_write.c - rdmacheck-report: the JSON output: one merged document.
 */
#include "report_tool.h"

/*
 * Format 2, as the shim writes it: each distinct frame once, in the
 * top-level "frames", and stacks as arrays of indices into it.  Frames
 * are distinct by every field written (merged processes name the same
 * code at different pcs).
 */
static const struct frame **jframes;	/* open addressing, half full */
static size_t jframes_cap;
static const struct frame **jorder;	/* in index order */
static size_t jnframes, jorder_cap;
static unsigned *jindex;		/* per jframes slot */

static bool same_jframe(const struct frame *a, const struct frame *b)
{
	return a->pc == b->pc && a->has_offset == b->has_offset &&
	       a->offset == b->offset && a->line == b->line &&
	       same_str(a->module, b->module) &&
	       same_str(a->function, b->function) &&
	       same_str(a->file, b->file);
}

static uint64_t hash_jframe(const struct frame *fr)
{
	uint64_t h = (fr->pc ^ fr->offset * 31 ^ fr->line) *
		     0x9e3779b97f4a7c15ull;

	if (fr->function)
		h ^= hash_text(fr->function);
	return h ^ h >> 29;
}

/* The slot of fr: its own, or the empty one where it goes. */
static size_t jframe_slot(const struct frame *fr)
{
	size_t h;

	for (h = hash_jframe(fr) & (jframes_cap - 1); jframes[h];
	     h = (h + 1) & (jframes_cap - 1))
		if (same_jframe(jframes[h], fr))
			break;
	return h;
}

static void jframe_add(const struct frame *fr)
{
	size_t h, i;

	if (2 * (jnframes + 1) > jframes_cap) {
		const struct frame **old = jframes;
		unsigned *oldidx = jindex;
		size_t oldcap = jframes_cap;

		jframes_cap = jframes_cap ? 2 * jframes_cap : 1024;
		jframes = xcalloc(jframes_cap, sizeof(*jframes));
		jindex = xcalloc(jframes_cap, sizeof(*jindex));
		for (i = 0; i < oldcap; i++) {
			if (!old[i])
				continue;
			h = jframe_slot(old[i]);
			jframes[h] = old[i];
			jindex[h] = oldidx[i];
		}
		free(old);
		free(oldidx);
	}
	h = jframe_slot(fr);
	if (jframes[h])
		return;
	if (jnframes == jorder_cap) {
		jorder_cap = jorder_cap ? 2 * jorder_cap : 1024;
		jorder = xrealloc(jorder, jorder_cap, sizeof(*jorder));
	}
	jframes[h] = fr;
	jindex[h] = (unsigned)jnframes;
	jorder[jnframes++] = fr;
}

static void jframes_add_stack(const struct stack *st)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		jframe_add(&st->f[i]);
}

static void jframes_free(void)
{
	free(jframes);
	free(jindex);
	free(jorder);
	jframes = jorder = NULL;
	jindex = NULL;
	jframes_cap = jnframes = jorder_cap = 0;
}

static void put_jframe(FILE *o, const struct frame *fr)
{
	fputs("{\"pc\": \"", o);
	put_x(o, fr->pc);
	fputs("\", \"module\": ", o);
	put_jstr(o, fr->module);
	if (fr->has_offset) {
		fputs(", \"offset\": \"", o);
		put_x(o, fr->offset);
		fputc('"', o);
	} else {
		fputs(", \"offset\": null", o);
	}
	fputs(", \"function\": ", o);
	put_jstr(o, fr->function);
	fputs(", \"file\": ", o);
	put_jstr(o, fr->file);
	fputs(", \"line\": ", o);
	put_u(o, fr->line);
	fputc('}', o);
}

static void put_jstack(FILE *o, const struct stack *st)
{
	size_t i;

	fputc('[', o);
	for (i = 0; i < st->n; i++) {
		if (i)
			fputs(", ", o);
		put_u(o, jindex[jframe_slot(&st->f[i])]);
	}
	fputc(']', o);
}

static void put_jlife(FILE *o, const char *key, bool has, long long tid,
		      const struct stack *st)
{
	fprintf(o, ", \"%s\": ", key);
	if (!has) {
		fputs("null", o);
		return;
	}
	fputs("{\"thread\": ", o);
	if (tid)
		fprintf(o, "%lld", tid);
	else
		fputs("null", o);
	fputs(", \"stack\": ", o);
	put_jstack(o, st);
	fputc('}', o);
}

static void put_jfinding(FILE *o, const struct finding *f)
{
	size_t i;

	fputs("    {\"rule\": ", o);
	put_jstr(o, f->rule);
	fprintf(o, ", \"severity\": \"%s\", \"call\": ",
		rc_severity_name(f->sev));
	put_jstr(o, f->call);
	fputs(", \"message\": ", o);
	put_jstr(o, f->message);
	fprintf(o, ", \"count\": %llu, \"occurrences\": %zu, \"suppressed\": %s, \"processes\": [",
		f->total, f->nocc, f->suppressed ? "true" : "false");
	for (i = 0; i < f->nprocs; i++)
		fprintf(o, "%s%lld", i ? ", " : "", proc_at(f, i)->pid);
	fputs("],\n      \"stack\": ", o);
	put_jstack(o, &f->stack);
	fputs(", \"fingerprint\": ", o);
	put_jstr(o, f->fingerprint);
	if (have_baseline)
		fprintf(o, ", \"baselined\": %s",
			f->baselined ? "true" : "false");
	fputs(",\n      \"objects\": [", o);
	for (i = 0; i < f->nobjs; i++) {
		const struct object *ob = &f->objs[i];

		fprintf(o, "%s\n        {\"kind\": ", i ? "," : "");
		put_jstr(o, ob->kind);
		fputs(", \"handle\": ", o);
		put_jstr(o, ob->handle);
		put_jlife(o, "created", ob->created, ob->created_tid,
			  &ob->cstack);
		put_jlife(o, "destroyed", ob->destroyed, ob->destroyed_tid,
			  &ob->dstack);
		if (ob->note) {
			fputs(", \"note\": ", o);
			put_jstr(o, ob->note);
		}
		fputc('}', o);
	}
	fputc(']', o);
	if (f->more_objects)
		fprintf(o, ", \"more_objects\": %llu", f->more_objects);
	fputc('}', o);
}

static void put_jsummary(FILE *o, const struct summary *s)
{
	fprintf(o, "{\"errors\": %llu, \"warnings\": %llu, \"leaks\": %llu, \"suppressed\": %llu",
		s->errors, s->warnings, s->leaks, s->suppressed);
	if (have_baseline)
		fprintf(o, ", \"baselined\": %llu", s->baselined);
	fputc('}', o);
}

void output_json(FILE *o)
{
	struct summary t;
	bool first = true;
	size_t i, j, k;

	/* The frames of the stacks put_jfinding() writes. */
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			const struct finding *f = &procs[i].f[j];

			if (f->merged_into)
				continue;
			jframes_add_stack(&f->stack);
			for (k = 0; k < f->nobjs; k++) {
				if (f->objs[k].created)
					jframes_add_stack(&f->objs[k].cstack);
				if (f->objs[k].destroyed)
					jframes_add_stack(&f->objs[k].dstack);
			}
		}
	fprintf(o, "{\n  \"tool\": \"rdmacheck-report\",\n  \"format\": %d,\n  \"version\": \"%s\",\n  \"processes\": [",
		RC_REPORT_FORMAT, PACKAGE_VERSION);
	for (i = 0; i < nprocs; i++) {
		const struct proc *p = &procs[i];

		fprintf(o, "%s\n    {\"pid\": %lld, \"exe\": ", i ? "," : "",
			p->pid);
		put_jstr(o, p->exe);
		fputs(", \"argv\": [", o);
		for (j = 0; j < p->argc; j++) {
			if (j)
				fputs(", ", o);
			put_jstr(o, p->argv[j]);
		}
		fputs("], \"status\": ", o);
		put_jstr(o, p->status);
		if (!strcmp(p->status, "killed") || p->signal)
			fprintf(o, ", \"signal\": %d", p->signal);
		fputs(", \"host\": ", o);
		put_jstr(o, p->host);
		fputs(", \"start_time\": ", o);
		put_jstr(o, p->start_time);
		fputs(", \"end_time\": ", o);
		put_jstr(o, p->end_time);
		fprintf(o, ", \"halted\": %s, \"findings_dropped\": %llu, \"report\": ",
			p->halted ? "true" : "false", p->dropped);
		put_jstr(o, p->path);
		fputs(", \"summary\": ", o);
		put_jsummary(o, &p->sum);
		fputc('}', o);
	}
	fputs("\n  ],\n  \"frames\": [", o);
	for (i = 0; i < jnframes; i++) {
		fputs(i ? ",\n    " : "\n    ", o);
		put_jframe(o, jorder[i]);
	}
	fputs(jnframes ? "\n  ],\n  \"findings\": [" : "],\n  \"findings\": [",
	      o);
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			const struct finding *f = &procs[i].f[j];

			if (f->merged_into)
				continue;
			fputs(first ? "\n" : ",\n", o);
			first = false;
			put_jfinding(o, f);
		}
	total_summary(&t);
	fputs("\n  ],\n  \"summary\": ", o);
	put_jsummary(o, &t);
	fputs("\n}\n", o);
	jframes_free();
}

