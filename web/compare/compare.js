// The compare page: reads the embedded data (schema burstscope-compare-page/1, docs/compare.md: compare.json's
// object and, per trace, its 100 us timeline, dense E(tau)/PtM(tau) curves and Bmax(r)) and draws the key
// figures side by side, the overlaid curves (uPlot, via web/common/plot.js) and the clusters: each clustering's
// z-score feature vectors projected on their first two principal components (a canvas; uPlot has no scatter
// with labels), coloured by cluster.
//
// Testability (tests/compare/check_compare_page.py): each key figure carries data-trace (the trace's index),
// data-path (its path in compare.json's traces[i], which holds analyze's values), data-value (exact) and
// data-unit; the overlaid charts say what they drew in data-* attributes of their sections; after rendering the
// page fills <pre id="page-layout"> with each region's box and sets body[data-rendered="1"].
'use strict';

(function () {
  const {COLOURS, parseExact, exactText, fmtBytes, fmtBps, fmtSeconds, fmtCount, fmtRatio, shortTime,
         shortBytes, shortGbps, el, widthOf, get, holderOf, Timelines, TimelineChart, curveChart,
         positiveOrNull, runPage, whiteCanvas} = window.burstscopePlot;
  const CLUSTER_COLOURS = ['#1f6fb2', '#d1495b', '#2a9d8f', '#e9a23b', '#6a4c93', '#8c564b', '#e377c2', '#7f7f7f'];
  const traceColour = i => COLOURS[i % COLOURS.length];
  const shortName = f => f.split('/').pop();

  // ---- key figures: one row per trace ----
  function renderKeyFigures(d) {
    const traces = d.compare.traces;
    const cols = [['Packets', 'packets', fmtCount, 'count'], ['Bytes', 'bytes', fmtBytes, 'bytes'],
                  ['Mean rate', 'mean_bps', fmtBps, 'bps']];
    (traces[0].scales || []).forEach((s, i) => {
      if (traces.some(t => t.scales[i] && t.scales[i].ptm !== null && t.scales[i].ptm !== undefined))
        cols.push(['PtM(' + shortTime(s.tau_us / 1e6) + ')', 'scales.' + i + '.ptm', fmtRatio, 'ratio']);
    });
    (traces[0].backlog || []).forEach((b, i) =>
      cols.push(['Bmax(' + (+b.rate_gbps.toPrecision(4)) + ' Gb/s)', 'backlog.' + i + '.max_backlog_bytes', fmtBytes, 'bytes']));
    cols.push(['Microbursts', 'microbursts', fmtCount, 'count'], ['Flows', 'flows', fmtCount, 'count'],
              ['Jobs', 'jobs.length', fmtCount, 'count'], ['Period', 'jobs.0.period_s', fmtSeconds, 's'],
              ['Bytes per step', 'jobs.0.bytes_per_step', fmtBytes, 'bytes'], ['Cluster', 'cluster', v => String(v), 'count']);
    const table = document.getElementById('key-figures-table');
    table.append(el('tr', {}, el('th', {text: 'Trace'}), el('th', {class: 'num', text: 'Duration'}),
                    ...cols.map(c => el('th', {class: 'num', text: c[0]}))));
    traces.forEach((t, i) => {
      const sw = el('span', {class: 'swatch'});
      sw.style.background = traceColour(i);
      const dur = Number(BigInt(exactText(t, 'last_ns')) - BigInt(exactText(t, 'first_ns')));
      const tr = el('tr', {}, el('td', {title: t.file}, sw, shortName(t.file)),
                    el('td', {class: 'num', 'data-trace': String(i), 'data-path': 'last_ns - first_ns',
                              'data-value': String(BigInt(exactText(t, 'last_ns')) - BigInt(exactText(t, 'first_ns'))),
                              'data-unit': 'ns', text: fmtSeconds(dur / 1e9)}));
      for (const [, path, fmt, unit] of cols) {
        const v = get(t, path);
        let value;
        if (path.endsWith('.length')) value = String(v);
        else { const [h, k] = holderOf(t, path); value = h && k in h ? exactText(h, k) : 'null'; }
        tr.append(el('td', {class: 'num', 'data-trace': String(i), 'data-path': path, 'data-value': value,
                            'data-unit': unit, text: v === undefined || v === null ? '—' : fmt(v)}));
      }
      table.append(tr);
    });
  }

  // ---- overlaid log-log curves on the union of the traces' grids ----
  function overlay(id, xsPerTrace, ysPerTrace, xFmt, yFmt, xLabel, yLabel, labelSuffix) {
    const xs = Array.from(new Set([].concat(...xsPerTrace))).sort((p, q) => p - q);
    const data = [xs];
    const series = [];
    let drawn = 0;
    xsPerTrace.forEach((txs, i) => {
      const m = new Map();
      txs.forEach((x, k) => m.set(x, positiveOrNull(ysPerTrace[i][k])));
      const ys = xs.map(x => m.has(x) ? m.get(x) : null);
      drawn += ys.filter(y => y !== null).length;
      data.push(ys);
      series.push({label: labelSuffix(i), stroke: traceColour(i), width: 2, spanGaps: true,
                   value: (u, v) => v === null ? '—' : yFmt(v)});
    });
    const section = document.getElementById(id.replace('-plot', '').replace(/^/, 'chart-'));
    section.dataset.points = String(drawn);
    curveChart(document.getElementById(id), widthOf(id), data, series, xFmt, v => yFmt === fmtRatio ? +v.toPrecision(3) + '' : shortBytes(v),
               xLabel, yLabel);
  }
  function renderCurves(d) {
    const label = i => shortName(d.traces[i].file);
    const tau = d.traces.map(t => t.curves.tau_ns.map(x => x / 1e9));
    overlay('envelope-plot', tau, d.traces.map(t => t.curves.envelope_bytes), shortTime, fmtBytes, 'τ', 'bytes', label);
    overlay('ptm-plot', tau, d.traces.map(t => t.curves.ptm), shortTime, fmtRatio, 'τ', 'peak / mean', label);
    overlay('backlog-plot', d.traces.map(t => t.backlog_curve.rate_bps.map(x => x / 1e9)),
            d.traces.map(t => t.backlog_curve.max_backlog_bytes), v => shortGbps(v) + ' Gb/s', fmtBytes, 'rate r', 'bytes', label);
  }

  // ---- the throughput overlay: every trace from its own first bin ----
  function renderTimeline(d) {
    const section = document.getElementById('chart-timeline');
    let longest = 0;
    for (const t of d.traces) longest = Math.max(longest, t.timeline.end_ns - t.timeline.start_ns);
    // Bins aligned to each trace's first bin (offset 0): the traces start together at 0.
    const group = new Timelines(0, 0n, longest);
    group.widthNs = Number(document.getElementById('timeline-scale').value);
    const series = d.traces.map((t, i) => ({label: shortName(t.file), t: t.timeline.t, v: t.timeline.bytes,
                                            colour: traceColour(i)}));
    group.add(new TimelineChart(group, document.getElementById('timeline-plot'), series, {
      height: 320, zoom: true, legend: true,
      onFill: c => {
        section.dataset.scaleNs = String(group.widthNs);
        section.dataset.rangeS = c.u.scales.x.min + ',' + c.u.scales.x.max;
        section.dataset.peakBinBytes = String(c.peakBytes);
      },
    }));
    document.getElementById('timeline-scale').addEventListener('change', e => group.setWidth(Number(e.target.value)));
    document.getElementById('timeline-reset').addEventListener('click', () => group.zoom(0, group.durationS));
    group.charts.forEach(c => c.rebin());
    group.refresh();
  }

  // ---- clusters: the first two principal components of the z-scores (power iteration; d is small) ----
  function principal(z) {
    const n = z.length, dim = n ? z[0].length : 0;
    const cov = Array.from({length: dim}, (_, a) => Array.from({length: dim}, (_, b) => {
      let s = 0;
      for (const row of z) s += row[a] * row[b];
      return s;
    }));
    const comps = [];
    for (let c = 0; c < 2; c++) {
      let v = Array.from({length: dim}, (_, k) => 1 + k * 0.01);
      let lambda = 0;
      for (let it = 0; it < 200; it++) {
        const w = cov.map(r => r.reduce((s, x, k) => s + x * v[k], 0));
        const norm = Math.hypot(...w);
        if (!(norm > 1e-12)) { v = v.map(() => 0); lambda = 0; break; }
        v = w.map(x => x / norm);
        lambda = norm;
      }
      comps.push(v);
      for (let a = 0; a < dim; a++) for (let b = 0; b < dim; b++) cov[a][b] -= lambda * v[a] * v[b];
    }
    return z.map(row => comps.map(v => row.reduce((s, x, k) => s + x * v[k], 0)));
  }
  function scatter(canvasId, boxId, table, labelOf, sectionId) {
    const canvas = document.getElementById(canvasId);
    const section = document.getElementById(sectionId);
    const rows = table.rows || [];
    const assign = (table.clustering && table.clustering.assignment) || [];
    const z = table.normalised || [];
    if (!rows.length) { canvas.replaceWith(el('p', {class: 'empty', text: 'Nothing to cluster.'})); return; }
    const p = principal(z);
    const w = Math.min(widthOf(boxId) - 40, 900), h = 300, pad = 30, legendW = 130;
    const ctx = whiteCanvas(canvas, w, h);
    const xs = p.map(q => q[0]), ys = p.map(q => q[1]);
    const [x0, x1] = [Math.min(...xs), Math.max(...xs)], [y0, y1] = [Math.min(...ys), Math.max(...ys)];
    const plotW = w - 2 * pad - legendW;
    const sx = x => pad + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * plotW;
    const sy = y => h - pad - (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5) * (h - 2 * pad);
    ctx.strokeStyle = '#d9dde5';
    ctx.strokeRect(pad - 10, pad - 10, plotW + 20, h - 2 * pad + 20);
    ctx.fillStyle = '#5d6677'; ctx.font = '11px sans-serif';
    ctx.fillText('principal component 1 →', pad, h - 6);
    ctx.save(); ctx.translate(12, h - pad); ctx.rotate(-Math.PI / 2); ctx.fillText('component 2 →', 0, 0); ctx.restore();
    // Spokes from each point to its cluster's centre (in this projection) show the membership at a glance.
    const k0 = (table.clustering && table.clustering.k) || 1;
    for (let c = 0; c < k0; c++) {
      const members = rows.map((_, i) => i).filter(i => (assign[i] || 0) === c);
      if (members.length < 2) continue;
      const cx = members.reduce((s, i) => s + sx(xs[i]), 0) / members.length;
      const cy = members.reduce((s, i) => s + sy(ys[i]), 0) / members.length;
      ctx.strokeStyle = CLUSTER_COLOURS[c % CLUSTER_COLOURS.length];
      ctx.globalAlpha = 0.6;
      ctx.lineWidth = 2;
      for (const i of members) { ctx.beginPath(); ctx.moveTo(cx, cy); ctx.lineTo(sx(xs[i]), sy(ys[i])); ctx.stroke(); }
      ctx.globalAlpha = 1;
      ctx.lineWidth = 1;
    }
    const labelled = rows.length <= 12;
    rows.forEach((r, i) => {
      const c = CLUSTER_COLOURS[(assign[i] || 0) % CLUSTER_COLOURS.length];
      ctx.fillStyle = c;
      ctx.beginPath(); ctx.arc(sx(xs[i]), sy(ys[i]), 8, 0, 2 * Math.PI); ctx.fill();
      if (labelled) {  // labels left of the points in the right half, so they stay inside the frame
        const right = sx(xs[i]) > pad + plotW / 2;
        ctx.fillStyle = '#1d2330';
        ctx.textAlign = right ? 'right' : 'left';
        ctx.fillText(labelOf(r), sx(xs[i]) + (right ? -9 : 9), sy(ys[i]) + 4);
        ctx.textAlign = 'left';
      }
    });
    const k = (table.clustering && table.clustering.k) || 1;
    for (let c = 0; c < k; c++) {  // legend
      ctx.fillStyle = CLUSTER_COLOURS[c % CLUSTER_COLOURS.length];
      ctx.fillRect(w - legendW + 10, pad + c * 18, 10, 10);
      ctx.fillStyle = '#1d2330';
      ctx.fillText('cluster ' + c + ' (' + assign.filter(a => a === c).length + ')', w - legendW + 26, pad + c * 18 + 9);
    }
    section.dataset.points = String(rows.length);
    section.dataset.clusters = String(k);
  }
  function clusterNote(t) {
    const c = t.clustering || {};
    return (c.k || 1) + ' cluster' + ((c.k || 1) === 1 ? '' : 's') + ' of ' + (t.rows || []).length + ': ' + (c.criterion || '') +
      '. Points: the normalised feature vectors on their first two principal components.' +
      ((t.dropped || []).length ? ' Left out: ' + t.dropped.join('; ') + '.' : '');
  }
  function renderClusters(d) {
    const tc = d.compare.trace_clusters, fc = d.compare.flow_clusters;
    document.getElementById('clusters-note').textContent = clusterNote(tc);
    scatter('clusters-canvas', 'chart-clusters', tc, shortName, 'chart-clusters');
    document.getElementById('flow-clusters-note').textContent = clusterNote(fc);
    scatter('flow-clusters-canvas', 'chart-flow-clusters', fc, r => r, 'chart-flow-clusters');
    const t = document.getElementById('flow-clusters-table');
    t.append(el('tr', {}, el('th', {text: 'Cluster'}), el('th', {text: 'Flow'})));
    (fc.rows || []).forEach((r, i) => {
      const sw = el('span', {class: 'swatch'});
      sw.style.background = CLUSTER_COLOURS[(fc.clustering.assignment[i] || 0) % CLUSTER_COLOURS.length];
      t.append(el('tr', {}, el('td', {}, sw, String(fc.clustering.assignment[i])), el('td', {text: r})));
    });
  }

  // ---- the trace feature table: z-score as colour, raw value as text ----
  function zColour(z) {
    const a = Math.max(-1, Math.min(1, z / 2.5));
    return a >= 0 ? 'rgba(209,73,91,' + (0.6 * a).toFixed(3) + ')' : 'rgba(31,111,178,' + (-0.6 * a).toFixed(3) + ')';
  }
  function renderFeatures(d) {
    const tc = d.compare.trace_clusters;
    const t = document.getElementById('features-table');
    if (!(tc.rows || []).length) { t.replaceWith(el('p', {class: 'empty', text: 'No feature table.'})); return; }
    t.append(el('tr', {}, el('th', {text: 'Trace'}), el('th', {text: 'Cluster'}), ...tc.names.map(n => el('th', {class: 'num', text: n}))));
    tc.rows.forEach((r, i) => {
      const tr = el('tr', {}, el('td', {title: r, text: shortName(r)}), el('td', {text: String(tc.clustering.assignment[i])}));
      tc.names.forEach((n, k) => {
        const td = el('td', {class: 'z', title: 'z = ' + tc.normalised[i][k].toFixed(2), text: (+tc.raw[i][k].toPrecision(3)) + ''});
        td.style.background = zColour(tc.normalised[i][k]);
        tr.append(td);
      });
      t.append(tr);
    });
  }

  function renderMeta(d) {
    document.getElementById('report-meta').textContent = d.traces.length + ' traces · ' + (d.version || '') + ' · ' +
      'clusters by k-means on normalised burst features, seed ' + d.compare.options.seed;
  }

  runPage('burstscope-compare-page/1',
          [['meta', renderMeta], ['key figures', renderKeyFigures], ['curves', renderCurves],
           ['timeline', renderTimeline], ['clusters', renderClusters], ['features', renderFeatures]]);
})();
