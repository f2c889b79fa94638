/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * text.c - rdmacheck-report: the text output: blocks like the shim's, summary
 * lines.
 */
#include "report_tool.h"

const char *kind_text(const char *json_kind)
{
	static const char *const k[][2] = {
#define X(e, json, text) { json, text },
		RC_KINDS(X)
#undef X
	};
	size_t i;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (!strcmp(k[i][0], json_kind))
			return k[i][1];
	return json_kind;
}

/* Strings from the reports: keep each block one line per line. */
void put_safe(FILE *o, const char *s)
{
	size_t n;

	while (*s) {
		for (n = 0; (unsigned char)s[n] >= 0x20 && s[n] != 0x7f; n++)
			;
		fwrite(s, 1, n, o);
		s += n;
		if (*s) {
			fputc('?', o);
			s++;
		}
	}
}

/* --strip-path-prefix: source paths as the repository names them. */
const char *strip_prefix;

/* Lexically, for display: "/a/./b" is "/a/b" and "/a/x/../b" is "/a/b"
 * (an out-of-tree build compiles "/top/build/../src/f.c"); out holds
 * strlen(p) + 1 bytes. */
static void normalize(const char *p, char *out)
{
	char *o = out;

	while (*p) {
		if (p[0] == '/' && p[1] == '.' && (p[2] == '/' || !p[2])) {
			p += 2;
		} else if (p[0] == '/' && p[1] == '.' && p[2] == '.' &&
			   (p[3] == '/' || !p[3]) && o > out) {
			char *slash = o;

			while (slash > out && *--slash != '/')
				;
			/* Not past the root, nor over a "..". */
			if (*slash != '/' || !strncmp(slash, "/../", 4) ||
			    !strcmp(slash, "/..")) {
				*o++ = *p++;
				continue;
			}
			o = slash;
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
}

/* With --strip-path-prefix: the path without the prefix, both compared
 * normalized, else as given. */
const char *show_path(const char *path)
{
	static char *norm_prefix;
	size_t l = strip_prefix ? strlen(strip_prefix) : 0;
	char *norm;

	if (!path || !l)
		return path;
	if (!norm_prefix) {
		/* Kept to the end, as strip_prefix is. */
		norm_prefix = xrealloc(NULL, l + 1, 1);
		normalize(strip_prefix, norm_prefix);
	}
	norm = aalloc(&names, strlen(path) + 1, 1);
	normalize(path, norm);
	if (*norm_prefix && !strncmp(norm, norm_prefix, strlen(norm_prefix)))
		return norm + strlen(norm_prefix);
	return strncmp(path, strip_prefix, l) ? path : path + l;
}

static void put_frame(FILE *o, size_t i, const struct frame *fr)
{
	fputs("    #", o);
	put_u(o, i);
	fputc(' ', o);
	put_x(o, fr->pc);
	if (fr->function) {
		fputs(" in ", o);
		put_safe(o, fr->function);
	}
	if (fr->function && fr->file) {
		fputc(' ', o);
		put_safe(o, show_path(fr->file));
		if (fr->line) {
			fputc(':', o);
			put_u(o, fr->line);
		}
	} else if (fr->module) {
		fputs(" (", o);
		put_safe(o, fr->module);
		fputc('+', o);
		put_x(o, fr->offset);
		fputc(')', o);
	} else if (!fr->function) {
		fputs(" (<unknown module>)", o);
	}
	fputc('\n', o);
}

static void put_stack(FILE *o, const struct stack *st)
{
	size_t i;

	if (!st->n)
		fputs("    <no stack>\n", o);
	/* Not below main(), as the shim prints them. */
	for (i = 0; i < st->n; i++) {
		put_frame(o, i, &st->f[i]);
		if (st->f[i].function && !strcmp(st->f[i].function, "main"))
			break;
	}
}

static void put_thread(FILE *o, long long tid)
{
	if (tid)
		fprintf(o, "thread %lld", tid);
	else
		fputs("unknown thread", o);
}

static void put_obj_name(FILE *o, const struct object *ob)
{
	fputs("  ", o);
	put_safe(o, kind_text(ob->kind));
	fputc(' ', o);
	/* an rsocket goes by its number, as in the shim's own text */
	if (!strcmp(ob->kind, "rsocket") && !strncmp(ob->handle, "0x", 2))
		fprintf(o, "%lu", strtoul(ob->handle + 2, NULL, 16));
	else
		put_safe(o, ob->handle);
}

static void put_obj(FILE *o, const struct finding *f, const struct object *ob)
{
	bool note = ob->note && *ob->note;

	if (note || (!ob->created && !ob->destroyed)) {
		put_obj_name(o, ob);
		if (note) {
			fputc(' ', o);
			put_safe(o, ob->note);
			fputc(':', o);
		} else {
			fputs(" (no creation record)", o);
		}
		fputc('\n', o);
	}
	if (ob->created) {
		put_obj_name(o, ob);
		if (f->stack.n && same_stack(&ob->cstack, &f->stack)) {
			/* Grouped leaks: do not repeat the stack. */
			fputs(" was created by ", o);
			put_thread(o, ob->created_tid);
			fputs(" at the stack above\n", o);
		} else {
			fputs(" was created here (", o);
			put_thread(o, ob->created_tid);
			fputs("):\n", o);
			put_stack(o, &ob->cstack);
		}
	}
	if (ob->destroyed) {
		put_obj_name(o, ob);
		fputs(" was destroyed here (", o);
		put_thread(o, ob->destroyed_tid);
		fputs("):\n", o);
		put_stack(o, &ob->dstack);
	}
}

static const char *const sev_word[] = {
	[RC_SEV_ERROR] = "ERROR",
	[RC_SEV_WARNING] = "WARNING",
	[RC_SEV_LEAK] = "LEAK",
};

static void put_pids(FILE *o, const struct finding *f)
{
	size_t i;

	for (i = 0; i < f->nprocs; i++) {
		const struct proc *p = proc_at(f, i);

		fputs(i ? ", " : "", o);
		if (many_hosts) {
			put_safe(o, p->host ? p->host : "?");
			fputc(':', o);
		}
		fprintf(o, "%lld", p->pid);
	}
}

void put_finding(FILE *o, const struct finding *f, bool merged)
{
	size_t i;

	if (merged)
		fputs("==merged== ", o);
	else
		fprintf(o, "==%lld== ", f->proc->pid);
	fprintf(o, "%s: rdmacheck: ", sev_word[f->sev]);
	put_safe(o, f->message);
	fputs(" [", o);
	put_safe(o, f->rule);
	fputs("]\n", o);
	put_stack(o, &f->stack);
	for (i = 0; i < f->nobjs; i++)
		put_obj(o, f, &f->objs[i]);
	if (f->more_objects)
		fprintf(o, "  ... and %llu more object%s\n", f->more_objects,
			f->more_objects == 1 ? "" : "s");
	if (merged) {
		if (f->sev == RC_SEV_LEAK)
			fprintf(o, "  %llu leaked object%s in total",
				f->total, f->total == 1 ? "" : "s");
		else
			fprintf(o, "  reported %zu time%s", f->nocc,
				f->nocc == 1 ? "" : "s");
		fprintf(o, " in %zu process%s (pid%s ", f->nprocs,
			f->nprocs == 1 ? "" : "es", f->nprocs == 1 ? "" : "s");
		put_pids(o, f);
		fputs(")\n", o);
	}
	fputc('\n', o);
}

static void put_summary(FILE *o, const char *prefix, const struct summary *s,
			const char *suffix)
{
	fprintf(o, "%srdmacheck: %llu errors, %llu warnings, %llu leaked objects (%llu suppressed",
		prefix, s->errors, s->warnings, s->leaks, s->suppressed);
	if (have_baseline)
		fprintf(o, ", %llu in the baseline", s->baselined);
	fprintf(o, ")%s\n", suffix);
}

void total_summary(struct summary *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < nprocs; i++) {
		t->errors += procs[i].sum.errors;
		t->warnings += procs[i].sum.warnings;
		t->leaks += procs[i].sum.leaks;
		t->suppressed += procs[i].sum.suppressed;
		t->baselined += procs[i].sum.baselined;
	}
}

static void proc_prefix(char *buf, size_t len, const struct proc *p)
{
	snprintf(buf, len, "==%lld== ", p->pid);
}

/*
 * A process that a signal ended: a crash, or a kill with the default
 * action of a termination signal.  Its report says nothing of what the
 * program would have done next (the leak check of a crash never ran), so
 * it fails the gate however clean it looks: exit status 3, and in every
 * format.  Neither a suppression nor a baseline takes that away.
 */
bool proc_died(const struct proc *p)
{
	return !strcmp(p->status, "crashed") || !strcmp(p->status, "killed");
}

/* "the process was killed by signal 15 (SIGTERM)", and the like. */
void died_text(const struct proc *p, char *buf, size_t len)
{
	const char *name = rc_signal_name(p->signal);
	char sig[48];

	if (!p->signal)
		snprintf(sig, sizeof(sig), "a signal");
	else if (name)
		snprintf(sig, sizeof(sig), "signal %d (%s)", p->signal, name);
	else
		snprintf(sig, sizeof(sig), "signal %d", p->signal);
	if (!strcmp(p->status, "killed"))
		snprintf(buf, len, "the process was killed by %s", sig);
	else if (p->signal)
		snprintf(buf, len, "the process crashed: it died of %s", sig);
	else
		snprintf(buf, len, "the process crashed");
}

/* Whether a fatal-signal finding of p shows the crash already. */
bool crash_shown(const struct proc *p)
{
	size_t j;

	for (j = 0; j < p->nf; j++)
		if (p->f[j].rule_idx == RC_R_FATAL_SIGNAL &&
		    !p->f[j].suppressed && !p->f[j].baselined)
			return true;
	return false;
}

bool any_died(void)
{
	size_t i;

	for (i = 0; i < nprocs; i++)
		if (proc_died(&procs[i]))
			return true;
	return false;
}

/*
 * Notes on a process that the summary line cannot say; all: the ones
 * that do not explain the exit status too.
 */
static void put_proc_notes(FILE *o, const struct proc *p, bool all)
{
	char died[160];

	if (proc_died(p))
		died_text(p, died, sizeof(died));
	if (!strcmp(p->status, "crashed"))
		fprintf(o, "==%lld== rdmacheck: %s; this report was written from the signal handler\n",
			p->pid, died);
	else if (!strcmp(p->status, "killed"))
		fprintf(o, "==%lld== rdmacheck: %s\n", p->pid, died);
	if (!all)
		return;
	if (!strcmp(p->status, "snapshot"))
		fprintf(o, "==%lld== rdmacheck: a snapshot report; the process was still running\n",
			p->pid);
	if (p->halted)
		fprintf(o, "==%lld== rdmacheck: halted at the first error (halt_on_error)\n",
			p->pid);
	if (p->dropped)
		fprintf(o, "==%lld== rdmacheck: %llu findings were counted but not kept\n",
			p->pid, p->dropped);
}

void put_total(FILE *o, size_t nunique, bool merge)
{
	struct summary t;
	char suffix[96];
	int n;

	total_summary(&t);
	n = snprintf(suffix, sizeof(suffix), " in %zu process%s", nprocs,
		     nprocs == 1 ? "" : "es");
	if (merge)
		snprintf(suffix + n, sizeof(suffix) - (size_t)n,
			 ", %zu unique finding%s", nunique,
			 nunique == 1 ? "" : "s");
	put_summary(o, "==total== ", &t, suffix);
}

size_t count_unique(void)
{
	size_t n = 0, i, j;

	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++)
			if (!procs[i].f[j].merged_into &&
			    !procs[i].f[j].suppressed &&
			    !procs[i].f[j].baselined)
				n++;
	return n;
}

