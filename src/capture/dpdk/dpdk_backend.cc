#include "src/capture/dpdk/dpdk_backend.h"

#include "src/privileges/privileges.h"

// rte_eth_read_clock (the NIC clock, for RX timestamps) is still marked experimental in DPDK 22.11.
#define ALLOW_EXPERIMENTAL_API 1

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_pause.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/capture/common/link_watch.h"

namespace burstscope {
namespace {

int64_t realtimeNs() { return clockNs(CLOCK_REALTIME); }

// How often the monitor thread reads every port's link, besides waking at once on a device's link-state
// interrupt (many virtual devices have none).
constexpr std::chrono::milliseconds kLinkPoll{50};
// A device reset that answers -EAGAIN ("retry later") is tried again at each look, this many times in all.
constexpr int kResetTries = 100;
constexpr uint16_t kMaxBurst = 512;  // dpdk.burst
// An RX lcore publishes its records once this many wait (a quarter of a smaller ring), when a burst comes short or
// when one found the ring full (rxLoop). Fewer than this and a whole burst stay within a producer's kMaxBatch.
constexpr size_t kPublishEvery = 384;
static_assert(kPublishEvery - 1 + kMaxBurst <= QueueProducer::kMaxBatch);

// Descriptors asked for each idle TX queue (adjusted to the driver's limits): burstscope sends nothing.
constexpr uint16_t kTxDescriptors = 64;

// Whether the RX lcores stream their records into the ring's slots (QueueProducer::streamIntoSlots) or decode into
// them in place, each slot fetched a few records ahead. Measured on the trace loop (bench/README.md, issue 41):
//   - AMD EPYC (eighteenth session): in place (then without the fetch ahead) 8.7 M packets/s, streamed 14.1. Each
//     store into a slot the worker's core had read waited for its line.
//   - Intel Xeon, a 300 MiB L3 (twenty-eighth session): in place with the fetch ahead 2-5% faster than streamed,
//     with the default ring and with a ring four times the L3. The streaming stores themselves stalled.
// Streaming where it was measured faster; in place elsewhere, where the fetch ahead covers a far slot.
bool streamsRecords() {
#if defined(__x86_64__)
  return __builtin_cpu_is("amd");
#else
  return false;
#endif
}

// Maps a free-running counter (the TSC, or a NIC's clock) to CLOCK_REALTIME: one (counter, realtime) pair
// read back to back, and the counter's frequency. Re-synchronised periodically by the thread that uses it;
// each re-synchronisation's correction is recorded, which is the clock error that accumulated meanwhile.
class CounterClock {
 public:
  void set(uint64_t counter, int64_t realtime_ns, double hz) {
    if (hz_ > 0) {
      const int64_t step = realtime_ns - toNs(counter);
      max_step_ns_ = std::max(max_step_ns_, step < 0 ? -step : step);
    }
    base_counter_ = counter;
    base_ns_ = realtime_ns;
    hz_ = hz;
    ns_per_tick_ = 1e9 / hz;
  }
  int64_t toNs(uint64_t counter) const {
    return base_ns_ +
           static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(counter - base_counter_)) * ns_per_tick_);
  }
  // Re-anchors without counting a step: after a device reset the device's clock may have started anew.
  void rebase(uint64_t counter, int64_t realtime_ns) {
    base_counter_ = counter;
    base_ns_ = realtime_ns;
  }
  uint64_t base() const { return base_counter_; }
  double hz() const { return hz_; }
  int64_t maxStepNs() const { return max_step_ns_; }

 private:
  uint64_t base_counter_ = 0;
  int64_t base_ns_ = 0;
  double hz_ = 0;
  double ns_per_tick_ = 0;
  int64_t max_step_ns_ = 0;
};

// A TSC read and a CLOCK_REALTIME read as close together as the machine allows: the TSC midpoint of the
// shortest of a few attempts.
std::pair<uint64_t, int64_t> tscRealtimePair() {
  uint64_t best_width = UINT64_MAX, tsc = 0;
  int64_t real = 0;
  for (int i = 0; i < 5; ++i) {
    const uint64_t a = rte_rdtsc_precise();
    const int64_t r = realtimeNs();
    const uint64_t b = rte_rdtsc_precise();
    if (b - a < best_width) {
      best_width = b - a;
      tsc = a + (b - a) / 2;
      real = r;
    }
  }
  return {tsc, real};
}

enum class TsSource { kTsc, kNic, kPcapFile };

// Wakes the monitor thread: at once from the ethdev event callbacks, or to end it (stop()).
struct MonitorWake {
  std::mutex mu;
  std::condition_variable cv;
  bool kick = false;  // guarded by mu: an event came
  bool stop = false;  // guarded by mu
  void wake() {
    {
      std::lock_guard<std::mutex> g(mu);
      kick = true;
    }
    cv.notify_one();
  }
};

// A port's link as watched (docs/live-capture.md "Capture faults"). The ethdev event callbacks run on DPDK's
// interrupt thread: they only raise a flag and wake the monitor thread, which reads the link, logs and counts
// each change, and recovers from a device reset. RX lcores read hold_gen only (one load per poll, no lock).
struct LinkWatch {
  MonitorWake* wake = nullptr;
  std::atomic<bool> reset_event{false};    // RTE_ETH_EVENT_INTR_RESET came
  std::atomic<bool> removed_event{false};  // RTE_ETH_EVENT_INTR_RMV came
  // Odd while the port's RX queues must not be polled (a reset under way, or the device gone): each RX lcore
  // acknowledges a new odd value in its queue's hold_ack, only ticks the queue meanwhile, and polls it again
  // once the value is even.
  std::atomic<uint64_t> hold_gen{0};
  // Set while nothing but the monitor may touch the device (a reset, a device gone): deviceStats then reports
  // what was counted before, without reading it.
  std::atomic<bool> offline{false};
  // Serialises the device calls made off the RX path (statistics, link reads, reset and restart), which DPDK
  // wants from one thread at a time.
  std::mutex dev_mu;
  // The monitor's own.
  bool resetting = false;   // parked for a reset that has not succeeded yet (-EAGAIN: tried again)
  bool reset_said = false;  // the reset under way is logged (once, however often it is tried)
  bool gone = false;        // the reset failed or the device was removed: never read again
  int reset_tries = 0;
  int64_t reset_at_ns = 0;
  // Guarded by DpdkBackend::state_mu_: the link as watched, and the device's counts from before its resets (a
  // reset restarts them). Frames the device had counted but RX never read when it was reset are lost there.
  LinkState state;
  uint64_t base_received = 0, base_bytes = 0, base_missed = 0, base_errors = 0, base_no_mbuf = 0;
  uint64_t reset_lost = 0;
  std::vector<uint64_t> base_queue;
  uint64_t rx_at_reset = 0;  // RX's count of the port when it was last reset
  bool counted = false;      // the bases hold the device's counts from before a reset
  rte_eth_stats zero{};      // the device's counts just after a restart (when it could not reset them)
};

