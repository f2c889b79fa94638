/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * formats.c - rdmacheck-report's outputs for CI systems, from the
 * model (report_tool.h): JUnit XML, SARIF 2.1.0, GitHub workflow
 * annotations and --gen-suppressions.  Text and JSON are text.c's and
 * json_write.c's.
 *
 * Each shows what the text report shows: unsuppressed findings that are
 * not in the baseline; SARIF also lists suppressed and baselined ones,
 * marked as such, since code-scanning services track them.  A process a
 * signal ended fails in each (proc_died): its testcase, an annotation of
 * its own unless a fatal-signal finding shows the crash, the SARIF
 * invocation's executionSuccessful.
 */
#include "report_tool.h"
static bool shown(const struct finding *f)
{
	return !f->suppressed && !f->baselined && !f->merged_into;
}

/* The first frame that names a source file, or NULL. */
static const struct frame *source_frame(const struct stack *st)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (st->f[i].file && *st->f[i].file)
			return &st->f[i];
	return NULL;
}

/* A finding's text block, as the text format prints it, in memory. */
static char *finding_text(const struct finding *f, bool merged)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		die("out of memory");
	put_finding(m, f, merged);
	if (fclose(m))
		die("out of memory");
	return buf;
}

/* ---- JUnit XML --------------------------------------------------------- */

/*
 * XML 1.0 text: markup characters escaped; bytes that are not valid
 * UTF-8, control characters but tab and newline, and U+FFFE/U+FFFF
 * become '?', so that any report makes a well-formed document.
 */
static void put_xml(FILE *o, const char *s, bool attr)
{
	const unsigned char *p = (const unsigned char *)s, *end;
	size_t l;

	end = p + strlen(s);
	while (p < end) {
		switch (*p) {
		case '<': fputs("&lt;", o); p++; continue;
		case '>': fputs("&gt;", o); p++; continue;
		case '&': fputs("&amp;", o); p++; continue;
		case '"': fputs(attr ? "&quot;" : "\"", o); p++; continue;
		case '\n': fputs(attr ? "&#10;" : "\n", o); p++; continue;
		case '\t': fputs(attr ? "&#9;" : "\t", o); p++; continue;
		}
		if (*p < 0x20 || *p == 0x7f) {
			fputc('?', o);
			p++;
			continue;
		}
		l = utf8_len(p, end);
		if (!l || (l == 3 && p[0] == 0xef && p[1] == 0xbf &&
			   p[2] >= 0xbe)) {
			fputc('?', o);
			p += l ? l : 1;
			continue;
		}
		fwrite(p, 1, l, o);
		p += l;
	}
}

static const char *base_of(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path ? path : "unknown";
}

static bool failing(const struct finding *f)
{
	return f->sev != RC_SEV_WARNING;
}

/* The text of each of a process's findings that still counts, escaped. */
static void put_proc_texts(FILE *o, const struct proc *p)
{
	size_t j;

	for (j = 0; j < p->nf; j++) {
		char *t;

		if (p->f[j].suppressed || p->f[j].baselined)
			continue;
		t = finding_text(&p->f[j], false);
		put_xml(o, t, false);
		free(t);
	}
}

static const char *exe_of(const struct proc *p)
{
	return base_of(p->exe ? p->exe : p->argc ? p->argv[0] : NULL);
}

static bool proc_failing(const struct proc *p)
{
	return p->sum.errors || p->sum.leaks || proc_died(p);
}

/*
 * One testcase per process: it fails when errors or leaks remain, or
 * when a signal ended the process.
 */
static void junit_proc(FILE *o, const struct proc *p)
{
	const char *exe = exe_of(p);
	char msg[320], died[160];
	int n;

	fputs("    <testcase classname=\"rdmacheck.", o);
	put_xml(o, exe, true);
	fputs("\" name=\"", o);
	put_xml(o, exe, true);
	fprintf(o, " (pid %lld)\">\n", p->pid);
	if (proc_failing(p)) {
		n = snprintf(msg, sizeof(msg),
			     "%llu errors, %llu warnings, %llu leaked objects",
			     p->sum.errors, p->sum.warnings, p->sum.leaks);
		if (proc_died(p)) {
			died_text(p, died, sizeof(died));
			snprintf(msg + n, sizeof(msg) - (size_t)n, "; %s",
				 died);
		}
		fputs("      <failure type=\"rdmacheck\" message=\"", o);
		put_xml(o, msg, true);
		fputs("\">", o);
		put_proc_texts(o, p);
		fputs("</failure>\n", o);
	} else if (p->sum.warnings) {
		fputs("      <system-out>", o);
		put_proc_texts(o, p);
		fputs("</system-out>\n", o);
	}
	fputs("    </testcase>\n", o);
}

