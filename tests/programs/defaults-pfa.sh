#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/defaults-pfa.sh: the "pfa" lines of the defaults matrix
# (perftest's -a, all sizes; tests/programs/defaults.def, run by
# tests/programs/defaults.sh).
DM_GROUP=pfa
. "${top_srcdir:-.}/tests/programs/defaults.sh"
