/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report_tool.h - what the parts of rdmacheck-report(1) share: the report
 * model (procs, findings, stacks, frames), the arenas, the JSON reader
 * state, and the functions and variables one part of tools/report/ uses
 * from another.  Internal to the tool (and tests/fuzz/fuzz_report.c).
 */
#ifndef RR_REPORT_TOOL_H
#define RR_REPORT_TOOL_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "symbolize/buildid.h"
#include "report/fingerprint.h"
#include "core/rdmacheck.h"
#include "report/report.h"
#include "core/rules.h"
#include "report/suppress.h"
#include "symbolize/symbolize.h"
#ifdef RR_HAVE_DWFL
#include "symbolize/dwfl.h"
#endif

#define RR_MAX_FILE (256u << 20)	/* bytes per report */
#define HUGE_PAGE (2u << 20)
#define CTX_DEPTH 8		/* findings[].objects[].created.stack[] */

struct chunk {
	struct chunk *next;
	size_t size, used;
	max_align_t data[];
};

struct arena {
	struct chunk *head;
	size_t next;		/* size of the next chunk */
};

/* What is held while the document is read is freed when it is refused. */
struct jdoc {
	const char *path;
	char *start, *p, *end;
	json_t *root, *key;
	bool bump;		/* the findings' trees from the block */
	/* Each element of the top level's first "findings" array. */
	void (*finding)(void *arg, json_t *v, size_t idx);
	void *arg;
};

struct frame {
	uintptr_t pc;
	uintptr_t offset;
	const char *module;	/* may be NULL */
	const char *function;	/* may be NULL */
	const char *file;	/* may be NULL */
	unsigned line;
	bool has_offset;
	bool inlined;		/* symbolized offline into several frames */
	bool exact;		/* an interrupted pc (a fatal signal's first
				 * frame): named at pc, not at pc - 1 */
};

struct stack {
	struct frame *f;
	size_t n;
};

struct object {
	const char *kind;	/* JSON kind, e.g. "id" */
	const char *handle;
	const char *note;	/* may be NULL */
	bool created;
	long long created_tid;
	struct stack cstack;
	bool destroyed;
	long long destroyed_tid;
	struct stack dstack;
};

struct proc;

struct finding {
	const char *rule;
	int rule_idx;		/* index in rc_rules, or -1 if unknown */
	enum rc_severity sev;
	const char *call;	/* may be NULL */
	const char *message;
	unsigned long long count;
	bool suppressed;
	bool baselined;		/* its fingerprint is in the baseline */
	const char *fingerprint;	/* from the report, or computed */
	long long thread;	/* 0 when null */
	struct stack stack;
	struct object *objs;
	size_t nobjs;
	unsigned long long more_objects;
	struct proc *proc;
	/* Merging: the first of a group collects the others. */
	struct finding *merged_into;
	unsigned long long total;	/* merged count */
	size_t nocc;			/* merged occurrences */
	size_t nprocs;			/* distinct processes: proc, then */
	struct proc **more_procs;	/* these nprocs - 1 */
	size_t cap_procs;
};

struct summary {
	unsigned long long errors, warnings, leaks, suppressed;
	unsigned long long baselined;	/* not counted above */
};

struct proc {
	const char *path;
	/* While it loads: the file, and its top level without findings. */
	char *buf;
	json_t *root;
	struct strtab *names;
	struct arena arena;	/* everything it holds */
	long long pid;
	const char *exe;
	const char **argv;
	size_t argc;
	const char *status;
	int signal;		/* "killed" or "crashed": by this signal
				 * (0: not said) */
	bool halted;
	unsigned long long dropped;
	const char *host, *start_time, *end_time;	/* may be NULL */
	struct module_rec {
		const char *path, *build_id;	/* build_id may be NULL */
	} *mods;
	size_t nmods;
	struct summary sum;
	struct finding *f;
	size_t nf, cap_f;
};

/*
 * The strings of frames and objects' kinds repeat: a report's model keeps
 * each once.  The table lives while the report loads.
 */
struct strtab {
	const char **tab;	/* open addressing, at most half full */
	size_t cap, n;
	char *tmp;		/* a string decoded, before it is looked up */
	size_t tmp_cap;
};