/* Merged: one testcase per finding group. */
static void junit_group(FILE *o, const struct finding *f)
{
	char *t = finding_text(f, true);

	fputs("    <testcase classname=\"rdmacheck.", o);
	put_xml(o, f->rule, true);
	fputs("\" name=\"", o);
	put_xml(o, f->message, true);
	fputs("\">\n", o);
	if (failing(f)) {
		fputs("      <failure type=\"", o);
		put_xml(o, f->rule, true);
		fputs("\" message=\"", o);
		put_xml(o, f->message, true);
		fputs("\">", o);
		put_xml(o, t, false);
		fputs("</failure>\n", o);
	} else {
		fputs("      <system-out>", o);
		put_xml(o, t, false);
		fputs("</system-out>\n", o);
	}
	fputs("    </testcase>\n", o);
	free(t);
}

/* Merged: a process a signal ended, when no finding shows it. */
static bool died_unshown(const struct proc *p)
{
	return proc_died(p) &&
	       !(!strcmp(p->status, "crashed") && crash_shown(p));
}

static void junit_died(FILE *o, const struct proc *p)
{
	char died[160];

	died_text(p, died, sizeof(died));
	fputs("    <testcase classname=\"rdmacheck.", o);
	put_xml(o, p->status, true);
	fputs("\" name=\"", o);
	put_xml(o, exe_of(p), true);
	fprintf(o, " (pid %lld)\">\n", p->pid);
	fputs("      <failure type=\"rdmacheck\" message=\"", o);
	put_xml(o, died, true);
	fputs("\"/>\n    </testcase>\n", o);
}

void output_junit(FILE *o, bool merge)
{
	size_t tests = 0, failures = 0, i, j;

	for (i = 0; i < nprocs; i++) {
		if (!merge) {
			tests++;
			failures += proc_failing(&procs[i]);
			continue;
		}
		for (j = 0; j < procs[i].nf; j++)
			if (shown(&procs[i].f[j])) {
				tests++;
				failures += failing(&procs[i].f[j]);
			}
		tests += died_unshown(&procs[i]);
		failures += died_unshown(&procs[i]);
	}
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", o);
	fprintf(o, "<testsuites name=\"rdmacheck\" tests=\"%zu\" failures=\"%zu\" errors=\"0\">\n",
		tests + (merge && !tests), failures);
	fprintf(o, "  <testsuite name=\"rdmacheck\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"0\">\n",
		tests + (merge && !tests), failures);
	for (i = 0; i < nprocs; i++) {
		if (!merge) {
			junit_proc(o, &procs[i]);
			continue;
		}
		for (j = 0; j < procs[i].nf; j++)
			if (shown(&procs[i].f[j]))
				junit_group(o, &procs[i].f[j]);
		if (died_unshown(&procs[i]))
			junit_died(o, &procs[i]);
	}
	if (merge && !tests)
		fprintf(o, "    <testcase classname=\"rdmacheck\" name=\"no findings in %zu process%s\"/>\n",
			nprocs, nprocs == 1 ? "" : "es");
	fputs("  </testsuite>\n</testsuites>\n", o);
}

/* ---- GitHub workflow annotations --------------------------------------- */

/* Workflow command data: '%', CR and LF escaped; properties also ':'
 * and ','. */
static void put_gh(FILE *o, const char *s, bool prop)
{
	for (; *s; s++) {
		if (*s == '%')
			fputs("%25", o);
		else if (*s == '\r')
			fputs("%0D", o);
		else if (*s == '\n')
			fputs("%0A", o);
		else if (prop && *s == ':')
			fputs("%3A", o);
		else if (prop && *s == ',')
			fputs("%2C", o);
		else
			fputc(*s, o);
	}
}

