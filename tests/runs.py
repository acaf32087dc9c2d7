"""What the Python tests that start a `burstscope run` share (they also import tap.py):

    wait_for(what, fn, timeout_s)   # fn() until it is truthy, at most timeout_s; a failed check if never
    dpdk_replay(trace, prefix)      # run's arguments for DPDK's net_pcap replaying `trace` at its recorded pace
    stop(run)                       # SIGTERM, then its stdout (killed after 60 s)
"""
import os
import signal
import subprocess
import time

from tap import check


def wait_for(what, fn, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    check(False, f'{what} (waited {timeout_s} s)')
    return None


def dpdk_replay(trace, prefix, eal=()):
    """--port/--vdev for a net_pcap replay of `trace` (the file's timestamps, at its pace), then the EAL's
    arguments: two lcores, no hugepages, no PCI, a file prefix of its own."""
    return (['--port', 'net_pcap0', '--vdev', f'net_pcap0,rx_pcap={trace}', '--replay-speed', '1', '--', '-l', '0-1',
             '--no-huge', '-m', '512', '--no-pci', f'--file-prefix={prefix}_{os.getpid()}'] + list(eal))


def stop(run):
    run.send_signal(signal.SIGTERM)
    try:
        out, _ = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        out, _ = run.communicate()
    return out
