#!/usr/bin/python3
"""The live view (issue 19) against a real `burstscope run`: DPDK's net_pcap replays the bundled trace (20 copies,
one long job, at its recorded pace) and the page at /live is opened in headless Chromium (loopback only).
    check_live.py BURSTSCOPE WRAP_TRACE SOURCE_ROOT
- the page holds after a few updates (#hold=N) with no page error, and its chart region is not blank;
- every 100 µs bin the page shows (its bins list: index, bytes, packets) equals the bin `burstscope report`
  computes from the same file (report.json's timeline), and no bin of the file inside the window shown,
  after the first one the page got, is missing;
- ten viewers at once each get a snapshot and a stream of events; the exporter counts them;
- the training job's own 100 µs bins (the per-job picture) are its share of the file's bins;
- after SIGTERM the ledger balances with no ring drop: viewers cost the worker nothing it could not keep up with.
Run with /usr/bin/python3 (Debian's python3-pil); needs Debian's chromium and root (DPDK EAL).
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'report'))
from tap import check, done  # noqa: E402
from runs import dpdk_replay, stop, wait_for  # noqa: E402
from check_report import browser_or_fail, non_blank, rendered_dom  # noqa: E402

WIDTH = 1280


def chromium(browser, profile, args, url):
    # Loopback only: every name resolves to nothing and no proxy is used for 127.0.0.1.
    cmd = [browser, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
           '--disable-extensions', '--disable-background-networking', '--disable-sync', '--mute-audio',
           '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1', '--no-proxy-server',
           f'--user-data-dir={profile}', '--virtual-time-budget=30000', '--hide-scrollbars',
           '--force-device-scale-factor=1'] + args + [url]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None


def viewer(url, seconds, out):
    """One viewer's event stream for `seconds`: the event names it got."""
    names = []
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            end = time.monotonic() + seconds
            for raw in r:
                line = raw.decode()
                if line.startswith('event: '):
                    names.append(line[7:].strip())
                if time.monotonic() > end:
                    break
    except OSError as e:
        names.append(f'error: {e}')
    out.append(names)


