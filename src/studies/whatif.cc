#include "src/studies/whatif.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "burstscope/capture.h"
#include "burstscope/status.h"
#include "burstscope/training.h"
#include "src/analysis/report.h"
#include "src/config/run_config.h"
#include "src/pipeline/pipeline.h"

namespace burstscope {

namespace {

using Json = nlohmann::ordered_json;

bool isFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A number followed by one of `units` (longest match first, case-sensitive), or bare (factor 1).
absl::StatusOr<double> numberWithUnit(std::string_view flag, const std::string& text,
                                      std::span<const std::pair<const char*, double>> units, const char* example) {
  std::string_view t(text);
  double factor = 1;
  size_t best = 0;
  for (const auto& [suffix, f] : units) {
    const std::string_view s(suffix);
    if (s.size() > best && t.size() > s.size() && t.substr(t.size() - s.size()) == s) {
      best = s.size();
      factor = f;
    }
  }
  t.remove_suffix(best);
  double v;
  if (!absl::SimpleAtod(absl::string_view(t.data(), t.size()), &v) || !(v > 0) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::string_view(flag.data(), flag.size()), ": '", text, "' is not a positive ", example));
  }
  return v * factor;
}

}  // namespace

absl::StatusOr<double> parseRateBps(std::string_view flag, const std::string& text) {
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"k", 1e3},      {"K", 1e3},      {"M", 1e6},      {"G", 1e9},       {"T", 1e12},
      {"kbit/s", 1e3}, {"Mbit/s", 1e6}, {"Gbit/s", 1e9}, {"Tbit/s", 1e12}, {"bit/s", 1},
      {"kbps", 1e3},   {"Mbps", 1e6},   {"Gbps", 1e9},   {"Tbps", 1e12},   {"bps", 1}};
  BS_ASSIGN_OR_RETURN(double v, numberWithUnit(flag, text, kUnits, "rate (e.g. 100G, 25Gbit/s, 400M)"));
  if (v > 1e13) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::string_view(flag.data(), flag.size()), ": '", text, "' is above 10 Tbit/s"));
  }
  return v;
}

absl::StatusOr<double> parseBufferBytes(std::string_view flag, const std::string& text) {
  static constexpr std::pair<const char*, double> kUnits[] = {{"B", 1},           {"kB", 1e3},          {"KB", 1e3},
                                                              {"MB", 1e6},        {"GB", 1e9},          {"KiB", 1024.0},
                                                              {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  return numberWithUnit(flag, text, kUnits, "size (e.g. 16MiB, 12MB, 512KiB)");
}

absl::StatusOr<WhatifJobSpec> parseWhatifJob(const std::string& text) {
  WhatifJobSpec j;
  j.text = text;
  j.path = text;
  if (text.empty()) return absl::InvalidArgumentError("job '': empty argument (want FILE[*N][@period=D|@scale=X])");
  if (isFile(text)) return j;
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("job '", text, "': ", why));
  };
  // Modifiers start at the first '*' or '@' after the last '/'.
  const size_t slash = text.rfind('/');
  const size_t start = text.find_first_of("*@", slash == std::string::npos ? 0 : slash + 1);
  if (start == std::string::npos) return j;  // a plain path (that does not exist: reading it will say so)
  if (start == 0) return bad("no file before the modifiers");
  j.path = text.substr(0, start);
  bool counted = false;
  size_t i = start;
  while (i < text.size()) {
    const size_t next = text.find_first_of("*@", i + 1);
    const std::string part = text.substr(i, next == std::string::npos ? std::string::npos : next - i);
    i = next == std::string::npos ? text.size() : next;
    if (part[0] == '*') {
      uint64_t n;
      if (counted) return bad(absl::StrCat("'", part, "': the count is given twice"));
      if (!absl::SimpleAtoi(part.substr(1), &n) || n < 1 || n > kWhatifMaxCopies) {
        return bad(absl::StrCat("'", part, "' is not a count (want *N, 1 <= N <= ", kWhatifMaxCopies, ")"));
      }
      j.count = n;
      counted = true;
      continue;
    }
    if (j.period_ns || j.scale) return bad(absl::StrCat("'", part, "': one time scaling per job (@period or @scale)"));
    if (part.rfind("@period=", 0) == 0) {
      auto ns = parseDurationNs(part.substr(8));
      if (!ns.ok() || *ns <= 0) {
        return bad(absl::StrCat("'", part, "' is not a step period (want @period=DURATION, e.g. @period=300ms)"));
      }
      j.period_ns = *ns;
    } else if (part.rfind("@scale=", 0) == 0) {
      double f;
      if (!absl::SimpleAtod(part.substr(7), &f) || !(f > 0) || f > 1e6) {
        return bad(absl::StrCat("'", part, "' is not a time scale (want @scale=FACTOR, 0 < FACTOR <= 1e6)"));
      }
      j.scale = f;
    } else {
      return bad(absl::StrCat("unknown modifier '", part, "' (want *N, @period=DURATION or @scale=FACTOR)"));
    }
  }
  return j;
}

