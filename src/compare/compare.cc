#include "src/compare/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace burstscope {
namespace {

using json = nlohmann::ordered_json;

std::optional<double> number(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// j[k0][k1]...; null where a level is missing or null.
json path(const json& j, std::initializer_list<const char*> keys) {
  const json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(k);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return *at;
}

std::optional<double> log10Positive(std::optional<double> v) {
  if (!v || !(*v > 0)) return std::nullopt;
  return std::log10(*v);
}

std::string tauName(const json& scale) { return absl::StrCat("log10_ptm_", scale.at("tau_us").get<int64_t>(), "us"); }

// The heaviest training job, if any.
const json* heaviestJob(const json& a) {
  auto t = a.find("training");
  if (t == a.end() || !t->contains("jobs")) return nullptr;
  const json* best = nullptr;
  for (const json& j : t->at("jobs")) {
    if (best == nullptr || j.at("bytes").get<uint64_t>() > best->at("bytes").get<uint64_t>()) best = &j;
  }
  return best;
}

void ptmFeatures(const json& scales, NamedFeatures* out) {
  for (const json& s : scales) out->emplace_back(tauName(s), log10Positive(number(s, "ptm")));
}

// Uniform in [0, 1) from the generator's top 53 bits: the same on every platform (std's distributions are not).
double uniform01(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

double dist2(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s;
}

struct KMeans {
  std::vector<int> assignment;
  double inertia = std::numeric_limits<double>::infinity();
};

// One run of Lloyd's algorithm from k-means++ seeds.
KMeans lloyd(const std::vector<std::vector<double>>& x, int k, std::mt19937_64& g) {
  const size_t n = x.size();
  std::vector<std::vector<double>> c;
  c.push_back(x[static_cast<size_t>(uniform01(g) * static_cast<double>(n))]);
  std::vector<double> d(n);
  while (static_cast<int>(c.size()) < k) {
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
      d[i] = std::numeric_limits<double>::infinity();
      for (const auto& m : c) d[i] = std::min(d[i], dist2(x[i], m));
      total += d[i];
    }
    size_t pick = 0;
    if (total > 0) {
      double r = uniform01(g) * total;
      for (pick = 0; pick + 1 < n && r >= d[pick]; ++pick) r -= d[pick];
    }
    c.push_back(x[pick]);
  }
  KMeans r;
  r.assignment.assign(n, -1);
  for (int iter = 0; iter < 100; ++iter) {
    bool moved = false;
    for (size_t i = 0; i < n; ++i) {
      int best = 0;
      for (int j = 1; j < k; ++j) {
        if (dist2(x[i], c[j]) < dist2(x[i], c[best])) best = j;
      }
      moved |= r.assignment[i] != best;
      r.assignment[i] = best;
    }
    if (!moved) break;
    for (int j = 0; j < k; ++j) {
      std::vector<double> sum(x[0].size(), 0.0);
      size_t count = 0;
      for (size_t i = 0; i < n; ++i) {
        if (r.assignment[i] != j) continue;
        for (size_t f = 0; f < sum.size(); ++f) sum[f] += x[i][f];
        ++count;
      }
      if (count == 0) continue;  // an emptied cluster keeps its centroid
      for (double& v : sum) v /= static_cast<double>(count);
      c[j] = std::move(sum);
    }
  }
  r.inertia = 0;
  for (size_t i = 0; i < n; ++i) r.inertia += dist2(x[i], c[r.assignment[i]]);
  return r;
}

// Mean silhouette (Rousseeuw 1987): s(i) = (b - a) / max(a, b); 0 for a row alone in its cluster.
double silhouette(const std::vector<std::vector<double>>& x, const std::vector<int>& a, int k) {
  const size_t n = x.size();
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> sum(k, 0.0);
    std::vector<size_t> count(k, 0);
    for (size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      sum[a[j]] += std::sqrt(dist2(x[i], x[j]));
      ++count[a[j]];
    }
    if (count[a[i]] == 0) continue;
    const double own = sum[a[i]] / static_cast<double>(count[a[i]]);
    double other = std::numeric_limits<double>::infinity();
    for (int c = 0; c < k; ++c) {
      if (c != a[i] && count[c] > 0) other = std::min(other, sum[c] / static_cast<double>(count[c]));
    }
    const double m = std::max(own, other);
    if (m > 0 && std::isfinite(other)) total += (other - own) / m;
  }
  return total / static_cast<double>(n);
}

// Clusters renumbered in the order of their first row, so that equal partitions print equally.
std::vector<int> canonical(const std::vector<int>& a) {
  std::vector<int> map(a.size() + 1, -1);
  std::vector<int> out(a.size());
  int next = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (map[a[i]] < 0) map[a[i]] = next++;
    out[i] = map[a[i]];
  }
  return out;
}