def snapshot(url):
    """The first event of a new viewer (the window's snapshot), parsed."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            for raw in r:
                line = raw.decode()
                if line.startswith('data: '):
                    return json.loads(line[6:])
    except OSError:
        return None
    return None


def metric(base, name):
    with urllib.request.urlopen(base + '/metrics', timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + '{') or line.startswith(name + ' '):
                return float(line.rsplit(' ', 1)[1])
    return None


def main():
    exe, wrap, root = sys.argv[1:4]
    if os.geteuid() != 0:
        print('1..0 # SKIP needs root (DPDK EAL)')
        return
    browser = browser_or_fail('live view')
    from PIL import Image  # python3-pil
    tmp = tempfile.mkdtemp(prefix='bs-live-')
    trace = os.path.join(tmp, 'replay.pcap')
    subprocess.run([wrap, 'pad-usec', os.path.join(root, 'data/ddp-gloo-w3-3steps.pcap'), trace, '--repeat', '20'],
                   check=True, capture_output=True)
    subprocess.run([exe, 'report', trace, '--out', os.path.join(tmp, 'report')], check=True, capture_output=True)
    timeline = json.load(open(os.path.join(tmp, 'report', 'report.json')))['timeline']
    check(timeline['bin_ns'] == 100000, 'report.json has the 100 µs timeline')
    first = timeline['start_ns'] // timeline['bin_ns']
    file_bins = {first + t: (b, p) for t, b, p in zip(timeline['t'], timeline['bytes'], timeline['packets'])}

    err = open(os.path.join(tmp, 'run.err'), 'w')
    run = subprocess.Popen([exe, 'run', '-q', '--json', '--listen', '127.0.0.1:0', '--interval', '1s',
                            # A ring that holds seconds of this trace: Chromium shares the two cores with the
                            # sensor here, and the check is that viewers cost the worker nothing, not that a
                            # loaded machine schedules it at once.
                            '--ring-size', '1048576'] + dpdk_replay(trace, 'bs_live'),
                           stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        def live_url():
            m = re.search(r'live view at (http://127\.0\.0\.1:\d+)/live', open(err.name).read())
            return m.group(1) if m else None
        base = wait_for('run says where the live view is', live_url, 60)
        if not base:
            return
        check(wait_for('the live view publishes events', lambda: (metric(base, 'burstscope_live_events_total') or 0) >= 3,
                       30) is not None, 'the live view publishes events')

        # The page, held after 5 updates (about a second): DOM and screenshot.
        profile = os.path.join(tmp, 'profile')
        p = chromium(browser, profile, [f'--window-size={WIDTH},900', '--dump-dom'], base + '/live#hold=5')
        check(p is not None and p.returncode == 0, 'chromium --dump-dom of /live#hold=5 finishes')
        if p is None or p.returncode != 0:
            return
        dom, layout = rendered_dom(p.stdout, 'live', ['port-0'])
        del dom
        found = re.search(r'<pre[^>]*id="bins-0"[^>]*>(.*?)</pre>', p.stdout, re.S)
        shown = html.unescape(found.group(1)) if found else ''
        lines = shown.splitlines()
        m = re.match(r'# bins (\d+) to (\d+)', lines[0] if lines else '')
        check(m is not None, 'the page lists the bins it shows, with the window')
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            page = {}
            for line in lines[1:]:
                s, b, n = line.split(',')
                page[round(float(s) * 1e4)] = (int(b), int(n))
            check(len(page) >= 100, f'the page shows {len(page)} non-empty 100 µs bins (at least 100)')
            wrong = [(i, v, file_bins.get(i)) for i, v in page.items() if file_bins.get(i) != v]
            check(not wrong, f'every bin shown equals report.json\'s bin of the same file ({len(page)} bins)' +
                  (f'; first differences: {wrong[:5]}' if wrong else ''))
            start = min(page) if page else hi
            missing = [i for i in file_bins if max(lo, start) <= i <= max(page, default=lo) and i not in page]
            check(not missing, f'no bin of the file inside the window shown is missing ({len(missing)} missing)')
            check(hi - lo == 50000, f'the window is 5 s of 100 µs bins ({hi - lo})')

        shot = os.path.join(tmp, 'live.png')
        p = chromium(browser, os.path.join(tmp, 'profile2'), [f'--window-size={WIDTH},900', f'--screenshot={shot}'],
                     base + '/live#hold=5')
        check(p is not None and p.returncode == 0 and os.path.exists(shot), 'chromium --screenshot of /live#hold=5')
        if layout and os.path.exists(shot):
            ok, why = non_blank(Image.open(shot), layout['port-0'], True)
            check(ok, f'the port\'s chart region is not blank: {why}')

        # Ten viewers at once.
        got = []
        threads = [threading.Thread(target=viewer, args=(base + '/live/events', 3, got)) for _ in range(10)]
        for t in threads:
            t.start()
        check(wait_for('ten viewers are counted', lambda: metric(base, 'burstscope_live_viewers') == 10, 20)
              is not None, 'the exporter counts ten live viewers at once')
        for t in threads:
            t.join(30)
        good = [g for g in got if g and g[0] == 'snapshot' and g.count('bins') >= 5]
        check(len(good) == 10, f'ten viewers each got a snapshot, then at least 5 updates in 3 s ({len(good)} did)')
        check(wait_for('the viewers are gone', lambda: metric(base, 'burstscope_live_viewers') == 0, 20) is not None,
              'closed viewers are no longer counted')
        # The training job's own bins (the per-job picture), once the analysis has found the job: each is the
        # job's share of the file's bin at that index (never more); the trace is nearly all the job's traffic
        # (140 of its 53.7 MB are not), so nearly every one equals it.
        def job_bins():
            s = snapshot(base + '/live/events')
            jb = s['ports'][0].get('job_bins', {}) if s else {}
            return jb if any(jb.values()) else None
        jb = wait_for('the snapshot carries a training job\'s own bins', job_bins, 30)
        if jb:
            bins = [b for v in jb.values() for b in v]
            above = [b for b in bins if b[0] not in file_bins or b[1] > file_bins[b[0]][0]]
            equal = sum(1 for b in bins if b[0] in file_bins and b[1] == file_bins[b[0]][0])
            check(not above and equal >= 0.99 * len(bins),
                  f'the job\'s {len(bins)} bins: none above the file\'s bin, {equal} equal to it ({above[:3]})')
        with urllib.request.urlopen(base + '/metrics', timeout=10) as r:
            text = r.read().decode()
        over = re.search(r'^burstscope_live_bins_total\{[^}]*result="overwritten"\} (\S+)$', text, re.M)
        check(over is not None and float(over.group(1)) == 0, 'the live view read every bin in time (none overwritten)')
    finally:
        out = stop(run)
        err.close()
        shutil.rmtree(tmp, ignore_errors=True)
    check(run.returncode == 0, f'run exits 0 on SIGTERM with viewers gone (exit {run.returncode})')
    try:
        ledger = json.loads(out)['ports'][0]['ledger']
        check(ledger['balanced'] and ledger['dropped']['ring_full'] == 0,
              f'the ledger balances with no ring drop: {ledger["received"]} received, {ledger["analysed"]} analysed')
    except (ValueError, KeyError, IndexError) as e:
        check(False, f'run --json printed its report: {e}')



def degraded(exe, wrap, root, browser):
    """SPEC "Overload": a sensor whose 16-record ring drops most frames of the replay says, on the page, that
    its intervals are degraded and shows their bounds."""
    tmp = tempfile.mkdtemp(prefix='bs-live-lossy-')
    trace = os.path.join(tmp, 'replay.pcap')
    subprocess.run([wrap, 'pad-usec', os.path.join(root, 'data/ddp-gloo-w3-3steps.pcap'), trace, '--repeat', '20'],
                   check=True, capture_output=True)
    err = open(os.path.join(tmp, 'run.err'), 'w')
    run = subprocess.Popen([exe, 'run', '-q', '--json', '--listen', '127.0.0.1:0', '--interval', '1s',
                            '--ring-size', '16'] + dpdk_replay(trace, 'bs_live_lossy'),
                           stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        def live_url():
            m = re.search(r'live view at (http://127\.0\.0\.1:\d+)/live', open(err.name).read())
            return m.group(1) if m else None
        base = wait_for('the lossy run says where the live view is', live_url, 60)
        if not base:
            return

        def bounded():
            s = snapshot(base + '/live/events')
            b = s['ports'][0]['figures'].get('bounds', {}) if s else {}
            return b if b.get('degraded') else None
        b = wait_for('a degraded interval reaches the live view', bounded, 60)
        check(b is not None and b['lost_packets'] > 0 and any(x['bounded'] for x in b['scales']),
              'the live view\'s figures carry the degraded interval\'s bounds')
        p = chromium(browser, os.path.join(tmp, 'profile'), [f'--window-size={WIDTH},900', '--dump-dom'],
                     base + '/live#hold=3')
        text = html.unescape(p.stdout) if p is not None else ''
        check(re.search(r'DEGRADED \(\d+ frames lost after the 100 µs series\): E\(', text) is not None,
              'the page says the interval is degraded and shows the bounds')
    finally:
        stop(run)
        err.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
    if os.geteuid() == 0:
        degraded(*sys.argv[1:4], browser_or_fail('live view'))
    done()
