/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * model.c - rdmacheck-report: the report model: procs, findings, stacks,
 * objects and their strings, built from a report's JSON (format 1 and 2),
 * loaded in parallel, and freed.
 */
#include "report_tool.h"

struct proc *procs;
size_t nprocs, cap_procs;

/*
 * Typed field access with errors that name the file and the field: the
 * path to it ("findings[2].stack[0]"), formatted only for an error.
 */

void strtab_free(struct strtab *t)
{
	free(t->tab);
	free(t->tmp);
	memset(t, 0, sizeof(*t));
}

static void ctx_where(const struct ctx *c, char *w, size_t len)
{
	unsigned i;
	size_t l;

	w[0] = '\0';
	for (i = 0; i < c->depth; i++) {
		l = strlen(w);
		if (c->idx[i] >= 0)
			snprintf(w + l, len - l, "%s%s[%ld]", l ? "." : "",
				 c->key[i], c->idx[i]);
		else
			snprintf(w + l, len - l, "%s%s", l ? "." : "",
				 c->key[i]);
	}
}

/*
 * Findings are converted while the rest of the file is still to be
 * parsed, but a bad one must be reported as if after the fields that come
 * before it: bad_field() then leaves its message here and jumps back.
 */
__thread jmp_buf *field_catch;
static __thread char field_msg[PATH_MAX + 256]; /* the path, and more */

void __attribute__((noreturn))
bad_field(const struct ctx *c, const char *key, const char *what)
{
	char where[160];

	ctx_where(c, where, sizeof(where));
	if (field_catch) {
		snprintf(field_msg, sizeof(field_msg), "%s: %s%s%s: %s",
			 c->path, where, *where && *key ? "." : "", key, what);
		longjmp(*field_catch, 1);
	}
	die("%s: %s%s%s: %s", c->path, where, *where && *key ? "." : "", key,
	    what);
}

static enum jtype jtype_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return J_OBJ;
	case JSON_ARRAY:
		return J_ARR;
	case JSON_STRING:
		return J_STR;
	case JSON_INTEGER:
	case JSON_REAL:
		return J_NUM;
	case JSON_TRUE:
	case JSON_FALSE:
		return J_BOOL;
	default:
		return J_NULL;
	}
}

const json_t *field(const struct ctx *c, const json_t *o,
			   const char *key, enum jtype t, bool required,
			   bool nullable)
{
	static const char *const tname[] = {
		[J_NULL] = "null", [J_BOOL] = "a boolean",
		[J_NUM] = "a number", [J_STR] = "a string",
		[J_ARR] = "an array", [J_OBJ] = "an object",
	};
	const json_t *v = json_object_get(o, key);
	char msg[64];

	if (!v) {
		if (required)
			bad_field(c, key, "missing");
		return NULL;
	}
	if (json_is_null(v) && nullable)
		return NULL;
	if (jtype_of(v) != t) {
		snprintf(msg, sizeof(msg), "expected %s%s, got %s", tname[t],
			 nullable ? " or null" : "", tname[jtype_of(v)]);
		bad_field(c, key, msg);
	}
	return v;
}

/* Copied into the model (c->arena). */
const char *get_str(const struct ctx *c, const json_t *o,
			   const char *key, bool required, bool nullable)
{
	const json_t *v = field(c, o, key, J_STR, required, nullable);

	return v ? jd_str(c->arena, v) : NULL;
}

/* A string that repeats: copied into the model once. */
static const char *get_name(const struct ctx *c, const json_t *o,
			    const char *key)
{
	const json_t *v = field(c, o, key, J_STR, false, true);
	struct strtab *t = c->names;
	size_t len, h, i;

	if (!v)
		return NULL;
	len = json_string_length(v);
	if (len >= t->tmp_cap) {
		t->tmp_cap = len + 64;
		t->tmp = xrealloc(t->tmp, t->tmp_cap, 1);
	}
	jd_decode(v, t->tmp);
	if (2 * (t->n + 1) > t->cap) {
		const char **old = t->tab;
		size_t oldcap = t->cap;

		t->cap = t->cap ? 2 * t->cap : 1024;
		t->tab = xcalloc(t->cap, sizeof(*t->tab));
		for (i = 0; i < oldcap; i++) {
			if (!old[i])
				continue;
			for (h = hash_text(old[i]) & (t->cap - 1); t->tab[h];
			     h = (h + 1) & (t->cap - 1))
				;
			t->tab[h] = old[i];
		}
		free(old);
	}
	for (h = hash_text(t->tmp) & (t->cap - 1); t->tab[h];
	     h = (h + 1) & (t->cap - 1))
		if (!strcmp(t->tab[h], t->tmp))
			return t->tab[h];
	t->n++;
	return t->tab[h] = astrdup(c->arena, t->tmp);
}