static void github_finding(FILE *o, const struct finding *f, bool merged)
{
	const struct frame *sf = source_frame(&f->stack);
	char *t = finding_text(f, merged);
	size_t l = strlen(t);

	fputs(f->sev == RC_SEV_WARNING ? "::warning " : "::error ", o);
	if (sf) {
		fputs("file=", o);
		put_gh(o, show_path(sf->file), true);
		if (sf->line)
			fprintf(o, ",line=%u", sf->line);
		fputc(',', o);
	}
	fputs("title=", o);
	put_gh(o, "rdmacheck ", true);
	put_gh(o, f->rule, true);
	fputs("::", o);
	/* The block without its final blank line. */
	while (l && t[l - 1] == '\n')
		t[--l] = '\0';
	put_gh(o, t, false);
	fputc('\n', o);
	free(t);
}

void output_github(FILE *o, bool merge)
{
	char died[160], line[256];
	size_t i, j;

	for (i = 0; i < nprocs; i++) {
		for (j = 0; j < procs[i].nf; j++)
			if (shown(&procs[i].f[j]))
				github_finding(o, &procs[i].f[j], merge);
		if (!died_unshown(&procs[i]))
			continue;
		died_text(&procs[i], died, sizeof(died));
		snprintf(line, sizeof(line), "==%lld== rdmacheck: %s",
			 procs[i].pid, died);
		fputs("::error title=", o);
		put_gh(o, "rdmacheck ", true);
		put_gh(o, procs[i].status, true);
		fputs("::", o);
		put_gh(o, line, false);
		fputc('\n', o);
	}
	put_total(o, count_unique(), merge);
}

/* ---- SARIF 2.1.0 -------------------------------------------------------- */

/*
 * An artifact URI: an absolute path becomes file:///..., a relative one
 * (after --strip-path-prefix) stays relative to %SRCROOT%; bytes outside
 * RFC 3986's unreserved set and '/' are percent-encoded.
 */
static void put_uri(FILE *o, const char *path, bool dir)
{
	size_t l = strlen(path);
	const unsigned char *p = (const unsigned char *)path;

	fputs(*path == '/' ? "\"file://" : "\"", o);
	for (; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p))
			fputc(*p, o);
		else
			fprintf(o, "%%%02X", *p);
	}
	fputs(dir && l && path[l - 1] != '/' ? "/\"" : "\"", o);
}

static void sarif_artifact(FILE *o, const char *path)
{
	const char *shown_path = show_path(path);

	fputs("{\"uri\": ", o);
	put_uri(o, shown_path, false);
	if (*shown_path != '/')
		fputs(", \"uriBaseId\": \"SRCROOT\"", o);
	fputc('}', o);
}

/* A location object for a frame; message, when given, says what it is. */
static void sarif_location(FILE *o, const struct frame *fr, const char *msg,
			   long id)
{
	const char *sep = "";

	fputc('{', o);
	if (id >= 0) {
		fprintf(o, "\"id\": %ld", id);
		sep = ", ";
	}
	if (fr && fr->file && *fr->file) {
		fprintf(o, "%s\"physicalLocation\": {\"artifactLocation\": ",
			sep);
		sarif_artifact(o, fr->file);
		if (fr->line)
			fprintf(o, ", \"region\": {\"startLine\": %u}",
				fr->line);
		fputc('}', o);
		sep = ", ";
	}
	if (fr && fr->function) {
		fprintf(o, "%s\"logicalLocations\": [{\"name\": ", sep);
		put_jstr(o, fr->function);
		fputs(", \"kind\": \"function\"}]", o);
		sep = ", ";
	}
	if (msg) {
		fprintf(o, "%s\"message\": {\"text\": ", sep);
		put_jstr(o, msg);
		fputc('}', o);
	}
	fputc('}', o);
}

static void sarif_stack(FILE *o, const struct stack *st, const char *msg)
{
	size_t i;

	fputs("{\"message\": {\"text\": ", o);
	put_jstr(o, msg);
	fputs("}, \"frames\": [", o);
	for (i = 0; i < st->n; i++) {
		const struct frame *fr = &st->f[i];
		char where[PATH_MAX + 40];

		fputs(i ? ", {\"location\": " : "{\"location\": ", o);
		if (fr->module)
			snprintf(where, sizeof(where), "%s+0x%" PRIxPTR,
				 fr->module, fr->offset);
		else
			snprintf(where, sizeof(where), "0x%" PRIxPTR, fr->pc);
		sarif_location(o, fr, fr->function ? NULL : where, -1);
		if (fr->module) {
			fputs(", \"module\": ", o);
			put_jstr(o, fr->module);
		}
		fputc('}', o);
	}
	fputs("]}", o);
}

static const char *sarif_level(enum rc_severity sev)
{
	return sev == RC_SEV_WARNING ? "warning" : "error";
}