struct RxQueue {
  uint16_t port_id = 0;
  uint16_t queue_id = 0;
  size_t port_index = 0;
  std::unique_ptr<QueueProducer> producer;  // decode, enqueue, count, tick
  int64_t last_ts = INT64_MIN;              // this queue's watermark
  uint64_t last_tick_tsc = 0;
  // Records that may wait unpublished (kPublishEvery): a ring's unpublished slots are slots the worker cannot free,
  // so a small ring (--ring-size) publishes sooner.
  size_t publish_every = kPublishEvery;
  CounterClock nic_clock;                           // a copy per queue, so that each RX lcore re-synchronises its own
  const std::atomic<uint64_t>* hold_gen = nullptr;  // the port's LinkWatch::hold_gen
  uint64_t seen_gen = 0;                            // the RX lcore's own: the last hold_gen it acted on
  std::atomic<uint64_t> hold_ack{0};                // the last odd hold_gen the RX lcore stopped polling for
  // Times the RX lcore came round to this queue (polled it, or ticked it while held): the monitor's sign of
  // life (QueueStallWatch), written by the lcore alone.
  std::atomic<uint64_t> rounds{0};
  QueueStallWatch stall{static_cast<int>(std::chrono::seconds(1) / kLinkPoll)};  // the monitor's
};

struct Port {
  std::string name;
  uint16_t port_id = 0;
  std::string driver;
  uint16_t queues = 0;
  uint32_t dev_flags = 0;
  TsSource ts = TsSource::kTsc;
  CounterClock nic_clock;  // kNic only: the calibration the queues start from
  rte_mempool* pool = nullptr;
  bool started = false;
  // As configured, for a restart after a device reset with the same queues and mempool.
  rte_eth_conf conf{};
  uint16_t tx_queues = 0, rx_desc = 0, tx_desc = 0;
  int socket = 0;
  std::unique_ptr<LinkWatch> watch;
  bool callbacks = false;  // the ethdev event callbacks are registered
};

// An ethdev event (DPDK's interrupt thread): never blocks, never touches the device.
int onEthEvent(uint16_t /*port_id*/, rte_eth_event_type event, void* arg, void* /*ret_param*/) {
  auto* w = static_cast<LinkWatch*>(arg);
  if (event == RTE_ETH_EVENT_INTR_RESET) w->reset_event.store(true);
  if (event == RTE_ETH_EVENT_INTR_RMV) w->removed_event.store(true);
  w->wake->wake();  // a link-state change: the monitor reads the link at once
  return 0;
}

constexpr rte_eth_event_type kWatchedEvents[] = {RTE_ETH_EVENT_INTR_LSC, RTE_ETH_EVENT_INTR_RESET,
                                                 RTE_ETH_EVENT_INTR_RMV};

class DpdkBackend;

struct Lcore {
  unsigned id = 0;
  std::vector<RxQueue*> queues;
  DpdkBackend* owner = nullptr;
};

class DpdkBackend final : public CaptureSource {
 public:
  explicit DpdkBackend(DpdkConfig c) : cfg_(std::move(c)) {}
  ~DpdkBackend() override {
    stop();
    for (Port& p : ports_) {
      if (!p.callbacks) continue;
      for (rte_eth_event_type e : kWatchedEvents) {
        // -EAGAIN: the callback is running on the interrupt thread right now; it returns at once.
        while (rte_eth_dev_callback_unregister(p.port_id, e, onEthEvent, p.watch.get()) == -EAGAIN) {
          std::this_thread::yield();
        }
      }
    }
    for (Port& p : ports_) {
      if (p.started) {
        rte_eth_dev_stop(p.port_id);
        rte_eth_dev_close(p.port_id);
      }
      if (p.pool) rte_mempool_free(p.pool);
    }
    if (eal_ready_) rte_eal_cleanup();
  }

  absl::Status init();

  std::string name() const override { return "dpdk"; }
  const std::vector<CapturePort>& ports() const override { return capture_ports_; }
  absl::Status start() override;
  void stop() override;
  DeviceStats deviceStats(size_t port) const override;
  std::optional<LinkState> linkState(size_t port) const override;
  TimestampInfo timestampInfo() const override;
  absl::Status setFrameTap(size_t port, size_t queue, FrameTap* tap) override {
    return setQueueFrameTap(queues_, port, queue, tap);
  }

 private:
  absl::Status initEal();
  absl::Status initPort(const DpdkPortConfig& pc, size_t index);
  absl::Status setUpQueuesAndStart(Port& p);
  static int lcoreMain(void* arg);
  void rxLoop(Lcore& lc);
  void holdChanged(RxQueue& q, const Port& port, uint64_t gen);
  void tick(RxQueue& q, int64_t now_ns);
  void resync(Lcore& lc, CounterClock& tsc);
  // The monitor thread (started by start(), ended by stop()) and what it does.
  void monitorLoop();
  void watchPort(size_t index);
  bool noteLink(size_t index, bool up, int64_t now_ns, const char* why);
  bool park(size_t index);
  void unpark(size_t index);
  void retireStats(size_t index);
  void resetPort(size_t index);
  void deviceGone(size_t index);

  DpdkConfig cfg_;
  std::vector<Port> ports_;
  std::vector<std::unique_ptr<RxQueue>> queues_;
  std::vector<CapturePort> capture_ports_;
  std::vector<Lcore> lcores_;
  std::atomic<bool> rx_stop_{false};
  bool running_ = false;
  bool eal_ready_ = false;
  int ts_dynfield_ = -1;
  uint64_t ts_flag_ = 0;
  double tsc_hz_ = 0;
  std::atomic<int64_t> max_step_ns_{0};  // largest clock correction at a re-synchronisation
  MonitorWake wake_;
  std::thread monitor_;
  // Guards each port's LinkWatch::state and counts from before a reset (the monitor writes them, deviceStats
  // reads them). Never taken by an RX lcore.
  mutable std::mutex state_mu_;
};

