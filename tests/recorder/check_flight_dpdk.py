#!/usr/bin/python3
"""The flight recorder (issue 19) in a real `burstscope run`: DPDK's net_pcap replays the bundled trace (3 copies,
at its recorded pace, with the file's timestamps) into a run whose flight recorder is set by the YAML file, with a
microburst trigger; then a request by HTTP POST once the replay is over.
    check_flight_dpdk.py BURSTSCOPE WRAP_TRACE SOURCE_ROOT
- microbursts write files; each file holds exactly the replayed frames whose time is inside the window its
  comment states (times, wire lengths and the first snap-length bytes, compared with the source file), in order;
- the files open in tshark (Wireshark's reader), `burstscope analyze` and `burstscope report`, with the same
  frame count;
- POST /flight-recorder/trigger writes an on-demand file around the newest frame (or, when the newest
  microburst file already holds that window, is refused and counted in_window); a second one at once is
  refused (429, rate limit); GET is refused (405);
- burstscope_flight_recorder_* count every file and every skipped trigger, and the bytes on disk;
- after SIGTERM the ledger balances: recording cost the worker no frame.
Needs root (DPDK EAL) and tshark.
"""
import calendar
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from tap import check, done  # noqa: E402
from runs import dpdk_replay, flight_config, stop, wait_for  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
import make_host_captures as host_captures  # noqa: E402
from make_host_captures import read_classic  # noqa: E402

SNAP = 128


def read_pcap(path):
    """Classic pcap: [(ts_ns, wire_len, data)], by the host-capture tests' reader (tests/integration)."""
    with open(path, 'rb') as f:
        _, _, frames = read_classic(f.read(), path)
    return [(f.ts, f.orig, f.data) for f in frames]


def read_pcapng(path):
    """A recorder file: ([(ts_ns, wire_len, data)] in file order (one interface here), the section's comment). The
    frames by the host-capture tests' pcapng reader (it checks every block length and applies if_tsresol); the
    comment is the section header's first option (opt_comment, code 1), where the recorder writes it."""
    with open(path, 'rb') as f:
        d = f.read()
    frames = [(f.ts, f.orig, f.data) for _, fs in host_captures.read_pcapng(d, path) for f in fs]
    code, olen = struct.unpack_from('<HH', d, 24)
    return frames, d[28:28 + olen].decode() if code == 1 else ''


def iso_ns(text):
    m = re.match(r'(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{9})Z', text)
    y, mo, d, h, mi, s, frac = (int(x) for x in m.groups())
    return calendar.timegm((y, mo, d, h, mi, s)) * 1_000_000_000 + frac


def metric(base, name, **labels):
    try:
        text = urllib.request.urlopen(base + '/metrics', timeout=10).read().decode()
    except OSError:
        return None
    total = None
    for line in text.splitlines():
        m = re.match(r'^' + name + r'(\{[^}]*\})? (\S+)$', line)
        if not m:
            continue
        if all(f'{k}="{v}"' in (m.group(1) or '') for k, v in labels.items()):
            total = (total or 0) + float(m.group(2))
    return total