static long long get_int(const struct ctx *c, const json_t *o,
			 const char *key, bool required, bool nullable,
			 long long min, long long max)
{
	const json_t *v = field(c, o, key, J_NUM, required, nullable);
	json_int_t i;

	if (!v)
		return 0;
	if (!json_is_integer(v))
		bad_field(c, key, "expected an integer");
	i = json_integer_value(v);
	if (i < min || i > max)
		bad_field(c, key, "integer out of range");
	return i;
}

static bool get_bool(const struct ctx *c, const json_t *o,
		     const char *key, bool required)
{
	return json_is_true(field(c, o, key, J_BOOL, required, false));
}

/* "0x..." as the shim writes pc, offset and handle. */
static uintptr_t get_hex(const struct ctx *c, const json_t *o,
			 const char *key, bool required, bool *present)
{
	const json_t *v = field(c, o, key, J_STR, required, true);
	const char *s = v ? json_string_value(v) : NULL;
	uintptr_t x = 0;
	size_t i;

	if (present)
		*present = s != NULL;
	if (!s)
		return 0;
	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2] ||
	    strlen(s + 2) > sizeof(x) * 2)
		bad_field(c, key, "expected a \"0x...\" hex string");
	for (i = 2; s[i]; i++) {
		int h = hexval((unsigned char)s[i]);

		if (h < 0)
			bad_field(c, key, "expected a \"0x...\" hex string");
		x = x << 4 | (unsigned)h;
	}
	return x;
}

void ctx_push(struct ctx *c, size_t *mark, const char *key, long idx)
{
	*mark = c->depth;
	if (c->depth == CTX_DEPTH)
		die("%s: nested too deep", c->path);
	c->key[c->depth] = key;
	c->idx[c->depth++] = idx;
}

static void ctx_pop(struct ctx *c, size_t mark)
{
	c->depth = mark;
}

static void load_frame(struct ctx *c, const json_t *fo, struct frame *fr)
{
	if (!json_is_object(fo))
		bad_field(c, "", "expected an object");
	fr->pc = get_hex(c, fo, "pc", true, NULL);
	fr->module = get_name(c, fo, "module");
	fr->offset = get_hex(c, fo, "offset", false, &fr->has_offset);
	fr->function = get_name(c, fo, "function");
	fr->file = get_name(c, fo, "file");
	fr->line = (unsigned)get_int(c, fo, "line", false, true, 0, UINT_MAX);
}

/*
 * A stack's elements are frame objects (format 1) or indices into the
 * top-level "frames" (format 2), which then comes before "findings": a
 * stack is copied out of it, so that the model is the same for both.
 */
static void load_stack(struct ctx *c, const json_t *o, const char *key,
		       struct stack *st)
{
	const json_t *a = field(c, o, key, J_ARR, false, true);
	size_t i, mark;

	st->n = 0;
	st->f = NULL;
	if (!a)
		return;
	st->f = aalloc(c->arena, json_array_size(a), sizeof(*st->f));
	for (i = 0; i < json_array_size(a); i++) {
		const json_t *fo = json_array_get(a, i);
		json_int_t idx;

		ctx_push(c, &mark, key, (long)i);
		if (!json_is_integer(fo)) {
			load_frame(c, fo, &st->f[i]);
			ctx_pop(c, mark);
			continue;
		}
		if (!c->frames)
			bad_field(c, "", "a frame index without \"frames\" "
				  "before \"findings\"");
		idx = json_integer_value(fo);
		if (idx < 0 || (uintmax_t)idx >= c->nframes)
			bad_field(c, "", "frame index out of range");
		st->f[i] = c->frames[idx];
		ctx_pop(c, mark);
	}
	st->n = json_array_size(a);
}

