#!/usr/bin/python3
"""The report page in headless Chromium, against analyze --json and report.json (issue 17).

    check_report.py BURSTSCOPE SOURCE_ROOT

For each committed trace: `burstscope report TRACE --out TMP` and `burstscope analyze TRACE --json`; then
Chromium (file:// only, no network) dumps the rendered DOM and takes a screenshot 1280 px wide:
- the page recorded no error (its #page-errors is empty) and finished (body[data-rendered=1]);
- every key figure's data-value equals analyze's value at its data-path, and the text shown agrees with it at the
  precision shown ("39.45 MB" is 39,446,299 bytes give or take 5 kB);
- the numbers the charts draw are report.json's (timeline peak per bin width, heatmap totals, flow shares);
- every chart region's crop of the screenshot is not blank;
- the training section names each job's parallelism as analyze does: kind, evidence, each pipeline in stage
  order, each stage's data-parallel group, the count of phases per step (the hybrid recording has them all).
Run with /usr/bin/python3 (Debian's python3-pil); needs Debian's chromium (scripts/setup.sh installs both).
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from tap import check, done  # noqa: E402

# The bottleneck recording has TCP loss: congesting bursts and step evidence; the hybrid job (DP x PP) shows the
# current-parallelism rows: its pipelines, groups, the evidence and the phases of its steps.
TRACES = ['data/testbed/ddp-ring-w4.pcap', 'data/testbed/two-jobs.pcap',
          'data/testbed/ddp-ring-w4-bottleneck.pcap', 'data/testbed/hybrid-w4.pcap']
REGIONS = ['key-figures', 'chart-timeline', 'chart-envelope', 'chart-ptm', 'chart-backlog', 'chart-utilisation',
           'chart-microbursts', 'chart-heatmap', 'chart-flows', 'chart-flow-timelines', 'training', 'evidence']
CHART_REGIONS = [r for r in REGIONS if r.startswith('chart-')]
TEXT_SECTIONS = {'training'}  # sections whose whole text the test reads
STEP_TIMEOUT_S = 120
WIDTH = 1280

# Units the page shows, as factors to the base unit (bytes, bit/s, seconds).
UNITS = {'B': 1, 'kB': 1e3, 'MB': 1e6, 'GB': 1e9, 'TB': 1e12,
         'b/s': 1, 'kb/s': 1e3, 'Mb/s': 1e6, 'Gb/s': 1e9, 'Tb/s': 1e12,
         'ns': 1e-9, 'µs': 1e-6, 'ms': 1e-3, 's': 1}
# data-unit of a data-value -> factor to the same base unit.
VALUE_UNITS = {'count': 1, 'bytes': 1, 'bps': 1, 'ratio': 1, 's': 1, 'ns': 1e-9}


def run(cmd, cwd, what):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        check(False, f'{what}: no answer within {STEP_TIMEOUT_S} s')
        return None
    if p.returncode != 0:
        check(False, f'{what}: exit {p.returncode}: {p.stderr.strip()[-400:]}')
        return None
    return p


def chromium(browser, profile, args, url, what):
    cmd = [browser, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
           '--disable-extensions', '--disable-background-networking', '--disable-sync', '--mute-audio',
           '--host-resolver-rules=MAP * ~NOTFOUND', '--proxy-server=127.0.0.1:9',  # file:// only, never the network
           f'--user-data-dir={profile}', '--virtual-time-budget=15000', '--hide-scrollbars',
           '--force-device-scale-factor=1'] + args + [url]
    return run(cmd, None, what)


class Dom(html.parser.HTMLParser):
    """Collects what the test reads from the rendered DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.pre = {}            # id -> text of <pre id=page-errors|page-layout>
        self.values = []         # [attrs, text] of elements with data-path
        self.report_values = []  # attrs of elements with data-report-path
        self.sections = {}       # id -> attrs
        self.texts = {}          # id -> text of the sections in TEXT_SECTIONS
        self.body = {}
        self._stack = []         # open capture targets: [tag, key, text parts, depth]
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self._depth += 1
        if tag == 'body':
            self.body = a
        if tag == 'section' and 'id' in a:
            self.sections[a['id']] = a
            if a['id'] in TEXT_SECTIONS:
                self._stack.append(['text', a['id'], [], self._depth])
        if tag == 'pre' and a.get('id') in ('page-errors', 'page-layout'):
            self._stack.append(['pre', a['id'], [], self._depth])
        if 'data-path' in a:
            self._stack.append(['value', a, [], self._depth])
        if 'data-report-path' in a:
            self.report_values.append(a)

    def handle_endtag(self, tag):
        while self._stack and self._stack[-1][3] == self._depth:
            kind, key, parts, _ = self._stack.pop()
            if kind == 'pre':
                self.pre[key] = ''.join(parts)
            elif kind == 'text':
                self.texts[key] = ''.join(parts)
            else:
                self.values.append([key, ''.join(parts)])
        self._depth -= 1

    def handle_data(self, data):
        for s in self._stack:
            s[2].append(data)