absl::Status DpdkBackend::initEal() {
  // argv[0] names the EAL in getopt's own messages ("eal: unrecognized option ...").
  std::vector<std::string> args{"eal"};
  bool has_log_level = false, has_telemetry = false;
  for (const std::string& a : cfg_.eal_args) {
    has_log_level |= a.rfind("--log-level", 0) == 0;
    has_telemetry |= a == "--telemetry" || a == "--no-telemetry";
  }
  if (!has_log_level) args.push_back("--log-level=3");   // critical only: our own errors say what failed
  if (!has_telemetry) args.push_back("--no-telemetry");  // no telemetry socket unless asked for
  args.insert(args.end(), cfg_.eal_args.begin(), cfg_.eal_args.end());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("DPDK EAL initialisation failed (", rte_strerror(rte_errno),
                                                   ") with EAL arguments: ", absl::StrJoin(cfg_.eal_args, " ")));
  }
  eal_ready_ = true;
  tsc_hz_ = static_cast<double>(rte_get_tsc_hz());
  if (rte_mbuf_dyn_rx_timestamp_register(&ts_dynfield_, &ts_flag_) != 0) {
    ts_dynfield_ = -1;
    ts_flag_ = 0;
  }
  return absl::OkStatus();
}

absl::Status DpdkBackend::initPort(const DpdkPortConfig& pc, size_t index) {
  Port p;
  p.name = pc.device;
  uint16_t id;
  if (rte_eth_dev_get_port_by_name(pc.device.c_str(), &id) != 0) {
    uint32_t n;
    if (!absl::SimpleAtoi(pc.device, &n) || n >= RTE_MAX_ETHPORTS || !rte_eth_dev_is_valid_port(n)) {
      std::vector<std::string> known;
      uint16_t i;
      RTE_ETH_FOREACH_DEV(i) {
        char name[RTE_ETH_NAME_MAX_LEN];
        if (rte_eth_dev_get_name_by_port(i, name) == 0) known.push_back(name);
      }
      return absl::NotFoundError(absl::StrCat("port '", pc.device, "': no such DPDK port (ports: ",
                                              known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
    }
    id = static_cast<uint16_t>(n);
  }
  p.port_id = id;
  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(id, &info); rc != 0) {
    return absl::InternalError(absl::StrCat("port '", pc.device, "': cannot read device info: ", rte_strerror(-rc)));
  }
  p.driver = info.driver_name ? info.driver_name : "";
  p.dev_flags = info.dev_flags ? *info.dev_flags : 0;
  if (pc.rx_queues == 0 || pc.rx_queues > info.max_rx_queues) {
    return absl::InvalidArgumentError(absl::StrCat("port '", pc.device, "': rx-queues ", pc.rx_queues, " is not in 1..",
                                                   info.max_rx_queues, " for driver ", p.driver));
  }
  p.queues = pc.rx_queues;

  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof(conf));
  // A Toeplitz key of repeated 0x6d5a hashes (a, b) and (b, a) alike: both directions of a flow meet in
  // one queue where the NIC honours the key. The worker merges all queues of a port by timestamp anyway.
  static uint8_t symmetric_key[40];
  for (size_t i = 0; i < sizeof(symmetric_key); i += 2) {
    symmetric_key[i] = 0x6d;
    symmetric_key[i + 1] = 0x5a;
  }
  if (p.queues > 1) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf =
        (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
    if (info.hash_key_size == sizeof(symmetric_key)) {
      conf.rx_adv_conf.rss_conf.rss_key = symmetric_key;
      conf.rx_adv_conf.rss_conf.rss_key_len = sizeof(symmetric_key);
    }
  }
  const bool nic_ts = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP) != 0;
  if (cfg_.timestamps == TimestampMode::kNic && !nic_ts) {
    return absl::FailedPreconditionError(absl::StrCat("port '", pc.device, "': timestamps: nic requested, but driver ",
                                                      p.driver, " has no RX timestamp offload"));
  }
  if (p.driver == "net_pcap" && cfg_.timestamps == TimestampMode::kAuto) {
    p.ts = TsSource::kPcapFile;
  } else if (nic_ts && cfg_.timestamps != TimestampMode::kTsc) {
    p.ts = TsSource::kNic;
    conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
  }
  // Link-state and removal interrupts where the device has them (the monitor also polls the link).
  if ((p.dev_flags & RTE_ETH_DEV_INTR_LSC) != 0) conf.intr_conf.lsc = 1;
  if ((p.dev_flags & RTE_ETH_DEV_INTR_RMV) != 0) conf.intr_conf.rmv = 1;
  if (cfg_.replay_speed > 0 && p.ts != TsSource::kPcapFile) {
    return absl::InvalidArgumentError(absl::StrCat("port '", pc.device,
                                                   "': replay-speed applies only to net_pcap "
                                                   "with recorded timestamps"));
  }
  // burstscope never transmits, but some drivers pair every RX queue with a TX queue and refuse any other
  // configuration: net_af_xdp binds one AF_XDP socket per queue pair (RX and TX counts must be equal,
  // dev_configure = -EINVAL otherwise). So wherever the driver offers as many TX queues as RX queues, each RX
  // queue gets an idle TX queue with a few descriptors (kTxDescriptors, or the driver's minimum). net_pcap,
  // net_null and net_af_packet (the dpdk suite) offer TX queues too and take this path; a driver without them
  // (max_tx_queues 0, or fewer than the RX queues) is configured RX-only, as before.
  const uint16_t tx_queues = info.max_tx_queues >= p.queues ? p.queues : 0;
  if (int rc = rte_eth_dev_configure(id, p.queues, tx_queues, &conf); rc != 0) {
    return absl::InternalError(absl::StrCat("port '", pc.device, "': configure with ", p.queues, " RX queues and ",
                                            tx_queues, " TX queues failed (driver ", p.driver,
                                            "): ", rte_strerror(-rc)));
  }
  p.conf = conf;
  p.tx_queues = tx_queues;
  p.rx_desc = cfg_.rx_descriptors;
  p.tx_desc = kTxDescriptors;
  rte_eth_dev_adjust_nb_rx_tx_desc(id, &p.rx_desc, &p.tx_desc);
  p.socket = rte_eth_dev_socket_id(id) < 0 ? static_cast<int>(rte_socket_id()) : rte_eth_dev_socket_id(id);
  const std::string pool_name = absl::StrCat("bs_pool_", index);
  p.pool = rte_pktmbuf_pool_create(pool_name.c_str(), cfg_.mbufs_per_port, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, p.socket);
  if (p.pool == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("port '", pc.device, "': cannot allocate ", cfg_.mbufs_per_port,
                                                     " mbufs: ", rte_strerror(rte_errno),
                                                     " (lower dpdk.mbufs or give the EAL more memory, -m)"));
  }
  p.watch = std::make_unique<LinkWatch>();
  p.watch->wake = &wake_;
  p.watch->base_queue.assign(p.queues, 0);
  CapturePort lp;
  lp.name = pc.device;
  lp.link_bps = pc.link_bps;
  for (uint16_t q = 0; q < p.queues; ++q) {
    auto rq = std::make_unique<RxQueue>();
    rq->port_id = id;
    rq->queue_id = q;
    rq->port_index = index;
    rq->producer = std::make_unique<QueueProducer>(cfg_.decoder, cfg_.ring_capacity);
    rq->producer->streamIntoSlots(streamsRecords());
    rq->publish_every = std::clamp<size_t>(rq->producer->ring().capacity() / 4, 1, kPublishEvery);
    rq->hold_gen = &p.watch->hold_gen;
    lp.rings.push_back(&rq->producer->ring());
    lp.counters.push_back(&rq->producer->counters());
    lp.bins.push_back(rq->producer->bins());
    queues_.push_back(std::move(rq));
  }
  if (absl::Status s = setUpQueuesAndStart(p); !s.ok()) return s;
  if (p.ts == TsSource::kNic) {
    // The NIC clock's frequency, from two readings 100 ms apart against CLOCK_REALTIME.
    uint64_t c0, c1;
    if (rte_eth_read_clock(id, &c0) != 0) {
      return absl::FailedPreconditionError(absl::StrCat("port '", pc.device,
                                                        "': RX timestamps offered, but the "
                                                        "device clock cannot be read (rte_eth_read_clock)"));
    }
    const int64_t t0 = realtimeNs();
    rte_delay_us_sleep(100'000);
    rte_eth_read_clock(id, &c1);
    const int64_t t1 = realtimeNs();
    p.nic_clock.set(c1, t1, static_cast<double>(c1 - c0) * 1e9 / static_cast<double>(t1 - t0));
  }
  // Last, so that nothing can fail after it (the destructor unregisters them): the port's link-state, reset and
  // removal events wake the monitor. One that comes before start() is seen by start()'s first look.
  for (rte_eth_event_type e : kWatchedEvents) {
    if (int rc = rte_eth_dev_callback_register(id, e, onEthEvent, p.watch.get()); rc != 0) {
      for (rte_eth_event_type done : kWatchedEvents) {
        if (done == e) break;
        rte_eth_dev_callback_unregister(id, done, onEthEvent, p.watch.get());
      }
      return absl::InternalError(
          absl::StrCat("port '", pc.device, "': cannot register for the device's events: ", rte_strerror(-rc)));
    }
  }
  p.callbacks = true;
  ports_.push_back(std::move(p));
  capture_ports_.push_back(std::move(lp));
  return absl::OkStatus();
}

