#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# debian/ builds the package: dpkg-buildpackage -us -uc -b in a copy of
# the source tree (in a temporary directory: the tree and its build stay
# untouched), then the .deb holds what make install puts in place and no
# .la file, its rdmacheck-report runs and its rdmacheck.pc names the
# packaged paths, and lintian reports no error or warning (those that do
# not apply are overridden, each with its reason, in
# debian/rdmacheck.lintian-overrides).  DEB_BUILD_OPTIONS=nocheck (this
# suite is the check) and noopt: -O0 halves the build's CPU time, and
# changes nothing packaged but _FORTIFY_SOURCE, which needs -O, so the
# one lintian tag that noopt causes, hardening-no-fortify-functions, is
# left out here (a build with Debian's default flags has none).
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

for tool in dpkg-buildpackage dh dpkg-deb dpkg-architecture; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$t_name: $tool is missing (Debian: apt-get install dpkg-dev debhelper): not checked"
		exit 77
	fi
done
if [ -f "$top_srcdir/config.status" ]; then
	echo "$t_name: the source tree is configured in place; the package is built from a clean tree (build out of tree, as quickstart.sh does)"
	exit 77
fi
start=$(date +%s)
cd "$t_dir"

# Every pkg-config module configure.ac asks for is a Build-Depends (by
# the Debian package that owns its .pc file here): a build machine has
# only what debian/control lists.
ctl=$top_srcdir/debian/control
missing=
for m in $(sed -n 's/^PKG_CHECK_MODULES(\[[A-Z_]*\], *\[\([a-z0-9_-]*\).*/\1/p' \
		"$top_srcdir/configure.ac"); do
	pc=$(pkg-config --variable=pcfiledir "$m" 2>/dev/null)/$m.pc
	pkg=$(dpkg -S "$pc" 2>/dev/null | cut -d: -f1)
	[ -n "$pkg" ] || continue
	sed -n '/^Build-Depends:/,/^[A-Z]/p' "$ctl" | grep -qw -- "$pkg" ||
		missing="$missing $pkg"
done
[ -z "$missing" ] &&
	pass "debian/control builds on what configure needs" ||
	fail "configure needs these, debian/control's Build-Depends lacks them:$missing"

# The source tree without its build directories (any with a
# config.status), version control and caches.
src=$t_dir/rdmacheck
mkdir "$src"
for e in "$top_srcdir"/* "$top_srcdir"/.[!.]*; do
	[ -e "$e" ] || continue
	case ${e##*/} in
	.git | autom4te.cache) continue ;;
	esac
	[ -d "$e" ] && [ -f "$e/config.status" ] && continue
	cp -pR "$e" "$src/"
done
rm -rf "$src/debian/.debhelper" "$src/debian/rdmacheck" "$src/debian/tmp" \
	"$src/debian/build" \
	"$src/debian/files"

jobs=$(nproc 2>/dev/null || echo 1)
(cd "$src" && DEB_BUILD_OPTIONS="nocheck noopt parallel=$jobs" \
	dpkg-buildpackage -us -uc -b) >"$t_dir/build.log" 2>&1 && rc=0 || rc=$?
if [ "$rc" != 0 ]; then
	tail -n 40 "$t_dir/build.log"
	fail "dpkg-buildpackage -us -uc -b: exit $rc"
	finish
fi
pass "dpkg-buildpackage -us -uc -b ($(($(date +%s) - start)) s)"
[ ! -f "$src/config.status" ] &&
	pass "built out of tree: the source tree stays unconfigured" ||
	fail "the build configured the source tree in place"

version=$(sed -n '1s/^rdmacheck (\([^)]*\)).*/\1/p' "$src/debian/changelog")
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb=$t_dir/rdmacheck_${version}_$arch.deb
[ -f "$deb" ] && pass "built ${deb##*/}" || { fail "no $deb"; finish; }

dpkg-deb -c "$deb" | awk '{ print substr($6, 2) }' >contents 2>/dev/null ||
	true
lib=/usr/lib/$multiarch
missing=
for f in /usr/bin/rdmacheck /usr/bin/rdmacheck-report "$lib/librdmacheck.so" \
    "$lib/pkgconfig/rdmacheck.pc" "$lib/rdmacheck/loopback/librdmacm.so.1" \
    "$lib/rdmacheck/loopback/libibverbs.so.1" \
    /usr/libexec/rdmacheck/rdmacheck-probe \
    /usr/share/man/man1/rdmacheck.1.gz /usr/share/man/man1/rdmacheck-report.1.gz \
    /usr/share/man/man7/rdmacheck.7.gz /usr/share/doc/rdmacheck/rules.md.gz \
    /usr/share/bash-completion/completions/rdmacheck \
    /usr/share/bash-completion/completions/rdmacheck-report; do
	grep -qxF "$f" contents || missing="$missing $f"
done
[ -z "$missing" ] && pass "the package holds the commands, libraries, pages and completions" ||
	fail "missing from the package:$missing"
# grep finds nothing in a good package: its status 1 is the pass here
la=$(grep '\.la$' contents || true)
[ -z "$la" ] && pass "no .la file" || fail "libtool archives packaged: $la"

# What is inside works where it is unpacked.
dpkg-deb -x "$deb" root
v=$("root/usr/bin/rdmacheck-report" --version 2>&1) &&
	case $v in "rdmacheck-report $version "*) true ;; *) false ;; esac &&
	pass "the packaged rdmacheck-report: $v" ||
	fail "the packaged rdmacheck-report --version: $v"
shim=$(sed -n 's/^shim=//p' "root$lib/pkgconfig/rdmacheck.pc")
[ "$shim" = "$lib/librdmacheck.so" ] && pass "rdmacheck.pc: shim=$shim" ||
	fail "rdmacheck.pc: shim='$shim', not $lib/librdmacheck.so"

if command -v lintian >/dev/null 2>&1; then
	# lintian's own status counts informational tags too: the verdict
	# is the tags it printed, read below
	lintian --tag-display-limit 0 -I --pedantic \
		"$t_dir/rdmacheck_${version}_$arch.changes" >lintian.out 2>&1 ||
		true
	grep -v 'running with root privileges\|: hardening-no-fortify-functions ' \
		lintian.out >lintian.tags || true
	cat lintian.tags
	if grep -q '^[EW]: ' lintian.tags; then
		fail "lintian: errors or warnings (above)"
	elif grep -q '^[IPX]: ' lintian.tags; then
		fail "lintian: tags without an override (above)"
	else
		pass "lintian: no tag beyond the explained overrides"
	fi
else
	echo "$t_name: lintian is missing (Debian: apt-get install lintian): not checked"
fi
echo "$t_name: $(($(date +%s) - start)) s in all"
finish