def at_path(obj, path):
    if ' - ' in path:
        a, b = path.split(' - ')
        return at_path(obj, a) - at_path(obj, b)
    for part in path.split('.'):
        if part == 'length' and isinstance(obj, list):
            return len(obj)
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


def shown_agrees(text, value, unit):
    """The text shown ("39.45 MB", "30,437", "143.0", "—") against the machine value in `unit`."""
    text = text.strip()
    if value is None:
        return text == '—'
    parts = text.split(' ')
    number, shown_unit = parts[0].replace(',', ''), (parts[1] if len(parts) > 1 else None)
    if len(parts) > 2 or (shown_unit is not None and shown_unit not in UNITS):
        return False
    try:
        shown = float(number)
    except ValueError:
        return False
    decimals = len(number.split('.')[1]) if '.' in number else 0
    factor = UNITS[shown_unit] if shown_unit else 1
    truth = value * VALUE_UNITS[unit]
    return abs(shown * factor - truth) <= 0.5 * 10 ** -decimals * factor * (1 + 1e-9) + 1e-12 * abs(truth)


def aligned_peak(timeline, width_ns):
    """The most bytes in one epoch-aligned bin of width_ns, from the 100 us base bins."""
    sums = {}
    for t, b in zip(timeline['t'], timeline['bytes']):
        k = (timeline['start_ns'] + t * timeline['bin_ns']) // width_ns
        sums[k] = sums.get(k, 0) + b
    return max(sums.values()) if sums else 0


def non_blank(image, box, chart):
    x, y, w, h = box['x'], box['y'], box['width'], box['height']
    if w < 50 or h < 50 or x + w > image.width or y + h > image.height:
        return False, f'box {box} outside the {image.size} screenshot'
    crop = image.crop((x, y, x + w, y + h)).convert('RGB')
    colours = crop.getcolors(maxcolors=1 << 20) or []
    background = max(colours)[1] if colours else None
    ink = sum(c for c, rgb in colours if rgb != background) / (w * h)
    # Charts draw their data in colour; text, axes and grid lines are grey. A chart whose canvas stayed empty
    # still has its title and axes, so chart regions must also hold coloured pixels.
    coloured = sum(c for c, rgb in colours if max(rgb) - min(rgb) > 60) / (w * h)
    ok = len(colours) >= 16 and ink >= 0.02 and (not chart or coloured >= 0.003)
    return ok, f'{len(colours)} colours, {100 * ink:.1f}% non-background, {100 * coloured:.2f}% coloured'


