#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# deftab.sh CPP DEF: print the RC_OPT or RC_RULE entries of DEF
# (src/core/options.def, src/core/rules.def) as tab-separated lines, one
# per entry, in table order:
#   options: opt  TYPE  name  default  min  max  help
#   rules:   rule ENUM  id    SEVERITY summary
# The compiler's preprocessor reads the table, so whatever C allows there
# (line breaks, comments, concatenated literals, macros as bounds) works.
# Tabs and newlines inside strings become spaces.
set -eu
cpp=$1
def=$2

# Each field becomes one string literal; free text is bracketed by markers
# because it may be several adjacent literals.  The assignment makes a
# preprocessor error fail the script (set -e), which a pipe would hide.
expanded=$($cpp -P - <<EOF
#define RC__S(x) #x
#define RC__XS(x) RC__S(x)
#define RC_OPT(type, name, def, min, max, help) RCTAB_OPT RC__S(type) RC__S(name) RC__S(def) RC__XS(min) RC__XS(max) RCTAB_TEXT help RCTAB_END
#define RC_RULE(en, id, sev, summary) RCTAB_RULE RC__S(en) id RC__S(sev) RCTAB_TEXT summary RCTAB_END
#include "$def"
EOF
)
printf '%s\n' "$expanded" | awk '
# Decode the C string literal at the start of s; sets lit_len.
function literal(s,    i, c, out) {
	out = ""
	for (i = 2; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "\"") {
			lit_len = i
			return out
		}
		if (c == "\\") {
			c = substr(s, ++i, 1)
			if (c == "n" || c == "t")
				c = " "
		}
		out = out c
	}
	print "deftab.sh: unterminated string literal" > "/dev/stderr"
	exit 1
}
{ text = text " " $0 }
END {
	# Tokens: string literals (decoded, marked by a leading "\"") and
	# runs of anything else.
	n = 0
	while (length(text)) {
		if (match(text, /^[ \t]+/)) {
			text = substr(text, RLENGTH + 1)
			continue
		}
		if (substr(text, 1, 1) == "\"") {
			t = literal(text)
			gsub(/[\t\n]/, " ", t)
			tok[n++] = "\"" t
			text = substr(text, lit_len + 1)
		} else {
			match(text, /^[^ \t"]+/)
			tok[n++] = substr(text, 1, RLENGTH)
			text = substr(text, RLENGTH + 1)
		}
	}
	for (i = 0; i < n; i++) {
		if (tok[i] != "RCTAB_OPT" && tok[i] != "RCTAB_RULE")
			continue
		line = tok[i] == "RCTAB_OPT" ? "opt" : "rule"
		for (f = 0; ++i < n && tok[i] != "RCTAB_TEXT"; f++) {
			t = substr(tok[i], 2)
			# A string default (or the words of a WORDS option, in
			# min), stringified: decode it once more.
			if (line ~ /^opt/ && (f == 2 || f == 3) &&
			    substr(t, 1, 1) == "\"") {
				d = ""
				while (match(t, /^ *"/)) {
					t = substr(t, RLENGTH)
					d = d literal(t)
					t = substr(t, lit_len + 1)
				}
				t = d
				gsub(/[\t\n]/, " ", t)
			}
			line = line "\t" t
		}
		free = ""
		for (i++; i < n && tok[i] != "RCTAB_END"; i++)
			free = free substr(tok[i], 2)
		print line "\t" free
	}
}'