struct ctx {
	const char *path;
	struct arena *arena;	/* where the model goes */
	struct strtab *names;	/* the strings it has */
	/* Format 2: the top-level "frames" that stacks index (NULL
	 * before it is read, or without one). */
	const struct frame *frames;
	size_t nframes;
	unsigned depth;
	const char *key[CTX_DEPTH];
	long idx[CTX_DEPTH];	/* -1: a key alone */
};

/* The kinds of value a field may be: jansson's, booleans and numbers
 * taken together. */
enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct head {
	uint64_t hash;
	struct finding *f;	/* NULL: empty slot */
};

/* common.c */
extern const char *prog;
extern __thread jmp_buf *die_catch;
extern __thread char die_msg[PATH_MAX + 256];
void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...);
void *xrealloc(void *p, size_t n, size_t size);
void *xcalloc(size_t n, size_t size);
void huge_pages(void *p, size_t size);

/* arena.c */
void *aalloc(struct arena *a, size_t n, size_t size);
char *astrdup(struct arena *a, const char *s);
void arena_free(struct arena *a);

/* json_read.c */
void jbump_release(void);
void jd_decode(const json_t *v, char *d);
char *jd_str(struct arena *a, const json_t *v);
void jd_load(struct jdoc *jd, char *buf, size_t len);
int hexval(unsigned char c);
size_t utf8_len(const unsigned char *p, const unsigned char *end);
bool plain(unsigned char c);

/* writers.c */
void put_u(FILE *o, unsigned long long v);
void put_x(FILE *o, uintptr_t v);
void put_jstr(FILE *f, const char *s);

/* model.c */
extern struct proc *procs;
extern size_t nprocs, cap_procs;
void strtab_free(struct strtab *t);
extern __thread jmp_buf *field_catch;
void __attribute__((noreturn))
bad_field(const struct ctx *c, const char *key, const char *what);
const json_t *field(const struct ctx *c, const json_t *o,
			   const char *key, enum jtype t, bool required,
			   bool nullable);
const char *get_str(const struct ctx *c, const json_t *o,
			   const char *key, bool required, bool nullable);
void ctx_push(struct ctx *c, size_t *mark, const char *key, long idx);
char *read_file(const char *path, size_t *len);
void load_report_buf(const char *path, char *buf, size_t len);
void load_report(const char *path);
void load_all(char **paths, size_t n);

/* symbolize.c */
extern struct arena names;
void symbolize_all(void);

/* fingerprint.c */
void fingerprint_all(void);

/* suppress.c */
unsigned long long weight(const struct finding *f);
void uncount(struct proc *p, const struct finding *f);
void apply_suppressions(void);

/* baseline.c */
extern bool have_baseline;
uint64_t hash_text(const char *s);
extern char **inputs;
extern size_t ninputs, cap_inputs;
void load_baseline(const char *path);
void free_baseline(void);
void apply_baseline(void);

/* merge.c */
extern bool many_hosts;
bool same_str(const char *a, const char *b);
bool same_stack(const struct stack *a, const struct stack *b);
const struct proc *proc_at(const struct finding *f, size_t i);
void merge_all(bool merge);
void collapse_snapshots(void);
void free_reports(void);

/* text.c */
const char *kind_text(const char *json_kind);
void put_safe(FILE *o, const char *s);
extern const char *strip_prefix;
const char *show_path(const char *path);
void put_finding(FILE *o, const struct finding *f, bool merged);
void total_summary(struct summary *t);
bool proc_died(const struct proc *p);
void died_text(const struct proc *p, char *buf, size_t len);
bool crash_shown(const struct proc *p);
bool any_died(void);
void put_total(FILE *o, size_t nunique, bool merge);
size_t count_unique(void);
void output_text(FILE *o, bool merge, bool summary_only);

/* json_write.c */
void output_json(FILE *o);

/* inputs.c */
void add_input(char *path);
void add_dir(const char *dir);

/* formats.c */
void output_junit(FILE *o, bool merge);
void output_github(FILE *o, bool merge);
void output_sarif(FILE *o);
void output_gen_suppressions(FILE *o);

#endif
