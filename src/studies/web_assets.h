// The report page's files (web/report/, web/vendor/uplot/), embedded into the binary at build time by
// scripts/embed_web.py (a meson custom_target), so that `burstscope report` needs no web/ directory at run time.
#pragma once

#include <string_view>

namespace burstscope::web {

extern const std::string_view kReportHtml;  // the template, with the three markers (report-contract.md)
extern const std::string_view kReportCss;
extern const std::string_view kReportJs;
extern const std::string_view kUplotCss;
extern const std::string_view kUplotJs;
// False when the build found no web/ files (a placeholder page is embedded instead).
extern const bool kComplete;

}  // namespace burstscope::web
