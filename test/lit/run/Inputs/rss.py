"""rss.py CMD ARGS...: runs CMD and prints its exit code, whether its most resident memory stayed under
100 MB and whether it took under 2 s (the bounded-memory tests)."""
import resource
import subprocess
import sys
import time

start = time.monotonic()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
took = time.monotonic() - start
rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"exit {rc}, under 100 MB: {rss_kb < 100 * 1024}, under 2 s: {took < 2}")
