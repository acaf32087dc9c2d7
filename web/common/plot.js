// What the report and compare pages share (web/report, web/compare): exact JSON numbers, decimal formatting,
// DOM helpers, the zoomable timeline charts (sparse 100 us base bins aggregated to a chosen width and drawn
// with the highest and lowest bin per pixel column, so no spike vanishes when zoomed out) and log-log curves.
// Loaded after uPlot and before the page's own script; everything is on window.burstscopePlot.
'use strict';

window.burstscopePlot = (function () {
  const BASE_NS = 100000;  // the timeline's base bin, 100 us
  const COLOURS = ['#1f6fb2', '#d1495b', '#2a9d8f', '#e9a23b', '#6a4c93', '#8c564b', '#e377c2', '#7f7f7f',
                   '#bcbd22', '#17becf'];

  // ---- exact numbers: JSON.parse loses integers beyond 2^53 (ns timestamps); keep their source text ----
  const exactSource = new WeakMap();  // holder object -> {key: source text}
  function parseExact(text) {
    return JSON.parse(text, function (key, value, context) {
      if (typeof value === 'number' && !Number.isSafeInteger(value) && context && context.source &&
          /^-?\d+$/.test(context.source)) {
        let m = exactSource.get(this);
        if (!m) { m = {}; exactSource.set(this, m); }
        m[key] = context.source;
      }
      return value;
    });
  }
  function exactText(obj, key) {
    const m = exactSource.get(obj);
    if (m && key in m) return m[key];
    return JSON.stringify(obj[key]);
  }
  function exactBig(obj, key) { return BigInt(exactText(obj, key)); }

  // ---- formatting: decimal units, four significant digits ----
  function fixed(v, unitValue) {
    const x = v / unitValue;
    const a = Math.abs(x);
    const decimals = a >= 100 ? 1 : a >= 10 ? 2 : 3;
    return x.toFixed(decimals);
  }
  function scaled(v, units) {  // units: [[factor, suffix], ...] ascending
    if (v === null || v === undefined || !isFinite(v)) return '—';
    let u = units[0];
    for (const cand of units) if (Math.abs(v) >= cand[0]) u = cand;
    if (u[0] === 1 && Number.isInteger(v)) return v + ' ' + u[1];
    return fixed(v, u[0]) + ' ' + u[1];
  }
  const fmtBytes = v => scaled(v, [[1, 'B'], [1e3, 'kB'], [1e6, 'MB'], [1e9, 'GB'], [1e12, 'TB']]);
  const fmtBps = v => scaled(v, [[1, 'b/s'], [1e3, 'kb/s'], [1e6, 'Mb/s'], [1e9, 'Gb/s'], [1e12, 'Tb/s']]);
  const fmtSeconds = v => scaled(v, [[1e-9, 'ns'], [1e-6, 'µs'], [1e-3, 'ms'], [1, 's']]);
  const fmtNs = v => fmtSeconds(v / 1e9);
  const fmtCount = v => (v === null || v === undefined) ? '—' : Number(v).toLocaleString('en-US');
  const fmtRatio = v => (v === null || v === undefined || !isFinite(v)) ? '—' : v.toFixed(1);
  const fmtPercent = v => (v === null || v === undefined) ? '—' : (100 * v).toFixed(1) + ' %';
  // Axis tick labels: short, unit-aware.
  const tickSeconds = (u, vals) => vals.map(v => v === null ? '' : shortTime(v));
  function shortTime(s) {
    const a = Math.abs(s);
    if (a === 0) return '0';
    if (a < 1e-3) return +(s * 1e6).toPrecision(3) + ' µs';
    if (a < 1) return +(s * 1e3).toPrecision(3) + ' ms';
    return +s.toPrecision(4) + ' s';
  }
  function shortBytes(v) {
    const a = Math.abs(v);
    if (a >= 1e9) return +(v / 1e9).toPrecision(3) + ' GB';
    if (a >= 1e6) return +(v / 1e6).toPrecision(3) + ' MB';
    if (a >= 1e3) return +(v / 1e3).toPrecision(3) + ' kB';
    return +v.toPrecision(3) + ' B';
  }
  function shortGbps(v) { return +v.toPrecision(3) + ''; }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === 'class') e.className = attrs[k];
      else if (k === 'text') e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  function widthOf(id) {
    const e = document.getElementById(id);
    return Math.max(240, Math.floor(e.getBoundingClientRect().width));
  }
  function get(obj, path) {
    let o = obj;
    for (const p of path.split('.')) {
      if (o === null || o === undefined) return undefined;
      o = p === 'length' && Array.isArray(o) ? o.length : o[p];
    }
    return o;
  }
  function holderOf(obj, path) {
    const parts = path.split('.');
    const key = parts.pop();
    return [parts.length ? get(obj, parts.join('.')) : obj, key];
  }

  // ---- the timeline: sparse base bins -> bins of the chosen width -> per-pixel max/min ----
  // A sparse series: ascending base-bin indices t[] (from start_ns) and their bytes v[].
  function aggregate(t, v, startOffsetNs, widthNs) {
    // Bins of width widthNs aligned to the epoch: base bin i lies in aligned bin floor((off + i*B) / w),
    // with off = start_ns mod w computed exactly. Returned indices count from the aligned bin holding start_ns.
    const ratio = widthNs / BASE_NS;
    const k = [], s = [];
    for (let n = 0; n < t.length; n++) {
      const idx = Math.floor((startOffsetNs + t[n] * BASE_NS) / widthNs);
      if (k.length && k[k.length - 1] === idx) s[s.length - 1] += v[n];
      else { k.push(idx); s.push(v[n]); }
    }
    return {k, s, widthNs, ratio};
  }
  function lowerBound(arr, x) {
    let lo = 0, hi = arr.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (arr[m] < x) lo = m + 1; else hi = m; }
    return lo;
  }
  // Columns for the x range [x0, x1] (seconds since the first aligned bin): each column holds the highest and
  // lowest bin rate (Gb/s) under it; at full resolution one point per bin (drawn as steps).
  function columns(agg, originS, x0, x1, pixels) {
    const w = agg.widthNs / 1e9;
    const k0 = Math.floor((x0 + originS) / w), k1 = Math.ceil((x1 + originS) / w);
    const nb = Math.max(1, k1 - k0);
    const cols = Math.max(1, Math.min(nb, pixels));
    const per = nb / cols;
    const xs = new Array(cols + 1), hi = new Array(cols + 1).fill(0), lo = new Array(cols + 1).fill(0);
    const filled = new Array(cols).fill(0);
    const minNonEmpty = new Array(cols).fill(Infinity);
    for (let c = 0; c <= cols; c++) xs[c] = (k0 + c * per) * w - originS;
    let peakBytes = 0;
    for (let n = lowerBound(agg.k, k0); n < agg.k.length && agg.k[n] < k1; n++) {
      const c = Math.min(cols - 1, Math.floor((agg.k[n] - k0) / per));
      const b = agg.s[n];
      if (b > hi[c]) hi[c] = b;
      if (b < minNonEmpty[c]) minNonEmpty[c] = b;
      filled[c]++;
      if (b > peakBytes) peakBytes = b;
    }
    for (let c = 0; c < cols; c++) {
      const binsInColumn = Math.floor((c + 1) * per) - Math.floor(c * per);
      lo[c] = filled[c] >= binsInColumn && filled[c] > 0 ? minNonEmpty[c] : 0;
    }
    const toGbps = b => b * 8 / w / 1e9;
    // The last point repeats the last column so the stepped path reaches x1.
    hi[cols] = hi[cols - 1]; lo[cols] = lo[cols - 1];
    return {x: xs, hi: hi.map(toGbps), lo: lo.map(toGbps), peakBytes, binsPerColumn: per};
  }

  // One zoomable timeline chart over several sparse series; charts in the same group share their x range.
  class Timelines {
    constructor(startNs, startExact, endNs) {
      this.startNs = startNs;
      this.startExact = startExact;  // BigInt
      this.durationS = (endNs - startNs) / 1e9;
      this.widthNs = BASE_NS;
      this.charts = [];
      this.range = [0, this.durationS];
    }
    offsetFor(widthNs) { return Number(this.startExact % BigInt(widthNs)); }
    add(chart) { this.charts.push(chart); }
    setWidth(widthNs) {
      this.widthNs = widthNs;
      for (const c of this.charts) c.rebin();
      this.refresh();
    }
    zoom(x0, x1) {
      const minSpan = 20 * BASE_NS / 1e9;
      if (x1 - x0 < minSpan) { const m = (x0 + x1) / 2; x0 = m - minSpan / 2; x1 = m + minSpan / 2; }
      this.range = [Math.max(0, x0), Math.min(this.durationS, x1)];
      this.refresh();
    }
    refresh() { for (const c of this.charts) c.fill(this.range[0], this.range[1]); }
  }

  class TimelineChart {
    // series: [{label, t, v, colour}], opts: {height, markers(u), minLine}
    constructor(group, container, series, opts) {
      this.group = group;
      this.series = series;
      this.opts = opts;
      this.busy = false;
      this.rebin();
      const self = this;
      const width = Math.max(240, Math.floor(container.getBoundingClientRect().width));
      this.pixels = width - 70;
      const uSeries = [{label: 'time'}];
      for (const s of series) {
        uSeries.push({label: s.label + ' (highest bin)', stroke: s.colour, width: 1,
                      fill: opts.fill ? s.colour + '33' : undefined,
                      paths: uPlot.paths.stepped({align: 1}), value: (u, v) => v === null ? '—' : v.toFixed(3) + ' Gb/s'});
        if (opts.minLine) uSeries.push({label: s.label + ' (lowest bin)', stroke: s.colour + '88', width: 1,
                                        paths: uPlot.paths.stepped({align: 1}),
                                        value: (u, v) => v === null ? '—' : v.toFixed(3) + ' Gb/s'});
      }
      const empty = [[0, group.durationS]];
      for (let i = 1; i < uSeries.length; i++) empty.push([0, 0]);
      this.u = new uPlot({
        width, height: opts.height,
        legend: {show: !!opts.legend},
        cursor: {drag: {x: !!opts.zoom, y: false, setScale: false}, bind: {dblclick: () => null}},
        select: {show: !!opts.zoom},
        scales: {x: {time: false, auto: false, range: (u, a, b) => [a, b]}, y: {auto: false, range: (u, a, b) => [a, b]}},
        axes: [
          {values: tickSeconds, size: opts.compact ? 24 : 36, show: !opts.hideX, label: opts.compact ? undefined : 'time since the first bin',
           labelSize: 16},
          {values: (u, vals) => vals.map(v => +v.toPrecision(3)), size: 56, space: 30,
           splits: opts.compact ? (u => [0, +(u.scales.y.max / 1.08).toPrecision(2)]) : undefined, label: opts.compact ? undefined : 'Gb/s',
           labelSize: 16, ticks: {show: true}},
        ],
        series: uSeries,
        hooks: {
          setSelect: [u => {
            if (!opts.zoom || u.select.width < 3) return;
            const x0 = u.posToVal(u.select.left, 'x'), x1 = u.posToVal(u.select.left + u.select.width, 'x');
            u.setSelect({left: 0, width: 0, top: 0, height: 0}, false);
            group.zoom(x0, x1);
          }],
          draw: [u => { if (opts.markers) opts.markers(u, self); }],
        },
      }, empty, container);
      if (opts.zoom) this.u.over.addEventListener('dblclick', () => group.zoom(0, group.durationS));
    }
    rebin() {
      const w = this.group.widthNs;
      const off = this.group.offsetFor(w);
      this.originS = off / 1e9;  // the first aligned bin starts this long before start_ns
      this.aggs = this.series.map(s => aggregate(s.t, s.v, off, w));
    }
    fill(x0, x1) {
      const data = [];
      let ymax = 0;
      this.peakBytes = 0;
      const cols = this.aggs.map(a => columns(a, this.originS, x0, x1, this.pixels));
      data.push(cols[0].x);
      for (const c of cols) {
        data.push(c.hi);
        if (this.opts.minLine) data.push(c.lo);
        for (const y of c.hi) if (y > ymax) ymax = y;
        this.peakBytes = Math.max(this.peakBytes, c.peakBytes);
      }
      this.binsPerColumn = cols[0].binsPerColumn;
      this.u.batch(() => {
        this.u.setData(data, false);
        this.u.setScale('x', {min: x0, max: x1});
        this.u.setScale('y', {min: 0, max: ymax > 0 ? ymax * 1.08 : 1});
      });
      if (this.opts.onFill) this.opts.onFill(this);
    }
  }


  // ---- log-log curves ----
  function logAxis(fmt, label) {
    return {values: (u, vals) => vals.map(v => v === null ? '' : fmt(v)), label, labelSize: 16, size: 60};
  }
  function curveChart(container, width, data, series, xFmt, yFmt, xLabel, yLabel) {
    return new uPlot({
      width, height: 260,
      legend: {show: true},
      cursor: {drag: {x: true, y: false}},
      scales: {x: {time: false, distr: 3}, y: {distr: 3}},
      axes: [logAxis(xFmt, xLabel), logAxis(yFmt, yLabel)],
      series: [{label: xLabel, value: (u, v) => v === null ? '—' : xFmt(v)}].concat(series),
    }, data, container);
  }
  function positiveOrNull(v) { return v === null || v === undefined || !(v > 0) ? null : v; }


  // A canvas of w x h CSS pixels drawn at the screen's pixel density, cleared to white; returns its 2-D context.
  function whiteCanvas(canvas, w, h) {
    const dpr = window.devicePixelRatio || 1;
    canvas.width = w * dpr; canvas.height = h * dpr;
    canvas.style.width = w + 'px'; canvas.style.height = h + 'px';
    const ctx = canvas.getContext('2d');
    ctx.scale(dpr, dpr);
    ctx.fillStyle = '#ffffff'; ctx.fillRect(0, 0, w, h);
    return ctx;
  }

  // ---- the page's life: parse the data, render each part (one failing part names itself in the console and
  // leaves the others drawn), then say where each region is and that rendering is done (the headless tests wait
  // for body[data-rendered="1"] and screenshot each box in <pre id="page-layout">) ----
  function writeLayout() {
    const boxes = {};
    for (const s of document.querySelectorAll('main section[id]')) {
      const b = s.getBoundingClientRect();
      boxes[s.id] = {x: Math.round(b.left + scrollX), y: Math.round(b.top + scrollY), width: Math.round(b.width),
                     height: Math.round(b.height)};
    }
    boxes.page = {width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight};
    document.getElementById('page-layout').textContent = JSON.stringify(boxes);
  }
  // steps: [[name, fn(data)], ...]
  function runPage(schema, steps) {
    function main() {
      const started = performance.now();
      const d = parseExact(document.getElementById('burstscope-data').textContent);
      if (d.schema !== schema) console.error('unexpected page schema: ' + d.schema + ' (expected ' + schema + ')');
      for (const [name, fn] of steps) {
        try { fn(d); } catch (e) { console.error('rendering ' + name + ' failed: ' + (e && e.stack ? e.stack : e)); }
      }
      // At once, not after a frame: getBoundingClientRect lays the page out, and a headless browser under load may
      // dump the DOM before any frame callback runs (the charts are drawn by then; only the paint is not).
      writeLayout();
      if (window.__burstscopeFlushErrors) window.__burstscopeFlushErrors();
      document.body.dataset.renderMs = String(Math.round(performance.now() - started));
      document.body.dataset.rendered = '1';
    }
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', main);
    else main();
  }

  // Dashed vertical lines at x values (in the x scale's units) inside the plot box, e.g. training step starts;
  // returns the pixel x of each drawn line, in order, for labels.
  function dashedVerticals(u, xs, stroke) {
    const ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
    const drawn = [];
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, top, u.bbox.width, h);
    ctx.clip();
    ctx.strokeStyle = stroke;
    ctx.lineWidth = 1;
    ctx.setLineDash([4, 3]);
    for (const x of xs) {
      if (x < u.scales.x.min || x > u.scales.x.max) continue;
      const px = Math.round(u.valToPos(x, 'x', true)) + 0.5;
      ctx.beginPath(); ctx.moveTo(px, top); ctx.lineTo(px, top + h); ctx.stroke();
      drawn.push(px);
    }
    ctx.restore();
    return drawn;
  }

  return {BASE_NS, COLOURS, dashedVerticals, parseExact, exactText, exactBig, fmtBytes, fmtBps, fmtSeconds, fmtNs, fmtCount, fmtRatio, fmtPercent, tickSeconds, shortTime, shortBytes, shortGbps, el, widthOf, get, holderOf, aggregate, lowerBound, columns, Timelines, TimelineChart, logAxis, curveChart, positiveOrNull, runPage, writeLayout, whiteCanvas};
})();
