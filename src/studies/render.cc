#include "src/studies/render.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/studies/web_assets.h"

#ifndef BURSTSCOPE_VERSION
#define BURSTSCOPE_VERSION "dev"
#endif

namespace burstscope {
namespace {

using Json = nlohmann::ordered_json;

// Debian's absl::string_view is not std::string_view (docs/DEVELOPING.md).
absl::string_view asAbsl(std::string_view s) { return {s.data(), s.size()}; }

// A number as JSON writes it: the shortest text that reads back as the same double.
std::string num(double v) { return Json(v).dump(); }

// A CSV text field: always quoted, quotes doubled.
std::string quoted(const std::string& s) { return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\"\""}}), "\""); }

// One marker replaced (embed_web.py checked that the template holds each exactly once).
void replaceMarker(std::string* page, std::string_view marker, const std::string& with) {
  const size_t at = page->find(marker);
  if (at != std::string::npos) page->replace(at, marker.size(), with);
}

// Keeps an inlined script from ending its element early: "</script" inside it (in a string) becomes
// "<\/script", which JavaScript reads as the same string.
std::string inlineScript(std::string_view js) {
  return absl::StrReplaceAll(absl::string_view(js.data(), js.size()),
                             {{"</script", "<\\/script"}, {"</SCRIPT", "<\\/SCRIPT"}});
}

}  // namespace

Json studiesJson(const StudiesResult& r) {
  Json j;
  j["schema"] = "burstscope-report/1";
  j["version"] = BURSTSCOPE_VERSION;
  j["inputs"] = r.files;
  j["analyze"] = r.analyze;

  const Timeline& tl = r.timeline;
  j["timeline"] = Json{{"bin_ns", tl.bin_ns}, {"start_ns", tl.start_ns}, {"end_ns", tl.end_ns},
                       {"t", tl.t},           {"bytes", tl.bytes},       {"packets", tl.packets}};

  Json tau = Json::array(), env = Json::array(), ptm = Json::array(), exact = Json::array();
  for (const CurvePoint& c : r.curves) {
    tau.push_back(c.tau_ns);
    env.push_back(c.envelope_bytes);
    ptm.push_back(c.ptm ? Json(*c.ptm) : Json(nullptr));
    exact.push_back(c.exact);
  }
  j["curves"] = Json{{"tau_ns", tau}, {"envelope_bytes", env}, {"ptm", ptm}, {"exact", exact}};

  Json rates = Json::array(), backlog = Json::array();
  for (const BacklogPoint& b : r.backlog) {
    rates.push_back(b.rate_bps);
    backlog.push_back(b.max_backlog_bytes);
  }
  j["backlog_curve"] = Json{{"rate_bps", rates}, {"max_backlog_bytes", backlog}};

  Json series = Json::array();
  for (const FlowSeries& f : r.flows) {
    series.push_back(Json{{"name", f.name},
                          {"kind", f.kind},
                          {"bytes", f.bytes},
                          {"share", f.share},
                          {"t", f.t},
                          {"bytes_per_bin", f.bytes_per_bin}});
  }
  j["flows"] = Json{{"bin_ns", tl.bin_ns}, {"start_ns", tl.start_ns}, {"series", series}};

  Json cells = Json::array();
  for (const Heatmap::Cell& c : r.heatmap.cells) cells.push_back(Json::array({c.src, c.dst, c.bytes, c.packets}));
  j["heatmap"] = Json{{"hosts", r.heatmap.hosts},
                      {"cells", cells},
                      {"pairs", r.heatmap.pairs},
                      {"overflow_packets", r.heatmap.overflow_packets}};

  const ReportMicrobursts& m = r.microbursts;
  Json events = Json::array();
  for (const ReportMicroburst& e : m.events) {
    events.push_back(Json{{"start_ns", e.burst.start_ns},
                          {"duration_ns", e.burst.end_ns - e.burst.start_ns},
                          {"bytes", e.burst.bytes},
                          {"peak_bps", e.burst.peak_bps},
                          {"congesting", e.congesting}});
  }
  j["microbursts"] = Json{{"tau_ns", m.tau_ns}, {"threshold", m.threshold},  {"link_capacity_bps", m.link_capacity_bps},
                          {"count", m.count},   {"listed", m.events.size()}, {"events", events}};
  return j;
}

Json comparePageTrace(const StudiesResult& r) {
  Json all = studiesJson(r);
  Json j;
  j["file"] = r.files.empty() ? std::string() : r.files.front();
  for (const char* key : {"timeline", "curves", "backlog_curve"}) j[key] = std::move(all[key]);
  return j;
}

Json comparePageJson(const Json& compare, const std::vector<Json>& traces) {
  return Json{{"schema", "burstscope-compare-page/1"},
              {"version", BURSTSCOPE_VERSION},
              {"compare", compare},
              {"traces", traces}};
}