static void sarif_rules(FILE *o)
{
	int r;

	for (r = 0; r < RC_R_COUNT; r++) {
		const struct rc_rule_info *ri = &rc_rules[r];

		fputs(r ? ",\n        {\"id\": " : "\n        {\"id\": ", o);
		put_jstr(o, ri->id);
		fputs(", \"shortDescription\": {\"text\": ", o);
		put_jstr(o, ri->summary);
		fputs("}, \"help\": {\"text\": ", o);
		put_jstr(o, ri->summary);
		fprintf(o, "}, \"defaultConfiguration\": {\"level\": \"%s\"}, \"properties\": {\"severity\": \"%s\"}}",
			sarif_level(ri->severity),
			rc_severity_name(ri->severity));
	}
}

/* What one object's creation or destruction says. */
static void sarif_related(FILE *o, const struct object *ob, bool created,
			  long id)
{
	const struct stack *st = created ? &ob->cstack : &ob->dstack;
	long long tid = created ? ob->created_tid : ob->destroyed_tid;
	char msg[256];

	if (tid)
		snprintf(msg, sizeof(msg), "%s %s was %s here (thread %lld)",
			 kind_text(ob->kind), ob->handle,
			 created ? "created" : "destroyed", tid);
	else
		snprintf(msg, sizeof(msg), "%s %s was %s here",
			 kind_text(ob->kind), ob->handle,
			 created ? "created" : "destroyed");
	sarif_location(o, source_frame(st), msg, id);
}

static void sarif_result(FILE *o, const struct finding *f, bool first)
{
	const struct frame *sf = source_frame(&f->stack);
	const char *sep = "";
	long id = 0;
	size_t i;

	fputs(first ? "\n        {\"ruleId\": " : ",\n        {\"ruleId\": ",
	      o);
	put_jstr(o, f->rule);
	if (f->rule_idx >= 0)
		fprintf(o, ", \"ruleIndex\": %d", f->rule_idx);
	fprintf(o, ", \"level\": \"%s\", \"message\": {\"text\": ",
		sarif_level(f->sev));
	put_jstr(o, f->message);
	fputc('}', o);
	if (sf || f->stack.n) {
		fputs(",\n         \"locations\": [", o);
		sarif_location(o, sf ? sf : &f->stack.f[0], NULL, -1);
		fputc(']', o);
	}
	if (f->stack.n) {
		fputs(",\n         \"stacks\": [", o);
		sarif_stack(o, &f->stack, f->call ? f->call : f->rule);
		fputc(']', o);
	}
	if (f->nobjs) {
		fputs(",\n         \"relatedLocations\": [", o);
		for (i = 0; i < f->nobjs; i++) {
			const struct object *ob = &f->objs[i];

			if (ob->created) {
				fputs(sep, o);
				sarif_related(o, ob, true, id++);
				sep = ", ";
			}
			if (ob->destroyed) {
				fputs(sep, o);
				sarif_related(o, ob, false, id++);
				sep = ", ";
			}
		}
		fputc(']', o);
	}
	fputs(",\n         \"partialFingerprints\": {\"rdmacheck/v1\": ", o);
	put_jstr(o, f->fingerprint);
	fputc('}', o);
	if (f->nocc > 1)
		fprintf(o, ", \"occurrenceCount\": %zu", f->nocc);
	if (f->suppressed)
		fputs(", \"suppressions\": [{\"kind\": \"external\"}]", o);
	if (have_baseline)
		fprintf(o, ", \"baselineState\": \"%s\"",
			f->baselined ? "unchanged" : "new");
	fprintf(o, ", \"properties\": {\"count\": %llu, \"processes\": [",
		f->total);
	for (i = 0; i < f->nprocs; i++)
		fprintf(o, "%s%lld", i ? ", " : "", proc_at(f, i)->pid);
	fputs("]}}", o);
}

static void sarif_invocation(FILE *o, const struct proc *p, bool first)
{
	size_t j;

	fputs(first ? "\n        {" : ",\n        {", o);
	if (p->argc) {
		fputs("\"arguments\": [", o);
		for (j = 0; j < p->argc; j++) {
			if (j)
				fputs(", ", o);
			put_jstr(o, p->argv[j]);
		}
		fputs("], ", o);
	}
	fprintf(o, "\"executionSuccessful\": %s",
		proc_died(p) ? "false" : "true");
	if (proc_died(p) && (p->signal || !strcmp(p->status, "killed")))
		fprintf(o, ", \"exitSignalNumber\": %d", p->signal);
	if (proc_died(p) && rc_signal_name(p->signal))
		fprintf(o, ", \"exitSignalName\": \"%s\"",
			rc_signal_name(p->signal));
	fprintf(o, ", \"properties\": {\"pid\": %lld, \"status\": ", p->pid);
	put_jstr(o, p->status);
	fputs(", \"report\": ", o);
	put_jstr(o, p->path);
	fputs("}}", o);
}

