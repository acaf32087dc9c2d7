#!/usr/bin/env python3
"""What an AF_XDP run costs with no traffic: whole-process CPU seconds (user + system, every thread, from wait4's
rusage) of `burstscope run --xdp` on an idle veth from start to SIGTERM 1.5 s later — its start-up (loading and
attaching the XDP program, creating its maps, the sockets' UMEM), its idle wake-ups and its exit. compare_afxdp.py
charges all of it to a million packets; this is the part no packet causes. Several builds alternate, ROUNDS times;
prints each run's figure and the medians. Needs root. Standard library only.
usage: afxdp_startup.py BUILD_DIR [BUILD_DIR...] [--rounds N]
"""
import os
import signal
import statistics
import subprocess
import sys
import time

args = sys.argv[1:]
rounds = 5
if "--rounds" in args:
    i = args.index("--rounds")
    rounds = int(args[i + 1])
    del args[i:i + 2]
if not args:
    sys.exit(__doc__)
builds = args
sys.argv = [sys.argv[0], builds[0]]  # compare_afxdp reads its build directory at import
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_afxdp as c  # noqa: E402  (its namespaces and veth pair)


def main():
    cpu = {b: [] for b in builds}
    c.setup()
    try:
        for _ in range(rounds):
            for b in builds:
                p = subprocess.Popen(["ip", "netns", "exec", c.NS_RX, os.path.join(b, "burstscope"), "run", "--xdp",
                                      c.V1, "--listen", "none", "-q", "--json"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.5)
                os.kill(p.pid, signal.SIGTERM)
                _, status, ru = os.wait4(p.pid, 0)
                p.returncode = 0
                if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                    sys.exit(f"{b}: burstscope run --xdp did not exit cleanly (status {status})")
                cpu[b].append(ru.ru_utime + ru.ru_stime)
    finally:
        c.teardown()
    for b in builds:
        runs = " ".join(f"{x:.3f}" for x in cpu[b])
        print(f"{b}: CPU s per idle run {runs}; median {statistics.median(cpu[b]):.3f}")


if __name__ == "__main__":
    main()
