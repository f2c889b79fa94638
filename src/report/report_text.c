/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report_text.c - the sanitizer-style text block of one finding:
 *
 *   ==PID== ERROR: rdmacheck: <message> [rule-id]
 *       #0 0x... in function file:line
 *     cm id 0x... <note>:
 *     cm id 0x... was created here (thread T):
 *       #0 ...
 *     cm id 0x... was destroyed here (thread T):
 *       #0 ...
 *     Suppression:                          with gen_suppressions=1
 *       rule-id:pattern
 *   (blank line)
 *
 * and, from a fatal-signal handler, the fatal-signal finding's block,
 * its frames as module+offset (rc_text_crash).
 *
 * With color= (auto: the log is a terminal and TERM is not "dumb"), the
 * first line is bold red (bold magenta for a warning) and the created and
 * destroyed lines magenta, as the sanitizers colour theirs.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/options.h"
#include "report/report_int.h"
#include "unwind/stack.h"
#include "report/suppress.h"

static const char *const sev_word[] = {
	[RC_SEV_ERROR] = "ERROR",
	[RC_SEV_WARNING] = "WARNING",
	[RC_SEV_LEAK] = "LEAK",
};

/* The escape sequences of one block: all "" without colour. */
struct rc_colors {
	const char *head, *obj, *end;
};

static void pick_colors(struct rc_colors *c, enum rc_severity sev)
{
	const char *term = getenv("TERM");
	bool on = !strcmp(rc_opt.color, "always") ||
		  (!strcmp(rc_opt.color, "auto") && isatty(rc_coll.log_fd) &&
		   !(term && !strcmp(term, "dumb")));

	c->head = !on ? "" : sev == RC_SEV_WARNING ? "\033[1m\033[35m" :
		  "\033[1m\033[31m";
	c->obj = on ? "\033[35m" : "";
	c->end = on ? "\033[0m" : "";
}

/* Strings from the checks or the symbolizer: keep the block one line
 * per line whatever they contain. */
static void put_line_safe(struct rc_out *o, const char *s)
{
	for (; *s; s++)
		rc_out_putc(o, (unsigned char)*s < 0x20 || *s == 0x7f ?
			    '?' : *s);
}

/* One line; returns whether the frame is main(). */
static bool put_one(struct rc_out *o, unsigned i, const struct rc_frame *fr)
{
	rc_out_puts(o, "    #");
	rc_out_udec(o, i);
	rc_out_putc(o, ' ');
	rc_out_hex(o, fr->pc);
	if (fr->function) {
		rc_out_puts(o, " in ");
		put_line_safe(o, fr->function);
	}
	if (fr->function && fr->file) {
		rc_out_putc(o, ' ');
		put_line_safe(o, fr->file);
		if (fr->line) {
			rc_out_putc(o, ':');
			rc_out_udec(o, fr->line);
		}
	} else if (fr->module) {
		rc_out_puts(o, " (");
		put_line_safe(o, fr->module);
		rc_out_putc(o, '+');
		rc_out_hex(o, fr->offset);
		rc_out_putc(o, ')');
	} else if (!fr->function) {
		rc_out_puts(o, " (<unknown module>)");
	}
	rc_out_putc(o, '\n');
	return fr->function && !strcmp(fr->function, "main");
}

/* A pc's inline levels, innermost first, then its function, each
 * numbered as rdmacheck-report numbers them.  Returns whether one is
 * main(): the frames below it (libc's start code) are not printed, as
 * the sanitizers leave them out; the JSON report keeps them. */
static bool put_frame(struct rc_out *o, unsigned *i, uintptr_t pc)
{
	struct rc_frame fr;
	bool is_main = false;
	unsigned k;

	rc_symbolize(pc, &fr);
	for (k = 0; k < fr.ninl; k++)
		is_main |= put_one(o, (*i)++, &fr.inl[k]);
	return put_one(o, (*i)++, &fr) || is_main;
}

static void put_stack(struct rc_out *o, rc_stack_id id)
{
	const uintptr_t *pcs;
	unsigned i, k = 0, n = rc_stack_frames(id, &pcs);

	if (!n)
		rc_out_puts(o, "    <no stack>\n");
	for (i = 0; i < n; i++)
		if (put_frame(o, &k, pcs[i]))
			break;
}

static void put_thread(struct rc_out *o, pid_t tid)
{
	if (tid) {
		rc_out_puts(o, "thread ");
		rc_out_dec(o, tid);
	} else {
		rc_out_puts(o, "unknown thread");
	}
}

static void put_obj_name(struct rc_out *o, const struct rc_objref *r)
{
	rc_out_puts(o, "  ");
	rc_out_puts(o, rc_kind_text(r->kind));
	rc_out_putc(o, ' ');
	if (r->kind == RC_K_RSOCKET)
		rc_out_dec(o, (long long)r->handle);	/* its number */
	else
		rc_out_hex(o, r->handle);
}

