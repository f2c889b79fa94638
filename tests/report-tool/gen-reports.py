#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""gen-reports.py: write big rdmacheck JSON reports for rdmacheck-report.

The reports have the shim's layout of format 1 (doc/reports.md), which
rdmacheck-report still reads: findings with stacks of frame objects and
objects, a summary that agrees with them.  Finding j of report
i has identity (i * findings + j) % distinct, and its stack is a function
of that identity alone, so --merge must collapse exactly to `distinct`
unique findings.  Modules name a file that does not exist, so nothing is
symbolized offline.

  gen-reports.py [--reports P] [--findings N | --mb M] [--distinct D]
                 [--depth K] OUTDIR
"""
import argparse
import os
import sys

RULES = [
    ("double-destroy", "error", "rdma_destroy_id"),
    ("leak-id", "leak", None),
    ("use-after-destroy", "error", "rdma_connect"),
    ("leak-qp", "leak", None),
    ("create-qp-twice", "warning", "rdma_create_qp"),
    ("leak-event", "leak", None),
]
MODULE = "/nonexistent/rdmacheck-gen/app"
LIBC = "/nonexistent/rdmacheck-gen/libc.so.6"


def frame(pc, module, offset, function, file, line):
    return ('{"pc": "0x%x", "module": "%s", "offset": "0x%x", '
            '"function": "%s", "file": "%s", "line": %d}'
            % (pc, module, offset, function, file, line))


def stack(ident, depth, salt):
    # Distinct identities differ in the first frame's offset.
    fr = [frame(0x55550000 + ident * 16 + salt, MODULE,
                0x1000 + ident * 16 + salt, "fn_%d" % ident,
                "/src/app/gen%d.c" % (ident % 97), 10 + ident % 1000)]
    for k in range(1, depth):
        fr.append(frame(0x7f0000000000 + k * 0x100, LIBC, 0x27000 + k * 0x100,
                        "lib_%d" % k, "./csu/lib%d.c" % k, 100 + k))
    return "[" + ", ".join(fr) + "]"


def finding(ident, depth, pid):
    rule, sev, call = RULES[ident % len(RULES)]
    handle = "0x%x" % (0x5600000000 + ident * 64)
    created = stack(ident, depth, 8)
    if sev == "leak":
        count = 1 + ident % 3
        msg = "cm id %s leaked: never destroyed" % handle
        objs = ", ".join(
            '{"kind": "id", "handle": "0x%x", "created": {"thread": %d, '
            '"stack": %s}, "destroyed": null}'
            % (0x5600000000 + ident * 64 + o * 8, pid, stack(ident, depth, 0))
            for o in range(count))
        thread = "null"
    else:
        count = 1
        msg = "%s(%s): cm id already destroyed" % (call, handle)
        objs = ('{"kind": "id", "handle": "%s", "created": {"thread": %d, '
                '"stack": %s}, "destroyed": {"thread": %d, "stack": %s}}'
                % (handle, pid, created, pid, stack(ident, depth, 4)))
        thread = str(pid)
    text = ('    {"rule": "%s", "severity": "%s", "call": %s, '
            '"message": "%s", "count": %d, "suppressed": false, '
            '"thread": %s,\n      "stack": %s,\n      "objects": [\n        %s]}'
            % (rule, sev, '"%s"' % call if call else "null", msg, count,
               thread, stack(ident, depth, 0), objs))
    return text, sev, count


def report(path, pid, idents, depth, mb):
    sums = {"error": 0, "warning": 0, "leak": 0}
    out = []
    size = 0
    n = 0
    for ident in idents:
        text, sev, count = finding(ident, depth, pid)
        out.append(text)
        size += len(text) + 2
        n += 1
        sums[sev] += count if sev == "leak" else 1
        if mb and size >= mb * 1000000:
            break
    with open(path, "w") as f:
        f.write('{\n  "tool": "rdmacheck",\n  "version": "0.1.0",\n'
                '  "pid": %d,\n  "exe": "%s",\n  "argv": ["app", "-x"],\n'
                '  "status": "exited",\n  "unwinder": "libunwind",\n'
                '  "symbolized": true,\n  "findings": [\n' % (pid, MODULE))
        f.write(",\n".join(out))
        f.write('\n  ],\n  "summary": {"errors": %d, "warnings": %d, '
                '"leaks": %d, "suppressed": 0}\n}\n'
                % (sums["error"], sums["warning"], sums["leak"]))
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reports", type=int, default=1)
    ap.add_argument("--findings", type=int, default=1000)
    ap.add_argument("--mb", type=float, default=0,
                    help="findings until each report is this big")
    ap.add_argument("--distinct", type=int, default=0,
                    help="distinct findings (default: all distinct)")
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("outdir")
    a = ap.parse_args()
    per = a.findings if not a.mb else sys.maxsize
    distinct = a.distinct or a.reports * a.findings
    if a.mb:
        distinct = a.distinct or sys.maxsize
    os.makedirs(a.outdir, exist_ok=True)
    total = 0
    for i in range(a.reports):
        idents = ((i * per + j) % distinct for j in range(per))
        total += report(os.path.join(a.outdir, "big.%d.json" % (1000 + i)),
                        1000 + i, idents, a.depth, a.mb)
    print(total)


if __name__ == "__main__":
    main()
