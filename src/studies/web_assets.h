// The report and compare pages' files (web/report/, web/compare/, web/common/, web/vendor/uplot/), embedded into the
// binary at build time by scripts/embed_web.py (a meson custom_target), so that `burstscope report` and `compare` need
// no web/ directory at run time.
#pragma once

#include <string_view>

namespace burstscope::web {

extern const std::string_view kReportHtml;  // the template, with the three markers (report-contract.md)
extern const std::string_view kReportCss;
extern const std::string_view kReportJs;
extern const std::string_view kUplotCss;
extern const std::string_view kUplotJs;
extern const std::string_view kPlotJs;       // web/common/plot.js: what both pages share
extern const std::string_view kCompareHtml;  // the compare page's template, with the same three markers
extern const std::string_view kCompareJs;
extern const std::string_view kErrorsJs;  // web/common/errors.js: the error capture every page loads first
extern const std::string_view kLiveHtml;  // the live view's template (web/live), served by `run` at /live
extern const std::string_view kLiveJs;
// False when the build found no web/ files (a placeholder page is embedded instead).
extern const bool kComplete;

}  // namespace burstscope::web