static void put_obj(struct rc_out *o, const struct rc_finding *f,
		    const struct rc_objref *r, const struct rc_colors *c)
{
	bool created = r->created_stack || r->created_tid;

	if (r->note[0] || (!created && !r->destroyed)) {
		put_obj_name(o, r);
		if (r->note[0]) {
			rc_out_putc(o, ' ');
			put_line_safe(o, r->note);
			rc_out_putc(o, ':');
		} else {
			rc_out_puts(o, " (no creation record)");
		}
		rc_out_putc(o, '\n');
	}
	if (created) {
		rc_out_puts(o, c->obj);
		put_obj_name(o, r);
		if (f->stack && r->created_stack == f->stack) {
			/* Grouped leaks: do not repeat the stack. */
			rc_out_puts(o, " was created by ");
			put_thread(o, r->created_tid);
			rc_out_puts(o, " at the stack above");
			rc_out_puts(o, c->end);
			rc_out_putc(o, '\n');
		} else {
			rc_out_puts(o, " was created here (");
			put_thread(o, r->created_tid);
			rc_out_puts(o, "):");
			rc_out_puts(o, c->end);
			rc_out_putc(o, '\n');
			put_stack(o, r->created_stack);
		}
	}
	if (r->destroyed) {
		rc_out_puts(o, c->obj);
		put_obj_name(o, r);
		rc_out_puts(o, " was destroyed here (");
		put_thread(o, r->destroyed_tid);
		rc_out_puts(o, "):");
		rc_out_puts(o, c->end);
		rc_out_putc(o, '\n');
		put_stack(o, r->destroyed_stack);
	}
}

/* gen_suppressions=1: an entry that silences this finding, as is. */
static void put_suppression(struct rc_out *o, const struct rc_finding *f)
{
	struct rc_frame frames[RC_STACK_MAX_DEPTH];
	const uintptr_t *pcs;
	unsigned i, n = rc_stack_frames(f->stack, &pcs);
	char entry[512];

	if (n > RC_STACK_MAX_DEPTH)
		n = RC_STACK_MAX_DEPTH;
	for (i = 0; i < n; i++)
		rc_symbolize(pcs[i], &frames[i]);
	if (!rc_suppress_suggest(entry, sizeof(entry), f->rule, f->call,
				 frames, n))
		return;
	rc_out_puts(o, "  Suppression:\n    ");
	rc_out_puts(o, entry);
	rc_out_putc(o, '\n');
}

/* "==pid== ERROR: rdmacheck: <message> [rule-id]" */
static void put_head(struct rc_out *o, const struct rc_finding *f, int pid,
		     const struct rc_colors *c)
{
	rc_out_puts(o, c->head);
	rc_out_puts(o, "==");
	rc_out_dec(o, pid);
	rc_out_puts(o, "== ");
	rc_out_puts(o, sev_word[rc_finding_severity(f)]);
	rc_out_puts(o, ": rdmacheck: ");
	put_line_safe(o, f->message);
	rc_out_puts(o, " [");
	rc_out_puts(o, rc_rules[f->rule].id);
	rc_out_puts(o, "]");
	rc_out_puts(o, c->end);
	rc_out_putc(o, '\n');
}

void rc_text_finding(struct rc_out *o, const struct rc_finding *f, int pid)
{
	unsigned i, nobjs = f->nobjs < RC_MAX_OBJS ? f->nobjs : RC_MAX_OBJS;
	struct rc_colors c;

	pick_colors(&c, rc_finding_severity(f));
	put_head(o, f, pid, &c);
	put_stack(o, f->stack);
	for (i = 0; i < nobjs; i++)
		put_obj(o, f, &f->objs[i], &c);
	if (f->more_objs) {
		rc_out_puts(o, "  ... and ");
		rc_out_udec(o, f->more_objs);
		rc_out_puts(o, f->more_objs == 1 ? " more object\n" :
			    " more objects\n");
	}
	if (rc_opt.gen_suppressions)
		put_suppression(o, f);
	rc_out_putc(o, '\n');
}

/*
 * From a fatal-signal handler: nothing symbolized (that allocates and
 * locks), each frame's module and offset from /proc/self/maps, which
 * rdmacheck-report turns into names offline.  getenv() and isatty()
 * (pick_colors) only read.
 */
void rc_text_crash(struct rc_out *o, const struct rc_finding *f, int pid,
		   const char *note)
{
	const uintptr_t *pcs;
	unsigned i, n = rc_stack_frames(f->stack, &pcs);
	struct rc_frame fr;
	struct rc_colors c;

	pick_colors(&c, rc_finding_severity(f));
	put_head(o, f, pid, &c);
	if (!n)
		rc_out_puts(o, "    <no stack>\n");
	for (i = 0; i < n; i++) {
		rc_crash_frame(pcs[i], &fr, i == 0);
		put_one(o, i, &fr);
	}
	if (note) {
		rc_out_puts(o, "  ");
		put_line_safe(o, note);
		rc_out_putc(o, '\n');
	}
	rc_out_putc(o, '\n');
}
