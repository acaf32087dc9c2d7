#!/usr/bin/python3
"""The flight recorder's fan-in trigger in a quiet run without an endpoint (`run -q --listen none`).
    check_flight_fanin_quiet.py BURSTSCOPE
The fan-in trigger is fed by the training analysis through the run's interval callback; a quiet run without
metrics passed none, so that it never fired (found in a review, 2026-11-29). A trace made here (a classic pcap, so
that its timestamps are its own): every 100 ms for 3 s, four sources send 16 full-size TCP frames each toward one
host within the same 100 µs, each source at over a tenth of the 10 Gbit/s link (bursting, docs/training.md
"Co-bursts and fan-in"). DPDK's net_pcap replays it at its recorded pace into a run whose flight recorder fires at
3 sources. Checks:
- the run ends by itself (--idle-exit) and says it wrote fan-in files; they are in the directory;
- `burstscope analyze` of one finds the fan-in it was written for: four sources toward 10.9.0.1.
Needs root (DPDK EAL).
"""
import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from tap import check, done  # noqa: E402
from runs import dpdk_replay, flight_config  # noqa: E402


def frame(src, dst, seq):
    tcp = struct.pack('!HHIIBBHHH', 40000 + src, 5000, seq, 0, 0x50, 0x10, 65535, 0, 0) + bytes(1460)
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), seq % 65536, 0, 64, 6, 0, bytes([10, 9, 0, src]),
                     bytes([10, 9, 0, dst]))
    return bytes.fromhex('020000000002') + bytes.fromhex('020000000001') + b'\x08\x00' + ip + tcp


def write_trace(path):
    t0_us = 1_795_294_232_000_000
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for burst in range(30):
            for k in range(16):
                for s in (2, 3, 4, 5):
                    data = frame(s, 1, burst * 100_000 + k * 1460)
                    t = t0_us + burst * 100_000 + k * 5 + (s - 2)  # 16 frames a source in 80 µs
                    f.write(struct.pack('<IIII', t // 1_000_000, t % 1_000_000, len(data), len(data)) + data)


def main():
    exe = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix='bs-fanin-')
    try:
        trace = os.path.join(tmp, 'fanin.pcap')
        write_trace(trace)
        out_dir = os.path.join(tmp, 'flight')
        config = os.path.join(tmp, 'burstscope.yaml')
        flight_config(config, out_dir, {'fanin-sources': 3})
        try:
            run = subprocess.run([exe, 'run', '-q', '--config', config, '--listen', 'none', '--interval', '1s',
                                  '--idle-exit', '2s'] + dpdk_replay(trace, 'bs_fanin'),
                                 capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            check(False, 'the run ends by itself within 120 s (--idle-exit)')
            return
        said = run.stdout + run.stderr
        check(run.returncode == 0, f'the run ends by itself: exit {run.returncode}')
        files = sorted(glob.glob(os.path.join(out_dir, '*-fan_in.pcapng')))
        check(len(files) >= 1, f'fan-in files written in a quiet run without an endpoint: {len(files)}')
        check(f'flight recorder wrote {len(files)} file' in said,
              'the run says how many files it wrote: ' + ' '.join(x for x in said.splitlines() if 'wrote' in x))
        if files:
            a = subprocess.run([exe, 'analyze', files[0]], capture_output=True, text=True, timeout=60)
            line = next((x for x in a.stdout.splitlines() if x.strip().startswith('10.9.0.1')), '')
            check(a.returncode == 0 and 'max 4 sources' in line,
                  f'analyze of {os.path.basename(files[0])} finds the fan-in: {line.strip()}')
        if not files:
            for line in said.splitlines():
                print('# ' + line)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


if __name__ == '__main__':
    main()
