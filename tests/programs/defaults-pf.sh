#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/defaults-pf.sh: the "pf" lines of the defaults matrix
# (tests/programs/defaults.def, run by tests/programs/defaults.sh).
DM_GROUP=pf
. "${top_srcdir:-.}/tests/programs/defaults.sh"
