// The renderers of the one result model (src/pipeline/pipeline.h): readable text for an operator, and the
// JSON summary whose first keys (packets, bytes, first_ns, last_ns, mean_bps, scales, backlog) mean exactly
// what the reference oracle's keys mean, so that scripts can compare the two; the per-interval summary line
// and the closing ledger of `run`. PtM, the ledger and every unit are computed and written here, once.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/pipeline/pipeline.h"

namespace burstscope {

struct ReportContext {
  std::vector<std::string> files;
  int64_t reorder_horizon_ns = 0;
};

// One port's result (analyze: the files' one port).
nlohmann::ordered_json reportJson(const PortResult& r, const SourceStats& source, const ReportContext& ctx);
std::string reportText(const PortResult& r, const SourceStats& source, const ReportContext& ctx);
// A whole live run: every port as reportJson gives it, plus its device, queues and ledger.
nlohmann::ordered_json runJson(const RunResult& r, int64_t reorder_horizon_ns);

// The training section (docs/training.md): jobs, periods, bytes per step, topology, co-bursts.
nlohmann::ordered_json trainingJson(const TrainingReport& t, const EngineConfig& c);
// SPEC "Overload": one interval's complete-series totals and, when degraded, its bounded figures.
nlohmann::ordered_json boundsJson(const IntervalBounds& b, const std::vector<int64_t>& scales_ns,
                                  const std::vector<double>& rates_bps);
std::string trainingText(const TrainingReport& t, const EngineConfig& c);

// One line per port per interval: rates, PtM per scale, backlog, microbursts, drops.
std::string intervalSummary(const std::string& port, const PortSnapshot& s, const EngineConfig& c);
// The closing ledger: every frame that reached the port = analysed + dropped, by stage.
std::string ledgerText(const RunResult& r);

// Units, the same everywhere: "1.25 Gbit/s", "3.40 MB", "100 us", "2.50 ms".
std::string humanRate(double bps);
std::string humanBytes(double bytes);
std::string humanTau(int64_t ns);
std::string humanSeconds(double s);

}  // namespace burstscope
