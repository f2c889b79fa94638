#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""measure.py CMD [ARG]...: run CMD with its standard output to /dev/null
and print "WALL_SECONDS CPU_SECONDS MAX_RSS_KIB EXIT_STATUS": the CPU time
(user plus system) and the peak resident set size are CMD's own, as
wait4(2) reports them."""
import os
import subprocess
import sys
import time

t0 = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
wall = time.monotonic() - t0
print("%.3f %.3f %d %d" % (wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss,
                           os.waitstatus_to_exitcode(status)))