def main():
    exe, wrap, root = sys.argv[1:4]
    if os.geteuid() != 0:
        print('1..0 # SKIP needs root (DPDK EAL)')
        return
    if shutil.which('tshark') is None:
        check(False, 'tshark is installed (scripts/setup.sh installs it)')
        done()
    tmp = tempfile.mkdtemp(prefix='bs-flight-')
    trace = os.path.join(tmp, 'replay.pcap')
    subprocess.run([wrap, 'pad-usec', os.path.join(root, 'data/ddp-gloo-w3-3steps.pcap'), trace, '--repeat', '3'],
                   check=True, capture_output=True)
    source = read_pcap(trace)
    out_dir = os.path.join(tmp, 'flight')
    config = os.path.join(tmp, 'burstscope.yaml')
    flight_config(config, out_dir, {'microburst-bytes': 50000}, snap=SNAP)
    err = open(os.path.join(tmp, 'run.err'), 'w')
    run = subprocess.Popen([exe, 'run', '-q', '--json', '--config', config, '--listen', '127.0.0.1:0', '--interval',
                            '1s'] + dpdk_replay(trace, 'bs_flight'), stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        def metrics_url():
            m = re.search(r'metrics at (http://127\.0\.0\.1:\d+)/metrics', open(err.name).read())
            return m.group(1) if m else None
        base = wait_for('run says where its metrics are', metrics_url, 60)
        if not base:
            return
        check('flight recorder into ' + out_dir in open(err.name).read(), 'run says where the flight recorder writes')
        # The replay is over once every frame is in: the counters stop moving.
        wait_for('the replay is received', lambda: (metric(base, 'burstscope_capture_received_packets_total') or 0)
                 >= len(source), 60)
        written = wait_for('microbursts write files', lambda: metric(
            base, 'burstscope_flight_recorder_triggers_total', trigger='microburst', result='written'), 30)
        check(written is not None and written >= 1, f'microburst files written: {written}')
        skipped = metric(base, 'burstscope_flight_recorder_triggers_total', trigger='microburst',
                         result='rate_limited') + metric(base, 'burstscope_flight_recorder_triggers_total',
                                                         trigger='microburst', result='in_window')
        check(skipped >= 1, f'microbursts close to a file are counted as skipped, not written: {skipped:.0f}')

        # On demand: GET is refused; POST, once the last file is over a second old, asks for one.
        try:
            urllib.request.urlopen(base + '/flight-recorder/trigger', timeout=10)
            check(False, 'GET /flight-recorder/trigger is refused')
        except urllib.error.HTTPError as e:
            check(e.code == 405, f'GET /flight-recorder/trigger is refused with 405 ({e.code})')
        # The worker may still be taking the last frames (and raising microburst triggers) on a slow machine: POST
        # until one is accepted, once min-interval (1 s) has passed since the port's last file (bounded).
        # The port is idle by now, so an on-demand window ends at the newest frame. When the last microburst file
        # (which of the microbursts got a file turns on the wall-clock rate limit, i.e. on the machine's timing)
        # already reaches it, the request is inside that file's window: refused with 429 and counted in_window,
        # which is the right answer too; then no on-demand file comes.
        def post():
            try:
                req = urllib.request.Request(base + '/flight-recorder/trigger', method='POST')
                with urllib.request.urlopen(req, timeout=10) as r:
                    return (r.status, r.read().decode())
            except urllib.error.HTTPError as e:
                if e.code != 429:
                    return (e.code, e.read().decode())
                covered = metric(base, 'burstscope_flight_recorder_triggers_total', trigger='on_demand',
                                 result='in_window')
                return ('covered', '') if covered else None
        status, said = wait_for('a POST is accepted once the rate limit has passed', post, 60) or (None, '')
        covered = status == 'covered'
        check(status == 202 and '.pcapng' in said or covered,
              f'POST /flight-recorder/trigger: {status} {said.strip()} (covered by the newest file: {covered})')
        try:
            urllib.request.urlopen(urllib.request.Request(base + '/flight-recorder/trigger', method='POST'), timeout=10)
            check(False, 'a second POST at once is refused (rate limit)')
        except urllib.error.HTTPError as e:
            why = e.read().decode().strip()
            check(e.code == 429 and 'skipped' in why, f'a second POST at once is refused: {e.code} {why}')
        if not covered:
            wait_for('the on-demand file is written', lambda: metric(
                base, 'burstscope_flight_recorder_triggers_total', trigger='on_demand', result='written'), 30)
        files = sorted(os.listdir(out_dir))
        on_disk = sum(os.path.getsize(os.path.join(out_dir, f)) for f in files)
        check(metric(base, 'burstscope_flight_recorder_files') == len(files),
              f'burstscope_flight_recorder_files counts the {len(files)} files in the directory')
        check(metric(base, 'burstscope_flight_recorder_disk_bytes') == on_disk,
              f'burstscope_flight_recorder_disk_bytes is their size ({on_disk})')
        check(metric(base, 'burstscope_flight_recorder_written_bytes_total') == on_disk,
              'burstscope_flight_recorder_written_bytes_total is what was written')
        check(sum(f.endswith('-microburst.pcapng') for f in files) == written and
              sum(f.endswith('-on_demand.pcapng') for f in files) == (0 if covered else 1),
              f'one file per written trigger: {files}')
    finally:
        run_out = stop(run)
        err.close()
    check(run.returncode == 0, f'run exits 0 with its ledger balanced (exit {run.returncode})')
    result = json.loads(run_out) if run_out.strip() else {}
    ring_drops = sum(p['ledger']['dropped']['ring_full'] for p in result.get('ports', []))
    check(ring_drops == 0, f'no ring drop while recording ({ring_drops})')

    for name in sorted(os.listdir(out_dir)):
        path = os.path.join(out_dir, name)
        frames, comment = read_pcapng(path)
        m = re.search(r'window_start=(\S+) window_end=(\S+)', comment)
        check(m is not None and 'trigger=' in comment, f'{name}: the trigger and window are in its comment')
        if not m:
            continue
        lo, hi = iso_ns(m.group(1)), iso_ns(m.group(2))
        # In time order (the file is; the capture steps back by a microsecond now and then), ties as captured.
        want = sorted([(t, w, d[:SNAP]) for t, w, d in source if lo <= t <= hi], key=lambda f: f[0])
        check(frames == want, f'{name}: exactly the {len(want)} source frames of its window ({len(frames)})')
        tshark = subprocess.run(['tshark', '-r', path, '-T', 'fields', '-e', 'frame.number'], capture_output=True,
                                text=True)
        check(tshark.returncode == 0 and len(tshark.stdout.split()) == len(frames),
              f'{name}: tshark reads {len(tshark.stdout.split())} frames')
        a = subprocess.run([exe, 'analyze', '--json', path], capture_output=True, text=True)
        check(a.returncode == 0 and json.loads(a.stdout)['packets'] == len(frames),
              f'{name}: burstscope analyze reads it ({a.stderr.strip()[:200]})')
    report_dir = os.path.join(tmp, 'report')
    first = os.path.join(out_dir, sorted(os.listdir(out_dir))[0])
    rep = subprocess.run([exe, 'report', first, '--out', report_dir], capture_output=True, text=True)
    check(rep.returncode == 0 and os.path.exists(os.path.join(report_dir, 'report.html')),
          f'burstscope report makes a page of a file ({rep.stderr.strip()[:200]})')
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
    done()
