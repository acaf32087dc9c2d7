#!/usr/bin/python3
"""The compare page in headless Chromium, against analyze --json, report.json and compare --json (issue 17).

    check_compare_page.py BURSTSCOPE SOURCE_ROOT

`burstscope compare A B C --out TMP` on three committed traces, then Chromium (file:// only, no network) dumps
the rendered DOM and takes a screenshot 1280 px wide:
- compare.json written with the page is what `compare --json` prints (the page's pass through report's
  studies gives the same comparison as analyze's pass); the page is self-contained;
- each trace's curves and timeline in the page's data are that trace's `burstscope report` report.json ones;
- the page recorded no error and finished; every key figure's data-value equals analyze --json of its trace
  (compare.json's traces[i] for the figures analyze names differently) and is shown at its precision;
- the overlaid charts draw every trace's points, the timeline's peak bin is the highest of the traces' own,
  the cluster charts draw every row of compare.json's clusterings;
- every region's crop of the screenshot is not blank.
Shares its Chromium and DOM helpers with tests/report/check_report.py. Run with /usr/bin/python3 (python3-pil).
"""
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
sys.path.insert(0, os.path.join(HERE, '..', 'report'))
from tap import check, done  # noqa: E402
from check_report import at_path, browser_or_fail, chromium, non_blank, rendered_dom, run, shown_agrees  # noqa: E402

TRACES = ['data/testbed/ddp-ring-w4.pcap', 'data/testbed/ps-w4-s1.pcap', 'data/testbed/two-jobs.pcap']
REGIONS = ['key-figures', 'chart-timeline', 'chart-envelope', 'chart-ptm', 'chart-backlog', 'chart-clusters',
           'features', 'chart-flow-clusters']
CHART_REGIONS = [r for r in REGIONS if r.startswith('chart-')]
WIDTH = 1280
ANALYZE_PATHS = re.compile(r'^(packets|bytes|mean_bps|last_ns - first_ns|scales\.\d+\.\w+|backlog\.\d+\.\w+)$')