// The queues (on the port's own mempool), the start and promiscuous mode, after rte_eth_dev_configure: at set-up,
// and again after a device reset.
absl::Status DpdkBackend::setUpQueuesAndStart(Port& p) {
  const uint16_t id = p.port_id;
  for (uint16_t q = 0; q < p.queues; ++q) {
    if (int rc = rte_eth_rx_queue_setup(id, q, p.rx_desc, static_cast<unsigned>(p.socket), nullptr, p.pool); rc != 0) {
      return absl::InternalError(
          absl::StrCat("port '", p.name, "': RX queue ", q, " set-up failed: ", rte_strerror(-rc)));
    }
  }
  for (uint16_t q = 0; q < p.tx_queues; ++q) {
    if (int rc = rte_eth_tx_queue_setup(id, q, p.tx_desc, static_cast<unsigned>(p.socket), nullptr); rc != 0) {
      return absl::InternalError(absl::StrCat("port '", p.name, "': TX queue ", q, " set-up failed (driver ", p.driver,
                                              "): ", rte_strerror(-rc)));
    }
  }
  if (int rc = rte_eth_dev_start(id); rc != 0) {
    return absl::InternalError(absl::StrCat("port '", p.name, "': start failed: ", rte_strerror(-rc)));
  }
  p.started = true;
  rte_eth_promiscuous_enable(id);  // a mirror port receives frames for other MACs; vdevs may not support it
  return absl::OkStatus();
}

absl::Status DpdkBackend::init() {
  if (cfg_.ports.empty()) return absl::InvalidArgumentError("dpdk.ports: at least one port is needed");
  if (cfg_.burst == 0 || cfg_.burst > kMaxBurst) return absl::InvalidArgumentError("dpdk.burst: must be in 1..512");
  if (absl::Status s = initEal(); !s.ok()) return s;
  for (size_t i = 0; i < cfg_.ports.size(); ++i) {
    if (absl::Status s = initPort(cfg_.ports[i], i); !s.ok()) return s;
  }
  // RX queues over the worker lcores, round robin. The main lcore runs the control loop, and the port workers
  // (threads it starts, which inherit its CPU set) run beside it.
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) lcores_.push_back(Lcore{lcore, {}, this});
  if (lcores_.empty()) {
    return absl::InvalidArgumentError(
        "EAL lcores: at least two are needed (e.g. -l 0-1): the main lcore runs the "
        "port workers, the others poll RX queues");
  }
  for (size_t i = 0; i < queues_.size(); ++i) {
    queues_[i]->nic_clock = ports_[queues_[i]->port_index].nic_clock;
    lcores_[i % lcores_.size()].queues.push_back(queues_[i].get());
  }
  std::erase_if(lcores_, [](const Lcore& l) { return l.queues.empty(); });
  return absl::OkStatus();
}