json tableJson(const FeatureTable& t, const Clustering& c) {
  json j;
  j["names"] = t.names;
  j["dropped"] = t.dropped;
  j["rows"] = t.rows;
  j["raw"] = t.raw;
  j["normalised"] = t.z;
  json cj;
  cj["k"] = c.k;
  cj["assignment"] = c.assignment;
  cj["silhouette"] = c.silhouette;
  cj["silhouette_by_k"] = c.silhouette_by_k;
  cj["inertia"] = c.inertia;
  cj["criterion"] = c.why;
  j["clustering"] = std::move(cj);
  return j;
}

}  // namespace

NamedFeatures traceFeatures(const json& a) {
  NamedFeatures f;
  ptmFeatures(a.at("scales"), &f);
  const json* job = heaviestJob(a);
  std::optional<double> duty, period, step, phases, idle;
  if (job != nullptr) {
    const json p = path(*job, {"period"});
    if (number(p, "period_s")) {
      duty = number(p, "duty_cycle");
      period = log10Positive(number(p, "period_s"));
      step = log10Positive(number(path(*job, {"step_bytes"}), "mean"));
      const json ph = path(*job, {"phases"});
      if (number(ph, "count").value_or(0) > 0) {
        phases = number(ph, "count");
        idle = number(ph, "idle_share");
      }
    }
  }
  f.emplace_back("duty_cycle", duty);
  f.emplace_back("log10_period_s", period);
  f.emplace_back("log10_bytes_per_step", step);
  f.emplace_back("phases_per_step", phases);
  f.emplace_back("step_idle_share", idle);
  const json& flows = a.at("flows");
  f.emplace_back("log10_flows", log10Positive(number(flows, "entries")));
  std::optional<double> top_share;
  if (!flows.at("top").empty()) top_share = number(flows.at("top").front(), "share");
  f.emplace_back("top_flow_share", top_share);
  return f;
}

NamedFeatures flowFeatures(const json& flow) {
  NamedFeatures f;
  if (!flow.contains("scales")) return f;
  ptmFeatures(flow.at("scales"), &f);
  f.emplace_back("share", number(flow, "share"));
  f.emplace_back("log10_bytes", log10Positive(number(flow, "bytes")));
  return f;
}

FeatureTable featureTable(const std::vector<std::string>& rows, const std::vector<NamedFeatures>& features) {
  FeatureTable t;
  if (rows.empty()) return t;
  const size_t n = rows.size();
  auto find = [&](size_t r, const std::string& name) -> std::optional<double> {
    for (const auto& [k, v] : features[r]) {
      if (k == name) return v;
    }
    return std::nullopt;
  };
  // Columns: the names rows define, in the order first seen; kept when at least 3/4 of the rows define it.
  std::vector<std::string> names;
  for (size_t r = 0; r < n; ++r) {
    for (const auto& [k, v] : features[r]) {
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
    }
  }
  for (const std::string& name : names) {
    size_t defined = 0;
    for (size_t r = 0; r < n; ++r) defined += find(r, name).has_value();
    if (4 * defined >= 3 * n) {
      t.names.push_back(name);
    } else {
      t.dropped.push_back(absl::StrCat("column ", name, ": defined for ", defined, " of ", n, " rows"));
    }
  }
  // Rows: those that define every kept column.
  for (size_t r = 0; r < n; ++r) {
    std::vector<double> row;
    std::string lacks;
    for (const std::string& name : t.names) {
      const std::optional<double> v = find(r, name);
      if (!v) {
        lacks = name;
        break;
      }
      row.push_back(*v);
    }
    if (!lacks.empty()) {
      t.dropped.push_back(absl::StrCat("row ", rows[r], ": no ", lacks));
      continue;
    }
    t.rows.push_back(rows[r]);
    t.index.push_back(r);
    t.raw.push_back(std::move(row));
  }
  t.z = t.raw;
  const double rows_kept = static_cast<double>(t.rows.size());
  for (size_t col = 0; col < t.names.size(); ++col) {
    double mean = 0, var = 0;
    for (const auto& row : t.raw) mean += row[col] / rows_kept;
    for (const auto& row : t.raw) var += (row[col] - mean) * (row[col] - mean) / rows_kept;
    const double sd = std::sqrt(var);
    for (auto& row : t.z) row[col] = sd > 1e-12 * std::max(1.0, std::abs(mean)) ? (row[col] - mean) / sd : 0.0;
  }
  return t;
}