namespace {

// A page: `page_template` with its three markers replaced by the styles, uPlot, the shared plot code and the
// page's own script, and the data.
std::string pageHtml(std::string_view page_template, std::string_view page_js, const std::string& json_text) {
  std::string page(page_template);
  const std::string data = absl::StrReplaceAll(json_text, {{"</", "<\\/"}, {"<!--", "\\u003c!--"}});
  // Each replacement goes in before the next marker is looked for: the data (which follows) is inserted last
  // so that nothing inside the inlined files or the data is taken for a marker.
  replaceMarker(&page, "<!-- burstscope:style -->",
                absl::StrCat("<script>", inlineScript(web::kErrorsJs), "</script><style>", asAbsl(web::kUplotCss), "\n",
                             asAbsl(web::kReportCss), "</style>"));
  replaceMarker(&page, "<!-- burstscope:script -->",
                absl::StrCat("<script>", inlineScript(web::kUplotJs), "</script><script>", inlineScript(web::kPlotJs),
                             "</script><script>", inlineScript(page_js), "</script>"));
  replaceMarker(&page, "<!-- burstscope:data -->",
                absl::StrCat("<script id=\"burstscope-data\" type=\"application/json\">", data, "</script>"));
  return page;
}

}  // namespace

std::string reportHtml(const std::string& json_text) { return pageHtml(web::kReportHtml, web::kReportJs, json_text); }

std::string compareHtml(const std::string& json_text) {
  return pageHtml(web::kCompareHtml, web::kCompareJs, json_text);
}

std::string liveHtml() { return pageHtml(web::kLiveHtml, web::kLiveJs, "{\"schema\":\"burstscope-live/1\"}"); }

std::vector<std::pair<std::string, std::string>> reportCsvs(const StudiesResult& r) {
  std::vector<std::pair<std::string, std::string>> out;
  const Timeline& tl = r.timeline;
  std::string s = "start_ns,bytes,packets\n";
  for (size_t i = 0; i < tl.t.size(); ++i) {
    absl::StrAppend(&s, tl.start_ns + tl.t[i] * tl.bin_ns, ",", tl.bytes[i], ",", tl.packets[i], "\n");
  }
  out.emplace_back("timeline.csv", std::move(s));

  s = "tau_ns,envelope_bytes,ptm,exact\n";
  for (const CurvePoint& c : r.curves) {
    absl::StrAppend(&s, c.tau_ns, ",", c.envelope_bytes, ",", c.ptm ? num(*c.ptm) : "", ",", c.exact ? "true" : "false",
                    "\n");
  }
  out.emplace_back("envelope.csv", std::move(s));

  s = "rate_bps,max_backlog_bytes\n";
  for (const BacklogPoint& b : r.backlog) absl::StrAppend(&s, num(b.rate_bps), ",", num(b.max_backlog_bytes), "\n");
  out.emplace_back("backlog.csv", std::move(s));

  s = "flow,kind,bin_start_ns,bytes\n";
  for (const FlowSeries& f : r.flows) {
    for (size_t i = 0; i < f.t.size(); ++i) {
      absl::StrAppend(&s, quoted(f.name), ",", f.kind, ",", tl.start_ns + f.t[i] * tl.bin_ns, ",", f.bytes_per_bin[i],
                      "\n");
    }
  }
  out.emplace_back("flows.csv", std::move(s));

  s = "src,dst,bytes,packets\n";
  for (const Heatmap::Cell& c : r.heatmap.cells) {
    absl::StrAppend(&s, quoted(r.heatmap.hosts[c.src]), ",", quoted(r.heatmap.hosts[c.dst]), ",", c.bytes, ",",
                    c.packets, "\n");
  }
  out.emplace_back("heatmap.csv", std::move(s));

  s = "start_ns,duration_ns,bytes,peak_bps,congesting\n";
  for (const ReportMicroburst& e : r.microbursts.events) {
    absl::StrAppend(&s, e.burst.start_ns, ",", e.burst.end_ns - e.burst.start_ns, ",", e.burst.bytes, ",",
                    num(e.burst.peak_bps), ",", e.congesting ? "true" : "false", "\n");
  }
  out.emplace_back("microbursts.csv", std::move(s));
  return out;
}

absl::Status prepareReportDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write into ", dir, ": ", std::generic_category().message(errno)));
  }
  return absl::OkStatus();
}

absl::Status writeReport(const std::string& dir, const StudiesResult& r) {
  if (absl::Status s = prepareReportDir(dir); !s.ok()) return s;
  const std::string json = studiesJson(r).dump();
  std::vector<std::pair<std::string, std::string>> files = reportCsvs(r);
  files.emplace_back("report.json", json + "\n");
  files.emplace_back("report.html", reportHtml(json));
  for (const auto& [name, text] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (f) f.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (f) f.close();
    if (!f)
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write ", path, ": ", std::generic_category().message(errno)));
  }
  return absl::OkStatus();
}

}  // namespace burstscope