def page_data(html):
    m = re.search(r'<script id="burstscope-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace('<\\/', '</').replace('\\u003c!--', '<!--')) if m else None


def first_bin_peak(timeline, width_ns):
    """The most bytes in one bin of width_ns aligned to the trace's first base bin."""
    sums = {}
    for t, b in zip(timeline['t'], timeline['bytes']):
        k = t * timeline['bin_ns'] // width_ns
        sums[k] = sums.get(k, 0) + b
    return max(sums.values()) if sums else 0


def main():
    exe, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    browser = browser_or_fail('compare page')
    with tempfile.TemporaryDirectory(prefix='burstscope-compare-page-') as tmp:
        out = os.path.join(tmp, 'out')
        p = run([exe, 'compare', *TRACES, '--out', out, '--json'], root, 'burstscope compare --out --json')
        if not p:
            done()
        printed = json.loads(p.stdout)
        q = run([exe, 'compare', *TRACES, '--json'], root, 'burstscope compare --json (no page)')
        with open(os.path.join(out, 'compare.json'), encoding='utf-8') as f:
            written = json.load(f)
        check(written == printed and q is not None and json.loads(q.stdout) == printed,
              'compare.json beside the page is what compare --json prints, with or without --out')
        with open(os.path.join(out, 'compare.html'), encoding='utf-8') as f:
            html = f.read()
        check('<!-- burstscope:' not in html and '<link' not in html and 'src="http' not in html,
              'compare.html is self-contained (markers replaced, no external link or script)')
        data = page_data(html)
        check(data is not None and data.get('schema') == 'burstscope-compare-page/1' and data['compare'] == printed,
              'the page\'s data holds compare.json')
        if data is None:
            done()

        analyses = []
        for i, trace in enumerate(TRACES):
            name = os.path.basename(trace)
            a = run([exe, 'analyze', trace, '--json'], root, f'{name}: analyze --json')
            analyses.append(json.loads(a.stdout) if a else {})
            rdir = os.path.join(tmp, f'report{i}')
            if run([exe, 'report', trace, '--out', rdir], root, f'{name}: burstscope report'):
                with open(os.path.join(rdir, 'report.json'), encoding='utf-8') as f:
                    report = json.load(f)
                mine = data['traces'][i]
                check(mine['file'] == trace and all(mine[k] == report[k] for k in ('timeline', 'curves', 'backlog_curve')),
                      f'{name}: the page\'s timeline, E/PtM curves and Bmax(r) are report.json\'s')

        url = 'file://' + os.path.join(out, 'compare.html')
        profile = os.path.join(tmp, 'profile')
        p = chromium(browser, profile, [f'--window-size={WIDTH},1000', '--dump-dom'], url, 'chromium --dump-dom')
        if not p:
            done()
        dom, layout = rendered_dom(p.stdout, 'compare.html', REGIONS)

        # Key figures: one row per trace.
        wrong, per_trace = [], {}
        for attrs, shown in dom.values:
            i, path = int(attrs.get('data-trace', -1)), attrs['data-path']
            per_trace[i] = per_trace.get(i, 0) + 1
            source = analyses[i] if ANALYZE_PATHS.match(path) else printed['traces'][i]
            try:
                truth = at_path(source, path)
            except (KeyError, IndexError, ValueError, TypeError):
                truth = None
            value = json.loads(attrs['data-value'])
            if value != truth:
                wrong.append(f'trace {i} {path}: page {value!r}, expected {truth!r}')
            elif not shown_agrees(shown, truth, attrs['data-unit']):
                wrong.append(f'trace {i} {path}: shown {shown!r} for {truth!r} {attrs["data-unit"]}')
        from_analyze = sum(1 for a, _ in dom.values if ANALYZE_PATHS.match(a['data-path']))
        check(not wrong and sorted(per_trace) == list(range(len(TRACES))) and len(set(per_trace.values())) == 1
              and from_analyze >= len(TRACES) * (4 + len(analyses[0].get('backlog', []))),
              f'{len(dom.values)} key figures ({from_analyze} checked against analyze --json), one row per trace, '
              'equal their sources and are shown at their precision' + (': ' + '; '.join(wrong[:8]) if wrong else ''))

        # The overlaid charts.
        def positives(key, field):
            return sum(1 for t in data['traces'] for v in t[key][field] if v is not None and v > 0)
        for section, key, field in (('chart-envelope', 'curves', 'envelope_bytes'), ('chart-ptm', 'curves', 'ptm'),
                                    ('chart-backlog', 'backlog_curve', 'max_backlog_bytes')):
            want = positives(key, field)
            got = dom.sections.get(section, {}).get('data-points')
            check(got == str(want), f'#{section} draws every trace\'s {want} points (page: {got})')
        tl = dom.sections.get('chart-timeline', {})
        want = max(first_bin_peak(t['timeline'], int(tl.get('data-scale-ns', 0) or 1)) for t in data['traces'])
        check(tl.get('data-scale-ns') == '1000000' and tl.get('data-peak-bin-bytes') == str(want),
              f'the overlaid timeline at 1 ms bins peaks at the traces\' highest bin, {want} bytes '
              f'(page: {tl.get("data-peak-bin-bytes")})')
        for section, which in (('chart-clusters', 'trace_clusters'), ('chart-flow-clusters', 'flow_clusters')):
            s = dom.sections.get(section, {})
            c = printed[which]
            check(s.get('data-points') == str(len(c['rows'])) and s.get('data-clusters') == str(c['clustering']['k']),
                  f'#{section} draws {len(c["rows"])} rows in {c["clustering"]["k"]} clusters (page: '
                  f'{s.get("data-points")} in {s.get("data-clusters")})')

        if not isinstance(layout, dict):
            done()
        height = min(16000, int(layout.get('page', {}).get('height', 6000)) + 20)
        shot = os.path.join(tmp, 'compare.png')
        if chromium(browser, profile, [f'--window-size={WIDTH},{height}', f'--screenshot={shot}'], url,
                    'chromium --screenshot'):
            from PIL import Image  # python3-pil (browser_or_fail checked it imports)
            image = Image.open(shot)
            for region in REGIONS:
                ok, why = non_blank(image, layout[region], region in CHART_REGIONS) if region in layout else (False, 'no box')
                check(ok, f'region #{region} is drawn ({why})')
    done()


if __name__ == '__main__':
    main()
