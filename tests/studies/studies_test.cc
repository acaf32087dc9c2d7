// The report's studies (src/studies, docs/report.md): each figure against analyze's result for the same file
// and against brute force over the file's records read here with libpcap; the command through the binary.
#include <pcap/pcap.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/studies/render.h"
#include "src/studies/studies.h"

namespace burstscope {
namespace {

using Json = nlohmann::ordered_json;

std::string dataPath(const std::string& rel) { return std::string(BURSTSCOPE_SOURCE_ROOT) + "/data/" + rel; }

struct Rec {
  int64_t ts_ns;
  uint32_t len;
};

// Every record of a classic pcap file (Ethernet, no mirror encapsulation): time and wire length, in time order.
std::vector<Rec> readRecords(const std::string& path) {
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  EXPECT_NE(p, nullptr) << err;
  std::vector<Rec> out;
  if (!p) return out;
  pcap_pkthdr* h;
  const u_char* data;
  while (pcap_next_ex(p, &h, &data) == 1) {
    out.push_back({int64_t{h->ts.tv_sec} * 1'000'000'000 + h->ts.tv_usec, h->len});
  }
  pcap_close(p);
  std::stable_sort(out.begin(), out.end(), [](const Rec& a, const Rec& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

// SPEC: E(τ) = max over packets j of the bytes with ts in (ts_j − τ, ts_j].
uint64_t bruteEnvelope(const std::vector<Rec>& r, int64_t tau) {
  uint64_t best = 0, sum = 0;
  size_t lo = 0;
  for (size_t j = 0; j < r.size(); ++j) {
    sum += r[j].len;
    while (r[lo].ts_ns <= r[j].ts_ns - tau) sum -= r[lo++].len;
    // Packets at the same instant as j count too: take the window only at the last of them.
    if (j + 1 == r.size() || r[j + 1].ts_ns != r[j].ts_ns) best = std::max(best, sum);
  }
  return best;
}

// SPEC: q ← max(0, q − r·(ts − ts_prev)/8) + len; Bmax = max q (in doubles here: compared within a byte).
double bruteBacklog(const std::vector<Rec>& r, double rate_bps) {
  double q = 0, best = 0;
  for (size_t j = 0; j < r.size(); ++j) {
    if (j > 0) q = std::max(0.0, q - rate_bps * static_cast<double>(r[j].ts_ns - r[j - 1].ts_ns) * 1e-9 / 8);
    q += r[j].len;
    best = std::max(best, q);
  }
  return best;
}

ReportInputs inputsFor(const std::string& file) {
  ReportInputs in;
  in.files = {file};
  in.pipeline.training.pair_periods = true;  // as analyze
  in.pipeline.engine.exact_max_tau_ns = in.pipeline.engine.scales_ns.back();
  return in;
}

const StudiesResult& studiesOf(const std::string& file) {
  static std::map<std::string, StudiesResult> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    std::atomic<bool> stop{false};
    auto r = computeStudies(inputsFor(file), stop);
    EXPECT_TRUE(r.ok()) << r.status();
    it = cache.emplace(file, r.ok() ? std::move(*r) : StudiesResult{}).first;
  }
  return it->second;
}

class StudiesTest : public testing::TestWithParam<const char*> {
 protected:
  std::string file() const { return dataPath(GetParam()); }
};

TEST_P(StudiesTest, TimelineBinsSumToAnalyzeAndEqualBruteForceBinning) {
  const StudiesResult& s = studiesOf(file());
  const Timeline& tl = s.timeline;
  ASSERT_EQ(tl.t.size(), tl.bytes.size());
  ASSERT_EQ(tl.t.size(), tl.packets.size());
  ASSERT_FALSE(tl.t.empty());
  uint64_t bytes = 0, packets = 0;
  for (size_t i = 0; i < tl.t.size(); ++i) {
    bytes += tl.bytes[i];
    packets += tl.packets[i];
    if (i > 0) {
      EXPECT_LT(tl.t[i - 1], tl.t[i]);
    }
  }
  EXPECT_EQ(bytes, s.analyze["bytes"].get<uint64_t>());
  EXPECT_EQ(packets, s.analyze["packets"].get<uint64_t>());

  std::map<int64_t, std::pair<uint64_t, uint64_t>> brute;  // aligned bin start -> bytes, packets
  for (const Rec& r : readRecords(file())) {
    auto& b = brute[r.ts_ns / tl.bin_ns * tl.bin_ns];
    b.first += r.len;
    ++b.second;
  }
  ASSERT_EQ(brute.size(), tl.t.size());
  EXPECT_EQ(tl.start_ns, brute.begin()->first);
  EXPECT_EQ(tl.end_ns, brute.rbegin()->first + tl.bin_ns);
  size_t i = 0;
  for (const auto& [start, b] : brute) {
    EXPECT_EQ(tl.start_ns + tl.t[i] * tl.bin_ns, start) << "bin " << i;
    EXPECT_EQ(tl.bytes[i], b.first) << "bin at " << start;
    EXPECT_EQ(tl.packets[i], b.second) << "bin at " << start;
    ++i;
  }
}

TEST_P(StudiesTest, DenseEnvelopeEqualsAnalyzeAtItsScalesAndBruteForceBetween) {
  const StudiesResult& s = studiesOf(file());
  ASSERT_GE(s.curves.size(), 30u);
  std::map<int64_t, const CurvePoint*> at;
  for (size_t i = 0; i < s.curves.size(); ++i) {
    at[s.curves[i].tau_ns] = &s.curves[i];
    if (i > 0) {
      EXPECT_LT(s.curves[i - 1].tau_ns, s.curves[i].tau_ns);
      EXPECT_LE(s.curves[i - 1].envelope_bytes, s.curves[i].envelope_bytes) << "tau " << s.curves[i].tau_ns;
    }
    EXPECT_EQ(s.curves[i].tau_ns % 100'000, 0);
  }
  for (const Json& sc : s.analyze["scales"]) {
    const int64_t tau = sc["tau_us"].get<int64_t>() * 1000;
    ASSERT_TRUE(at.count(tau)) << tau;
    EXPECT_EQ(at[tau]->envelope_bytes, sc["envelope_bytes"].get<uint64_t>()) << tau;
    EXPECT_EQ(at[tau]->exact, sc["exact"].get<bool>()) << tau;
    if (sc["ptm"].is_null()) {
      EXPECT_FALSE(at[tau]->ptm) << tau;
    } else {
      ASSERT_TRUE(at[tau]->ptm) << tau;
      EXPECT_DOUBLE_EQ(*at[tau]->ptm, sc["ptm"].get<double>()) << tau;
    }
  }
  // Points of the dense grid that are not analyze's scales, against the definition.
  const std::vector<Rec> recs = readRecords(file());
  for (size_t i = 1; i < s.curves.size(); i += 7) {
    EXPECT_TRUE(s.curves[i].exact);
    EXPECT_EQ(s.curves[i].envelope_bytes, bruteEnvelope(recs, s.curves[i].tau_ns)) << "tau " << s.curves[i].tau_ns;
  }
}

TEST_P(StudiesTest, BacklogCurveEqualsAnalyzeAtItsRatesAndBruteForceBetween) {
  const StudiesResult& s = studiesOf(file());
  ASSERT_GE(s.backlog.size(), 30u);
  for (size_t i = 1; i < s.backlog.size(); ++i) {
    EXPECT_LT(s.backlog[i - 1].rate_bps, s.backlog[i].rate_bps);
    EXPECT_GE(s.backlog[i - 1].max_backlog_bytes, s.backlog[i].max_backlog_bytes);
  }
  for (const Json& b : s.analyze["backlog"]) {
    const double rate = b["rate_gbps"].get<double>() * 1e9;
    auto it = std::find_if(s.backlog.begin(), s.backlog.end(),
                           [&](const BacklogPoint& p) { return std::abs(p.rate_bps - rate) <= 1e-6 * rate; });
    ASSERT_NE(it, s.backlog.end()) << rate;
    EXPECT_EQ(it->max_backlog_bytes, b["max_backlog_bytes"].get<double>()) << rate;
  }
  const std::vector<Rec> recs = readRecords(file());
  for (size_t i = 0; i < s.backlog.size(); i += 9) {
    EXPECT_NEAR(s.backlog[i].max_backlog_bytes, bruteBacklog(recs, s.backlog[i].rate_bps), 1.0)
        << s.backlog[i].rate_bps;
  }
}

TEST_P(StudiesTest, FlowTimelinesSumToAnalyzeTopFlows) {
  const StudiesResult& s = studiesOf(file());
  const Json& top = s.analyze["flows"]["top"];
  ASSERT_EQ(s.flows.size(), top.size());
  ASSERT_FALSE(s.flows.empty());
  for (size_t i = 0; i < s.flows.size(); ++i) {
    const FlowSeries& f = s.flows[i];
    EXPECT_EQ(f.name, top[i]["key"].get<std::string>());
    EXPECT_EQ(f.kind, top[i]["kind"].get<std::string>());
    EXPECT_DOUBLE_EQ(f.share, top[i]["share"].get<double>());
    uint64_t sum = 0;
    for (size_t k = 0; k < f.t.size(); ++k) {
      sum += f.bytes_per_bin[k];
      EXPECT_GE(f.t[k], 0);
      if (k > 0) {
        EXPECT_LT(f.t[k - 1], f.t[k]);
      }
    }
    EXPECT_EQ(sum, top[i]["bytes"].get<uint64_t>()) << f.name;
    EXPECT_EQ(f.bytes, sum);
  }
}

TEST_P(StudiesTest, HeatmapCellsSumToAllIpBytes) {
  const StudiesResult& s = studiesOf(file());
  const Json& pairs = s.analyze["pairs"];
  uint64_t ip_bytes = pairs["other_bytes"].get<uint64_t>();
  for (const Json& p : pairs["top"]) ip_bytes += p["bytes"].get<uint64_t>();
  uint64_t sum = 0;
  for (const Heatmap::Cell& c : s.heatmap.cells) {
    sum += c.bytes;
    ASSERT_LT(c.src, s.heatmap.hosts.size());
    ASSERT_LT(c.dst, s.heatmap.hosts.size());
  }
  EXPECT_EQ(sum, ip_bytes);
  // The heaviest pair of analyze is a cell of its own.
  const Json& heaviest = pairs["top"][0];
  auto host = [&](const std::string& name) {
    return std::find(s.heatmap.hosts.begin(), s.heatmap.hosts.end(), name) - s.heatmap.hosts.begin();
  };
  const auto src = host(heaviest["src"].get<std::string>()), dst = host(heaviest["dst"].get<std::string>());
  auto cell = std::find_if(s.heatmap.cells.begin(), s.heatmap.cells.end(), [&](const Heatmap::Cell& c) {
    return c.src == static_cast<uint32_t>(src) && c.dst == static_cast<uint32_t>(dst);
  });
  ASSERT_NE(cell, s.heatmap.cells.end());
  EXPECT_EQ(cell->bytes, heaviest["bytes"].get<uint64_t>());
}

TEST_P(StudiesTest, MicroburstsAreAnalyzesWithTheEvidenceCongestingFlag) {
  const StudiesResult& s = studiesOf(file());
  const Json& m = s.analyze["microbursts"];
  EXPECT_EQ(s.microbursts.count, m["count"].get<uint64_t>());
  ASSERT_EQ(s.microbursts.events.size(), std::min<uint64_t>(s.microbursts.count, ReportMicrobursts::kMaxListed));
  uint64_t congesting = 0;
  for (const ReportMicroburst& e : s.microbursts.events) congesting += e.congesting;
  EXPECT_EQ(congesting, s.analyze["evidence"]["microbursts"]["congesting"].get<uint64_t>());
}

INSTANTIATE_TEST_SUITE_P(Traces, StudiesTest,
                         testing::Values("testbed/ddp-ring-w4.pcap", "testbed/ddp-ring-w4-bottleneck.pcap",
                                         "testbed/two-jobs.pcap", "ddp-gloo-w3-3steps.pcap"));

TEST(StudiesGridTest, TauGridIsBinMultiplesUpToTheDurationWithTheConfiguredScales) {
  const std::vector<int64_t> configured{100'000,     1'000'000,     5'000'000,     10'000'000,
                                        100'000'000, 1'000'000'000, 10'000'000'000};
  for (int64_t duration : {int64_t{50'000}, int64_t{2'345'678'901}, int64_t{100'000'000'000}}) {
    const std::vector<int64_t> g = denseTauGrid(100'000, duration, configured);
    EXPECT_EQ(g.front(), 100'000);
    for (int64_t c : configured) EXPECT_TRUE(std::binary_search(g.begin(), g.end(), c)) << c;
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_EQ(g[i] % 100'000, 0);
      if (i > 0) {
        EXPECT_LT(g[i - 1], g[i]);
      }
      if (std::find(configured.begin(), configured.end(), g[i]) == configured.end()) {
        EXPECT_LE(g[i], std::min<int64_t>(10'000'000'000, (duration + 99'999) / 100'000 * 100'000));
      }
    }
  }
  EXPECT_GE(denseTauGrid(100'000, 100'000'000'000, {}).size(), 35u);
}

TEST(StudiesGridTest, RateGridRunsFromTheMeanToTwiceThePeakWithTheConfiguredRates) {
  const std::vector<double> g = denseRateGrid(1e8, 4e9, {1e9, 25e9});
  EXPECT_DOUBLE_EQ(g.front(), 1e8);
  EXPECT_DOUBLE_EQ(g.back(), 25e9);
  EXPECT_TRUE(std::binary_search(g.begin(), g.end(), 1e9));
  EXPECT_NEAR(*std::prev(g.end(), 2), 8e9, 1e-3);
  EXPECT_GE(g.size(), 40u);
}

// The command: the page and the JSON through the built binary.
struct Output {
  int status;
  std::string text;
};
Output run(const std::string& args) {
  const std::string cmd = std::string(BURSTSCOPE_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}
std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class ReportCommandTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir() + "/burstscope-report-" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ReportCommandTest, AnalyzeMemberIsAnalyzeJsonAndThePageCarriesTheData) {
  const std::string file = dataPath("testbed/ddp-ring-w4.pcap");
  const Output r = run("report " + file + " --top-k 5 --out " + dir_ + "/sub");
  ASSERT_EQ(r.status, 0) << r.text;
  const Output a = run("analyze --json --top-k 5 " + file);
  ASSERT_EQ(a.status, 0) << a.text;
  const Json report = Json::parse(readFile(dir_ + "/sub/report.json"));
  EXPECT_EQ(report["schema"], "burstscope-report/1");
  // The one figure that differs between two runs is the wall-clock time the training analysis took.
  Json analyze = Json::parse(a.text), member = report["analyze"];
  ASSERT_TRUE(analyze["training"].contains("analysis_ms"));
  analyze["training"].erase("analysis_ms");
  member["training"].erase("analysis_ms");
  EXPECT_TRUE(member == analyze) << "report.json's analyze member differs from analyze --json";
  EXPECT_EQ(report["flows"]["series"].size(), 5u);

  const std::string html = readFile(dir_ + "/sub/report.html");
  for (const char* marker : {"<!-- burstscope:style -->", "<!-- burstscope:script -->", "<!-- burstscope:data -->"}) {
    EXPECT_EQ(html.find(marker), std::string::npos) << marker;
  }
  const std::string open = "<script id=\"burstscope-data\" type=\"application/json\">";
  const size_t at = html.find(open);
  ASSERT_NE(at, std::string::npos);
  const size_t end = html.find("</script>", at);
  ASSERT_NE(end, std::string::npos);
  EXPECT_TRUE(Json::parse(html.substr(at + open.size(), end - at - open.size())) == report)
      << "the page's data differs from report.json";
  for (const char* csv : {"timeline", "envelope", "backlog", "flows", "heatmap", "microbursts"}) {
    const std::string text = readFile(dir_ + "/sub/" + csv + ".csv");
    EXPECT_GT(std::count(text.begin(), text.end(), '\n'), 1) << csv;
  }
  const std::string timeline = readFile(dir_ + "/sub/timeline.csv");
  EXPECT_EQ(std::count(timeline.begin(), timeline.end(), '\n'), static_cast<long>(report["timeline"]["t"].size()) + 1);
}

TEST_F(ReportCommandTest, DataStringsCannotEndTheScriptElement) {
  StudiesResult r;
  r.files = {"a</script><!--b.pcap"};
  const std::string html = reportHtml(studiesJson(r).dump());
  const size_t at = html.find("burstscope-data");
  ASSERT_NE(at, std::string::npos);
  const size_t end = html.find("</script>", at);
  const std::string payload = html.substr(html.find('>', at) + 1, end - html.find('>', at) - 1);
  EXPECT_EQ(Json::parse(payload)["inputs"][0], "a</script><!--b.pcap");
}

TEST_F(ReportCommandTest, ErrorsNameTheUnreadableInputAndTheUnwritableDirectory) {
  const std::string bad = testing::TempDir() + "/not-a-capture-" + std::to_string(getpid()) + ".pcap";
  std::ofstream(bad) << "this is not a capture file\n";
  Output r = run("report " + bad + " --out " + dir_);
  EXPECT_EQ(r.status, 1) << r.text;
  EXPECT_NE(r.text.find(bad), std::string::npos) << r.text;
  std::filesystem::remove(bad);

  r = run("report " + dataPath("testbed/ddp-ring-w4.pcap") + " --out /proc/burstscope-cannot-be-here");
  EXPECT_EQ(r.status, 1) << r.text;
  EXPECT_NE(r.text.find("/proc/burstscope-cannot-be-here"), std::string::npos) << r.text;
}

}  // namespace
}  // namespace burstscope
