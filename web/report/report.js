// The report page: reads the embedded report.json (schema burstscope-report/1, docs/report.md) and draws
// every chart with uPlot, the host-pair heatmap on a canvas of its own (uPlot has no heatmap).
//
// Testability (tests/report/check_report.py): every key figure carries data-path (its path in analyze's JSON,
// "a - b" for a difference, ".length" for a list's length), data-value (the machine value, exact: integers
// beyond 2^53 keep their source text) and data-unit (the unit of data-value); after rendering the page fills
// <pre id="page-layout"> with each region's box and sets body[data-rendered="1"].
'use strict';

(function () {
  const {BASE_NS, COLOURS, parseExact, exactText, exactBig, fmtBytes, fmtBps, fmtSeconds, fmtNs, fmtCount, fmtRatio,
        fmtPercent, shortTime, shortBytes, shortGbps, el, widthOf, get, holderOf, Timelines, TimelineChart, logAxis,
        curveChart, positiveOrNull, runPage, whiteCanvas, dashedVerticals} = window.burstscopePlot;

  // ---- key figures ----
  function renderKeyFigures(r) {
    const a = r.analyze;
    const rows = [];
    // path: analyze JSON path; fmt: display; unit: unit of data-value
    const add = (label, path, fmt, unit) => rows.push({label, path, fmt, unit});
    add('Packets', 'packets', fmtCount, 'count');
    add('Bytes', 'bytes', fmtBytes, 'bytes');
    add('Duration (first to last packet)', 'last_ns - first_ns', fmtNs, 'ns');
    add('Mean rate', 'mean_bps', fmtBps, 'bps');
    (a.scales || []).forEach((s, i) => {
      const tau = shortTime(s.tau_us / 1e6);
      add('E(' + tau + ')', 'scales.' + i + '.envelope_bytes', fmtBytes, 'bytes');
      add('PtM(' + tau + ')', 'scales.' + i + '.ptm', fmtRatio, 'ratio');
    });
    (a.backlog || []).forEach((b, i) => {
      add('Bmax(' + (+b.rate_gbps.toPrecision(4)) + ' Gb/s)', 'backlog.' + i + '.max_backlog_bytes', fmtBytes, 'bytes');
    });
    add('Microbursts (τ ' + shortTime((a.microbursts || {}).tau_us / 1e6) + ', θ ' +
        (a.microbursts || {}).threshold + ')', 'microbursts.count', fmtCount, 'count');
    const jobs = (a.training && a.training.jobs) || [];
    add('Training jobs', 'training.jobs.length', fmtCount, 'count');
    jobs.forEach((j, i) => {
      if (j.period && j.period.period_s !== null && j.period.period_s !== undefined)
        add('Step period, ' + j.name, 'training.jobs.' + i + '.period.period_s', fmtSeconds, 's');
    });

    const table = document.getElementById('key-figures-table');
    const body = el('tbody');
    // Three label/value column pairs per table row keep the table short at 1280 px.
    const perRow = 3;
    for (let i = 0; i < rows.length; i += perRow) {
      const tr = el('tr');
      for (const row of rows.slice(i, i + perRow)) {
        let value, text;
        if (row.path.includes(' - ')) {
          const [p, q] = row.path.split(' - ');
          const [hp, kp] = holderOf(a, p), [hq, kq] = holderOf(a, q);
          const diff = exactBig(hp, kp) - exactBig(hq, kq);
          value = diff.toString();
          text = row.fmt(Number(diff));
        } else {
          const v = get(a, row.path);
          if (row.path.endsWith('.length')) value = String(v);
          else { const [h, k] = holderOf(a, row.path); value = h ? exactText(h, k) : 'null'; }
          text = row.fmt(v === undefined ? null : v);
        }
        tr.append(el('td', {class: 'label', text: row.label}),
                  el('td', {class: 'num', 'data-path': row.path, 'data-value': value, 'data-unit': row.unit,
                            title: value + ' ' + row.unit, text}));
      }
      body.append(tr);
    }
    table.append(body);
  }

  function renderTimeline(r, group) {
    const tl = r.timeline;
    const section = document.getElementById('chart-timeline');
    const container = document.getElementById('timeline-plot');
    const a = r.analyze;
    const steps = [];
    for (const j of (a.training && a.training.jobs) || [])
      for (const s of j.steps || []) steps.push((s.start_ns - tl.start_ns) / 1e9);
    const bursts = ((r.microbursts && r.microbursts.events) || []).map(e => [(e.start_ns - tl.start_ns) / 1e9,
                                                                           e.duration_ns / 1e9, e.congesting]);
    const chart = new TimelineChart(group, container, [{label: 'port', t: tl.t, v: tl.bytes, colour: '#1f6fb2'}], {
      height: 300, zoom: true, minLine: true, legend: true, fill: true,
      markers: (u) => {
        dashedVerticals(u, steps, 'rgba(90,90,90,0.55)');
        const ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
        const [x0, x1] = [u.scales.x.min, u.scales.x.max];
        ctx.save();
        ctx.beginPath();
        ctx.rect(u.bbox.left, top, u.bbox.width, h);
        ctx.clip();
        ctx.fillStyle = '#d1495b';
        const tick = 6 * devicePixelRatio;
        for (const [s, d, congesting] of bursts) {  // congesting bursts: darker and twice as tall
          if (s + d < x0 || s > x1) continue;
          const p0 = u.valToPos(s, 'x', true), p1 = u.valToPos(s + d, 'x', true);
          ctx.fillStyle = congesting ? '#7b0d1e' : '#d1495b';
          ctx.fillRect(p0, top, Math.max(1.5, p1 - p0), congesting ? 2 * tick : tick);
        }
        ctx.restore();
      },
      onFill: c => {
        section.dataset.scaleNs = String(group.widthNs);
        section.dataset.rangeS = c.u.scales.x.min + ',' + c.u.scales.x.max;
        section.dataset.peakBinBytes = String(c.peakBytes);
        section.dataset.binsPerColumn = String(c.binsPerColumn);
      },
    });
    group.add(chart);
    document.getElementById('timeline-scale').addEventListener('change', e => group.setWidth(Number(e.target.value)));
    document.getElementById('timeline-reset').addEventListener('click', () => group.zoom(0, group.durationS));
  }

  function renderFlowTimelines(r, group) {
    const box = document.getElementById('flow-timelines');
    const series = (r.flows && r.flows.series) || [];
    if (!series.length) { box.append(el('p', {class: 'empty', text: 'No flows.'})); return; }
    const shift = ((r.flows.start_ns - r.timeline.start_ns) / BASE_NS) | 0;  // both are 100 us aligned
    const shown = Math.min(10, series.length);
    series.slice(0, shown).forEach((s, i) => {
      const strip = el('div', {class: 'flow-strip'});
      strip.append(el('div', {class: 'name', text: s.name + ' — ' + fmtBytes(s.bytes) + ' (' + fmtPercent(s.share) + ')'}));
      const holder = el('div');
      strip.append(holder);
      box.append(strip);
      const t = shift ? s.t.map(x => x + shift) : s.t;
      group.add(new TimelineChart(group, holder, [{label: s.name, t, v: s.bytes_per_bin, colour: COLOURS[i % 10]}],
                                  {height: i === shown - 1 ? 84 : 60, compact: true, fill: true, hideX: i !== shown - 1}));
    });
  }

  function renderCurves(r) {
    const c = r.curves, a = r.analyze;
    const tauS = c.tau_ns.map(t => t / 1e9);
    // analyze's default scales as points on the same x (null elsewhere): merge them into the x grid.
    const xs = Array.from(new Set(tauS.concat((a.scales || []).map(s => s.tau_us / 1e6)))).sort((p, q) => p - q);
    const byTau = (arr) => { const m = new Map(); tauS.forEach((t, i) => m.set(t, arr[i])); return xs.map(x => m.has(x) ? positiveOrNull(m.get(x)) : null); };
    const pts = (key) => { const m = new Map(); (a.scales || []).forEach(s => m.set(s.tau_us / 1e6, s[key])); return xs.map(x => m.has(x) ? positiveOrNull(m.get(x)) : null); };
    const line = (label, colour, fmt) => ({label, stroke: colour, width: 2, spanGaps: true, value: (u, v) => v === null ? '—' : fmt(v)});
    const dots = (label, colour, fmt) => ({label, stroke: colour, fill: colour, width: 0, paths: () => null,
                                          points: {show: true, size: 7, fill: colour}, value: (u, v) => v === null ? '—' : fmt(v)});
    curveChart(document.getElementById('envelope-plot'), widthOf('envelope-plot'),
               [xs, byTau(c.envelope_bytes), pts('envelope_bytes')],
               [line('E(τ)', '#1f6fb2', fmtBytes), dots('analyze scales', '#d1495b', fmtBytes)],
               shortTime, shortBytes, 'τ', 'bytes');
    curveChart(document.getElementById('ptm-plot'), widthOf('ptm-plot'),
               [xs, byTau(c.ptm), pts('ptm')],
               [line('PtM(τ)', '#2a9d8f', fmtRatio), dots('analyze scales', '#d1495b', fmtRatio)],
               shortTime, v => +v.toPrecision(3) + '', 'τ', 'peak / mean');
  }

  function renderBacklog(r) {
    const bc = r.backlog_curve, a = r.analyze;
    const gbps = bc.rate_bps.map(x => x / 1e9);
    const conf = new Map((a.backlog || []).map(b => [b.rate_gbps, b.max_backlog_bytes]));
    const xs = Array.from(new Set(gbps.concat(Array.from(conf.keys())))).sort((p, q) => p - q);
    const m = new Map(); gbps.forEach((g, i) => m.set(g, bc.max_backlog_bytes[i]));
    curveChart(document.getElementById('backlog-plot'), widthOf('backlog-plot'),
               [xs, xs.map(x => m.has(x) ? positiveOrNull(m.get(x)) : null),
                xs.map(x => conf.has(x) ? positiveOrNull(conf.get(x)) : null)],
               [{label: 'Bmax(r)', stroke: '#6a4c93', width: 2, spanGaps: true, value: (u, v) => v === null ? '—' : fmtBytes(v)},
                {label: 'configured rates', stroke: '#d1495b', width: 0, paths: () => null,
                 points: {show: true, size: 7, fill: '#d1495b'}, value: (u, v) => v === null ? '—' : fmtBytes(v)}],
               v => shortGbps(v) + ' Gb/s', shortBytes, 'rate r', 'bytes');
  }

  // ---- utilisation histograms: one bar group per bucket, one colour per scale ----
  function renderUtilisation(r) {
    const scales = (r.analyze.scales || []).filter(s => s.utilisation && s.utilisation.count > 0);
    const box = document.getElementById('utilisation-plot');
    if (!scales.length) { box.append(el('p', {class: 'empty', text: 'No utilisation histograms.'})); return; }
    const les = scales[0].utilisation.buckets.map(b => b.le);
    const labels = les.map((le, i) => (i === 0 ? '0' : String(les[i - 1])) + '–' + (le === '+Inf' ? '∞' : le));
    const xs = les.map((_, i) => i);
    const data = [xs];
    const series = [{label: 'bucket', value: (u, v) => v === null ? '' : labels[v]}];
    const n = scales.length;
    scales.forEach((s, si) => {
      const b = s.utilisation.buckets;
      data.push(b.map((bk, i) => { const c = bk.count - (i ? b[i - 1].count : 0); return c > 0 ? c / s.utilisation.count : null; }));
      series.push({label: shortTime(s.tau_us / 1e6), stroke: COLOURS[si % 10], fill: COLOURS[si % 10] + 'cc', width: 0,
                   paths: () => null, points: {show: false}, value: (u, v) => v === null ? '—' : (100 * v).toPrecision(3) + ' %'});
    });
    new uPlot({
      width: widthOf('utilisation-plot'), height: 260,
      legend: {show: true},
      scales: {x: {time: false, range: [-0.6, xs.length - 0.4]}, y: {distr: 3}},
      axes: [{splits: () => xs, values: (u, v) => v.map(i => labels[i] || ''), rotate: -40, size: 52,
              label: 'utilisation of link capacity', labelSize: 16, font: '10px sans-serif', gap: 2},
             {values: (u, v) => v.map(x => x === null ? '' : +(100 * x).toPrecision(2) + '%'), size: 56,
              label: 'share of windows', labelSize: 16}],
      series,
      hooks: {draw: [u => {  // grouped bars, drawn here: uPlot's bar paths share one x per bucket
        const ctx = u.ctx, bottom = u.bbox.top + u.bbox.height;
        ctx.save();
        for (let si = 1; si < u.series.length; si++) {
          if (!u.series[si].show) continue;
          ctx.fillStyle = u.series[si].stroke();
          u.data[si].forEach((v, i) => {
            if (v === null) return;
            const left = u.valToPos(i - 0.42 + (si - 1) * 0.84 / n, 'x', true);
            const right = u.valToPos(i - 0.42 + si * 0.84 / n, 'x', true);
            const top = Math.max(u.bbox.top, u.valToPos(v, 'y', true));
            ctx.fillRect(left, top, Math.max(1, right - left - 1), bottom - top);
          });
        }
        ctx.restore();
      }]},
    }, data, box);
  }

  // ---- microburst distributions: empirical CDFs of the listed events; analyze's quantiles beside them ----
  function cdfChart(id, values, fmt, xLabel, quantiles) {
    const box = document.getElementById(id);
    const v = values.filter(x => x > 0).sort((p, q) => p - q);
    if (!v.length) { box.append(el('p', {class: 'empty', text: 'No ' + xLabel + '.'})); return; }
    const xs = [], ys = [];
    v.forEach((x, i) => { if (xs.length && xs[xs.length - 1] === x) ys[ys.length - 1] = (i + 1) / v.length; else { xs.push(x); ys.push((i + 1) / v.length); } });
    const q = xs.map(() => null);
    new uPlot({
      width: widthOf(id), height: 220, legend: {show: false},
      scales: {x: {time: false, distr: 3}, y: {range: [0, 1]}},
      axes: [logAxis(fmt, xLabel), {values: (u, vals) => vals.map(x => x === null ? '' : +(x * 100).toFixed(0) + '%'),
                                      size: 44, label: 'fraction ≤ x', labelSize: 16}],
      series: [{}, {stroke: '#d1495b', width: 2, paths: uPlot.paths.stepped({align: 1}), points: {show: false}}],
      hooks: {draw: [u => {  // analyze's p50/p90/p99 as vertical ticks
        const ctx = u.ctx;
        ctx.save(); ctx.strokeStyle = 'rgba(31,111,178,0.7)'; ctx.setLineDash([3, 3]);
        for (const [name, val] of quantiles) {
          if (!(val > 0)) continue;
          const px = u.valToPos(val, 'x', true);
          if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) continue;
          ctx.beginPath(); ctx.moveTo(px, u.bbox.top); ctx.lineTo(px, u.bbox.top + u.bbox.height); ctx.stroke();
          ctx.fillStyle = '#1f6fb2'; ctx.font = (10 * devicePixelRatio) + 'px sans-serif';
          ctx.fillText(name, px + 2, u.bbox.top + 12 * devicePixelRatio);
        }
        ctx.restore();
      }]},
    }, [xs, ys], box);
  }
  function renderMicrobursts(r) {
    const mb = r.microbursts || {events: []}, am = r.analyze.microbursts || {};
    const ev = mb.events || [];
    const note = document.getElementById('microbursts-note');
    note.textContent = 'At τ = ' + shortTime(mb.tau_ns / 1e9) + ', threshold ' + mb.threshold + ' of ' + fmtBps(mb.link_capacity_bps) +
      ': ' + fmtCount(mb.count) + ' microbursts' + (mb.listed < mb.count ? ' (the first ' + fmtCount(mb.listed) + ' drawn)' : '') +
      '. Curves: the listed events\' distributions; dashed lines: analyze\'s p50/p90/p99.';
    const gaps = [];
    for (let i = 1; i < ev.length; i++) gaps.push((ev[i].start_ns - ev[i - 1].start_ns - ev[i - 1].duration_ns) / 1e9);
    const qs = o => o ? [['p50', o.p50], ['p90', o.p90], ['p99', o.p99]] : [];
    cdfChart('mb-durations-plot', ev.map(e => e.duration_ns / 1e9), shortTime, 'duration', qs(am.durations_s));
    cdfChart('mb-gaps-plot', gaps, shortTime, 'gap', qs(am.gaps_s));
    cdfChart('mb-volumes-plot', ev.map(e => e.bytes), shortBytes, 'volume', qs(am.volumes_bytes));
    const t = document.getElementById('microbursts-quantiles');
    const head = el('tr', {}, el('th', {text: ''}), ...['n', 'p50', 'p90', 'p99', 'max'].map(h => el('th', {class: 'num', text: h})));
    t.append(head);
    const rows = [['Duration', 'durations_s', fmtSeconds], ['Gap', 'gaps_s', fmtSeconds], ['Volume', 'volumes_bytes', fmtBytes],
                  ['Peak rate', 'peak_bps', fmtBps]];
    for (const [label, key, fmt] of rows) {
      const o = am[key];
      if (!o) continue;
      t.append(el('tr', {}, el('td', {text: label}), el('td', {class: 'num', text: fmtCount(o.n)}),
                  ...['p50', 'p90', 'p99', 'max'].map(k => el('td', {class: 'num', 'data-path': 'microbursts.' + key + '.' + k,
                                                                    'data-value': JSON.stringify(o[k] === undefined ? null : o[k]),
                                                                    text: fmt(o[k])}))));
    }
  }

  // ---- heatmap (canvas): rows = sources, columns = destinations, log colour ----
  function viridis(t) {
    const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
    const x = Math.max(0, Math.min(1, t)) * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
    const c = stops[i].map((v, k) => Math.round(v + f * (stops[i + 1][k] - v)));
    return 'rgb(' + c.join(',') + ')';
  }
  function renderHeatmap(r) {
    const hm = r.heatmap || {hosts: [], cells: []};
    const section = document.getElementById('chart-heatmap');
    const canvas = document.getElementById('heatmap-canvas');
    const n = hm.hosts.length;
    if (!n) { canvas.replaceWith(el('p', {class: 'empty', text: 'No IP host pairs.'})); return; }
    const avail = widthOf('heatmap-box') - 10;
    const labelW = 110, legendH = 46;
    const cell = Math.max(3, Math.min(40, Math.floor((avail - labelW) / n)));
    const showLabels = cell >= 9;
    const w = labelW + cell * n, h = labelW + cell * n + legendH;
    const ctx = whiteCanvas(canvas, w, h);
    let max = 0, min = Infinity, total = 0;
    for (const c of hm.cells) { if (c[2] > max) max = c[2]; if (c[2] > 0 && c[2] < min) min = c[2]; total += c[2]; }
    section.dataset.maxCellBytes = String(max);
    section.dataset.totalBytes = String(total);
    section.dataset.hosts = String(n);
    const lmin = Math.log10(min), lmax = Math.log10(max), span = Math.max(1e-9, lmax - lmin);
    ctx.fillStyle = '#eef0f4';
    ctx.fillRect(labelW, labelW, cell * n, cell * n);
    for (const [s, d, b] of hm.cells) {
      if (!(b > 0)) continue;
      ctx.fillStyle = viridis((Math.log10(b) - lmin) / span);
      ctx.fillRect(labelW + d * cell, labelW + s * cell, cell - (cell > 4 ? 1 : 0), cell - (cell > 4 ? 1 : 0));
    }
    ctx.fillStyle = '#1d2330';
    ctx.font = '11px sans-serif';
    if (showLabels) {
      ctx.textBaseline = 'middle';
      ctx.textAlign = 'right';
      hm.hosts.forEach((host, i) => ctx.fillText(host, labelW - 4, labelW + i * cell + cell / 2));
      ctx.save();
      ctx.textAlign = 'left';
      hm.hosts.forEach((host, i) => {
        ctx.save(); ctx.translate(labelW + i * cell + cell / 2, labelW - 4); ctx.rotate(-Math.PI / 2);
        ctx.fillText(host, 0, 0); ctx.restore();
      });
      ctx.restore();
    } else {
      ctx.fillText(n + ' hosts (labels in the tooltip)', 4, 14);
    }
    ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
    ctx.fillStyle = '#5d6677';
    ctx.fillText('source ↓  destination →', 4, labelW - 4);
    // legend
    const ly = labelW + cell * n + 14, lw = Math.min(240, cell * n);
    for (let x = 0; x < lw; x++) { ctx.fillStyle = viridis(x / lw); ctx.fillRect(labelW + x, ly, 1, 10); }
    ctx.fillStyle = '#1d2330';
    ctx.fillText(fmtBytes(min), labelW, ly + 24);
    ctx.textAlign = 'right';
    ctx.fillText(fmtBytes(max), labelW + lw, ly + 24);
    canvas.addEventListener('mousemove', e => {
      const rect = canvas.getBoundingClientRect();
      const col = Math.floor((e.clientX - rect.left - labelW) / cell), row = Math.floor((e.clientY - rect.top - labelW) / cell);
      if (row < 0 || col < 0 || row >= n || col >= n) { canvas.title = ''; return; }
      const c = hm.cells.find(c => c[0] === row && c[1] === col);
      canvas.title = hm.hosts[row] + ' → ' + hm.hosts[col] + ': ' + (c ? fmtBytes(c[2]) + ', ' + fmtCount(c[3]) + ' packets' : 'nothing');
    });
  }

  function renderFlowBars(r) {
    const box = document.getElementById('flows-bars');
    const series = (r.flows && r.flows.series) || [];
    if (!series.length) { box.append(el('p', {class: 'empty', text: 'No flows.'})); return; }
    const top = Math.max(...series.map(s => s.share));
    series.forEach((s, i) => {
      const fill = el('div', {class: 'fill'});
      fill.style.width = (100 * s.share / top).toFixed(2) + '%';
      fill.style.background = COLOURS[i % 10];
      box.append(el('div', {class: 'flow-bar', 'data-report-path': 'flows.series.' + i + '.share', 'data-value': JSON.stringify(s.share)},
                    el('div', {class: 'name', title: s.name, text: s.name + (s.kind ? '  ' : '')}, s.kind ? el('span', {class: 'tag', text: s.kind}) : null),
                    el('div', {class: 'track'}, fill),
                    el('div', {class: 'val', text: fmtPercent(s.share) + ' · ' + fmtBytes(s.bytes)})));
    });
  }

  // ---- training and evidence ----
  function kv(rows) {
    const t = el('table', {class: 'figures small'});
    for (const [k, v, path, value] of rows) {
      const td = el('td', {text: v});
      if (path) { td.dataset.path = path; td.dataset.value = value; }
      t.append(el('tr', {}, el('th', {text: k}), td));
    }
    return t;
  }
  function renderTraining(r) {
    const box = document.getElementById('training-body');
    const tr = r.analyze.training;
    if (!tr || !tr.jobs || !tr.jobs.length) {
      box.append(el('p', {class: 'empty', text: 'No training job found in this trace.'}));
      return;
    }
    tr.jobs.forEach((j, i) => {
      const div = el('div', {class: 'job'});
      div.append(el('h3', {text: j.name + (j.configured ? ' (configured)' : ' (inferred)')}));
      const p = j.period || {};
      const topo = j.topology || {};
      const rows = [
        ['Hosts', (j.hosts || []).join(', ')],
        ['Traffic', fmtBytes(j.bytes) + ' in ' + fmtCount(j.packets) + ' packets, ' + fmtBps(j.rate_bps) + ' mean'],
        ['Step period', p.period_s !== null && p.period_s !== undefined ?
          fmtSeconds(p.period_s) + ' over ' + p.steps + ' steps (quality ' + (p.quality !== undefined ? p.quality.toFixed(2) : '—') + ')' + (p.changed ? ', changed during the trace' : '') :
          'none' + (p.why ? ': ' + p.why : '')],
        ['Duty cycle', p.duty_cycle !== null && p.duty_cycle !== undefined ? fmtPercent(p.duty_cycle) : '—'],
      ];
      if (j.step_bytes) rows.push(['Bytes per step', fmtBytes(j.step_bytes.mean) + ' (cv ' + (j.step_bytes.cv * 100).toFixed(2) + ' %, ' +
                                   fmtBytes(j.step_bytes.min) + ' – ' + fmtBytes(j.step_bytes.max) + ')']);
      if (j.gradient_bytes_estimate) rows.push(['Gradient estimate', fmtBytes(j.gradient_bytes_estimate)]);
      if (topo.kind) {
        let t = topo.kind;
        if (topo.order && topo.order.length) t += ': ' + topo.order.join(' → ');
        if (topo.servers && topo.servers.length) t += '; servers ' + topo.servers.join(', ');
        if (topo.workers && topo.workers.length) t += '; workers ' + topo.workers.join(', ');
        (topo.pipelines || []).forEach((pl, k) => { t += `; pipeline ${k + 1}: ` + pl.join(' → '); });
        (topo.groups || []).forEach((g, k) => { t += `; stage ${k} data-parallel group: ` + g.join(', '); });
        rows.push(['Parallelism', t]);
        if (topo.evidence) rows.push(['Because', topo.evidence]);
        if (topo.flows !== undefined) rows.push(['Flows', topo.flows + ' (' + topo.flows_for_99pct + ' carry 99 % of the bytes)']);
      }
      const ph = j.phases || {};
      if (ph.count) {
        rows.push(['Phases per step', ph.count + ' (in ' + ph.steps + ' steps): ' +
          ph.phases.slice(0, 12).map(x => '+' + fmtSeconds(x.offset_s) + ' ' + fmtSeconds(x.length_s) + ' ' + fmtBytes(x.bytes)).join(', ') +
          (ph.phases.length > 12 ? ', …' : '') + '; idle ' + fmtSeconds(ph.idle_s) + ' (' + fmtPercent(ph.idle_share) + ')']);
      }
      if (j.steps) {
        const cong = j.steps.filter(s => s.congesting_bursts > 0);
        rows.push(['Steps cut', j.steps.length + (cong.length ? ', ' + cong.length + ' with congesting bursts' : ', none with congesting bursts')]);
      }
      div.append(kv(rows));
      if (topo.edges && topo.edges.length) {
        const t = el('table', {class: 'figures small'});
        t.append(el('tr', {}, el('th', {text: 'Edge'}), el('th', {class: 'num', text: 'Bytes'}), el('th', {class: 'num', text: 'Share'})));
        for (const e of topo.edges.slice(0, 16))
          t.append(el('tr', {}, el('td', {text: e.src + ' → ' + e.dst}), el('td', {class: 'num', text: fmtBytes(e.bytes)}),
                      el('td', {class: 'num', text: fmtPercent(e.share)})));
        div.append(t);
      }
      box.append(div);
    });
    const dests = (tr.destinations || []).filter(d => d.max_sources > 1 || d.cobursts > 0);
    const all = tr.destinations || [];
    if (all.length) {
      box.append(el('h3', {text: 'Fan-in per destination' + (dests.length ? '' : ' (no co-bursts: every destination had one source at a time)')}));
      const t = el('table', {class: 'figures small'});
      t.append(el('tr', {}, ...['Destination', 'Bytes', 'Most sources in one bin', 'Co-bursts', 'Across jobs', 'Max backlog', 'Bins over buffer']
        .map((h, k) => el('th', {class: k ? 'num' : '', text: h}))));
      for (const d of all.slice(0, 32))
        t.append(el('tr', {}, el('td', {text: d.host}), el('td', {class: 'num', text: fmtBytes(d.bytes)}),
                    el('td', {class: 'num', text: fmtCount(d.max_sources)}), el('td', {class: 'num', text: fmtCount(d.cobursts)}),
                    el('td', {class: 'num', text: fmtCount(d.cross_job_cobursts)}), el('td', {class: 'num', text: fmtBytes(d.max_backlog_bytes)}),
                    el('td', {class: 'num', text: fmtCount(d.over_buffer_bins)})));
      box.append(t);
    }
  }

  function renderEvidence(r) {
    const box = document.getElementById('evidence-body');
    const ev = r.analyze.evidence;
    if (!ev || !ev.totals) { box.append(el('p', {class: 'empty', text: 'No congestion evidence in this analysis.'})); return; }
    const t = ev.totals;
    const naks = t.naks ? (t.naks.psn_sequence_error || 0) + (t.naks.other || 0) : 0;
    const rows = [
      ['IP packets', fmtCount(t.ip_packets)],
      ['ECN: ECT / CE', fmtCount(t.ect) + ' / ' + fmtCount(t.ce)],
      ['TCP retransmissions / out of order', fmtCount(t.tcp_retransmissions) + ' / ' + fmtCount(t.tcp_out_of_order) +
        ' (of ' + fmtCount(t.tcp_data_segments) + ' data segments)'],
      ['RoCEv2: packets, CNP, NAK, RNR, resent', [t.roce_packets, t.cnp, naks, t.naks ? t.naks.rnr : 0, t.roce_resent].map(fmtCount).join(', ')],
      ['PFC / PAUSE frames', fmtCount(t.pause_frames)],
    ];
    if (ev.microbursts) rows.push(['Congesting microbursts', fmtCount(ev.microbursts.congesting) + ' of ' + fmtCount(ev.microbursts.count)]);
    box.append(kv(rows));
    const steps = [];
    for (const j of (r.analyze.training && r.analyze.training.jobs) || [])
      for (const s of j.steps || [])
        if (s.congesting_bursts > 0 || (s.evidence && Object.values(s.evidence).some(v => v > 0)))
          steps.push([j.name, s]);
    if (steps.length) {
      box.append(el('h3', {text: 'Steps with evidence'}));
      const tb = el('table', {class: 'figures small'});
      tb.append(el('tr', {}, ...['Job', 'Step', 'Start', 'Congesting bursts', 'Toward', 'Evidence'].map(h => el('th', {text: h}))));
      for (const [name, s] of steps.slice(0, 40)) {
        const e = Object.entries(s.evidence || {}).filter(([, v]) => v > 0).map(([k, v]) => k.replace(/_/g, ' ') + ' ' + v).join(', ');
        tb.append(el('tr', {}, el('td', {text: name}), el('td', {text: String(s.index)}),
                     el('td', {text: shortTime((s.start_ns - r.timeline.start_ns) / 1e9)}), el('td', {text: fmtCount(s.congesting_bursts)}),
                     el('td', {text: s.toward || '—'}), el('td', {text: e || '—'})));
      }
      box.append(tb);
    }
    if (ev.cnp_targets && ev.cnp_targets.length) box.append(el('p', {text: 'CNP targets: ' + ev.cnp_targets.map(c => c.host || c.key || JSON.stringify(c)).join(', ')}));
  }

  function renderMeta(r) {
    const a = r.analyze;
    const files = (r.inputs || []).join(', ');
    document.getElementById('report-meta').textContent = files + ' · ' + (r.version || '') + ' · ' +
      new Date(Number(exactBig(a, 'first_ns') / 1000000n)).toISOString().replace('T', ' ').replace('Z', ' UTC');
  }

  function renderTimelines(r) {
    const tl = r.timeline;
    const group = new Timelines(tl.start_ns, exactBig(tl, 'start_ns'), tl.end_ns);
    renderTimeline(r, group);
    renderFlowTimelines(r, group);
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.get('scale')) {
      document.getElementById('timeline-scale').value = h.get('scale');
      group.widthNs = Number(h.get('scale'));
      group.charts.forEach(c => c.rebin());
    }
    if (h.get('zoom')) {
      const [z0, z1] = h.get('zoom').split(',').map(Number);
      group.zoom(z0, z1);
    } else {
      group.refresh();
    }
  }

  runPage('burstscope-report/1', [
    ['meta', renderMeta], ['key figures', renderKeyFigures], ['curves', renderCurves], ['backlog', renderBacklog],
    ['utilisation', renderUtilisation], ['microbursts', renderMicrobursts], ['heatmap', renderHeatmap],
    ['flow bars', renderFlowBars], ['training', renderTraining], ['evidence', renderEvidence],
    ['timelines', renderTimelines],
  ]);
})();
