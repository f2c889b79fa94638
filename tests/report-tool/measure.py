#!/usr/bin/env python3
"""measure.py CMD [ARG]...: run CMD with its standard output to /dev/null
and print "WALL_SECONDS CPU_SECONDS MAX_RSS_KIB EXIT_STATUS" (the CPU
time is user plus system, the peak resident set size that of CMD)."""
import resource
import subprocess
import sys
import time

t0 = time.monotonic()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %.3f %d %d" % (wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss,
                           p.returncode))