Clustering cluster(const std::vector<std::vector<double>>& z, int max_k, uint64_t seed) {
  Clustering best;
  const int n = static_cast<int>(z.size());
  best.assignment.assign(z.size(), 0);
  if (n < 3 || z[0].empty()) {
    best.why = n < 3 ? "fewer than 3 rows: one cluster" : "no feature defined for every row: one cluster";
    return best;
  }
  std::mt19937_64 g(seed);
  double best_s = -1;
  KMeans chosen;
  int chosen_k = 1;
  for (int k = 2; k <= std::min(max_k, n - 1); ++k) {
    KMeans run;
    for (int restart = 0; restart < 16; ++restart) {
      KMeans r = lloyd(z, k, g);
      if (r.inertia < run.inertia) run = std::move(r);
    }
    const double s = silhouette(z, run.assignment, k);
    best.silhouette_by_k.push_back(s);
    if (s > best_s + 1e-12) {
      best_s = s;
      chosen = std::move(run);
      chosen_k = k;
    }
  }
  if (best_s < kMinSilhouette) {
    best.why = absl::StrFormat("best mean silhouette %.3f (k = %d) is below %.2f: one cluster", best_s, chosen_k,
                               kMinSilhouette);
    double mean_inertia = 0;
    std::vector<double> centre(z[0].size(), 0.0);
    for (const auto& row : z) {
      for (size_t f = 0; f < centre.size(); ++f) centre[f] += row[f] / n;
    }
    for (const auto& row : z) mean_inertia += dist2(row, centre);
    best.inertia = mean_inertia;
    return best;
  }
  best.k = chosen_k;
  best.assignment = canonical(chosen.assignment);
  best.silhouette = best_s;
  best.inertia = chosen.inertia;
  best.why = absl::StrFormat("k = %d has the highest mean silhouette (%.3f) of k = 2..%d", chosen_k, best_s,
                             std::min(max_k, n - 1));
  return best;
}

json compareJson(const std::vector<CompareInput>& inputs, const CompareOptions& o) {
  json out;
  out["schema"] = "burstscope-compare/1";
  std::vector<std::string> rows;
  std::vector<NamedFeatures> features;
  std::vector<std::string> flow_rows;
  std::vector<NamedFeatures> flow_features;
  std::vector<size_t> flow_trace;
  for (size_t i = 0; i < inputs.size(); ++i) {
    rows.push_back(inputs[i].file);
    features.push_back(traceFeatures(inputs[i].analyze));
    for (const json& f : inputs[i].analyze.at("flows").at("top")) {
      NamedFeatures ff = flowFeatures(f);
      if (ff.empty()) continue;  // no window statistics: not clustered
      flow_rows.push_back(absl::StrCat(inputs[i].file, ": ", f.at("key").get<std::string>()));
      flow_features.push_back(std::move(ff));
      flow_trace.push_back(i);
    }
  }
  const FeatureTable traces = featureTable(rows, features);
  const Clustering tc = cluster(traces.z, o.max_k, o.seed);
  const FeatureTable flows = featureTable(flow_rows, flow_features);
  const Clustering fc = cluster(flows.z, o.max_k, o.seed);

  json list = json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const json& a = inputs[i].analyze;
    json t;
    t["file"] = inputs[i].file;
    // The key figures, copied from analyze's object (the same names and values).
    for (const char* key : {"packets", "bytes", "first_ns", "last_ns", "mean_bps"}) t[key] = a.at(key);
    json scales = json::array();
    for (const json& s : a.at("scales")) {
      scales.push_back({{"tau_us", s.at("tau_us")}, {"envelope_bytes", s.at("envelope_bytes")}, {"ptm", s.at("ptm")}});
    }
    t["scales"] = std::move(scales);
    t["backlog"] = a.at("backlog");
    t["microbursts"] = a.at("microbursts").at("count");
    t["flows"] = a.at("flows").at("entries");
    json jobs = json::array();
    if (a.contains("training")) {
      for (const json& j : a.at("training").at("jobs")) {
        jobs.push_back({{"name", j.at("name")},
                        {"hosts", j.at("hosts").size()},
                        {"bytes", j.at("bytes")},
                        {"period_s", path(j, {"period", "period_s"})},
                        {"duty_cycle", path(j, {"period", "duty_cycle"})},
                        {"bytes_per_step", path(j, {"step_bytes", "mean"})},
                        {"topology", path(j, {"topology", "kind"})},
                        {"phases_per_step", path(j, {"phases", "count"})}});
      }
    }
    t["jobs"] = std::move(jobs);
    json fv;
    for (const auto& [name, v] : features[i]) fv[name] = v ? json(*v) : json(nullptr);
    t["features"] = std::move(fv);
    auto at = std::find(traces.index.begin(), traces.index.end(), i);
    t["cluster"] = at == traces.index.end() ? json(nullptr) : json(tc.assignment[at - traces.index.begin()]);
    list.push_back(std::move(t));
  }
  out["traces"] = std::move(list);
  out["trace_clusters"] = tableJson(traces, tc);
  json fl = tableJson(flows, fc);
  json of = json::array();
  for (size_t i : flows.index) of.push_back(inputs[flow_trace[i]].file);
  fl["trace"] = std::move(of);
  out["flow_clusters"] = std::move(fl);
  out["options"] = {{"max_k", o.max_k}, {"seed", o.seed}, {"min_silhouette", kMinSilhouette}};
  return out;
}