/* The formats this reader knows ("format" absent: 1). */
#define RR_FORMAT_MAX 2

static void check_format(struct ctx *c, const json_t *root)
{
	long long v = get_int(c, root, "format", false, true, 1, LLONG_MAX);

	if (v > RR_FORMAT_MAX)
		bad_field(c, "format", "newer than this rdmacheck-report "
			  "reads (1 or 2)");
}

/* The top-level "frames" of a format-2 report, when there is one. */
static void load_frames(struct ctx *c, const json_t *root)
{
	const json_t *a = field(c, root, "frames", J_ARR, false, true);
	struct frame *fs;
	size_t i, mark;

	if (!a)
		return;
	fs = aalloc(c->arena, json_array_size(a) + 1, sizeof(*fs));
	for (i = 0; i < json_array_size(a); i++) {
		ctx_push(c, &mark, "frames", (long)i);
		load_frame(c, json_array_get(a, i), &fs[i]);
		ctx_pop(c, mark);
	}
	c->frames = fs;
	c->nframes = json_array_size(a);
}

static enum rc_severity parse_sev(const struct ctx *c, const char *s)
{
	if (!strcmp(s, "error"))
		return RC_SEV_ERROR;
	if (!strcmp(s, "warning"))
		return RC_SEV_WARNING;
	if (!strcmp(s, "leak"))
		return RC_SEV_LEAK;
	bad_field(c, "severity", "expected \"error\", \"warning\" or \"leak\"");
}

static int rule_index(const char *id)
{
	int r;

	for (r = 0; r < RC_R_COUNT; r++)
		if (!strcmp(rc_rules[r].id, id))
			return r;
	return -1;
}

/* f: the finding, whose stack is loaded; "stack_ref": "finding" names it. */
static void load_object(struct ctx *c, const json_t *o, struct object *ob,
			const struct finding *f)
{
	const char *ref;
	const json_t *cr, *de;
	size_t mark;

	if (!json_is_object(o))
		bad_field(c, "", "expected an object");
	field(c, o, "kind", J_STR, true, false);
	ob->kind = get_name(c, o, "kind");
	ob->handle = get_str(c, o, "handle", true, false);
	get_hex(c, o, "handle", true, NULL);
	ob->note = get_str(c, o, "note", false, true);
	cr = field(c, o, "created", J_OBJ, false, true);
	de = field(c, o, "destroyed", J_OBJ, false, true);
	if (cr) {
		ctx_push(c, &mark, "created", -1);
		ob->created = true;
		ob->created_tid = get_int(c, cr, "thread", false, true, 0,
					  INT_MAX);
		load_stack(c, cr, "stack", &ob->cstack);
		ref = get_str(c, cr, "stack_ref", false, true);
		if (ref && strcmp(ref, "finding"))
			bad_field(c, "stack_ref", "expected \"finding\"");
		if (ref && ob->cstack.n)
			bad_field(c, "stack_ref", "with a non-empty stack");
		if (ref)
			ob->cstack = f->stack;
		ctx_pop(c, mark);
	}
	if (de) {
		ctx_push(c, &mark, "destroyed", -1);
		ob->destroyed = true;
		ob->destroyed_tid = get_int(c, de, "thread", false, true, 0,
					    INT_MAX);
		load_stack(c, de, "stack", &ob->dstack);
		ctx_pop(c, mark);
	}
}

