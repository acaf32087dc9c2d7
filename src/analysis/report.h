// Turns a pipeline run into the offline report: readable text for an operator, or the JSON summary whose
// first keys (packets, bytes, first_ns, last_ns, mean_bps, scales, backlog) mean exactly what the
// reference oracle's keys mean, so that scripts can compare the two.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/pipeline/pipeline.h"

namespace burstscope {

struct ReportContext {
  std::vector<std::string> files;
  const PipelineConfig* config = nullptr;
};

nlohmann::ordered_json reportJson(const PipelineResult& r, const ReportContext& ctx);
std::string reportText(const PipelineResult& r, const ReportContext& ctx);

}  // namespace burstscope
