// The live view (docs/live.md): a snapshot of every port's last few seconds of 100 µs bins, then one event per
// publisher tick with the bins and microbursts closed since. Each port's picture is an oscilloscope: scroll
// (the window follows the newest bin) or trigger (the picture stops, centred on the next microburst). `hold`
// stops it at once. The URL fragment sets the same: #mode=trigger, #hold=N (hold after N events), #window=S.
(function () {
  const P = window.burstscopePlot;
  const params = new URLSearchParams(location.hash.slice(1));
  const state = {
    mode: params.get('mode') === 'trigger' ? 'trigger' : 'scroll',
    holdAfter: params.has('hold') ? Math.max(1, parseInt(params.get('hold'), 10) || 1) : 0,
    windowS: params.has('window') ? parseFloat(params.get('window')) : 0,
    events: 0,
    held: false,
    source: null,
    ports: [],
    trigger: null,  // {port, at}: the microburst the trigger waits to centre
  };

  function setStatus(text, cls) {
    const s = document.getElementById('status');
    s.textContent = text;
    s.className = cls;
  }

  // ---- one port: its bins (index -> [bytes, packets]) within the window, its microbursts, its chart ----
  function makePort(info, windowNs) {
    const baseNs = info.base_bin_ns;
    const section = P.el('section', {class: 'port', id: 'port-' + state.ports.length});
    const chart = P.el('div', {class: 'chart'});
    const figures = P.el('p', {class: 'figures'});
    const readout = P.el('p', {class: 'readout'});
    const jobs = P.el('ul', {class: 'jobs'});
    const csv = P.el('pre', {class: 'bins', id: 'bins-' + state.ports.length});
    section.append(P.el('h2', {}, info.port), figures, jobs, chart, readout,
                   P.el('details', {}, P.el('summary', {}, '100 µs bins shown (start s, bytes, packets)'), csv));
    document.getElementById('ports').append(section);
    const capacityGbps = info.link_bps / 1e9;
    const port = {
      info, baseNs, section, chart, figures, jobs, readout, csv,
      windowBins: Math.round((state.windowS > 0 ? state.windowS * 1e9 : windowNs) / baseNs),
      bins: new Map(), bursts: [], newest: null, plot: null,
      jobBins: new Map(),  // job name -> Map(bin index -> bytes): the job's own traffic, an interval behind
      capacityGbps, thresholdGbps: capacityGbps * info.microburst_threshold,
    };
    const width = Math.max(400, P.widthOf('ports') - 40);
    port.plot = new uPlot({
      width, height: 260,
      scales: {x: {time: false}, y: {range: (u, lo, hi) => [0, Math.max(hi, capacityGbps) * 1.05]}},
      // Ticks in seconds before the window's end (the absolute times are in the readout below the chart).
      axes: [{label: 'seconds before the newest bin shown', values: (u, ticks) => ticks.map(t => (t - u.scales.x.max).toFixed(2))},
             {label: 'Gb/s per 100 µs'}],
      series: [{}, {label: 'traffic', stroke: P.COLOURS[0], width: 1, points: {show: false}},
               {label: 'capacity', stroke: '#cf222e', width: 1, dash: [6, 4], points: {show: false}},
               {label: 'microburst threshold', stroke: '#bc4c00', width: 1, dash: [2, 3], points: {show: false}}],
      hooks: {drawClear: [u => shadeBursts(u, port)], draw: [u => jobTraffic(u, port), u => markSteps(u, port)]},
      legend: {show: true},
    }, [[], [], [], []], chart);
    return port;
  }

  function shadeBursts(u, port) {
    const ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = 'rgba(207, 34, 46, 0.12)';
    for (const b of port.bursts) {
      const x0 = u.valToPos(b[0], 'x', true), x1 = u.valToPos(b[1], 'x', true);
      if (x1 < u.bbox.left || x0 > u.bbox.left + u.bbox.width) continue;
      ctx.fillRect(Math.max(x0, u.bbox.left), u.bbox.top, Math.max(1, Math.min(x1, u.bbox.left + u.bbox.width) - x0),
                   u.bbox.height);
    }
    ctx.restore();
  }

  // Each job's own traffic: its 100 µs bins as bars in its colour over the port's (which include them).
  function jobTraffic(u, port) {
    const f = port.info.figures;
    if (!f || !f.jobs) return;
    const ctx = u.ctx;
    const binS = port.baseNs / 1e9;
    ctx.save();
    ctx.globalAlpha = 0.6;
    f.jobs.forEach((job, k) => {
      const bins = port.jobBins.get(job.name);
      if (!bins) return;
      ctx.fillStyle = jobColour(k);
      const y0 = u.valToPos(0, 'y', true);
      for (const [index, bytes] of bins) {
        const x0 = u.valToPos(index * binS, 'x', true), x1 = u.valToPos((index + 1) * binS, 'x', true);
        if (x1 < u.bbox.left || x0 > u.bbox.left + u.bbox.width) continue;
        const y = u.valToPos(bytes * 8 / port.baseNs, 'y', true);
        ctx.fillRect(x0, y, Math.max(1, x1 - x0), y0 - y);
      }
    });
    ctx.restore();
  }

  function addJobBins(port, jobBins) {
    for (const [name, bins] of Object.entries(jobBins || {})) {
      if (!port.jobBins.has(name)) port.jobBins.set(name, new Map());
      const m = port.jobBins.get(name);
      for (const [index, bytes] of bins) m.set(index, bytes);
    }
  }

  // A job's colour: the k-th job the analysis lists, in the page's palette after the port's own colours.
  const jobColour = k => P.COLOURS[(k + 2) % P.COLOURS.length];

  // Step markers: a dashed line at each step start of each job the training analysis found (the report's
  // markers, in the job's colour), the job's name by its first marker in view.
  function markSteps(u, port) {
    const f = port.info.figures;
    if (!f || !f.jobs) return;
    const ctx = u.ctx;
    f.jobs.forEach((job, k) => {
      const drawn = P.dashedVerticals(u, job.steps.map(st => st[0]), jobColour(k));
      if (!drawn.length) return;
      ctx.save();
      ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
      ctx.fillStyle = jobColour(k);
      ctx.fillText(`${job.name} step`, drawn[0] + 3 * devicePixelRatio, u.bbox.top + (12 + 12 * k) * devicePixelRatio);
      ctx.restore();
    });
  }

  function addBins(port, bins) {
    for (const [index, bytes, packets] of bins) {
      port.bins.set(index, [bytes, packets]);
      if (port.newest === null || index > port.newest) port.newest = index;
    }
  }
  function addBursts(port, bursts, fresh) {
    for (const b of bursts) {
      port.bursts.push(b);
      if (fresh && state.mode === 'trigger' && !state.trigger) state.trigger = {port, at: b[0]};
    }
  }
  // Drops what left the window (kept a little longer while a trigger waits for its second half).
  function trim(port) {
    if (port.newest === null) return;
    const from = port.newest - port.windowBins;
    for (const index of port.bins.keys()) if (index < from) port.bins.delete(index);
    const fromS = from * port.baseNs / 1e9;
    port.bursts = port.bursts.filter(b => b[1] >= fromS);
    // Jobs the analysis no longer reports go; the others keep the window's bins.
    const names = new Set(((port.info.figures || {}).jobs || []).map(j => j.name));
    for (const [name, m] of port.jobBins) {
      if (!names.has(name)) { port.jobBins.delete(name); continue; }
      for (const index of m.keys()) if (index < from) m.delete(index);
    }
  }

  // The window shown: [newest - window, newest], or centred on the trigger's microburst.
  function range(port) {
    if (state.trigger && state.trigger.port === port) {
      const half = port.windowBins / 2;
      const at = Math.floor(state.trigger.at * 1e9 / port.baseNs);
      return [at - half, at + half];
    }
    return port.newest === null ? [0, 0] : [port.newest - port.windowBins, port.newest];
  }

  function draw(port) {
    const [lo, hi] = range(port);
    const shown = [...port.bins.keys()].filter(i => i >= lo && i <= hi).sort((a, b) => a - b);
    const binS = port.baseNs / 1e9;
    const toGbps = bytes => bytes * 8 / port.baseNs;  // bytes per bin -> Gb/s
    // Each bin as a pulse: zero before and after a run of non-empty bins, so that empty bins read as zero.
    const xs = [], ys = [];
    let prev = null;
    for (const i of shown) {
      if (prev === null || i !== prev + 1) {
        if (prev !== null) { xs.push((prev + 1) * binS); ys.push(0); }
        xs.push(i * binS); ys.push(0);
      }
      xs.push(i * binS); ys.push(toGbps(port.bins.get(i)[0]));
      xs.push((i + 1) * binS - binS * 1e-3); ys.push(toGbps(port.bins.get(i)[0]));
      prev = i;
    }
    if (prev !== null) { xs.push((prev + 1) * binS); ys.push(0); }
    const x0 = lo * binS, x1 = hi * binS;
    const cap = xs.map(() => port.capacityGbps), thr = xs.map(() => port.thresholdGbps);
    port.plot.setData([xs, ys, cap, thr], false);
    port.plot.setScale('x', {min: x0, max: x1 > x0 ? x1 : x0 + binS});
    // What the picture shows, in numbers: the window, its bytes, the busiest bin; and every bin (the CSV).
    let total = 0, peak = null;
    const lines = [];
    for (const i of shown) {
      const [bytes, packets] = port.bins.get(i);
      total += bytes;
      if (peak === null || bytes > port.bins.get(peak)[0]) peak = i;
      lines.push(`${(i * binS).toFixed(4)},${bytes},${packets}`);
    }
    port.readout.textContent = peak === null
      ? `window ${x0.toFixed(4)} s to ${x1.toFixed(4)} s: no traffic`
      : `window ${x0.toFixed(4)} s to ${x1.toFixed(4)} s: ${P.fmtBytes(total)} in ${shown.length} non-empty bins; ` +
        `busiest 100 µs bin at ${(peak * binS).toFixed(4)} s: ${port.bins.get(peak)[0]} bytes ` +
        `(${P.shortGbps(toGbps(port.bins.get(peak)[0]))} Gb/s, ${P.fmtPercent(toGbps(port.bins.get(peak)[0]) / port.capacityGbps)} of the link)`;
    port.readout.dataset.windowStart = String(lo);
    port.readout.dataset.windowEnd = String(hi);
    port.csv.textContent = `# bins ${lo} to ${hi} (index = start / 100 µs)\n` + lines.join('\n');
    showFigures(port);
  }

  function showFigures(port) {
    const f = port.info.figures;
    if (!f || f.scales === undefined) { port.figures.textContent = 'figures: after the first report interval'; return; }
    const scales = f.scales.map(s => `E(${P.fmtSeconds(s.tau_ns / 1e9)}) ${P.fmtBytes(s.envelope_bytes)}` +
                                     (s.ptm === null ? '' : `, PtM ${P.fmtRatio(s.ptm)}`));
    // SPEC "Overload": an interval whose windows reach frames lost before analysis shows its bounds, not the
    // analysed (low) figures.
    const b = f.bounds;
    const degraded = b && b.degraded ? 'DEGRADED (' + b.lost_packets + ' frames lost after the 100 µs series): ' +
      b.scales.filter(s => s.bounded).map(s => `E(${P.fmtSeconds(s.tau_ns / 1e9)}) ${P.fmtBytes(s.envelope_bytes[0])}` +
        ` to ${s.envelope_bytes[1] === null ? '?' : P.fmtBytes(s.envelope_bytes[1])}`).join('; ') +
      (b.microbursts ? `; microbursts ${b.microbursts[0]} to ${b.microbursts[1] === null ? '?' : b.microbursts[1]}` : '') +
      '; ' : '';
    port.figures.textContent = degraded + `last report interval: ${P.fmtBps(f.mean_bps)} mean, ${f.microbursts} microbursts ` +
                               `(${f.microbursts_total} since start); ` + scales.join('; ');
    // The training jobs on this port, with what the step markers mean.
    port.jobs.replaceChildren(...(f.jobs || []).map((job, k) => P.el('li', {style: `color: ${jobColour(k)}`},
      `job ${job.name} (${job.hosts} hosts, ${job.topology}` +
      (job.pipelines || []).map(pl => '; ' + pl.join(' → ')).join('') +
      (job.groups || []).map((g, k) => `; stage ${k} group ` + g.join(', ')).join('') + '): ' +
      (job.period_s === null ? `no period yet (${job.period_why})`
                             : `step every ${P.fmtSeconds(job.period_s)}, ${P.fmtBytes(job.step_bytes)} per step` +
                               (job.phases ? `, ${job.phases} phases, ${Math.round(100 * job.idle_share)}% idle` : '')) +
      `; ${job.steps.length} steps in the window (dashed lines at their starts); its own traffic in this colour, ` +
      'an interval behind')));
  }

  function hold(why) {
    if (state.held) return;
    state.held = true;
    if (state.source) state.source.close();
    state.source = null;
    setStatus('held (' + why + ')', 'held');
    for (const p of state.ports) draw(p);
    done();
  }

  // Layout and the rendered flag, for the headless test and for screenshots (the pages' shared writeLayout).
  function done() {
    P.writeLayout();
    if (window.__burstscopeFlushErrors) window.__burstscopeFlushErrors();
    document.body.dataset.events = String(state.events);
    document.body.dataset.rendered = '1';
  }

  function onSnapshot(e) {
    const d = JSON.parse(e.data);
    document.getElementById('ports').replaceChildren();
    state.ports = [];
    for (const info of d.ports) {
      const port = makePort(info, d.window_ns);
      addBins(port, info.bins);
      addBursts(port, info.bursts, false);
      addJobBins(port, info.job_bins);
      trim(port);
      state.ports.push(port);
    }
    for (const p of state.ports) draw(p);
    setStatus('live', 'live');
  }

  function onBins(e) {
    const d = JSON.parse(e.data);
    state.events += 1;
    d.ports.forEach((info, k) => {
      const port = state.ports[k];
      if (!port) return;
      port.info.figures = info.figures;
      addBins(port, info.bins);
      addBursts(port, info.bursts, true);
      addJobBins(port, info.job_bins);
      if (!(state.trigger && state.trigger.port === port)) trim(port);
    });
    if (state.trigger) {
      const p = state.trigger.port;
      if (p.newest !== null && p.newest * p.baseNs / 1e9 >= state.trigger.at + p.windowBins * p.baseNs / 2e9) {
        hold('triggered by a microburst at ' + state.trigger.at.toFixed(4) + ' s');
        return;
      }
    }
    for (const p of state.ports) draw(p);
    if (state.holdAfter > 0 && state.events >= state.holdAfter) hold('after ' + state.events + ' updates');
  }

  function connect() {
    state.held = false;
    state.trigger = null;
    state.events = 0;
    const es = new EventSource('live/events');
    state.source = es;
    es.addEventListener('snapshot', onSnapshot);
    es.addEventListener('bins', onBins);
    es.onerror = () => { if (!state.held) setStatus('reconnecting', 'down'); };
  }

  function main() {
    const mode = document.getElementById('mode');
    mode.value = state.mode;
    mode.addEventListener('change', () => { state.mode = mode.value; state.trigger = null; });
    document.getElementById('hold').addEventListener('click', () => hold('by hand'));
    document.getElementById('resume').addEventListener('click', () => { state.holdAfter = 0; if (state.held) connect(); });
    connect();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', main);
  else main();
})();
