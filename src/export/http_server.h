// The metrics endpoint's HTTP server, built for a hostile network (docs/operations.md, "The metrics endpoint").
//
// libmicrohttpd (GNU, Debian's libmicrohttpd-dev) in epoll mode with a small pool of event-loop threads: a slow,
// idle or keep-alive client holds a socket and a 32 KiB buffer, never a thread. civetweb, behind prometheus-cpp's
// Exposer, gives every connection a thread for as long as it reads a request, so two clients that send a header
// line every few seconds silenced /metrics (its request timeout restarts with every byte), and it has no
// connection bound with an answer. Around the library, this file keeps the policy:
//   - our own accept loop hands sockets to the daemon and refuses, uncounted by the library, beyond a hard bound;
//   - beyond export.http.max-connections a request is answered 503 with Retry-After;
//   - a request's header must be complete read-timeout after the connection (or its previous response) began,
//     however slowly it trickles in: a housekeeping thread shuts such sockets down (the library itself only
//     knows inactivity, which export.http.idle-timeout bounds);
//   - TLS and basic auth from the exporter-toolkit's web config file (web_config.h), reloaded on SIGHUP by
//     starting a daemon with the new settings on the same listening socket and retiring the old one;
//   - burstscope_http_* series about the endpoint itself, with every scrape.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/export/metrics.h"
#include "src/live/live_view.h"
#include "src/recorder/flight_recorder.h"

namespace burstscope {

class MetricsServer {
 public:
  // With `live`, the same listener (same TLS, auth and connection bounds) also serves the live view: the page
  // at /live and its Server-Sent Events at /live/events (docs/live.md). With `recorder`, POST
  // /flight-recorder/trigger asks the flight recorder for a file now (docs/flight-recorder.md), and its
  // burstscope_flight_recorder_* series come with every scrape.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> start(const ExportConfig& config,
                                                              const std::shared_ptr<LiveMetrics>& metrics,
                                                              std::shared_ptr<LiveView> live = nullptr,
                                                              std::shared_ptr<FlightRecorder> recorder = nullptr);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  int port() const { return port_; }
  std::string url() const { return url_; }
  bool tls() const;

  // Re-reads the web configuration file and serves new connections with it; on an error the running settings
  // stay and the error is returned (and counted). OK and a no-op without a web configuration file.
  absl::Status reload();
  // Async-signal-safe (SIGHUP): the housekeeping thread reloads within a few hundred milliseconds and says so on
  // stderr.
  static void requestReload();

  struct Impl;  // in http_server.cc

 private:
  MetricsServer() = default;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::string url_;
};

// crypt(3) with a fresh bcrypt salt: what goes into export.basic-auth.password-hash or basic_auth_users.
absl::StatusOr<std::string> hashPassword(const std::string& password);
// Whether `password` matches `hash`, comparing in constant time.
bool checkPassword(const std::string& password, const std::string& hash);

}  // namespace burstscope
