/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize.h - pc -> module, offset, function (and file:line when the
 * module has DWARF line tables).  Used only when a report is written.
 * Results are cached once per unique PC; the strings stay valid until exit.
 */
#ifndef RC_SYMBOLIZE_H
#define RC_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

struct rc_frame {
	uintptr_t pc;		/* as captured (a return address) */
	const char *module;	/* path of the ELF object, or NULL */
	uintptr_t offset;	/* pc - module load base */
	const char *function;	/* symbol name, or NULL */
	const char *file;	/* source file, or NULL */
	unsigned line;		/* 0 when unknown */
	/* When this pc is in code inlined into function (libdw in the
	 * shim: symbolize_dw.c), the inline levels, innermost first, each
	 * a frame of the same pc, module and offset, shown before this
	 * one; this one is then the function that holds them, at the
	 * outermost call (what a reader without inline levels names).
	 * NULL/0 otherwise. */
	const struct rc_frame *inl;
	unsigned ninl;
};

/*
 * Fill *out for pc.  PCs are return addresses, so the lookup uses pc - 1.
 * Never fails hard: unknown parts are NULL/0.  Thread-safe; takes a mutex
 * and allocates, so not for signal handlers.  Modules are looked up among
 * those loaded now: a pc in a module dlclose()d since its capture gets
 * NULLs (or, if something else was loaded there, that object's names).
 */
void rc_symbolize(uintptr_t pc, struct rc_frame *out);

/*
 * Symbolize an offset (a return address minus the load base, as in
 * rc_frame.offset) in an ELF file that need not be loaded: for tests and
 * offline tools.  The file stays loaded while the following calls name
 * the same unchanged file (same path, inode, size and mtime); out's strings
 * are valid until a call names another file.  Returns -1 if the file
 * cannot be opened.  Not cached with rc_symbolize()'s modules.
 */
int rc_symbolize_file(const char *path, uintptr_t offset,
		      struct rc_frame *out);

/*
 * Whether name, in module (a path), is one of libc's start functions,
 * under main() or under a thread's start routine (__libc_start_main,
 * start_thread, clone3, ...).  Their frames are named but never given a
 * file:line, by every symbolizer: see symbolize.c.
 */
bool rc_start_function(const char *module, const char *name);

/* Re-initialise the lock in a fork()ed child. */
void rc_symbolize_atfork_child(void);

#endif
