#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# quickstart.sh        set up, build, and run the demo under rdmacheck
# quickstart.sh check  set up, build, and run the whole test suite
#
# On a fresh Debian 12 machine: as root it installs the missing Debian
# packages itself; otherwise it says which to install.  The build goes to
# ./build (an out-of-tree autotools build).
set -eu

mode=${1:-demo}
case $mode in
demo|check) ;;
*)
	echo "usage: $0 [check]" >&2
	exit 2
	;;
esac

top=$(cd "$(dirname "$0")" && pwd)
cd "$top"

# Debian packages the build and the tests need.
pkgs="gcc make autoconf automake libtool pkg-config librdmacm-dev
libibverbs-dev libunwind-dev check rdmacm-utils ibverbs-utils perftest qperf
jq python3 procps
python3-jsonschema python3-yaml libxml2-utils libdw-dev g++ valgrind
debhelper lintian mandoc libjansson-dev libdeflate0 libc6-dbg"

missing=
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "quickstart: installing:$missing"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $missing
	else
		echo "quickstart: missing Debian packages:$missing" >&2
		echo "quickstart: install them with:" >&2
		echo "  sudo apt-get install$missing" >&2
		exit 1
	fi
fi

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	autoreconf -fi
fi
mkdir -p build
cd build
if [ "$mode" = check ]; then
	# The suite treats warnings as errors (tarball users are not forced)
	# and runs the thread tests under ThreadSanitizer too.
	want="--enable-werror --enable-tsan"
else
	want=""
fi
if [ ! -f Makefile ] || [ "$(cat .quickstart-config 2>/dev/null)" != "$want" ]; then
	# shellcheck disable=SC2086
	../configure $want
	echo "$want" > .quickstart-config
fi
make -j"$(nproc)"

if [ "$mode" = check ]; then
	status=0
	make -j"$(nproc)" check || status=$?
	exit $status
fi

# The demo: a server that forgets to ack one event, then destroys its
# listener, run under rdmacheck on the loopback backend.
make tests/scenarios/demo
echo
echo "quickstart: running the demo under rdmacheck:"
echo "  rdmacheck --loopback --json=demo-report.json -- tests/scenarios/demo"
echo
status=0
./tools/rdmacheck --loopback --json=demo-report.json -- \
	./tests/scenarios/demo || status=$?
echo
if [ "$status" = 23 ]; then
	echo "quickstart: the demo exited with status 23, rdmacheck's exitcode:"
	echo "quickstart: it found the bug above (JSON: build/demo-report.json)."
	exit 0
fi
echo "quickstart: unexpected demo exit status $status" >&2
exit 1
