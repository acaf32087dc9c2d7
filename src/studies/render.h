// The report's renderers (docs/report.md): report.json (schema "burstscope-report/1", report-contract.md),
// the CSV files beside it, and the self-contained HTML page (the embedded template with its markers
// replaced by the inlined styles, scripts and data). They live beside the studies rather than in
// src/analysis because they render the studies' result, and src/studies already uses src/analysis.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "src/studies/studies.h"

namespace burstscope {

nlohmann::ordered_json studiesJson(const StudiesResult& r);
// The page: the template with `<!-- burstscope:style -->`, `<!-- burstscope:script -->` and
// `<!-- burstscope:data -->` replaced; `json_text` goes into a JSON script element with every "</" written
// as "<\/" (and "<!--" as "\u003c!--"), so that no string in it can end the element.
std::string reportHtml(const std::string& json_text);
// The compare page (web/compare/, docs/compare.md), the same way: `json_text` is compare-page.json.
std::string compareHtml(const std::string& json_text);
// The live view's page (web/live): `run` serves it at /live; its data comes as Server-Sent Events.
std::string liveHtml();
// What the compare page draws of one trace (schema burstscope-compare-page/1, docs/compare.md): its file, the
// 100 µs timeline, the dense E(τ)/PtM(τ) curves and Bmax(r), as studiesJson has them.
nlohmann::ordered_json comparePageTrace(const StudiesResult& r);
// The compare page's data: compare.json's object and the traces' comparePageTrace, in the same order.
nlohmann::ordered_json comparePageJson(const nlohmann::ordered_json& compare,
                                       const std::vector<nlohmann::ordered_json>& traces);
// (file name, contents): timeline.csv, envelope.csv, backlog.csv, flows.csv, heatmap.csv, microbursts.csv.
std::vector<std::pair<std::string, std::string>> reportCsvs(const StudiesResult& r);
// Creates `dir` (and its parents) and checks that it can be written, before the long part of the work.
absl::Status prepareReportDir(const std::string& dir);
// Creates `dir` (and its parents) and writes report.html, report.json and the CSV files into it; errors name
// the directory or the file.
absl::Status writeReport(const std::string& dir, const StudiesResult& r);

}  // namespace burstscope