static void put_proc_findings(FILE *o, const struct proc *p, bool merge)
{
	size_t j;

	for (j = 0; j < p->nf; j++)
		if (!p->f[j].suppressed && !p->f[j].merged_into &&
		    !p->f[j].baselined)
			put_finding(o, &p->f[j], merge);
}

static void put_proc_summary(FILE *o, const struct proc *p, bool notes)
{
	char prefix[32];

	put_proc_notes(o, p, notes);
	proc_prefix(prefix, sizeof(prefix), p);
	put_summary(o, prefix, &p->sum, "");
}

/*
 * Unmerged, each process's blocks are followed by its summary line, as
 * the shim prints them; merged blocks span processes, so all the
 * summary lines come after them.
 */
void output_text(FILE *o, bool merge, bool summary_only)
{
	char used[8192];
	size_t i;

	for (i = 0; i < nprocs; i++) {
		if (!summary_only)
			put_proc_findings(o, &procs[i], merge);
		if (!merge)
			put_proc_summary(o, &procs[i], !summary_only);
	}
	if (!summary_only && rc_suppress_format_used(used, sizeof(used), ""))
		fputs(used, o);
	for (i = 0; merge && i < nprocs; i++)
		put_proc_summary(o, &procs[i], !summary_only);
	put_total(o, count_unique(), merge);
}

