#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# color=: the text report in colour as the sanitizers do it: always, never,
# or auto (the log is a terminal, TERM is not "dumb"); the colours change
# nothing else, and a bad value is refused with a message.  The escape
# sequences are parsed (python3), not grepped.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
PY=${PYTHON3:-python3}
command -v "$PY" >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
bin=$top_builddir/tests/scenarios/use_after_destroy
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"
work=$t_dir
# run NAME OPTIONS [TERM]: the scenario's report in $work/NAME (its log).
run() {
	env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
		LD_PRELOAD="$RDMACHECK_SHIM" TERM="${3:-xterm}" \
		RDMACHECK_LOOPBACK_NS="rccolor-$$" \
		RDMACHECK_OPTIONS="log_path=$work/$1:$2" \
		"$bin" bad >"$work/$1.out" 2>&1
}
# check FILE on|off [PLAIN]: every escape sequence is one of the report's, where
# it belongs (whole head lines, whole created/destroyed lines), or none;
# without them the text is PLAIN's (color=never's), numbers aside.
check() {
	"$PY" - "$1" "$2" "${3:-$work/never}" <<'PYEOF'
import re, sys
path, want, plain = sys.argv[1:]
text = open(path, encoding="utf-8").read()
sgr = re.compile("\x1b\\[[0-9;]*m")
seqs = sgr.findall(text)
norm = lambda t: re.sub("0x[0-9a-f]+|[0-9]+", "N", t)
if norm(sgr.sub("", text)) != norm(open(plain).read()):
	sys.exit("the text differs from color=never's beyond the colours")
if want == "off":
	sys.exit("escape sequences: %r" % seqs[:3] if seqs else 0)
RED, MAG, OBJ, END = "\x1b[1m\x1b[31m", "\x1b[1m\x1b[35m", "\x1b[35m", "\x1b[0m"
heads = objs = 0
for line in text.splitlines():
	if not sgr.search(line):
		if re.match(r"==\d+== (ERROR|WARNING|LEAK):", line) or \
		   re.search(r"was (created|destroyed) (here|by)", line):
			sys.exit("not coloured: " + line)
		continue
	m = re.fullmatch(r"(\x1b\[[0-9;]*m)+(.*?)\x1b\[0m", line)
	if not m:
		sys.exit("escape sequences inside a line: %r" % line)
	start = line[:len(line) - len(m.group(2)) - len(END)]
	body = m.group(2)
	if re.match(r"==\d+== (ERROR|LEAK):", body):
		ok = start == RED
		heads += 1
	elif re.match(r"==\d+== WARNING:", body):
		ok = start == MAG
		heads += 1
	elif re.search(r"was (created|destroyed) (here|by)", body):
		ok = start == OBJ
		objs += 1
	else:
		ok = False
	if not ok:
		sys.exit("unexpected colour %r on %r" % (start, body))
if not heads or not objs:
	sys.exit("%d coloured heads, %d object lines" % (heads, objs))
print("%d heads, %d object lines coloured" % (heads, objs))
PYEOF
}

run never color=never
grep -q 'ERROR: rdmacheck:.*\[use-after-destroy\]' "$work/never" ||
	{ fail "no report"; cat "$work/never.out"; exit 1; }
grep -q 'was destroyed here' "$work/never" || fail "no destroyed line"
run always color=always
check "$work/always" on && pass "color=always to a file" ||
	fail "color=always"
run auto color=auto
check "$work/auto" off && pass "color=auto to a file: none" ||
	fail "color=auto to a file"
run default ""
check "$work/default" off && pass "the default (auto) to a file: none" ||
	fail "the default"
run dumb color=always dumb
check "$work/dumb" on && pass "color=always even with TERM=dumb" ||
	fail "color=always, TERM=dumb"

# auto on a terminal: script(1) gives the program one, the log is stderr.
if command -v script >/dev/null 2>&1 &&
   script -qec true /dev/null >/dev/null 2>&1; then
	esc=$(printf '\033')
	for t in xterm dumb; do
		env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
			LD_PRELOAD="$RDMACHECK_SHIM" TERM=$t \
			RDMACHECK_LOOPBACK_NS="rccolor-$$" \
			RDMACHECK_OPTIONS=color=auto \
			script -qec "$bin bad" /dev/null </dev/null \
			>"$work/tty.$t" 2>&1
		# The terminal's line ends, and the shim's lines only.
		tr -d '\r' <"$work/tty.$t" | grep -E "^($esc\[[0-9;]*m)*(==|  |\$)" \
			>"$work/tty.$t.log"
		grep '^==\|^  \|^$' "$work/never" >"$work/never.shim"
		want=on
		[ "$t" = dumb ] && want=off
		if check "$work/tty.$t.log" $want "$work/never.shim"; then
			pass "color=auto on a terminal, TERM=$t: $want"
		else
			fail "color=auto on a terminal, TERM=$t"
			cat -v "$work/tty.$t"
		fi
	done
else
	echo "script(1) cannot make a terminal here: auto on a tty not checked"
fi

run badval color=rainbow
grep -q "bad value 'rainbow' for color (expected one of: auto always never; keeping auto)" \
	"$work/badval.out" && pass "a bad value is refused" ||
	{ fail "color=rainbow:"; cat "$work/badval.out"; }
finish