static void load_finding(struct ctx *c, const json_t *o, struct finding *f)
{
	const json_t *a;
	size_t i, mark;

	if (!json_is_object(o))
		bad_field(c, "", "expected an object");
	f->rule = get_str(c, o, "rule", true, false);
	if (!*f->rule)
		bad_field(c, "rule", "empty rule id");
	f->rule_idx = rule_index(f->rule);
	f->sev = parse_sev(c, get_str(c, o, "severity", true, false));
	f->call = get_str(c, o, "call", false, true);
	f->message = get_str(c, o, "message", true, false);
	f->count = (unsigned long long)get_int(c, o, "count", false, false,
					       1, LLONG_MAX);
	if (!f->count)
		f->count = 1;
	f->suppressed = get_bool(c, o, "suppressed", false);
	f->fingerprint = get_str(c, o, "fingerprint", false, true);
	if (f->fingerprint && !*f->fingerprint)
		bad_field(c, "fingerprint", "empty fingerprint");
	f->thread = get_int(c, o, "thread", false, true, 0, INT_MAX);
	f->more_objects = (unsigned long long)get_int(c, o, "more_objects",
						      false, true, 0,
						      LLONG_MAX);
	load_stack(c, o, "stack", &f->stack);
	/* Its first frame is where the signal struck, not a return address. */
	if (f->rule_idx == RC_R_FATAL_SIGNAL && f->stack.n)
		f->stack.f[0].exact = true;
	a = field(c, o, "objects", J_ARR, false, true);
	if (a) {
		f->nobjs = json_array_size(a);
		f->objs = aalloc(c->arena, f->nobjs, sizeof(*f->objs));
		for (i = 0; i < f->nobjs; i++) {
			ctx_push(c, &mark, "objects", (long)i);
			load_object(c, json_array_get(a, i), &f->objs[i], f);
			ctx_pop(c, mark);
		}
	}
}

static void load_summary(struct ctx *c, const json_t *o, struct summary *s)
{
	const json_t *so = field(c, o, "summary", J_OBJ, true, false);
	size_t mark;

	ctx_push(c, &mark, "summary", -1);
	s->errors = (unsigned long long)get_int(c, so, "errors", true, false,
						0, LLONG_MAX);
	s->warnings = (unsigned long long)get_int(c, so, "warnings", true,
						  false, 0, LLONG_MAX);
	s->leaks = (unsigned long long)get_int(c, so, "leaks", true, false, 0,
					       LLONG_MAX);
	s->suppressed = (unsigned long long)get_int(c, so, "suppressed", true,
						    false, 0, LLONG_MAX);
	ctx_pop(c, mark);
}

static void raise_to(unsigned long long *n, unsigned long long min)
{
	if (*n < min)
		*n = min;
}

/*
 * The summary also counts findings the shim did not keep, so it is the
 * base; but it never says less than the kept findings do, so that an
 * edited or inconsistent report cannot pass the gate.
 */
static void fix_summary(struct proc *p)
{
	struct summary kept = { 0 };
	size_t i;

	for (i = 0; i < p->nf; i++) {
		const struct finding *f = &p->f[i];

		if (f->suppressed)
			kept.suppressed += f->sev == RC_SEV_LEAK ? f->count : 1;
		else if (f->sev == RC_SEV_ERROR)
			kept.errors++;
		else if (f->sev == RC_SEV_WARNING)
			kept.warnings++;
		else
			kept.leaks += f->count;
	}
	raise_to(&p->sum.errors, kept.errors);
	raise_to(&p->sum.warnings, kept.warnings);
	raise_to(&p->sum.leaks, kept.leaks);
	raise_to(&p->sum.suppressed, kept.suppressed);
}

