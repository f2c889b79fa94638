#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/loopback-verbs/dma-test.sh: runs dma_test (direct placement of RDMA
# WRITE/READ data by the requester, dma.c) with placement allowed (also into
# a target left in RTR), refused by the kernel (EPERM: the stream takes
# over) and turned off.
prog=${top_builddir:-.}/tests/loopback-verbs/dma_test
RDMACHECK_LOOPBACK_NS=rdmacheck-test-dma-$$
export RDMACHECK_LOOPBACK_NS
fail=0
for mode in direct fallback rtr off; do
	if timeout 60 "$prog" $mode; then
		echo "dma-test: $mode: PASS"
	else
		echo "dma-test: $mode: FAIL ($?)"
		fail=1
	fi
done
exit $fail