absl::Status DpdkBackend::start() {
  rx_stop_.store(false);
  for (Lcore& lc : lcores_) {
    if (int rc = rte_eal_remote_launch(&DpdkBackend::lcoreMain, &lc, lc.id); rc != 0) {
      rx_stop_.store(true);
      rte_eal_mp_wait_lcore();
      return absl::InternalError(absl::StrCat("cannot launch RX on lcore ", lc.id, ": ", rte_strerror(-rc)));
    }
  }
  running_ = true;
  // The link as capture begins (each port's `since`); a port whose link is down already is said once now.
  const int64_t now = realtimeNs();
  for (size_t i = 0; i < ports_.size(); ++i) {
    Port& p = ports_[i];
    rte_eth_link link{};
    int rc;
    {
      std::lock_guard<std::mutex> dev(p.watch->dev_mu);
      rc = rte_eth_link_get_nowait(p.port_id, &link);
    }
    std::lock_guard<std::mutex> g(state_mu_);
    p.watch->state.since_ns = now;
    p.watch->state.queue_stalled.assign(p.queues, false);
    if (rc == 0 && link.link_status != RTE_ETH_LINK_UP) {
      p.watch->state.up = false;
      std::fprintf(stderr, "burstscope: dpdk port '%s': link down at %s (at start)\n", p.name.c_str(),
                   utcMillis(now).c_str());
    }
  }
  {
    std::lock_guard<std::mutex> g(wake_.mu);
    wake_.stop = false;
    wake_.kick = false;
  }
  monitor_ = std::thread([this] { monitorLoop(); });
  pthread_setname_np(monitor_.native_handle(), "bs-dpdk-monitor");
  return absl::OkStatus();
}

void DpdkBackend::stop() {
  if (!running_) return;
  // The monitor first: no reset recovery runs while the capture closes (one under way ends first).
  {
    std::lock_guard<std::mutex> g(wake_.mu);
    wake_.stop = true;
  }
  wake_.cv.notify_all();
  if (monitor_.joinable()) monitor_.join();
  rx_stop_.store(true, std::memory_order_release);
  rte_eal_mp_wait_lcore();
  running_ = false;
}

int DpdkBackend::lcoreMain(void* arg) {
  auto* lc = static_cast<Lcore*>(arg);
  // The EAL made this thread before set-up ended; it takes the process's reduced capabilities now.
  if (absl::Status s = dropThreadCapabilities(); !s.ok()) {
    std::fprintf(stderr, "burstscope: lcore %u: %s\n", lc->id, std::string(s.message()).c_str());
    std::abort();  // never capture with more privilege than the rest of the process
  }
  lc->owner->rxLoop(*lc);
  return 0;
}

void DpdkBackend::tick(RxQueue& q, int64_t now_ns) { q.producer->tick(now_ns); }

// The port's hold changed (rare; the RX lcore's own thread): an odd value is acknowledged once this queue is no
// longer being polled (the last burst was handled in full); an even one lets it poll again, after a reset on a
// device whose clock may have started anew.
void DpdkBackend::holdChanged(RxQueue& q, const Port& port, uint64_t gen) {
  q.seen_gen = gen;
  if ((gen & 1) != 0) {
    q.producer->flush();  // the records of bursts not yet published, first (nothing when none wait)
    q.hold_ack.store(gen, std::memory_order_release);
    return;
  }
  uint64_t dev;
  if (port.ts == TsSource::kNic && rte_eth_read_clock(q.port_id, &dev) == 0) q.nic_clock.rebase(dev, realtimeNs());
}

// Re-reads CLOCK_REALTIME against the TSC (and each NIC-timestamped queue's device clock against it), so
// that drift never accumulates past one period; the correction each time is the error that had built up.
void DpdkBackend::resync(Lcore& lc, CounterClock& tsc) {
  auto [c, r] = tscRealtimePair();
  tsc.set(c, r, tsc_hz_);
  storeMax(max_step_ns_, tsc.maxStepNs());
  for (RxQueue* q : lc.queues) {
    if (ports_[q->port_index].ts != TsSource::kNic || (q->seen_gen & 1) != 0) continue;
    uint64_t dev;
    if (rte_eth_read_clock(q->port_id, &dev) != 0) continue;
    const int64_t now = realtimeNs();
    // Frequency from the span since the last synchronisation, then re-anchor at this reading.
    const double span_ns = static_cast<double>(now - q->nic_clock.toNs(q->nic_clock.base()));
    const double hz = span_ns > 0 ? static_cast<double>(dev - q->nic_clock.base()) * 1e9 / span_ns : q->nic_clock.hz();
    q->nic_clock.set(dev, now, hz > 0 ? hz : q->nic_clock.hz());
    storeMax(max_step_ns_, q->nic_clock.maxStepNs());
  }
}