/* The whole file; sized by fstat() when it can, so never grown. */
char *read_file(const char *path, size_t *len)
{
	bool is_stdin = !strcmp(path, "-");
	FILE *fp = is_stdin ? stdin : fopen(path, "rb");
	size_t cap = 65536, n = 0, r;
	struct stat st;
	char *buf;

	if (!fp)
		die("%s: cannot open: %s", path, strerror(errno));
	if (!fstat(fileno(fp), &st) && S_ISREG(st.st_mode) &&
	    st.st_size >= 0 && (uintmax_t)st.st_size < RR_MAX_FILE &&
	    (size_t)st.st_size >= cap)
		cap = (size_t)st.st_size + 1;
	buf = xrealloc(NULL, cap, 1);
	huge_pages(buf, cap);
	while ((r = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += r;
		if (n >= RR_MAX_FILE)
			die("%s: larger than %u bytes", path, RR_MAX_FILE);
		if (n == cap) {
			cap = cap < RR_MAX_FILE / 2 ? 2 * cap : RR_MAX_FILE;
			buf = xrealloc(buf, cap, 1);
			huge_pages(buf, cap);
		}
	}
	if (ferror(fp))
		die("%s: read error: %s", path, strerror(errno));
	if (!is_stdin)
		fclose(fp);
	*len = n;
	return buf;
}

/* One finding's tree at a time; the first error is kept for later. */
struct loading {
	struct proc *p;
	const struct jdoc *jd;	/* its top level so far */
	bool started;		/* "format" and "frames" looked at */
	const struct frame *frames;
	size_t nframes;
	bool failed;
	char msg[sizeof(field_msg)];
};

/* What the findings need from the top level before them. */
static void load_start(struct loading *l)
{
	struct ctx c = { .path = l->p->path, .arena = &l->p->arena,
			 .names = l->p->names };

	l->started = true;
	check_format(&c, l->jd->root);
	load_frames(&c, l->jd->root);
	l->frames = c.frames;
	l->nframes = c.nframes;
}

static void stream_finding(void *arg, json_t *o, size_t i)
{
	struct loading *l = arg;
	struct proc *p = l->p;
	struct ctx c = { .path = p->path, .arena = &p->arena,
			 .names = p->names };
	size_t mark;
	jmp_buf jb;

	if (l->failed)
		return;
	if (p->nf == p->cap_f) {
		p->cap_f = p->cap_f ? 2 * p->cap_f : 64;
		p->f = xrealloc(p->f, p->cap_f, sizeof(*p->f));
	}
	memset(&p->f[p->nf], 0, sizeof(p->f[p->nf]));
	ctx_push(&c, &mark, "findings", (long)i);
	if (setjmp(jb)) {
		field_catch = NULL;
		l->failed = true;
		memcpy(l->msg, field_msg, sizeof(l->msg));
		return;
	}
	field_catch = &jb;
	if (!l->started)
		load_start(l);
	c.frames = l->frames;
	c.nframes = l->nframes;
	load_finding(&c, o, &p->f[p->nf]);
	field_catch = NULL;
	p->nf++;
}

/* The report in buf[0..len), a buffer from malloc(), as process *p. */
static void load_into(struct proc *p, const char *path, char *buf,
		      size_t len)
{
	struct ctx c = { .path = path };
	struct loading l = { 0 };
	struct jdoc jd = {
		.path = path,
		.finding = stream_finding,
		.arg = &l,
		.bump = true,
	};
	const json_t *argv, *mods, *root;
	const char *tool;
	size_t i, mark;

	memset(p, 0, sizeof(*p));
	p->path = path;
	p->buf = buf;
	l.p = p;
	c.arena = &p->arena;
	c.names = p->names = xcalloc(1, sizeof(*p->names));
	l.jd = &jd;
	jd_load(&jd, buf, len);
	/* The model holds copies: the file and its tree can go. */
	free(p->buf);
	p->buf = NULL;
	root = p->root = jd.root;
	tool = get_str(&c, root, "tool", true, false);
	if (strcmp(tool, "rdmacheck"))
		bad_field(&c, "tool", "not an rdmacheck report");
	/* Also when no finding came (or "frames" came after them). */
	check_format(&c, root);
	if (!l.started)
		load_frames(&c, root);

	p->pid = get_int(&c, root, "pid", true, false, 0, INT_MAX);
	p->exe = get_str(&c, root, "exe", false, true);
	argv = field(&c, root, "argv", J_ARR, false, true);
	if (argv) {
		p->argc = json_array_size(argv);
		p->argv = aalloc(&p->arena, p->argc, sizeof(*p->argv));
		for (i = 0; i < p->argc; i++) {
			const json_t *s = json_array_get(argv, i);

			ctx_push(&c, &mark, "argv", (long)i);
			if (!json_is_string(s))
				bad_field(&c, "", "expected a string");
			p->argv[i] = jd_str(&p->arena, s);
			ctx_pop(&c, mark);
		}
	}
	p->status = get_str(&c, root, "status", true, false);
	if (strcmp(p->status, "exited") && strcmp(p->status, "crashed") &&
	    strcmp(p->status, "snapshot") && strcmp(p->status, "killed"))
		bad_field(&c, "status", "expected \"exited\", \"crashed\", "
			  "\"snapshot\" or \"killed\"");
	if (!strcmp(p->status, "killed") || !strcmp(p->status, "crashed"))
		p->signal = (int)get_int(&c, root, "signal", false, true, 0,
					 255);
	p->halted = get_bool(&c, root, "halted", false);
	p->host = get_str(&c, root, "host", false, true);
	p->start_time = get_str(&c, root, "start_time", false, true);
	p->end_time = get_str(&c, root, "end_time", false, true);
	mods = field(&c, root, "modules", J_ARR, false, true);
	if (mods) {
		p->nmods = json_array_size(mods);
		p->mods = aalloc(&p->arena, p->nmods, sizeof(*p->mods));
		for (i = 0; i < p->nmods; i++) {
			const json_t *m = json_array_get(mods, i);

			ctx_push(&c, &mark, "modules", (long)i);
			if (!json_is_object(m))
				bad_field(&c, "", "expected an object");
			p->mods[i].path = get_str(&c, m, "path", true, false);
			p->mods[i].build_id = get_str(&c, m, "build_id",
						      false, true);
			ctx_pop(&c, mark);
		}
	}
	p->dropped = (unsigned long long)get_int(&c, root, "findings_dropped",
						 false, true, 0, LLONG_MAX);
	load_summary(&c, root, &p->sum);
	/* Streamed: only its type is checked here, where it always was. */
	field(&c, root, "findings", J_ARR, true, false);
	if (l.failed)
		die("%s", l.msg);
	json_decref(p->root);
	p->root = NULL;
	strtab_free(p->names);
	free(p->names);
	p->names = NULL;
	fix_summary(p);
	/* Findings point back at their process once procs stops moving. */
}

/* The next process's report, in buf[0..len). */
void load_report_buf(const char *path, char *buf, size_t len)
{
	if (nprocs == cap_procs) {
		cap_procs = cap_procs ? 2 * cap_procs : 16;
		procs = xrealloc(procs, cap_procs, sizeof(*procs));
	}
	/* Counted at once, so that free_reports() finds it after an error. */
	load_into(&procs[nprocs++], path, buf, len);
}

void load_report(const char *path)
{
	size_t len;
	char *buf = read_file(path, &len);

	load_report_buf(path, buf, len);
}

/*
 * Loading many reports: each thread takes the next input, loads it into
 * its slot of procs[] and keeps die()'s message when it fails; the first
 * input that failed is reported once all are done, as if they had been
 * loaded one after the other.
 */
#define LOAD_THREADS 8

struct batch {
	char **paths;
	size_t n, next;		/* next is taken atomically */
	char **errs;		/* per input: why it failed, or NULL */
};

static void load_one(struct batch *b, size_t i)
{
	jmp_buf jb;
	size_t len;
	char *buf;

	if (setjmp(jb)) {
		die_catch = NULL;
		field_catch = NULL;
		b->errs[i] = strdup(die_msg);
		if (!b->errs[i])
			b->errs[i] = (char *)"out of memory";
		return;
	}
	die_catch = &jb;
	buf = read_file(b->paths[i], &len);
	load_into(&procs[i], b->paths[i], buf, len);
	die_catch = NULL;
}

static void *load_thread(void *arg)
{
	struct batch *b = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED)) < b->n)
		load_one(b, i);
	jbump_release();
	return NULL;
}

