// Prometheus export of a live run (docs/SPEC.md "Live reporting semantics"). The driver's control thread publishes
// one snapshot per port per completed report interval (never a packet worker); a scrape turns the latest
// snapshots into metric families. Publishing builds an immutable view and swaps it in under a short lock;
// a scrape takes the views under that lock and renders them after it, so a slow scrape delays nobody. Nothing on the
// packet path touches prometheus-cpp: its counters are an atomic CAS and its histograms take a mutex per observation,
// so the figures are kept by the engine as plain numbers and only copied here once a second.
//
// A scrape reads and never writes, so several Prometheus servers may scrape one monitor: gauges hold the
// last completed interval, counters and histograms are cumulative.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "src/live/live_view.h"
#include "src/pipeline/pipeline.h"

namespace burstscope {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct ExportPortConfig {
  std::optional<double> switch_buffer_bytes;  // the mirrored switch port's buffer, for the congestion alert
  Labels labels;                              // e.g. mirrored_port, training_job (override the sensor's)
};

// The metrics endpoint's HTTP server (src/export/http_server.h; docs/operations.md, "The metrics endpoint").
struct HttpServerConfig {
  int threads = 4;                           // event loops; a slow or idle client costs a socket, never a thread
  int64_t read_timeout_ns = 10'000'000'000;  // a request's header must be complete this long after it began
  int64_t idle_timeout_ns = 60'000'000'000;  // a keep-alive connection waits this long for its next request
  size_t max_connections = 512;              // beyond it, requests are answered 503 (and from 5/4 of it, refused)
};

struct ExportConfig {
  // host:port of /metrics. Loopback unless the operator names another address; "" serves nothing.
  std::string listen = "127.0.0.1:19464";
  std::string sensor;                         // this monitor's name in every series; empty: the host name
  Labels labels;                              // on every series, e.g. rack, cluster
  size_t top_k = 10;                          // host pairs and flows named in series; the rest are folded into "other"
  std::optional<double> switch_buffer_bytes;  // every port's, unless its own entry in `ports` says otherwise
  // Optional HTTP basic auth: a crypt(3) hash (bcrypt "$2b$", yescrypt "$y$", sha512crypt "$6$"), never a
  // clear-text password. `burstscope hash-password` makes one.
  std::string basic_auth_user;
  std::string basic_auth_hash;
  // The exporter-toolkit's web configuration file (TLS, basic_auth_users, headers), re-read on SIGHUP.
  std::string web_config_file;
  HttpServerConfig http;
  std::map<std::string, ExportPortConfig> ports;  // by capture port name
  LiveViewConfig live;                            // the live view at /live (docs/live.md)
};

// Label names must be valid and must not clash with the labels burstscope or Prometheus set.
absl::Status validateExportConfig(const ExportConfig& c);

// What the exporter needs to know of a port beyond its snapshots.
struct ExportPortInfo {
  std::string name;
  double link_bps = 0;
  std::vector<int64_t> scales_ns;
  std::vector<double> rates_bps;
};

// Series of the K heaviest keys as counters that never go backwards: a key's series counts from the moment
// it entered the top K, and "other" counts everything else, so that the series always sum to the total and
// a key moving in or out of the top K moves bytes into "other" and never out of it.
class TopKCounters {
 public:
  struct Series {
    FlowKey key;
    uint64_t base_bytes = 0, base_packets = 0;  // the key's totals when it entered
    uint64_t bytes = 0, packets = 0;            // since it entered
    uint64_t last_total_bytes = 0;
  };
  void update(const HeavyResult& r);
  const std::vector<Series>& series() const { return series_; }
  uint64_t otherBytes() const { return other_bytes_; }
  uint64_t otherPackets() const { return other_packets_; }

 private:
  std::vector<Series> series_;
  uint64_t other_bytes_ = 0, other_packets_ = 0;
};

class LiveMetrics : public prometheus::Collectable {
 public:
  LiveMetrics(const ExportConfig& config, std::vector<ExportPortInfo> ports, std::string backend);

  // At the close of each report interval; from one thread (the driver's control thread).
  void publish(size_t port, const PortSnapshot& s);
  // The port's watched link, when it changes between interval closes (PipelineConfig::link_sink); the same
  // thread as publish.
  void publishLink(size_t port, const LinkState& link);
  std::vector<prometheus::MetricFamily> Collect() const override;
  // The labels on every series (sensor, backend, the configured ones).
  const std::vector<prometheus::ClientMetric::Label>& identity() const { return identity_; }

 private:
  struct StreamTotals {
    uint64_t packets = 0, bytes = 0;
  };
  // What a scrape renders of a port: immutable once published.
  struct PortView {
    std::optional<PortSnapshot> last;            // the last snapshot of a completed interval
    std::optional<LinkState> link;               // the newest of last->device.link and publishLink's
    double last_close_s = 0;                     // wall clock when it was published
    std::map<std::string, StreamTotals> totals;  // "all", "ingress", "egress"
    // Completed intervals whose backlog at the link's own speed exceeded the switch buffer, by direction:
    // counted at publish, so that no interval is missed between two scrapes (the alert reads this).
    std::map<std::string, uint64_t> over_buffer_intervals;
    // SPEC "Overload" (live queues' 100 µs series): every frame counted before the rings, and the completed
    // intervals whose figures are bounds (frames lost after the bins within their windows).
    bool series = false;
    uint64_t series_packets = 0, series_bytes = 0, series_lost = 0, degraded_intervals = 0;
    TopKCounters pairs, flows;
    std::map<std::string, uint64_t> job_bytes;       // per reported job, counted at publish
    std::shared_ptr<const TrainingReport> training;  // the latest analysis (not every snapshot carries one)
  };
  struct PortState {
    ExportPortInfo info;
    std::optional<double> switch_buffer_bytes;
    std::vector<prometheus::ClientMetric::Label> labels;  // identity + port
    PortView working;                                     // the publisher's own copy
    std::shared_ptr<const PortView> view;                 // the scrapers' (under mu_)
  };

  std::vector<prometheus::ClientMetric::Label> identity_;
  std::string backend_;
  double start_time_s_;
  mutable std::mutex mu_;
  std::vector<PortState> ports_;
};

}  // namespace burstscope