void DpdkBackend::rxLoop(Lcore& lc) {
  const uint16_t burst = cfg_.burst;
  std::vector<rte_mbuf*> mbufs(burst);
  const int ts_off = ts_dynfield_;
  const uint64_t ts_flag = ts_flag_;
  CounterClock tsc;
  {
    auto [c, r] = tscRealtimePair();
    tsc.set(c, r, tsc_hz_);
  }
  const uint64_t resync_ticks = static_cast<uint64_t>(cfg_.tsc_resync_s * tsc_hz_);
  const uint64_t tick_ticks = static_cast<uint64_t>(tsc_hz_ / 10'000);  // idle watermark every 100 us
  // Replay pacing (net_pcap): recorded time of the first packet and the TSC when it was delivered.
  const double speed = cfg_.replay_speed;
  int64_t anchor_ts = INT64_MIN;
  uint64_t anchor_tsc = 0;

  while (!rx_stop_.load(std::memory_order_acquire)) {
    for (RxQueue* qp : lc.queues) {
      RxQueue& q = *qp;
      Port& port = ports_[q.port_index];
      // A device reset or removal under way (the monitor's hold): the queue is not polled, only ticked.
      q.rounds.store(q.rounds.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      const uint64_t gen = q.hold_gen->load(std::memory_order_acquire);
      if (gen != q.seen_gen) [[unlikely]]
        holdChanged(q, port, gen);
      const uint16_t n = (gen & 1) != 0 ? 0 : rte_eth_rx_burst(q.port_id, q.queue_id, mbufs.data(), burst);
      const uint64_t now_tsc = rte_rdtsc();
      if (n == 0) {
        // The queue ran dry: what full bursts left unpublished goes to the worker now.
        q.producer->flush();  // returns at once when nothing waits
        if (now_tsc - q.last_tick_tsc >= tick_ticks) {
          q.last_tick_tsc = now_tsc;
          int64_t wm = q.last_ts;
          if (port.ts != TsSource::kPcapFile) {
            wm = std::max(wm, tsc.toNs(now_tsc));
          } else if (speed > 0 && anchor_ts != INT64_MIN) {
            // Paced replay: recorded time moves on with the wall clock, so intervals close in silence.
            const double elapsed = static_cast<double>(now_tsc - anchor_tsc) * 1e9 / tsc_hz_;
            wm = std::max(wm, anchor_ts + static_cast<int64_t>(elapsed * speed));
          }
          tick(q, wm);
        }
        continue;
      }
      const int64_t burst_ns = tsc.toNs(now_tsc);
      for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = mbufs[i];
        if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(mbufs[i + 1], void*));
        int64_t ts = burst_ns;
        bool recorded = false;  // a file's own time, which may go back (the file's order is the file's)
        if (ts_off >= 0 && (m->ol_flags & ts_flag)) {
          const uint64_t raw = *RTE_MBUF_DYNFIELD(m, ts_off, rte_mbuf_timestamp_t*);
          if (port.ts == TsSource::kPcapFile) {
            ts = static_cast<int64_t>(raw) * 1000;  // net_pcap: microseconds since the epoch
            recorded = true;
          } else if (port.ts == TsSource::kNic) {
            ts = q.nic_clock.toNs(raw);
          }
        }
        // Per queue, time we stamp never goes backwards (a re-synchronisation step is absorbed here). That includes
        // a net_pcap port's frames that come without the file's time: with infinite_rx=1, DPDK 22.11's net_pcap
        // hands out copies without the timestamp field, so they take the burst's. Unguarded, the re-synchronisations'
        // steps back (up to 1.8 ms on a VM here) made the worker put 50,944 records back in order in a 3 s run, each
        // behind the whole reorder horizon (bench/README.md, issue 41's twenty-fourth session).
        if (!recorded && ts < q.last_ts) ts = q.last_ts;
        q.producer->add({rte_pktmbuf_mtod(m, const uint8_t*), m->data_len}, m->pkt_len, ts);
        q.last_ts = std::max(q.last_ts, ts);
      }
      rte_pktmbuf_free_bulk(mbufs.data(), n);
      if (speed > 0) {
        // Hold the burst until its last packet's recorded time, scaled, has come.
        if (anchor_ts == INT64_MIN) {
          anchor_ts = q.producer->pendingFirstTs();
          anchor_tsc = now_tsc;
        }
        const double due = static_cast<double>(q.producer->pendingLastTs() - anchor_ts) / speed;
        const uint64_t due_tsc = anchor_tsc + static_cast<uint64_t>(std::max(0.0, due) * tsc_hz_ / 1e9);
        while (rte_rdtsc() < due_tsc && !rx_stop_.load(std::memory_order_relaxed)) {
          const double wait_us = static_cast<double>(due_tsc - rte_rdtsc()) * 1e6 / tsc_hz_;
          if (wait_us > 200)
            rte_delay_us_sleep(static_cast<unsigned>(std::min(wait_us - 100, 10'000.0)));
          else
            rte_pause();
        }
      }
      // Published when the queue has no full burst waiting (a short one), once publish_every records wait, or when
      // the ring was full (its slots are all reserved: the worker must have them to free any): at full rate a
      // publish every few bursts, not at each. A publish's sequentially consistent store waits for the records'
      // streaming stores to reach memory where they stream (AMD), and at one per burst it was 7% of the RX lcore's time
      // on the trace loop there (bench/README.md). A paced replay publishes each burst when it is due.
      if (n < burst || speed > 0 || q.producer->pendingCount() >= q.publish_every || q.producer->pendingDrops() != 0) {
        q.producer->flush();
      }
      q.last_tick_tsc = now_tsc;
    }
    if (rte_rdtsc() - tsc.base() >= resync_ticks) resync(lc, tsc);
  }
  // Final watermark: nothing more will come from these queues.
  for (RxQueue* qp : lc.queues) {
    RxQueue& q = *qp;
    int64_t wm = q.last_ts;
    if (ports_[q.port_index].ts != TsSource::kPcapFile) wm = std::max(wm, tsc.toNs(rte_rdtsc()));
    tick(q, wm);
  }
}

// Wakes at once on a device event, and every kLinkPoll anyway, until stop().
void DpdkBackend::monitorLoop() {
  std::unique_lock<std::mutex> l(wake_.mu);
  for (;;) {
    wake_.cv.wait_for(l, kLinkPoll, [this] { return wake_.stop || wake_.kick; });
    if (wake_.stop) return;
    wake_.kick = false;
    l.unlock();
    for (size_t i = 0; i < ports_.size(); ++i) watchPort(i);
    l.lock();
  }
}

// One look at a port: a removal or reset the device announced, then its link status (the one the link-state
// interrupt updated where the device has one, else the driver's own read).
void DpdkBackend::watchPort(size_t index) {
  Port& p = ports_[index];
  LinkWatch& w = *p.watch;
  if (w.gone) return;
  if (w.removed_event.exchange(false)) {
    deviceGone(index);
    return;
  }
  if (w.reset_event.exchange(false) || w.resetting) resetPort(index);
  if (w.gone || w.offline.load()) return;
  rte_eth_link link{};
  int rc;
  {
    std::lock_guard<std::mutex> dev(w.dev_mu);
    rc = rte_eth_link_get_nowait(p.port_id, &link);
  }
  if (rc == 0) noteLink(index, link.link_status == RTE_ETH_LINK_UP, realtimeNs(), nullptr);
  // A stalled RX lcore: it has not come round to a queue of the port for a second (a busy-polling lcore comes
  // round millions of times a second, held or not).
  for (const auto& q : queues_) {
    if (q->port_index != index || !q->stall.look(q->rounds.load(std::memory_order_relaxed), true)) continue;
    std::lock_guard<std::mutex> g(state_mu_);
    noteQueueStall(w.state, q->queue_id, q->stall.stalled(), realtimeNs(), "dpdk", p.name,
                   "its RX lcore has not polled it for 1 s");
  }
}

// A change of the link is logged once with its time, and counted (a down); false if it was so already. `why`:
// what brought it about, if not the link itself.
bool DpdkBackend::noteLink(size_t index, bool up, int64_t now_ns, const char* why) {
  std::lock_guard<std::mutex> g(state_mu_);
  return noteLinkChange(ports_[index].watch->state, up, now_ns, "dpdk", ports_[index].name, why);
}

// Asks every RX lcore polling one of the port's queues to stop polling it, and waits (bounded) until each has
// handled its last burst. False if one did not answer in time (the hold stays: see unpark()).
bool DpdkBackend::park(size_t index) {
  LinkWatch& w = *ports_[index].watch;
  const uint64_t gen = w.hold_gen.load() | 1;
  w.hold_gen.store(gen);
  const int64_t deadline = clockNs(CLOCK_MONOTONIC) + 2'000'000'000;
  for (const auto& q : queues_) {
    if (q->port_index != index) continue;
    while (q->hold_ack.load(std::memory_order_acquire) != gen) {
      if (clockNs(CLOCK_MONOTONIC) > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  return true;
}

void DpdkBackend::unpark(size_t index) {
  LinkWatch& w = *ports_[index].watch;
  const uint64_t gen = w.hold_gen.load();
  if ((gen & 1) != 0) w.hold_gen.store(gen + 1, std::memory_order_release);
}

// Before a reset (RX parked, dev_mu held): the device's counts so far go into the port's bases. Of the frames
// the device counted since the last restart, those RX did not read are lost with the reset's cleared queues.
void DpdkBackend::retireStats(size_t index) {
  const Port& p = ports_[index];
  LinkWatch& w = *p.watch;
  uint64_t rx = 0;
  for (const auto& q : queues_) {
    if (q->port_index == index) rx += q->producer->counters().received.load(std::memory_order_acquire);
  }
  rte_eth_stats s{};
  const bool have = rte_eth_stats_get(p.port_id, &s) == 0;
  std::lock_guard<std::mutex> g(state_mu_);
  const uint64_t rx_since = rx - w.rx_at_reset;
  w.rx_at_reset = rx;
  if (!have) return;
  const rte_eth_stats& z = w.zero;
  auto since = [](uint64_t now, uint64_t zero) { return now >= zero ? now - zero : now; };
  const uint64_t device = since(s.ipackets, z.ipackets);
  const uint64_t lost = device > rx_since ? device - rx_since : 0;
  w.reset_lost += lost;
  w.base_received += device - lost;
  w.base_bytes += since(s.ibytes, z.ibytes);
  w.base_missed += since(s.imissed, z.imissed);
  w.base_errors += since(s.ierrors, z.ierrors);
  w.base_no_mbuf += since(s.rx_nombuf, z.rx_nombuf);
  for (uint16_t q = 0; q < p.queues && q < RTE_ETHDEV_QUEUE_STAT_CNTRS; ++q) {
    w.base_queue[q] += since(s.q_ipackets[q], z.q_ipackets[q]);
  }
  w.zero = rte_eth_stats{};
  w.counted = true;
}

// The device asked for a reset (RTE_ETH_EVENT_INTR_RESET). DPDK's recovery, off the interrupt thread: RX stops
// polling the port, rte_eth_dev_reset, then the port is configured, its queues set up on the same mempool and
// started again as at set-up, and RX polls it again. The link counts as down from the event until the device
// says it is up again. A reset that fails is logged once and the port stays down (not present) until the end;
// -EAGAIN is tried again at each look, kResetTries times in all.
void DpdkBackend::resetPort(size_t index) {
  Port& p = ports_[index];
  LinkWatch& w = *p.watch;
  if (!w.resetting) {
    if (!w.reset_said) {
      w.reset_said = true;
      w.reset_at_ns = realtimeNs();
      if (!noteLink(index, false, w.reset_at_ns, "device reset, re-attaching")) {
        std::fprintf(stderr, "burstscope: dpdk port '%s': device reset at %s (the link was down), re-attaching\n",
                     p.name.c_str(), utcMillis(w.reset_at_ns).c_str());
      }
    }
    w.reset_tries = 0;
    if (!park(index)) {  // an RX lcore did not answer within 2 s: the next look tries again
      unpark(index);
      w.reset_event.store(true);
      return;
    }
    w.resetting = true;
  }
  std::unique_lock<std::mutex> dev(w.dev_mu);
  if (w.reset_tries == 0) retireStats(index);
  w.offline.store(true, std::memory_order_release);
  ++w.reset_tries;
  int rc = rte_eth_dev_reset(p.port_id);
  if (rc == -EAGAIN && w.reset_tries < kResetTries) return;  // the device asks to be tried again later
  absl::Status s =
      rc == 0 ? absl::OkStatus() : absl::UnavailableError(absl::StrCat("rte_eth_dev_reset: ", rte_strerror(-rc)));
  if (s.ok()) {
    rc = rte_eth_dev_configure(p.port_id, p.queues, p.tx_queues, &p.conf);
    if (rc != 0) s = absl::InternalError(absl::StrCat("configure failed: ", rte_strerror(-rc)));
  }
  if (s.ok()) s = setUpQueuesAndStart(p);
  if (s.ok()) {
    // The counts start anew; where the device cannot reset them, from what they are now.
    rte_eth_stats z{};
    if (rte_eth_stats_reset(p.port_id) != 0 && rte_eth_stats_get(p.port_id, &z) != 0) z = rte_eth_stats{};
    std::lock_guard<std::mutex> g(state_mu_);
    w.zero = z;
    w.state.present = true;
    ++w.state.reattached;
  }
  const int64_t now = realtimeNs();
  w.resetting = false;
  w.reset_said = false;
  if (!s.ok()) {
    w.gone = true;  // RX stays parked, nothing reads the device again
    {
      std::lock_guard<std::mutex> g(state_mu_);
      w.state.present = false;
    }
    std::fprintf(stderr,
                 "burstscope: dpdk port '%s': device reset at %s failed after %d attempt%s (%s): the port stays "
                 "down until capture ends\n",
                 p.name.c_str(), utcMillis(now).c_str(), w.reset_tries, w.reset_tries == 1 ? "" : "s",
                 std::string(s.message()).c_str());
    return;
  }
  w.offline.store(false, std::memory_order_release);
  dev.unlock();
  unpark(index);
  std::fprintf(stderr,
               "burstscope: dpdk port '%s': re-attached at %s after a device reset (%u RX queue%s restarted on the "
               "same mempool in %.1f s)\n",
               p.name.c_str(), utcMillis(now).c_str(), p.queues, p.queues == 1 ? "" : "s",
               static_cast<double>(now - w.reset_at_ns) / 1e9);
}

// The device was removed (RTE_ETH_EVENT_INTR_RMV): logged once, RX stops polling the port, and the port stays
// down and not present until capture ends. Nothing reads the device again: its own counts are no longer
// reported (unless a reset under way had kept them), RX's stand.
void DpdkBackend::deviceGone(size_t index) {
  Port& p = ports_[index];
  LinkWatch& w = *p.watch;
  const int64_t now = realtimeNs();
  if (!noteLink(index, false, now, "device removed; the port stays down until capture ends")) {
    std::fprintf(stderr, "burstscope: dpdk port '%s': device removed at %s; the port stays down until capture ends\n",
                 p.name.c_str(), utcMillis(now).c_str());
  }
  park(index);  // the hold stays whether or not every lcore answered in time
  {
    std::lock_guard<std::mutex> dev(w.dev_mu);  // a statistics read under way ends first
    w.offline.store(true, std::memory_order_release);
  }
  w.resetting = false;
  w.gone = true;
  std::lock_guard<std::mutex> g(state_mu_);
  w.state.present = false;
}

std::optional<LinkState> DpdkBackend::linkState(size_t index) const {
  std::lock_guard<std::mutex> g(state_mu_);
  return ports_[index].watch->state;
}

DeviceStats DpdkBackend::deviceStats(size_t index) const {
  DeviceStats d;
  const Port& p = ports_[index];
  LinkWatch& w = *p.watch;
  // The device is read unless the monitor has it (a reset under way, a device gone): then the counts from before.
  std::unique_lock<std::mutex> dev(w.dev_mu, std::defer_lock);
  while (!w.offline.load(std::memory_order_acquire) && !dev.try_lock()) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));  // the monitor's link read takes microseconds
  }
  rte_eth_stats s{};
  const bool have = dev.owns_lock() && rte_eth_stats_get(p.port_id, &s) == 0;
  {
    std::lock_guard<std::mutex> g(state_mu_);
    d.link = w.state;
    if (have || w.counted) {
      const rte_eth_stats& z = w.zero;
      auto since = [](uint64_t now, uint64_t zero) { return now >= zero ? now - zero : now; };
      if (!have) s = z;  // nothing since the last restart
      d.received = w.base_received + since(s.ipackets, z.ipackets);
      d.bytes = w.base_bytes + since(s.ibytes, z.ibytes);
      // Frames the NIC lost before RX: no room in its RX ring (imissed), bad frames, no mbuf to put one in.
      d.drop_stages = {{"nic_missed", w.base_missed + since(s.imissed, z.imissed)},
                       {"nic_errors", w.base_errors + since(s.ierrors, z.ierrors)},
                       {"nic_no_mbuf", w.base_no_mbuf + since(s.rx_nombuf, z.rx_nombuf)}};
      // After a device reset: frames the device had counted that RX never read (its queues were cleared).
      if (w.state.reattached > 0 || w.reset_lost > 0) d.drop_stages.emplace_back("nic_reset_lost", w.reset_lost);
      const bool per_queue = (p.dev_flags & RTE_ETH_DEV_AUTOFILL_QUEUE_XSTATS) != 0;
      for (uint16_t q = 0; q < p.queues; ++q) {
        if (per_queue && q < RTE_ETHDEV_QUEUE_STAT_CNTRS) {
          d.queue_received.push_back(w.base_queue[q] + since(s.q_ipackets[q], z.q_ipackets[q]));
        } else {
          d.queue_received.push_back(std::nullopt);
        }
      }
    }
  }
  if (!dev.owns_lock()) return d;
  // The driver's own extended counters: everything past the generic names ethdev derives from rte_eth_stats
  // (as the device has them: a device reset restarts them).
  const int n = rte_eth_xstats_get_names(p.port_id, nullptr, 0);
  if (n > 0) {
    std::vector<rte_eth_xstat_name> names(static_cast<size_t>(n));
    std::vector<rte_eth_xstat> values(static_cast<size_t>(n));
    if (rte_eth_xstats_get_names(p.port_id, names.data(), static_cast<unsigned>(n)) == n &&
        rte_eth_xstats_get(p.port_id, values.data(), static_cast<unsigned>(n)) == n) {
      for (int i = 0; i < n; ++i) {
        const std::string_view name = names[i].name;
        static constexpr std::string_view generic[] = {"rx_good_packets", "tx_good_packets",          "rx_good_bytes",
                                                       "tx_good_bytes",   "rx_missed_errors",         "rx_errors",
                                                       "tx_errors",       "rx_mbuf_allocation_errors"};
        const bool is_generic = std::find(std::begin(generic), std::end(generic), name) != std::end(generic) ||
                                name.rfind("rx_q", 0) == 0 || name.rfind("tx_q", 0) == 0;
        if (!is_generic) d.extra.emplace_back(std::string(name), values[i].value);
      }
    }
  }
  return d;
}

TimestampInfo DpdkBackend::timestampInfo() const {
  TimestampInfo t;
  const TsSource src = ports_.empty() ? TsSource::kTsc : ports_.front().ts;
  t.max_resync_step_ns = max_step_ns_.load();
  switch (src) {
    case TsSource::kPcapFile:
      t.source = "pcap_file";
      t.description =
          "net_pcap replays the file's recorded timestamps, read at microsecond precision (with infinite_rx=1 its "
          "copies carry none: those frames are stamped at their RX burst, as tsc)";
      t.error_bound_ns = 1000;  // libpcap's microsecond read truncates the file's nanoseconds
      break;
    case TsSource::kNic:
      t.source = "nic";
      t.description = absl::StrCat("the NIC's RX timestamp (", ports_.front().nic_clock.hz() / 1e6,
                                   " MHz device clock), mapped to CLOCK_REALTIME");
      t.error_bound_ns = 1e9 / std::max(1.0, ports_.front().nic_clock.hz());
      break;
    case TsSource::kTsc:
      t.source = "tsc";
      t.description = absl::StrCat("one TSC read per RX burst (", tsc_hz_ / 1e9,
                                   " GHz), re-synchronised to "
                                   "CLOCK_REALTIME every ",
                                   cfg_.tsc_resync_s, " s");
      // A packet waits at most one full RX ring at line rate before the burst that reads it; the bound
      // is stated for the configured ring at the first port's link speed with minimum-size frames.
      t.error_bound_ns = static_cast<double>(cfg_.rx_descriptors) * 84 * 8 * 1e9 /
                         std::max(1.0, cfg_.ports.empty() ? 1e10 : cfg_.ports.front().link_bps);
      break;
  }
  return t;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CaptureSource>> openDpdk(const DpdkConfig& config) {
  static bool opened = false;  // the EAL initialises once per process
  if (opened) return absl::FailedPreconditionError("the DPDK backend can be opened once per process");
  opened = true;
  auto b = std::make_unique<DpdkBackend>(config);
  if (absl::Status s = b->init(); !s.ok()) return s;
  return std::unique_ptr<CaptureSource>(std::move(b));
}

}  // namespace burstscope
