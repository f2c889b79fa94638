#!/bin/sh
# Every wrapper given garbage pointers: no crash may be the shim's
# (tests/scenarios/garbage.c).  One loopback build is enough: what a
# wrapper reads of its arguments does not depend on how the library calls
# itself.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
exec env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
	LD_PRELOAD="$RDMACHECK_SHIM" RDMACHECK_LOOPBACK_NS="rcgarbage-$$" \
	"$top_builddir/tests/scenarios/garbage" 2>/dev/null
