#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/loopback-verbs/rc-test.sh: runs rc_test (RC data path self-test of
# the loopback libibverbs) in one process and as two processes.
prog=${top_builddir:-.}/tests/loopback-verbs/rc_test
RDMACHECK_LOOPBACK_NS=rdmacheck-test-rc-$$
export RDMACHECK_LOOPBACK_NS
fail=0
for mode in single fork; do
	if timeout 60 "$prog" $mode; then
		echo "rc-test: $mode: PASS"
	else
		echo "rc-test: $mode: FAIL ($?)"
		fail=1
	fi
done
exit $fail
