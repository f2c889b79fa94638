#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# gen-man.sh TEMPLATE OPTIONS_TAB RULES_TAB VERSION LIBDIR PKGLIBDIR
# PKGLIBEXECDIR [PROSE]: print
# the manual page TEMPLATE with its generated parts filled in from the
# tables tools/deftab.sh extracts from src/core/options.def and src/core/rules.def.
# In TEMPLATE, a line holding only
#   @LAUNCHER_OPTIONS@  becomes the launcher's long options (rdmacheck(1)),
#   @OPTIONS@           the RDMACHECK_OPTIONS keys (rdmacheck(7)),
#   @RULES@             the rules, one subsection per severity;
# @PACKAGE_VERSION@, @MAN_DATE@, @libdir@, @pkglibdir@ and @pkglibexecdir@
# are replaced anywhere.
set -eu
if [ $# -ne 7 ] && [ $# -ne 8 ]; then
	echo "usage: gen-man.sh TEMPLATE OPTIONS_TAB RULES_TAB VERSION LIBDIR PKGLIBDIR PKGLIBEXECDIR [PROSE]" >&2
	exit 2
fi
# PROSE: doc/rules.md.in, whose "@@ rule-id" blocks (a small Markdown:
# paragraphs, `code`, **bold**, indented example blocks) follow each rule
# in @RULES@.
RC_PROSE=${8:-}
export RC_PROSE
RC_VERSION=$4
RC_LIBDIR=$5
RC_PKGLIBDIR=$6
RC_PKGLIBEXECDIR=$7
# @MAN_DATE@: the build's SOURCE_DATE_EPOCH (reproducible builds; the
# Debian package sets it from debian/changelog), else the template's date.
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
	RC_MAN_DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
else
	RC_MAN_DATE=$(date -u -r "$1" +%Y-%m-%d)
fi
export RC_VERSION RC_LIBDIR RC_PKGLIBDIR RC_PKGLIBEXECDIR RC_MAN_DATE

awk -F '\t' '
function subst(s, key, val,    i, out) {
	out = ""
	while ((i = index(s, key)) > 0) {
		out = out substr(s, 1, i - 1) val
		s = substr(s, i + length(key))
	}
	return out s
}
# Text for a roff text line: backslashes escaped, no control character
# at the start.
function text(s) {
	s = subst(s, "\\", "\\e")
	if (s ~ /^[.\047]/)
		s = "\\&" s
	return s
}
# Text lines of at most 78 bytes (the mandoc style check wants 80), broken
# at spaces; the formatter fills them again.
function wrapped(s,    n, w, i, line, out) {
	n = split(s, w, " ")
	line = ""
	out = ""
	for (i = 1; i <= n; i++) {
		if (line != "" && length(line) + 1 + length(w[i]) > 78) {
			out = out text(line) "\n"
			line = w[i]
		} else {
			line = line == "" ? w[i] : line " " w[i]
		}
	}
	return out text(line)
}
# Markdown inline text to roff: `code` and **bold** in bold, and "-" in
# a code span a minus.
function inline(s,    out, c, i, code, bold) {
	s = subst(s, "\\", "\\e")
	out = ""
	code = bold = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "`") {
			code = !code
			out = out (code ? "\\fB" : (bold ? "" : "\\fR"))
		} else if (c == "*" && substr(s, i + 1, 1) == "*") {
			bold = !bold
			out = out (bold ? "\\fB" : "\\fR")
			i++
		} else if (c == "-" && code) {
			out = out "\\-"
		} else {
			out = out c
		}
	}
	return out
}
# Filled text lines of at most 78 bytes, escaped already.
function wrapped_roff(s,    n, w, i, line, out) {
	n = split(s, w, " ")
	line = out = ""
	for (i = 1; i <= n; i++) {
		if (line != "" && length(line) + 1 + length(w[i]) > 78) {
			out = out (line ~ /^[.\047]/ ? "\\&" : "") line "\n"
			line = w[i]
		} else {
			line = line == "" ? w[i] : line " " w[i]
		}
	}
	return out (line ~ /^[.\047]/ ? "\\&" : "") line
}
# The prose of a rule: each paragraph an indented paragraph of its entry,
# an indented block unfilled.
function prose(s,    n, l, i, para, code) {
	n = split(s, l, "\n")
	para = ""
	for (i = 1; i <= n + 1; i++) {
		if (i <= n && l[i] ~ /^    /) {
			if (para != "") { print ".IP"; print wrapped_roff(inline(para)); para = "" }
			if (!code) { print ".IP"; print ".nf"; code = 1 }
			print "\\&" subst(substr(l[i], 5), "\\", "\\e")
			continue
		}
		if (code) { print ".fi"; code = 0 }
		if (i > n || l[i] == "") {
			if (para != "") { print ".IP"; print wrapped_roff(inline(para)) }
			para = ""
			continue
		}
		para = para == "" ? l[i] : para " " l[i]
	}
}
# A name to type (option, rule id): "-" as a minus (copy-pasteable), and
# never hyphenated.
function name(s) {
	return "\\%" subst(subst(s, "\\", "\\e"), "-", "\\-")
}
function sentence(s) {
	return s ~ /[.!?]$/ ? s : s "."
}
# The values and default of option i, as roff (escaped already).
function range(i) {
	if (otype[i] == "BOOL")
		return "Boolean (0, 1, true, false, yes or no); default " \
		    (odef[i] == "0" ? "0 (off)." : "1 (on).")
	if (otype[i] == "INT")
		return "Integer, " omin[i] " to " omax[i] "; default " \
		    odef[i] "."
	if (otype[i] == "WORDS")
		return "One of " words(omin[i]) "; default \\(lq" \
		    text(odef[i]) "\\(rq."
	return (otype[i] == "STR" ? "String" : tolower(otype[i])) \
	    "; default " (odef[i] == "" ? "none." : \
	    "\\(lq" text(odef[i]) "\\(rq.")
}
function metavar(i,    m) {
	if (otype[i] == "WORDS") {
		m = omin[i]
		gsub(/ +/, "|", m)
		return m
	}
	return otype[i] == "INT" ? "n" : otype[i] == "BOOL" ? "bool" : "value"
}
# words("a b c"): "a, b or c", each in bold.
function words(s,    w, n, k, out) {
	n = split(s, w, " ")
	for (k = 1; k <= n; k++)
		out = out (k == 1 ? "" : k == n ? " or " : ", ") \
		    "\\fB" text(w[k]) "\\fR"
	return out
}
function launcher_options(    i, flag) {
	for (i = 0; i < nopt; i++) {
		# help=1 is RDMACHECK_OPTIONS only: the --help of the launcher is
		# its usage (listed apart), and it takes no value
		if (oname[i] == "help")
			continue
		flag = oname[i]
		gsub(/_/, "-", flag)
		print ".TP"
		if (otype[i] == "BOOL")
			print "\\fB" name("--" flag) "\\fR[\\fB=\\fI" \
			    metavar(i) "\\fR], \\fB" name("--no-" flag) "\\fR"
		else
			print "\\fB" name("--" flag) "=\\fI" metavar(i) "\\fR"
		print wrapped(capital(ohelp[i]))
		print wrapped_roff(range(i))
	}
}
function options(    i) {
	for (i = 0; i < nopt; i++) {
		print ".TP"
		print "\\fB" name(oname[i]) "=\\fI" metavar(i) "\\fR"
		print wrapped(capital(ohelp[i]))
		print wrapped_roff(range(i))
	}
}
function rules(    s, i, k, order, nord, seen, heading, cnt) {
	# Known severities first, most serious first; any other after them.
	nord = split("ERROR WARNING LEAK", order, " ")
	for (k = 1; k <= nord; k++)
		seen[order[k]] = 1
	for (i = 0; i < nrule; i++)
		if (!(rsev[i] in seen)) {
			seen[rsev[i]] = 1
			order[++nord] = rsev[i]
		}
	heading["ERROR"] = "Errors"
	heading["WARNING"] = "Warnings"
	heading["LEAK"] = "Leaks"
	for (k = 1; k <= nord; k++) {
		s = order[k]
		cnt = 0
		for (i = 0; i < nrule; i++)
			if (rsev[i] == s)
				cnt++
		if (!cnt)
			continue
		print ".SS " (s in heading ? heading[s] : \
		    "Severity " tolower(s)) " (" cnt ")"
		for (i = 0; i < nrule; i++) {
			if (rsev[i] != s)
				continue
			print ".TP"
			print "\\fB" name(rid[i]) "\\fR"
			print wrapped(sentence(rsum[i]))
			if (rid[i] in rtext)
				prose(rtext[rid[i]])
		}
	}
}
# Option help as a sentence; a leading identifier keeps its case.
function capital(s) {
	if (s ~ /^[a-z]+[ ,;:]/)
		s = toupper(substr(s, 1, 1)) substr(s, 2)
	return sentence(s)
}
BEGIN {
	nopt = nrule = 0
	if (ENVIRON["RC_PROSE"] != "") {
		while ((getline l < ENVIRON["RC_PROSE"]) > 0) {
			if (l ~ /^@@ /) { cur = substr(l, 4); continue }
			if (cur != "")
				rtext[cur] = rtext[cur] l "\n"
		}
	}
}
FILENAME == ARGV[1] {
	if ($1 == "opt") {
		otype[nopt] = $2; oname[nopt] = $3; odef[nopt] = $4
		omin[nopt] = $5; omax[nopt] = $6; ohelp[nopt] = $7
		nopt++
	}
	next
}
FILENAME == ARGV[2] {
	if ($1 == "rule") {
		rid[nrule] = $3; rsev[nrule] = $4; rsum[nrule] = $5
		nrule++
	}
	next
}
FNR == 1 {
	if (!nopt || !nrule) {
		print "gen-man.sh: empty option or rule table" > "/dev/stderr"
		exit 1
	}
}
$0 == "@LAUNCHER_OPTIONS@" { launcher_options(); next }
$0 == "@OPTIONS@" { options(); next }
$0 == "@RULES@" { rules(); next }
{
	s = subst($0, "@PACKAGE_VERSION@", ENVIRON["RC_VERSION"])
	s = subst(s, "@MAN_DATE@", ENVIRON["RC_MAN_DATE"])
	s = subst(s, "@libdir@", ENVIRON["RC_LIBDIR"])
	s = subst(s, "@pkglibexecdir@", ENVIRON["RC_PKGLIBEXECDIR"])
	print subst(s, "@pkglibdir@", ENVIRON["RC_PKGLIBDIR"])
}' "$2" "$3" "$1"
