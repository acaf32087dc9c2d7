// The live 100 µs view (docs/live.md): each port's base bins and microbursts as they close, for the page at
// /live on the metrics listener, streamed to its viewers as Server-Sent Events.
//
// The packet path writes, per port, one ring slot per non-empty 100 µs bin and one per microburst (an
// EngineObserver on the port's engine, single producer, never blocking: a slot the publisher has not read
// in time is overwritten and counted). A publisher thread drains the rings a few times a second into a
// bounded history (the view's window) and one event per tick; viewers read the kept events. However many
// viewers there are, the workers do the same work: viewers cost the HTTP threads and the publisher only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "burstscope/window.h"
#include "src/pipeline/pipeline.h"

namespace burstscope {

struct LiveViewConfig {
  bool enabled = true;
  int64_t window_ns = 5'000'000'000;  // history a new viewer gets, and what the page shows
  int64_t update_ns = 200'000'000;    // one event per this long
  size_t kept_events = 64;            // a viewer further behind gets a fresh snapshot
};

struct LivePortInfo {
  std::string name;
  double link_bps = 0;
  int64_t base_bin_ns = 100'000;
  int64_t microburst_tau_ns = 100'000;
  double microburst_threshold = 0.5;
  std::vector<int64_t> scales_ns;
};

// The counters the exporter shows about the view (burstscope_live_*).
struct LiveViewStats {
  uint64_t events = 0;            // events published
  uint64_t bins = 0;              // bins taken from the workers
  uint64_t bins_overwritten = 0;  // bins the publisher read too late (ring overrun): missing from the view
  uint64_t snapshots = 0;         // snapshots served to viewers (new, or too far behind)
  int64_t viewers = 0;            // event streams open now
};

class LiveView {
 public:
  // `page_html`: the page served at /live (the app builds it from web/live with the report's chart code).
  LiveView(const LiveViewConfig& config, std::vector<LivePortInfo> ports, std::string page_html);
  ~LiveView();
  LiveView(const LiveView&) = delete;
  LiveView& operator=(const LiveView&) = delete;

  // Subscribe it on the port's engine before the first record (PipelineConfig::extend_engine).
  EngineObserver* tap(size_t port);
  // On the control thread at each interval close: the figures the page prints beside the chart.
  void onInterval(size_t port, const PortSnapshot& s);
  // Starts the publisher thread; the destructor stops it.
  void start();

  // For one viewer: the Server-Sent Events text of every event after *next (0: none yet), advancing *next.
  // A viewer with none yet, or further behind than the kept events, gets one snapshot event (the window's
  // history of every port) instead. Empty when nothing is new.
  std::string eventsAfter(uint64_t* next) const;
  uint64_t latest() const { return latest_.load(std::memory_order_acquire); }
  void viewerOpened() { viewers_.fetch_add(1, std::memory_order_relaxed); }
  void viewerClosed() { viewers_.fetch_sub(1, std::memory_order_relaxed); }
  LiveViewStats stats() const;
  const LiveViewConfig& config() const { return config_; }
  const std::string& page() const { return page_; }

 private:
  struct Port;
  void publishOnce();
  std::string portJson(const Port& p, bool history) const;

  LiveViewConfig config_;
  std::string page_;
  std::vector<std::unique_ptr<Port>> ports_;
  mutable std::mutex mu_;  // history, figures, events
  std::deque<std::pair<uint64_t, std::string>> events_;
  std::atomic<uint64_t> latest_{0};
  std::atomic<int64_t> viewers_{0};
  mutable std::atomic<uint64_t> snapshots_{0};
  uint64_t bins_ = 0, overwritten_ = 0;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread publisher_;
};

}  // namespace burstscope
