"""What the Python tests that start a `burstscope run` share (they also import tap.py):

    wait_for(what, fn, timeout_s)   # fn() until it is truthy, at most timeout_s; a failed check if never
    dpdk_replay(trace, prefix)      # run's arguments for DPDK's net_pcap replaying `trace` at its recorded pace
    stop(run)                       # SIGTERM, then its stdout (killed after 60 s)
    flight_config(path, out_dir, triggers, snap=None)  # a run's YAML with the flight recorder on
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


def flight_config(path, out_dir, triggers, snap=None):
    """Writes a run's YAML configuration at `path`: the flight recorder on, writing into `out_dir`, 64 MiB of
    frames (`snap` bytes of each, or the default), 100 ms before and 20 ms after a trigger, at most a file a
    second; `triggers` maps trigger keys to values ({'microburst-bytes': 50000})."""
    lines = ['flight-recorder:', '  enabled: true', f'  directory: {out_dir}', '  memory-bytes: 67108864']
    if snap is not None:
        lines.append(f'  snap-length: {snap}')
    lines += ['  before: 100ms', '  after: 20ms', '  min-interval: 1s', '  triggers:']
    lines += [f'    {k}: {v}' for k, v in triggers.items()]
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
