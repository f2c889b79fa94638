#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/perf/cost.sh [OPTIONS]: what the shim adds to each intercepted
# call, in instructions (deterministic: callgrind, not time).  Runs
# tests/perf/cost under valgrind --tool=callgrind twice on the loopback
# backend, plainly and under the shim with RDMACHECK_OPTIONS=OPTIONS
# (default: the defaults), counting only inside its cost_CALL functions,
# one profile part per function; prints one line per call:
#   CALL PLAIN_IR SHIM_IR ADDED_IR PLAIN_LOCKS SHIM_LOCKS ADDED_LOCKS
# per call (of the round that cost least: the steady state); locks are calls of
# pthread_mutex_lock/trylock, pthread_rwlock_rdlock/wrlock,
# pthread_spin_lock and the shim's own rc_lock (src/core/lock.c) made on the
# calling thread.  Exit 77 without valgrind.  Used by
# tests/perf/budget.sh and bench/run-bench.sh.
set -eu
top_builddir=${top_builddir:-.}
prog=${COST_PROGRAM:-$top_builddir/tests/perf/cost}
# the program's source, whose COST() lines and COST_N say what it measures
src=${COST_SOURCE:-${top_srcdir:-$(dirname "$0")/../..}/tests/perf/cost.c}
shim=${RDMACHECK_SHIM:-$top_builddir/src/.libs/librdmacheck.so}
lo=${RDMACHECK_LOOPBACK_DIR:-$top_builddir/loopback/.libs}
VALGRIND=${VALGRIND:-valgrind}

if ! command -v "$VALGRIND" >/dev/null 2>&1; then
	echo "cost.sh: SKIP: valgrind is not installed (Debian: valgrind)" >&2
	exit 77
fi
norand=
if setarch "$(uname -m)" -R true 2>/dev/null; then
	norand="setarch $(uname -m) -R"
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/rccost.XXXXXX")
[ -n "${COST_KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT

# The calls cost.c measures, in its order (its COST() lines).
calls=$(sed -n 's/^COST(\([a-z_0-9]*\),.*/\1/p' \
	"$src")
# A part after each cost_CALL, and one after each cost_setup (the work
# between two measured calls, left out): callgrind counts calls, and so
# locks, even where it collects no instructions, and skips a dump with
# none, so without the setup's own parts a call's locks would include
# those of the setup before it (five per id before rdma_connect).
dumps=--dump-after=cost_setup
for c in $calls; do
	dumps="$dumps --dump-after=cost_$c"
done

# run MODE: one callgrind run, its parts in $dir/MODE.*
run()
{
	_pre=
	_opts=
	if [ "$1" = shim ]; then
		_pre=$shim
		_opts=${2:-}
	fi
	# Without address randomisation (setarch -R) the heap is laid out
	# the same each run, and so are the registry's shards and when their
	# tables grow; the namespace name has a fixed length for the same
	# reason.
	# shellcheck disable=SC2086
	if ! $norand env RDMACHECK_LOOPBACK_NS="$(printf 'rccost-%010d-%s' $$ "$1")" \
		LD_LIBRARY_PATH="$lo" \
		LD_PRELOAD="$_pre" RDMACHECK_OPTIONS="$_opts" \
		"$VALGRIND" --tool=callgrind --collect-atstart=no \
		--toggle-collect='cost_*' $dumps --compress-strings=no \
		--compress-pos=no --callgrind-out-file="$dir/$1" \
		"$prog" >"$dir/$1.out" 2>"$dir/$1.err"; then
		echo "cost.sh: $1 run failed:" >&2
		tail -n 20 "$dir/$1.err" >&2
		exit 1
	fi
}
run plain
run shim "${1:-}"

# The lock entry points, as callgrind names them (with their versions).
lock_re='^cfn=(pthread_mutex_(try)?lock|pthread_rwlock_(rd|wr)lock|'
lock_re="${lock_re}pthread_spin_lock|rc_lock)(@|$)"

# parts MODE: "CALL IR LOCKS" per part (callgrind numbers them from 1).
parts()
{
	_i=1
	while [ -e "$dir/$1.$_i" ]; do
		_f=$dir/$1.$_i
		_i=$((_i + 1))
		awk -v lock="$lock_re" '
		/^desc: Trigger: --dump-after=cost_/ {
			call = substr($0, index($0, "=cost_") + 6) }
		/^summary:/ { ir = $2 }
		/^cfn=/ { lk = $0 ~ lock }
		/^calls=/ && lk { split($1, a, "="); locks += a[2]; lk = 0 }
		END { if (call != "") print call, ir, locks + 0 }' "$_f"
	done
}
n=$(sed -n 's/^#define COST_N \([0-9]*\)$/\1/p' \
	"$src")
{ parts plain | sed 's/^/plain /'; parts shim | sed 's/^/shim /'; } |
awk -v n="$n" -v order="$calls" '
	# the lowest round of each call and count (COST_ROUNDS in cost.c)
	{ k = $1 " " $2
	  if (!(k in ir) || $3 < ir[k]) ir[k] = $3
	  if (!(k in lk) || $4 < lk[k]) lk[k] = $4 }
	END {
		m = split(order, c, /[ \n]+/)
		for (i = 1; i <= m; i++) {
			if (c[i] == "") continue
			p = "plain " c[i]; s = "shim " c[i]
			if (!(p in ir) || !(s in ir)) {
				print "cost.sh: no profile of " c[i] > "/dev/stderr"
				bad = 1; continue
			}
			printf "%s %.0f %.0f %.0f %.2f %.2f %.2f\n", c[i],
			    ir[p] / n, ir[s] / n, (ir[s] - ir[p]) / n,
			    lk[p] / n, lk[s] / n, (lk[s] - lk[p]) / n
		}
		exit bad
	}'