/*
 * Regular files load in parallel, on as many threads as there are CPUs;
 * anything else (standard input, a pipe) in order, in this thread.
 */
void load_all(char **paths, size_t n)
{
	pthread_t tid[LOAD_THREADS];
	struct batch b = { .paths = paths, .n = n };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nthreads = n, started = 0, i;
	struct stat st;

	if (ncpu > 0 && nthreads > (size_t)ncpu)
		nthreads = (size_t)ncpu;
	if (nthreads > LOAD_THREADS)
		nthreads = LOAD_THREADS;
	for (i = 0; i < n && nthreads > 1; i++)
		if (!strcmp(paths[i], "-") || stat(paths[i], &st) ||
		    !S_ISREG(st.st_mode))
			nthreads = 1;
	if (nthreads <= 1) {
		for (i = 0; i < n; i++)
			load_report(paths[i]);
		return;
	}
	procs = xcalloc(n, sizeof(*procs));
	nprocs = cap_procs = n;
	b.errs = xcalloc(n, sizeof(*b.errs));
	/* This thread is one of them. */
	while (started + 1 < nthreads &&
	       !pthread_create(&tid[started], NULL, load_thread, &b))
		started++;
	load_thread(&b);
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < n; i++)
		if (b.errs[i])
			die("%s", b.errs[i]);
	free(b.errs);
}