def check_trace(exe, root, browser, trace, tmp):
    from PIL import Image  # python3-pil

    name = os.path.basename(trace)
    out = os.path.join(tmp, name + '.out')
    if not run([exe, 'report', trace, '--out', out], root, f'{name}: burstscope report'):
        return
    p = run([exe, 'analyze', trace, '--json'], root, f'{name}: burstscope analyze --json')
    if not p:
        return
    analyze = json.loads(p.stdout)
    page = os.path.join(out, 'report.html')
    with open(page, encoding='utf-8') as f:
        text = f.read()
    with open(os.path.join(out, 'report.json'), encoding='utf-8') as f:
        report = json.load(f)
    check('<!-- burstscope:' not in text and '<link' not in text and 'src="http' not in text,
          f'{name}: report.html is self-contained (markers replaced, no external link or script)')
    mine = dict(report['analyze'], training=dict(report['analyze'].get('training', {}), analysis_ms=None))
    theirs = dict(analyze, training=dict(analyze.get('training', {}), analysis_ms=None))
    check(mine == theirs, f'{name}: report.json\'s analyze is analyze --json (but for training.analysis_ms)')

    url = 'file://' + os.path.abspath(page)
    profile = os.path.join(tmp, 'profile')
    p = chromium(browser, profile, [f'--window-size={WIDTH},1000', '--dump-dom'], url, f'{name}: chromium --dump-dom')
    if not p:
        return
    dom, layout = rendered_dom(p.stdout, name, REGIONS)

    # Key figures (and the microburst quantiles): value at the path, and the text shown.
    paths = {a['data-path'] for a, _ in dom.values}
    required = {'packets', 'bytes', 'last_ns - first_ns', 'mean_bps', 'microbursts.count', 'training.jobs.length'}
    required |= {f'scales.{i}.{k}' for i in range(len(analyze['scales'])) for k in ('envelope_bytes', 'ptm')}
    required |= {f'backlog.{i}.max_backlog_bytes' for i in range(len(analyze['backlog']))}
    check(required <= paths, f'{name}: the key figures cover {len(required)} figures'
          + (f'; missing {sorted(required - paths)}' if not required <= paths else ''))
    wrong = []
    for attrs, shown in dom.values:
        path = attrs['data-path']
        try:
            truth = at_path(analyze, path)
        except (KeyError, IndexError, ValueError, TypeError):
            wrong.append(f'{path}: not in analyze --json')
            continue
        value = json.loads(attrs['data-value'])
        if value != truth:
            wrong.append(f'{path}: page {value!r}, analyze {truth!r}')
        elif 'data-unit' in attrs and not shown_agrees(shown, truth, attrs['data-unit']):
            wrong.append(f'{path}: shown {shown!r} for {truth!r} {attrs["data-unit"]}')
    check(not wrong and len(dom.values) >= len(required),
          f'{name}: {len(dom.values)} numbers on the page equal analyze --json and are shown at their precision'
          + (': ' + '; '.join(wrong[:8]) if wrong else ''))

    # Each job's parallelism as analyze names it: the kind, every pipeline in stage order, every stage's group,
    # the evidence, and the count of phases per step (the page writes hosts joined by ' → ' and ', ').
    shown = dom.texts.get('training', '')
    missing = []
    for j in analyze.get('training', {}).get('jobs', []):
        topo, phases = j['topology'], j.get('phases') or {}
        want = ['Parallelism' + topo['kind']] + [topo['evidence']] * bool(topo.get('evidence'))
        want += [f'pipeline {k + 1}: ' + ' → '.join(p) for k, p in enumerate(topo.get('pipelines', []))
                 if topo['kind'] == 'hybrid']
        want += [f'stage {k} data-parallel group: ' + ', '.join(g) for k, g in enumerate(topo.get('groups', []))]
        want += [f'Phases per step{phases["count"]} (in {phases["steps"]} steps)'] * bool(phases.get('count'))
        missing += [f'{j["name"]}: {w!r}' for w in want if w not in shown]
    check(shown and not missing, f'{name}: the training section names each job\'s parallelism, its pipelines, groups, '
                                 'evidence and phases per step as analyze --json does'
          + (': missing ' + '; '.join(missing[:6]) if missing else ''))

    # The charts draw report.json's numbers.
    timeline = dom.sections.get('chart-timeline', {})
    check(timeline.get('data-scale-ns') == '100000' and
          int(timeline.get('data-peak-bin-bytes', -1)) == max(report['timeline']['bytes']),
          f'{name}: the timeline\'s highest 100 us bin is max(timeline.bytes) = {max(report["timeline"]["bytes"])}')
    heat = dom.sections.get('chart-heatmap', {})
    cells = report['heatmap']['cells']
    check(heat.get('data-hosts') == str(len(report['heatmap']['hosts'])) and
          int(heat.get('data-total-bytes', -1)) == sum(c[2] for c in cells) and
          int(heat.get('data-max-cell-bytes', -1)) == max(c[2] for c in cells),
          f'{name}: the heatmap draws report.json\'s {len(report["heatmap"]["hosts"])} hosts and {len(cells)} cells')
    shares = [(a['data-report-path'], json.loads(a['data-value'])) for a in dom.report_values]
    check(len(shares) == len(report['flows']['series']) and
          all(at_path(report, path) == v for path, v in shares),
          f'{name}: the flow bars are report.json\'s {len(report["flows"]["series"])} flow shares')
    # Zoomed out to 1 s bins and zoomed in to 2 ms around the peak: the peak bin is still the one drawn.
    for scale_ns in (1000000, 1000000000):
        p = chromium(browser, profile, [f'--window-size={WIDTH},1000', '--dump-dom'], url + f'#scale={scale_ns}',
                     f'{name}: chromium --dump-dom at {scale_ns} ns bins')
        if p:
            d = Dom()
            d.feed(p.stdout)
            got = d.sections.get('chart-timeline', {}).get('data-peak-bin-bytes')
            want = aligned_peak(report['timeline'], scale_ns)
            check(got == str(want) and d.pre.get('page-errors') == '',
                  f'{name}: at {scale_ns // 1000} us bins the timeline\'s peak is {want} bytes (page: {got})')
    tl = report['timeline']
    peak_at = tl['t'][tl['bytes'].index(max(tl['bytes']))] * tl['bin_ns'] / 1e9
    p = chromium(browser, profile, [f'--window-size={WIDTH},1000', '--dump-dom'],
                 url + f'#zoom={peak_at - 0.001},{peak_at + 0.001}', f'{name}: chromium --dump-dom zoomed in')
    if p:
        d = Dom()
        d.feed(p.stdout)
        s = d.sections.get('chart-timeline', {})
        check(s.get('data-peak-bin-bytes') == str(max(tl['bytes'])) and float(s.get('data-bins-per-column', 9)) <= 1,
              f'{name}: zoomed to 2 ms around the peak, every 100 us bin has its own column and the peak is drawn')

    # Screenshot of the whole page; each region's crop is not blank.
    if not isinstance(layout, dict):
        return
    height = min(16000, int(layout.get('page', {}).get('height', 6000)) + 20)
    shot = os.path.join(tmp, name + '.png')
    if not chromium(browser, profile, [f'--window-size={WIDTH},{height}', f'--screenshot={shot}'], url,
                    f'{name}: chromium --screenshot'):
        return
    # The layout at 1280 px wide (the dump above ran at the same width).
    image = Image.open(shot)
    for region in REGIONS:
        ok, why = non_blank(image, layout[region], region in CHART_REGIONS) if region in layout else (False, 'no box')
        check(ok, f'{name}: region #{region} is drawn ({why})')