namespace {

std::string human(double v, const char* unit) {
  static constexpr const char* kPrefix[] = {"", "k", "M", "G", "T"};
  int p = 0;
  while (std::abs(v) >= 1000 && p < 4) {
    v /= 1000;
    ++p;
  }
  return absl::StrFormat("%.3g %s%s", v, kPrefix[p], unit);
}

std::string orDash(const json& v, const char* unit) { return v.is_number() ? human(v.get<double>(), unit) : "-"; }

}  // namespace

std::string compareText(const json& c) {
  std::string out = "traces\n";
  absl::StrAppend(&out, absl::StrFormat("  %-3s %-34s %10s %10s %8s %11s %9s %9s %7s %5s %10s %11s %-9s\n", "#", "file",
                                        "packets", "bytes", "dur", "mean", "PtM 100us", "PtM 5ms", "bursts", "jobs",
                                        "period", "bytes/step", "cluster"));
  int n = 0;
  for (const json& t : c.at("traces")) {
    std::string file = t.at("file").get<std::string>();
    if (file.size() > 34) file = "..." + file.substr(file.size() - 31);
    auto ptm = [&t](int64_t tau_us) -> std::string {
      for (const json& s : t.at("scales")) {
        if (s.at("tau_us").get<int64_t>() == tau_us)
          return s.at("ptm").is_number() ? absl::StrFormat("%.1f", s.at("ptm").get<double>()) : "-";
      }
      return "-";
    };
    const json& jobs = t.at("jobs");
    const json none;
    const json& j0 = jobs.empty() ? none : jobs.front();
    const double dur = static_cast<double>(t.at("last_ns").get<int64_t>() - t.at("first_ns").get<int64_t>()) * 1e-9;
    absl::StrAppend(
        &out, absl::StrFormat("  %-3d %-34s %10d %10s %8s %11s %9s %9s %7d %5d %10s %11s %s\n", n++, file,
                              t.at("packets").get<uint64_t>(), human(t.at("bytes").get<double>(), "B"),
                              absl::StrFormat("%.2f s", dur), human(t.at("mean_bps").get<double>(), "bit/s"), ptm(100),
                              ptm(5000), t.at("microbursts").get<uint64_t>(), jobs.size(),
                              jobs.empty() ? "-" : orDash(j0.at("period_s"), "s"),
                              jobs.empty() ? "-" : orDash(j0.at("bytes_per_step"), "B"),
                              t.at("cluster").is_null() ? "-" : std::to_string(t.at("cluster").get<int>())));
  }
  for (const char* which : {"trace_clusters", "flow_clusters"}) {
    const json& tc = c.at(which);
    absl::StrAppend(&out, "\n", which, ": ", tc.at("clustering").at("k").get<int>(), " (",
                    tc.at("clustering").at("criterion").get<std::string>(),
                    ")\n  features: ", absl::StrJoin(tc.at("names").get<std::vector<std::string>>(), ", "), "\n");
    for (const json& d : tc.at("dropped")) absl::StrAppend(&out, "  left out: ", d.get<std::string>(), "\n");
    if (std::string(which) == "trace_clusters") continue;
    const auto& rows = tc.at("rows");
    const auto& a = tc.at("clustering").at("assignment");
    for (size_t i = 0; i < rows.size(); ++i) {
      absl::StrAppend(&out, "  ", a[i].get<int>(), "  ", rows[i].get<std::string>(), "\n");
    }
  }
  return out;
}

std::string compareCsv(const json& c, const char* which) {
  const json& t = c.at(which);
  const auto names = t.at("names").get<std::vector<std::string>>();
  std::string out = absl::StrCat("row,cluster", names.empty() ? "" : ",", absl::StrJoin(names, ","), "\n");
  for (size_t i = 0; i < t.at("rows").size(); ++i) {
    std::string row = t.at("rows")[i].get<std::string>();
    std::replace(row.begin(), row.end(), ',', ';');
    absl::StrAppend(&out, row, ",", t.at("clustering").at("assignment")[i].get<int>());
    for (double v : t.at("raw")[i].get<std::vector<double>>()) absl::StrAppend(&out, ",", v);
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace burstscope
