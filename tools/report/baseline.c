/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * baseline.c - rdmacheck-report: baselines: reading one, marking the findings
 * it holds, writing the merged fingerprints.
 */
#include "report_tool.h"

/*
 * --baseline=OLD: the fingerprints of OLD's findings, a set of strings.
 * OLD is what rdmacheck-report --format=json wrote, or shim reports (a
 * file or a directory), loaded as inputs are and fingerprinted the same
 * way (crash reports too, once symbolized).
 */
static char **base_tab;		/* open addressing, at most half full */
static size_t base_cap, base_n;
bool have_baseline;

uint64_t hash_text(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

static bool baseline_has(const char *fp)
{
	size_t h;

	if (!base_cap)
		return false;
	for (h = hash_text(fp) & (base_cap - 1); base_tab[h];
	     h = (h + 1) & (base_cap - 1))
		if (!strcmp(base_tab[h], fp))
			return true;
	return false;
}

static void baseline_add(const char *fp)
{
	char **old = base_tab;
	size_t oldcap = base_cap, i, h;

	if (baseline_has(fp))
		return;
	if (2 * (base_n + 1) > base_cap) {
		base_cap = base_cap ? 2 * base_cap : 64;
		base_tab = xcalloc(base_cap, sizeof(*base_tab));
		for (i = 0; i < oldcap; i++)
			if (old[i])
				for (h = hash_text(old[i]) & (base_cap - 1);
				     ; h = (h + 1) & (base_cap - 1))
					if (!base_tab[h]) {
						base_tab[h] = old[i];
						break;
					}
		free(old);
	}
	for (h = hash_text(fp) & (base_cap - 1); base_tab[h];
	     h = (h + 1) & (base_cap - 1))
		;
	base_tab[h] = strdup(fp);
	if (!base_tab[h])
		die("out of memory");
	base_n++;
}

/*
 * rdmacheck-report's own JSON: every finding carries its fingerprint.
 * Known to be one only once "tool" is read, so the findings' fingerprints
 * are kept until then, and the first finding without one.
 */
struct merged_fps {
	json_t *fps, *bad;
	size_t bad_idx;
};

static void merged_finding(void *arg, json_t *o, size_t i)
{
	struct merged_fps *m = arg;
	json_t *fp = json_object_get(o, "fingerprint");

	if (json_is_string(fp) && json_string_length(fp)) {
		if (json_array_append(m->fps, fp))
			die("out of memory");
	} else if (!m->bad) {
		m->bad = json_incref(o);
		m->bad_idx = i;
	}
}

static bool baseline_merged(const char *path)
{
	struct arena a = { 0 };
	struct ctx c = { .path = path, .arena = &a };
	struct merged_fps m = { .fps = json_array() };
	struct jdoc jd = { .path = path, .finding = merged_finding, .arg = &m };
	const json_t *tool;
	size_t len, i, mark;
	char *buf;

	if (!m.fps)
		die("out of memory");
	buf = read_file(path, &len);
	jd_load(&jd, buf, len);
	free(buf);
	tool = json_object_get(jd.root, "tool");
	if (!json_is_string(tool) ||
	    strcmp(json_string_value(tool), "rdmacheck-report")) {
		json_decref(m.fps);
		json_decref(m.bad);
		json_decref(jd.root);
		return false;
	}
	field(&c, jd.root, "findings", J_ARR, true, false);
	if (m.bad) {
		ctx_push(&c, &mark, "findings", (long)m.bad_idx);
		get_str(&c, m.bad, "fingerprint", true, false);
		bad_field(&c, "fingerprint", "empty fingerprint");
	}
	for (i = 0; i < json_array_size(m.fps); i++)
		baseline_add(json_string_value(json_array_get(m.fps, i)));
	json_decref(m.fps);
	json_decref(jd.root);
	arena_free(&a);
	return true;
}

char **inputs;
size_t ninputs, cap_inputs;

/* Before the inputs are loaded: procs[] is free for the baseline's. */
void load_baseline(const char *path)
{
	struct stat st;
	size_t i, j;

	have_baseline = true;
	if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
		if (strcmp(path, "-") && baseline_merged(path))
			return;
		load_report(path);
	} else {
		add_dir(path);
		load_all(inputs, ninputs);
		for (i = 0; i < ninputs; i++)
			free(inputs[i]);
		ninputs = 0;
	}
	symbolize_all();
	fingerprint_all();
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++)
			baseline_add(procs[i].f[j].fingerprint);
	free_reports();
	free(procs);
	procs = NULL;
	cap_procs = 0;
}

void free_baseline(void)
{
	size_t i;

	for (i = 0; i < base_cap; i++)
		free(base_tab[i]);
	free(base_tab);
	base_tab = NULL;
	base_cap = base_n = 0;
}

/* Findings already in the baseline leave the counts, as suppressed do. */
void apply_baseline(void)
{
	size_t i, j;

	fingerprint_all();
	for (i = 0; have_baseline && i < nprocs; i++) {
		struct proc *p = &procs[i];

		for (j = 0; j < p->nf; j++) {
			struct finding *f = &p->f[j];

			if (f->suppressed || !baseline_has(f->fingerprint))
				continue;
			f->baselined = true;
			uncount(p, f);
			p->sum.baselined += weight(f);
		}
	}
}

