#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/launcher/install.sh: make install into a scratch DESTDIR installs
# the commands, the shim, the loopback backend, the manual pages, the
# report schema and rdmacheck.pc (its shim and loopbackdir variables name
# installed files), and no libtool archive; make uninstall removes them.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
t_name=install
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

dest=$t_dir/dest
run make -s -C "$top_builddir" install DESTDIR="$dest"
[ "$rc" = 0 ] && pass "make install DESTDIR=..." ||
	fail "make install: exit $rc: $err"
prefix=$(sed -n 's/^prefix=//p' "$top_builddir/tools/rdmacheck.pc")
pc=$(find "$dest" -name rdmacheck.pc)
[ -n "$pc" ] && pass "rdmacheck.pc installed (${pc#"$dest"})" ||
	fail "no rdmacheck.pc installed"
var() {
	PKG_CONFIG_PATH=${pc%/*} pkg-config --variable="$1" rdmacheck
}
shim=$(var shim)
lodir=$(var loopbackdir)
[ -f "$dest$shim" ] && [ -f "$dest$lodir/librdmacm.so.1" ] &&
	[ -f "$dest$lodir/libibverbs.so.1" ] &&
	pass "pkg-config: shim=$shim and loopbackdir=$lodir are installed" ||
	fail "pkg-config variables: shim '$shim', loopbackdir '$lodir'"
for f in bin/rdmacheck bin/rdmacheck-report share/man/man1/rdmacheck.1 \
	share/man/man1/rdmacheck-report.1 share/man/man7/rdmacheck.7 \
	share/doc/rdmacheck/report.schema.json share/doc/rdmacheck/rules.md \
	share/bash-completion/completions/rdmacheck \
	share/bash-completion/completions/rdmacheck-report; do
	[ -f "$dest$prefix/$f" ] || fail "$prefix/$f not installed"
done
pass "commands, manual pages, rules.md, the schema and bash completions installed"
la=$(find "$dest" -name '*.la')
[ -z "$la" ] && pass "no .la file installed" || fail "installed: $la"
run "$dest$prefix/bin/rdmacheck-report" --version
[ "$rc" = 0 ] && pass "installed rdmacheck-report runs" ||
	fail "rdmacheck-report --version: $rc $err"
run make -s -C "$top_builddir" uninstall DESTDIR="$dest"
left=$(find "$dest" -type f)
[ "$rc" = 0 ] && [ -z "$left" ] && pass "make uninstall removes everything" ||
	fail "make uninstall: exit $rc, left: $left"
finish