namespace {

// A job's packets in memory: time since its first packet (after scaling) and wire length, 12 bytes a packet.
struct Series {
  std::vector<int64_t> ts_ns;
  std::shared_ptr<const std::vector<uint32_t>> len;
  uint64_t bytes = 0;
  double alone_bmax = -1;  // computed once per series
};

// A capture file as analyze measures it.
struct Trace {
  std::shared_ptr<Series> series;  // unscaled
  int64_t first_ns = 0;
  std::optional<double> period_s;
  std::string period_job;
  std::string why;
};

absl::StatusOr<Trace> loadTrace(const std::string& path, const WhatifConfig& c) {
  auto source = openPcapCapture({path}, c.decoder);
  if (!source.ok()) return source.status();
  PipelineConfig pc;  // analyze's, without what whatif does not use
  pc.engine.rates_bps = {c.rate_bps};
  pc.reorder_horizon_ns = c.reorder_horizon_ns;
  pc.evidence.enabled = false;
  pc.training.interval_bins = false;  // the live view's per-job picture
  auto series = std::make_shared<Series>();
  auto len = std::make_shared<std::vector<uint32_t>>();
  int64_t first = 0;
  pc.record_sink = [&](size_t, std::span<const PacketRecord> records) {
    for (const PacketRecord& r : records) {
      if (series->ts_ns.empty()) first = r.ts_ns;
      series->ts_ns.push_back(r.ts_ns - first);
      len->push_back(r.wire_len);
      series->bytes += r.wire_len;
    }
  };
  const std::atomic<bool> stop{false};
  auto result = runCapture(**source, pc, stop);
  if (!result.ok()) return absl::Status(result.status().code(), absl::StrCat(path, ": ", result.status().message()));
  if (series->ts_ns.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no packets"));
  series->len = std::move(len);
  Trace t;
  t.series = std::move(series);
  t.first_ns = first;
  const std::shared_ptr<const TrainingReport>& tr = result->ports.front().training;
  const JobReport* heaviest = nullptr;
  const JobReport* periodic = nullptr;
  if (tr) {
    for (const JobReport& job : tr->jobs) {
      if (!heaviest || job.bytes > heaviest->bytes) heaviest = &job;
      if (job.period.period_s && (!periodic || job.bytes > periodic->bytes)) periodic = &job;
    }
  }
  if (periodic) {
    t.period_s = periodic->period.period_s;
    t.period_job = periodic->name;
  } else {
    t.why = heaviest ? heaviest->period.why : "no training job found";
  }
  return t;
}

// Runs the jobs' merged stream (job j shifted by base + offsets[j]) through a fresh engine. A k-way merge on a
// heap of the jobs' next timestamps; a job's run of packets before the next job's head goes out without the
// heap. Records carry only time and length (non-IP: only the port stream counts them).
EngineResult runMerged(const std::vector<const Series*>& jobs, std::span<const int64_t> offsets, int64_t base_ns,
                       const EngineConfig& cfg) {
  Engine engine(cfg);
  constexpr size_t kBatch = 4096;
  std::vector<PacketRecord> batch(kBatch);
  size_t n = 0;
  using Head = std::pair<int64_t, uint32_t>;  // next timestamp, job; ties go to the lower job
  std::vector<Head> heap;
  std::vector<size_t> next(jobs.size(), 0);
  for (uint32_t j = 0; j < jobs.size(); ++j) heap.emplace_back(base_ns + offsets[j] + jobs[j]->ts_ns.front(), j);
  const auto later = [](const Head& a, const Head& b) { return a > b; };
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const uint32_t j = heap.back().second;
    heap.pop_back();
    const Series& s = *jobs[j];
    const std::vector<uint32_t>& len = *s.len;
    const int64_t shift = base_ns + offsets[j];
    const Head limit = heap.empty() ? Head{INT64_MAX, 0} : heap.front();
    size_t i = next[j];
    const size_t size = s.ts_ns.size();
    do {
      batch[n].ts_ns = shift + s.ts_ns[i];
      batch[n].wire_len = len[i];
      if (++n == kBatch) {
        engine.add(std::span<const PacketRecord>(batch.data(), n));
        n = 0;
      }
      ++i;
    } while (i < size && Head{shift + s.ts_ns[i], j} < limit);
    next[j] = i;
    if (i < size) {
      heap.emplace_back(shift + s.ts_ns[i], j);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  engine.add(std::span<const PacketRecord>(batch.data(), n));
  engine.finish();
  return engine.result();
}

// Bmax(r) only: one base-bin scale, no exact windows, tiny tables (the records are non-IP).
EngineConfig backlogConfig(double rate_bps) {
  EngineConfig c;
  c.scales_ns = {c.base_bin_ns};
  c.exact_max_tau_ns = 0;
  c.rates_bps = {rate_bps};
  c.link_capacity_bps = rate_bps;
  c.top_k = 1;
  c.tracked_streams = 1;
  c.flow_table_capacity = 16;
  c.pair_table_capacity = 16;
  c.max_microburst_events = 0;
  return c;
}

// Bmax(r) and E(τ) exact at every scale, as analyze computes them offline.
EngineConfig envelopeConfig(const WhatifConfig& w) {
  EngineConfig c = backlogConfig(w.rate_bps);
  c.scales_ns = w.scales_ns;
  c.exact_max_tau_ns = w.scales_ns.back();
  return c;
}

double bmaxOf(const EngineResult& r) { return r.port.backlog.front().max_backlog_bytes; }

WhatifEnvelope envelopeOf(const EngineResult& r) {
  WhatifEnvelope e;
  const StreamResult& s = r.port;
  const double duration_ns = static_cast<double>(s.last_ns - s.first_ns);
  e.mean_bps = duration_ns > 0 ? static_cast<double>(s.bytes) * 8e9 / duration_ns : 0;
  for (const ScaleResult& sc : s.scales) {
    WhatifScale x{.tau_ns = sc.tau_ns, .envelope_bytes = sc.envelope_bytes, .exact = sc.exact, .ptm = std::nullopt};
    if (static_cast<double>(sc.tau_ns) <= duration_ns) x.ptm = peakToMean(sc.envelope_bytes, sc.tau_ns, e.mean_bps);
    e.scales.push_back(x);
  }
  return e;
}

// Uniform in [0, n) from one 64-bit draw (multiply-high): the same numbers on every standard library.
int64_t uniformBelow(std::mt19937_64& g, int64_t n) {
  return static_cast<int64_t>((static_cast<unsigned __int128>(g()) * static_cast<uint64_t>(n)) >> 64);
}

// Nearest rank: the smallest value with at least q of the values at or below it.
double nearestRank(const std::vector<double>& sorted, double q) {
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

absl::StatusOr<WhatifResult> runWhatif(const WhatifConfig& c) {
  if (c.jobs.empty()) return absl::InvalidArgumentError("no job: give at least one capture file");
  if (!(c.rate_bps > 0) || c.rate_bps > 1e13) return absl::InvalidArgumentError("--rate: not in (0, 10 Tbit/s]");
  if (c.search_grid < 1) return absl::InvalidArgumentError("--search-grid: must be at least 1");
  {
    EngineConfig check = envelopeConfig(c);
    if (absl::Status s = validateConfig(check); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("invalid configuration: ", s.message()));
    }
  }
  auto progress = [&](std::string_view what, size_t done, size_t total) {
    if (c.progress) c.progress(what, done, total);
  };
  WhatifResult out;
  out.rate_bps = c.rate_bps;
  out.buffer_bytes = c.buffer_bytes;
  out.seed = c.seed;
  out.search_grid = c.search_grid;
  out.search_sweeps = c.search_sweeps;

  // Each file once, each (file, time scale) once; copies share their arrays.
  std::map<std::string, Trace> traces;
  std::map<std::pair<std::string, double>, std::shared_ptr<Series>> scaled;
  std::vector<const Series*> jobs;
  std::vector<Series*> alone;
  for (size_t k = 0; k < c.jobs.size(); ++k) {
    const WhatifJobSpec& spec = c.jobs[k];
    auto it = traces.find(spec.path);
    if (it == traces.end()) {
      progress(absl::StrCat("reading ", spec.path), k, c.jobs.size());
      auto t = loadTrace(spec.path, c);
      if (!t.ok())
        return absl::Status(t.status().code(), absl::StrCat("job '", spec.text, "': ", t.status().message()));
      it = traces.emplace(spec.path, std::move(*t)).first;
    }
    const Trace& t = it->second;
    double factor = 1;
    if (spec.scale) factor = *spec.scale;
    if (spec.period_ns) {
      if (!t.period_s) {
        return absl::InvalidArgumentError(absl::StrCat("job '", spec.text, "': no step period was found in ", spec.path,
                                                       " (", t.why,
                                                       "), so @period cannot stretch it; use @scale=FACTOR"));
      }
      factor = static_cast<double>(*spec.period_ns) / (*t.period_s * 1e9);
    }
    std::shared_ptr<Series>& s = scaled[{spec.path, factor}];
    if (!s) {
      if (factor == 1) {
        s = t.series;
      } else {
        if (static_cast<double>(t.series->ts_ns.back()) * factor > 1e18) {
          return absl::InvalidArgumentError(
              absl::StrCat("job '", spec.text, "': scaled, the trace would last over 1e9 s"));
        }
        s = std::make_shared<Series>();
        s->ts_ns.reserve(t.series->ts_ns.size());
        for (int64_t ts : t.series->ts_ns) s->ts_ns.push_back(std::llround(static_cast<double>(ts) * factor));
        s->len = t.series->len;
        s->bytes = t.series->bytes;
      }
    }
    for (size_t copy = 1; copy <= spec.count; ++copy) {
      WhatifJobResult j;
      j.spec = spec.text;
      j.path = spec.path;
      j.copy = copy;
      j.packets = s->ts_ns.size();
      j.bytes = s->bytes;
      j.duration_ns = s->ts_ns.back();
      j.time_scale = factor;
      j.measured_period_s = t.period_s;
      j.period_job = t.period_job;
      j.no_period_why = t.why;
      if (t.period_s) {
        j.offset_range_ns = std::max<int64_t>(1, std::llround(*t.period_s * 1e9 * factor));
        j.offset_range_from = "step period";
      } else {
        j.offset_range_ns = std::max<int64_t>(1, j.duration_ns);
        j.offset_range_from = "duration";
      }
      out.jobs.push_back(j);
      jobs.push_back(s.get());
      alone.push_back(s.get());
    }
  }
  const size_t n_jobs = jobs.size();
  const int64_t base_ns = traces.at(c.jobs.front().path).first_ns;
  const EngineConfig backlog_cfg = backlogConfig(c.rate_bps);
  const EngineConfig envelope_cfg = envelopeConfig(c);
  auto schedule = [&](std::vector<int64_t> offsets, double bmax) {
    return WhatifSchedule{
        .offsets_ns = std::move(offsets), .bmax_bytes = bmax, .exceeds_buffer = bmax > c.buffer_bytes};
  };
  auto bmaxAt = [&](const std::vector<int64_t>& offsets) {
    return bmaxOf(runMerged(jobs, offsets, base_ns, backlog_cfg));
  };

  for (size_t j = 0; j < n_jobs; ++j) {
    if (alone[j]->alone_bmax < 0) {
      const std::vector<const Series*> one{alone[j]};
      const int64_t zero = 0;
      alone[j]->alone_bmax = bmaxOf(runMerged(one, std::span<const int64_t>(&zero, 1), base_ns, backlog_cfg));
    }
    out.jobs[j].alone_bmax_bytes = alone[j]->alone_bmax;
  }

  // All aligned: every job's first packet at the same instant.
  progress("aligned", 0, 1);
  const std::vector<int64_t> zeros(n_jobs, 0);
  {
    const EngineResult r = runMerged(jobs, zeros, base_ns, envelope_cfg);
    out.aligned = schedule(zeros, bmaxOf(r));
    out.aligned_envelope = envelopeOf(r);
  }

  // Random offsets: for each trial, each job in order draws uniform in [0, its range).
  std::mt19937_64 gen(c.seed);
  for (size_t t = 0; t < c.trials; ++t) {
    progress("random trials", t, c.trials);
    std::vector<int64_t> offsets(n_jobs);
    for (size_t j = 0; j < n_jobs; ++j) offsets[j] = uniformBelow(gen, out.jobs[j].offset_range_ns);
    const double b = bmaxAt(offsets);
    out.trials.push_back(schedule(std::move(offsets), b));
  }
  if (!out.trials.empty()) {
    std::vector<double> b;
    size_t exceed = 0;
    for (const WhatifSchedule& s : out.trials) {
      b.push_back(s.bmax_bytes);
      exceed += s.exceeds_buffer;
    }
    std::sort(b.begin(), b.end());
    out.distribution =
        WhatifDistribution{.min = b.front(),
                           .median = nearestRank(b, 0.5),
                           .p90 = nearestRank(b, 0.9),
                           .p99 = nearestRank(b, 0.99),
                           .max = b.back(),
                           .exceed_fraction = static_cast<double>(exceed) / static_cast<double>(b.size())};
  }

  // The search: coordinate descent from the best schedule so far (aligned, or the lowest random trial; the
  // first on ties). Job 1 keeps its offset (a common shift changes nothing); each other job in turn tries
  // every grid offset k·range/grid with the rest fixed and takes the strictly lowest; sweeps repeat until one
  // changes nothing. So the result is never above the aligned Bmax nor above any random trial's.
  std::string start = "aligned";
  std::vector<int64_t> cur = zeros;
  double cur_b = out.aligned.bmax_bytes;
  for (size_t t = 0; t < out.trials.size(); ++t) {
    if (out.trials[t].bmax_bytes < cur_b) {
      cur = out.trials[t].offsets_ns;
      cur_b = out.trials[t].bmax_bytes;
      start = absl::StrCat("random trial ", t + 1);
    }
  }
  const size_t budget = n_jobs > 1 ? c.search_sweeps * (n_jobs - 1) * c.search_grid : 0;
  size_t done = 0;
  bool moved = false;
  for (size_t sweep = 0; sweep < c.search_sweeps && n_jobs > 1; ++sweep) {
    ++out.search_sweeps_run;
    bool changed = false;
    for (size_t j = 1; j < n_jobs; ++j) {
      const int64_t range = out.jobs[j].offset_range_ns;
      int64_t best_offset = cur[j];
      for (size_t k = 0; k < c.search_grid; ++k) {
        const auto offset = static_cast<int64_t>(static_cast<__int128>(range) * static_cast<__int128>(k) /
                                                 static_cast<__int128>(c.search_grid));
        progress("search", done++, budget);
        if (offset == cur[j]) continue;
        std::vector<int64_t> cand = cur;
        cand[j] = offset;
        const double b = bmaxAt(cand);
        ++out.search_evaluations;
        if (b < cur_b) {
          cur_b = b;
          best_offset = offset;
        }
      }
      if (best_offset != cur[j]) {
        cur[j] = best_offset;
        changed = true;
      }
    }
    moved |= changed;
    if (!changed) break;
  }
  out.best = schedule(cur, cur_b);
  out.best_from = moved ? absl::StrCat("search from ", start) : start;
  if (out.best_from == "aligned") {
    out.best_envelope = out.aligned_envelope;
  } else {
    progress("envelope", 0, 1);
    const EngineResult r = runMerged(jobs, out.best.offsets_ns, base_ns, envelope_cfg);
    out.best_envelope = envelopeOf(r);
  }
  return out;
}

namespace {

Json envelopeJson(const WhatifEnvelope& e) {
  Json scales = Json::array();
  for (const WhatifScale& s : e.scales) {
    scales.push_back(Json{{"tau_us", s.tau_ns / 1000},
                          {"envelope_bytes", s.envelope_bytes},
                          {"exact", s.exact},
                          {"ptm", s.ptm ? Json(*s.ptm) : Json(nullptr)}});
  }
  return Json{{"mean_bps", e.mean_bps}, {"scales", scales}};
}

Json scheduleJson(const WhatifSchedule& s) {
  return Json{{"offsets_ns", s.offsets_ns}, {"bmax_bytes", s.bmax_bytes}, {"exceeds_buffer", s.exceeds_buffer}};
}

}  // namespace

nlohmann::ordered_json whatifJson(const WhatifResult& r) {
  Json jobs = Json::array();
  for (const WhatifJobResult& j : r.jobs) {
    jobs.push_back(Json{{"spec", j.spec},
                        {"path", j.path},
                        {"copy", j.copy},
                        {"packets", j.packets},
                        {"bytes", j.bytes},
                        {"duration_s", static_cast<double>(j.duration_ns) * 1e-9},
                        {"time_scale", j.time_scale},
                        {"measured_period_s", j.measured_period_s ? Json(*j.measured_period_s) : Json(nullptr)},
                        {"period_job", j.period_job},
                        {"no_period_why", j.no_period_why},
                        {"offset_range_s", static_cast<double>(j.offset_range_ns) * 1e-9},
                        {"offset_range_from", j.offset_range_from},
                        {"alone_bmax_bytes", j.alone_bmax_bytes}});
  }
  Json aligned = scheduleJson(r.aligned);
  aligned["envelope"] = envelopeJson(r.aligned_envelope);
  Json random{{"trials", r.trials.size()}, {"seed", r.seed}};
  if (r.distribution) {
    const WhatifDistribution& d = *r.distribution;
    random["bmax_bytes"] = Json{{"min", d.min}, {"median", d.median}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}};
    random["exceed_fraction"] = d.exceed_fraction;
  }
  Json schedules = Json::array();
  for (const WhatifSchedule& s : r.trials) schedules.push_back(scheduleJson(s));
  random["schedules"] = schedules;
  Json best = scheduleJson(r.best);
  best["from"] = r.best_from;
  best["search"] = Json{{"grid", r.search_grid},
                        {"max_sweeps", r.search_sweeps},
                        {"sweeps", r.search_sweeps_run},
                        {"evaluations", r.search_evaluations}};
  best["envelope"] = envelopeJson(r.best_envelope);
  return Json{{"rate_bps", r.rate_bps}, {"buffer_bytes", r.buffer_bytes},
              {"jobs", jobs},           {"aligned", aligned},
              {"random", random},       {"minimising", best}};
}

namespace {

std::string fitsText(const WhatifSchedule& s) { return s.exceeds_buffer ? "EXCEEDS buffer" : "fits"; }

std::string offsetsText(const WhatifSchedule& s) {
  return absl::StrJoin(s.offsets_ns, " ", [](std::string* out, int64_t ns) {
    absl::StrAppend(out, "+", humanSeconds(static_cast<double>(ns) * 1e-9));
  });
}

std::string ptmText(const std::optional<double>& p) { return p ? absl::StrFormat("%.1f", *p) : std::string("-"); }

}  // namespace

std::string whatifText(const WhatifResult& r) {
  std::string s = absl::StrFormat("whatif: %d job%s on one %s link, buffer %s\n", r.jobs.size(),
                                  r.jobs.size() == 1 ? "" : "s", humanRate(r.rate_bps), humanBytes(r.buffer_bytes));
  absl::StrAppend(&s, absl::StrFormat("  %-3s %-36s %9s %10s %9s %6s  %-30s %10s\n", "job", "file", "packets", "bytes",
                                      "duration", "time x", "random offset in [0, range)", "alone Bmax"));
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const WhatifJobResult& j = r.jobs[i];
    std::string name = j.path;
    if (j.copy > 1 || (i + 1 < r.jobs.size() && r.jobs[i + 1].copy > 1)) absl::StrAppend(&name, " #", j.copy);
    const std::string range = absl::StrCat(humanSeconds(static_cast<double>(j.offset_range_ns) * 1e-9), " (",
                                           j.offset_range_from == "step period" ? "step period" : "duration: ",
                                           j.offset_range_from == "step period" ? "" : j.no_period_why, ")");
    absl::StrAppend(&s, absl::StrFormat("  %-3d %-36s %9d %10s %9s %6.3g  %-30s %10s\n", i + 1, name, j.packets,
                                        humanBytes(static_cast<double>(j.bytes)),
                                        humanSeconds(static_cast<double>(j.duration_ns) * 1e-9), j.time_scale, range,
                                        humanBytes(j.alone_bmax_bytes)));
  }
  absl::StrAppend(&s, absl::StrFormat("Bmax(%s) of the sum\n", humanRate(r.rate_bps)));
  absl::StrAppend(&s, absl::StrFormat("  %-28s %10s  %s\n", "aligned (first packets together)",
                                      humanBytes(r.aligned.bmax_bytes), fitsText(r.aligned)));
  if (r.distribution) {
    const WhatifDistribution& d = *r.distribution;
    absl::StrAppend(&s,
                    absl::StrFormat("  random offsets, %d trials (seed %d): min %s  median %s  p90 %s  p99 %s  max %s; "
                                    "%.1f%% of trials exceed the buffer\n",
                                    r.trials.size(), r.seed, humanBytes(d.min), humanBytes(d.median), humanBytes(d.p90),
                                    humanBytes(d.p99), humanBytes(d.max), 100 * d.exceed_fraction));
  }
  absl::StrAppend(&s,
                  absl::StrFormat("  %-32s %10s  %s  (%s; %d schedules tried in %d sweep%s)\n", "minimising schedule",
                                  humanBytes(r.best.bmax_bytes), fitsText(r.best), r.best_from, r.search_evaluations,
                                  r.search_sweeps_run, r.search_sweeps_run == 1 ? "" : "s"));
  absl::StrAppend(&s, "    offsets: ", offsetsText(r.best), "\n");
  absl::StrAppend(&s, "envelope of the sum       aligned               minimising\n");
  absl::StrAppend(&s, absl::StrFormat("  %-8s %12s %8s %12s %8s\n", "tau", "E(tau)", "PtM", "E(tau)", "PtM"));
  for (size_t i = 0; i < r.aligned_envelope.scales.size() && i < r.best_envelope.scales.size(); ++i) {
    const WhatifScale& a = r.aligned_envelope.scales[i];
    const WhatifScale& b = r.best_envelope.scales[i];
    absl::StrAppend(&s, absl::StrFormat("  %-8s %12s %8s %12s %8s\n", humanTau(a.tau_ns),
                                        humanBytes(static_cast<double>(a.envelope_bytes)), ptmText(a.ptm),
                                        humanBytes(static_cast<double>(b.envelope_bytes)), ptmText(b.ptm)));
  }
  absl::StrAppend(&s, absl::StrFormat("  mean rate (first to last packet): %s aligned, %s minimising\n",
                                      humanRate(r.aligned_envelope.mean_bps), humanRate(r.best_envelope.mean_bps)));
  return s;
}

}  // namespace burstscope