void output_sarif(FILE *o)
{
	bool first = true;
	size_t i, j;

	fputs("{\n  \"$schema\": \"https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json\",\n"
	      "  \"version\": \"2.1.0\",\n  \"runs\": [{\n"
	      "    \"tool\": {\"driver\": {\"name\": \"rdmacheck\", ", o);
	fputs("\"version\": ", o);
	put_jstr(o, PACKAGE_VERSION);
	fputs(", \"rules\": [", o);
	sarif_rules(o);
	fputs("]}},\n", o);
	if (strip_prefix && *strip_prefix == '/') {
		/* What %SRCROOT% stands for: the prefix, as a directory. */
		fputs("    \"originalUriBaseIds\": {\"SRCROOT\": {\"uri\": ", o);
		put_uri(o, strip_prefix, true);
		fputs("}},\n", o);
	}
	fputs("    \"invocations\": [", o);
	for (i = 0; i < nprocs; i++)
		sarif_invocation(o, &procs[i], i == 0);
	fputs("],\n    \"results\": [", o);
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			const struct finding *f = &procs[i].f[j];

			if (f->merged_into)
				continue;
			sarif_result(o, f, first);
			first = false;
		}
	fputs("]\n  }]\n}\n", o);
}

/* ---- --gen-suppressions ------------------------------------------------ */

struct gen_entry {
	char *text;			/* "rule:pattern" */
	const struct finding *f;	/* the first it silences */
	size_t n, order;
};

static int cmp_gen(const void *a, const void *b)
{
	const struct gen_entry *x = a, *y = b;
	int c = strcmp(x->text, y->text);

	return c ? c : x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_gen_order(const void *a, const void *b)
{
	const struct gen_entry *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

/* A suppression file silencing every finding shown, one entry for each
 * distinct "rule:pattern", in the order the findings come. */
void output_gen_suppressions(FILE *o)
{
	struct rc_frame *frames = NULL;
	struct gen_entry *e = NULL;
	size_t n = 0, cap = 0, capf = 0, i, j, k, u;
	char buf[1024];

	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			const struct finding *f = &procs[i].f[j];

			if (!shown(f) || f->rule_idx < 0)
				continue;
			if (f->stack.n > capf) {
				capf = f->stack.n;
				frames = xrealloc(frames, capf,
						  sizeof(*frames));
			}
			for (k = 0; k < f->stack.n; k++) {
				memset(&frames[k], 0, sizeof(frames[k]));
				frames[k].module = f->stack.f[k].module;
				frames[k].function = f->stack.f[k].function;
			}
			if (!rc_suppress_suggest(buf, sizeof(buf),
						 (enum rc_rule)f->rule_idx,
						 f->call, frames,
						 (unsigned)f->stack.n))
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				e = xrealloc(e, cap, sizeof(*e));
			}
			e[n].text = astrdup(&names, buf);
			e[n].f = f;
			e[n].n = 1;
			e[n].order = n;
			n++;
		}
	if (n)
		qsort(e, n, sizeof(*e), cmp_gen);
	for (i = 0, u = 0; i < n; i++) {
		if (u && !strcmp(e[u - 1].text, e[i].text)) {
			e[u - 1].n++;
			continue;
		}
		e[u++] = e[i];
	}
	if (u)
		qsort(e, u, sizeof(*e), cmp_gen_order);
	fprintf(o, "# rdmacheck suppressions (rdmacheck-report --gen-suppressions): %zu entr%s for the findings of %zu process%s\n",
		u, u == 1 ? "y" : "ies", nprocs, nprocs == 1 ? "" : "es");
	for (i = 0; i < u; i++) {
		fputs("# ", o);
		put_safe(o, e[i].f->message);
		if (e[i].n > 1)
			fprintf(o, " (and %zu more)", e[i].n - 1);
		fputc('\n', o);
		put_safe(o, e[i].text);
		fputc('\n', o);
	}
	free(e);
	free(frames);
}