def rendered_dom(html, name, regions):
    """The dumped DOM parsed, with the checks every page passes: no page errors, rendering finished, a box in
    #page-layout for each region. Returns (dom, layout); layout is None when unreadable."""
    dom = Dom()
    dom.feed(html)
    errors = dom.pre.get('page-errors')
    check(errors == '', f'{name}: no page errors' + (f': {errors[:600]!r}' if errors else '') if errors is not None
          else f'{name}: no #page-errors element')
    check(dom.body.get('data-rendered') == '1', f'{name}: the page says it finished rendering')
    try:
        layout = json.loads(dom.pre.get('page-layout') or 'null')
    except ValueError:
        layout = None
    check(isinstance(layout, dict) and all(r in layout for r in regions),
          f'{name}: #page-layout has a box for every region ({", ".join(regions)})')
    return dom, layout


def browser_or_fail(test):
    """Chromium's path, with PIL importable; otherwise one failing check naming what to install, and the end."""
    browser = shutil.which('chromium') or shutil.which('chromium-browser')
    if not browser:
        check(False, f'chromium is not installed: the {test} test needs Debian\'s chromium '
                     '(apt-get install chromium python3-pil, or scripts/setup.sh)')
        done()
    try:
        import PIL  # noqa: F401
    except ImportError:
        check(False, f'{sys.executable} has no PIL: install Debian\'s python3-pil and run with /usr/bin/python3')
        done()
    return browser


def main():
    exe, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    browser = browser_or_fail('report')
    with tempfile.TemporaryDirectory(prefix='burstscope-report-') as tmp:
        for trace in TRACES:
            check_trace(exe, root, browser, trace, tmp)
    done()


if __name__ == '__main__':
    main()
