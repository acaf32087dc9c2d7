#include "src/capture/afxdp/afxdp_backend.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "burstscope/status.h"
#include "src/capture/common/link_watch.h"

namespace burstscope {
namespace {

// The fill ring holds twice the UMEM's frames. The kernel makes received frames visible in the RX ring before it
// publishes that it took them from the fill ring (xsk_flush in net/xdp/xsk.c: the RX producer index, then the
// fill ring's consumer index; the copy path takes fill entries in batches it publishes only then), so for a
// moment the frames just received count as still in the fill ring: with a ring of just the frames, giving them
// back found no room (it happened once, in a replay: "fill ring has no room for 26 frames", and the capture
// aborted). With twice as many, every frame can be counted in the fill ring twice and the rest still fits.
uint32_t fillRingSize(uint32_t frames) { return 2 * frames; }

// An idle queue's watermark period once its whole port has been silent this long (AfXdpBackend::rxLoop).
constexpr int64_t kDeepIdleNs = 100'000'000;
constexpr int64_t kDeepIdleTickNs = 20'000'000;
// Interfaces re-created under a port's name that one run can re-attach to (Socket::spares).
constexpr uint32_t kSpareUmems = 3;

// CLOCK_REALTIME - CLOCK_MONOTONIC, from the tightest of a few (monotonic, realtime, monotonic) triples:
// the XDP program stamps frames with bpf_ktime_get_ns(), which is CLOCK_MONOTONIC.
int64_t monotonicToRealtime() {
  int64_t best_width = INT64_MAX, offset = 0;
  for (int i = 0; i < 5; ++i) {
    const int64_t a = clockNs(CLOCK_MONOTONIC);
    const int64_t r = clockNs(CLOCK_REALTIME);
    const int64_t b = clockNs(CLOCK_MONOTONIC);
    if (b - a < best_width) {
      best_width = b - a;
      offset = r - (a + (b - a) / 2);
    }
  }
  return offset;
}

// RX queues of an interface, as sysfs lists them.
uint32_t rxQueueCount(const std::string& ifname) {
  uint32_t n = 0;
  if (DIR* d = opendir(absl::StrCat("/sys/class/net/", ifname, "/queues").c_str())) {
    while (dirent* e = readdir(d)) {  // NOLINT(concurrency-mt-unsafe): this DIR is ours alone
      n += std::strncmp(e->d_name, "rx-", 3) == 0;
    }
    closedir(d);
  }
  return n;
}

std::optional<uint64_t> sysfsCounter(const std::string& ifname, const char* name) {
  std::ifstream in(absl::StrCat("/sys/class/net/", ifname, "/statistics/", name));
  uint64_t v;
  if (in >> v) return v;
  return std::nullopt;
}

// The NIC's RX interrupt moderation: the longest a frame waits before the XDP program sees (and stamps)
// it, beyond the driver's own latency. nullopt where the driver does not say (veth).
std::optional<uint32_t> rxCoalesceUs(const std::string& ifname) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return std::nullopt;
  ethtool_coalesce ec{};
  ec.cmd = ETHTOOL_GCOALESCE;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&ec);
  const int rc = ioctl(fd, SIOCETHTOOL, &ifr);
  close(fd);
  if (rc != 0) return std::nullopt;
  return ec.rx_coalesce_usecs;
}

// Whether an interface is up with carrier (IFF_UP and IFF_RUNNING), as `ip link` shows UP and LOWER_UP; `fd` is
// any socket of the namespace (the monitor's own, kept open).
bool interfaceUp(int fd, const std::string& ifname) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  return ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP) != 0 && (ifr.ifr_flags & IFF_RUNNING) != 0;
}

// XDP_STATISTICS of one socket; kernels before 5.9 return only the first three fields (checked by size).
struct XskStats {
  uint64_t rx_dropped = 0, rx_invalid_descs = 0, tx_invalid_descs = 0;
  std::optional<uint64_t> rx_ring_full, rx_fill_ring_empty_descs, tx_ring_empty_descs;

  // Adds a retired socket's final counts (a re-created interface's sockets are new).
  void add(const XskStats& o) {
    rx_dropped += o.rx_dropped;
    rx_invalid_descs += o.rx_invalid_descs;
    tx_invalid_descs += o.tx_invalid_descs;
    auto sum = [](std::optional<uint64_t>& a, const std::optional<uint64_t>& b) {
      if (b) a = a.value_or(0) + *b;
    };
    sum(rx_ring_full, o.rx_ring_full);
    sum(rx_fill_ring_empty_descs, o.rx_fill_ring_empty_descs);
    sum(tx_ring_empty_descs, o.tx_ring_empty_descs);
  }
};

struct Socket {
  size_t port_index = 0;
  uint32_t queue_id = 0;
  void* area = nullptr;  // the UMEM
  size_t area_size = 0;
  xsk_umem* umem = nullptr;
  xsk_socket* xsk = nullptr;
  xsk_ring_prod fill{};
  xsk_ring_cons comp{};
  xsk_ring_cons rx{};
  bool zero_copy = false;
  std::unique_ptr<QueueProducer> producer;  // decode, enqueue, count, tick
  std::thread thread;
  // Frames the program sent without metadata (a driver with no room for it): stamped on arrival here.
  std::atomic<uint64_t> no_metadata{0};
  // When a queue of this socket's port last had frames (CLOCK_MONOTONIC ns, stored at most once a millisecond by
  // each queue): while any has, an idle queue ticks every millisecond; after kDeepIdleNs of silence on the
  // whole port, every kDeepIdleTickNs.
  std::atomic<int64_t>* port_traffic_ns = nullptr;
  // Re-attaching to a re-created interface (AfXdpBackend::reattach): the monitor asks the RX thread to park,
  // the thread drains its ring and parks (it only ticks while parked), the monitor replaces the socket and
  // releases it. xsk, umem and the rings change only while the thread is parked.
  std::atomic<bool> park{false}, parked{false};
  XskStats retired;            // the final counts of this queue's earlier sockets (guarded by the backend's mu_)
  QueueStallWatch stall;       // the monitor's: frames in the RX ring while the RX thread takes none
  uint16_t bind_flags = 0;     // as bound at start (zero-copy or copy), for a re-attach
  bool meta_in_frame = false;  // the program writes each frame's metadata as its first bytes (bs_capture_head)
  // UMEMs registered on this socket's memory at start, each on an AF_XDP socket of its own, for re-attaching
  // after set-up: registering a UMEM locks memory (CAP_IPC_LOCK) and a new AF_XDP socket needs CAP_NET_RAW,
  // both gone by then, while binding a socket that exists does not. The same pages, pinned again: no memory.
  // In place for the UMEM's life: libxdp keeps the addresses of the fill and completion rings given to
  // xsk_umem__create and reads them again in xsk_umem__delete (to unmap them), so they never move or copy.
  struct Spare {
    xsk_umem* umem = nullptr;
    xsk_ring_prod fill{};
    xsk_ring_cons comp{};
  };
  std::array<Spare, kSpareUmems> spares{};
  uint32_t spares_left = 0;  // spares[0 .. spares_left) are unused

  ~Socket() {
    if (xsk) xsk_socket__delete(xsk);
    if (umem) xsk_umem__delete(umem);
    for (uint32_t k = 0; k < spares_left; ++k) xsk_umem__delete(spares[k].umem);
    if (area) munmap(area, area_size);
  }
};

// The interface's own drops before XDP runs (NIC ring overruns, bad frames), where the driver reports them
// in sysfs: (our stage name, the sysfs counter).
constexpr std::pair<const char*, const char*> kNicStages[] = {{"nic_missed", "rx_missed_errors"},
                                                              {"nic_errors", "rx_errors"}};

struct Port {
  AfXdpPortConfig config;
  std::unique_ptr<XdpProgram> program;
  std::string replaced;  // a stale program removed at start
  // The NIC counters when our program was attached: they count since the interface came up, the
  // program's verdicts since the attach, so the ledger takes the NIC's drops since then.
  std::optional<uint64_t> nic_base[std::size(kNicStages)];
  // Capture faults (the monitor thread; guarded by the backend's mu_ where deviceStats reads them). A
  // re-created interface gets the same program (its counters carry on) and the NIC drops of the earlier
  // interfaces count as last read, at most 100 ms before they went away.
  uint64_t nic_retired[std::size(kNicStages)] = {};
  uint64_t nic_last[std::size(kNicStages)] = {};
  unsigned ifindex = 0;  // the interface the program and sockets are attached to
  LinkState link;
  std::string attach_error;                      // the last failed re-attach, logged once
  std::unique_ptr<KernelBinSource> kernel_bins;  // the program's bins, for the port's worker (none: NIC stamps)
  int64_t bin_clock = 0;                         // the offset last given to the program (the monitor's)
};

// The XDP program's 100 µs bins of one port (SPEC "Overload"), read by the port's worker at each interval close.
// They count every frame the program would capture, stamped by the same reading as the frame's metadata, so a
// frame the RX thread receives lies in the bin the program counted it in. A frame that came without metadata
// (a driver with no room for it) was stamped in user space and may lie in another bin: from the first such
// frame the bins are not used (read says so) and the series is the RX threads' alone.
class XdpKernelBins final : public KernelBinSource {
 public:
  explicit XdpKernelBins(const XdpProgram* program) : program_(program) {}
  void addQueue(const std::atomic<uint64_t>* no_metadata) { no_metadata_.push_back(no_metadata); }
  bool read(int64_t from, int64_t to, std::vector<KernelBinCount>* out, uint64_t* lost) const override {
    for (const auto* n : no_metadata_) {
      if (n->load(std::memory_order_relaxed) != 0) return false;
    }
    if (from < 0 || to <= from) return true;
    *lost += program_->readBins(static_cast<uint64_t>(from), static_cast<uint64_t>(to), out);
    return true;
  }

 private:
  const XdpProgram* program_;
  std::vector<const std::atomic<uint64_t>*> no_metadata_;
};

XskStats readXskStats(int fd) {
  xdp_statistics st{};
  socklen_t len = sizeof(st);
  XskStats out;
  if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len) != 0) return out;
  out.rx_dropped = st.rx_dropped;
  out.rx_invalid_descs = st.rx_invalid_descs;
  out.tx_invalid_descs = st.tx_invalid_descs;
  if (len >= sizeof(st)) {
    out.rx_ring_full = st.rx_ring_full;
    out.rx_fill_ring_empty_descs = st.rx_fill_ring_empty_descs;
    out.tx_ring_empty_descs = st.tx_ring_empty_descs;
  }
  return out;
}

class AfXdpBackend final : public CaptureSource {
 public:
  explicit AfXdpBackend(AfXdpConfig c) : cfg_(std::move(c)) {}
  ~AfXdpBackend() override {
    stop();
    sockets_.clear();  // sockets close before their program goes
  }

  absl::Status init();
  std::string name() const override { return "af_xdp"; }
  const std::vector<CapturePort>& ports() const override { return capture_ports_; }
  absl::Status start() override;
  void stop() override;
  DeviceStats deviceStats(size_t port) const override;
  std::optional<LinkState> linkState(size_t port) const override;
  TimestampInfo timestampInfo() const override;
  std::vector<std::string> notes() const override;
  absl::Status setFrameTap(size_t port, size_t queue, FrameTap* tap) override {
    return setQueueFrameTap(sockets_, port, queue, tap);
  }

 private:
  XdpProgramConfig programConfig() const;  // every port's program's, as cfg_ says (after init: its snap length)
  absl::Status initPort(const AfXdpPortConfig& pc, size_t index);
  absl::Status openSocket(Port& port, size_t index, uint32_t queue);
  absl::Status bindSocket(Socket& s, const Port& port);    // UMEM, socket, fill ring, XSKMAP entry
  void makeSpares(Socket& s);                              // Socket::spares, as many as can be registered
  absl::Status rebindSocket(Socket& s, const Port& port);  // a spare UMEM, bound to the port's new interface
  absl::Status fillAndEnter(Socket& s, const Port& port);  // every frame to the fill ring; the XSKMAP entry
  void rxLoop(Socket& s);
  void parkedWait(Socket& s, QueueProducer& producer, int64_t offset, int64_t& last_ts);
  // Capture faults: watches every port's interface every 100 ms; logs, counts, re-attaches.
  void monitorLoop();
  void watchPort(size_t index, int fd);
  void reattach(size_t index, unsigned ifindex);

  AfXdpConfig cfg_;
  std::vector<Port> ports_;
  std::vector<std::unique_ptr<Socket>> sockets_;
  std::vector<CapturePort> capture_ports_;
  std::atomic<bool> rx_stop_{false};
  bool running_ = false;
  std::optional<uint32_t> rx_coalesce_us_;  // the first port's, read once at start (an ioctl)
  std::atomic<int64_t> max_step_ns_{0};
  std::deque<std::atomic<int64_t>> port_traffic_ns_;  // per port (Socket::port_traffic_ns)
  // Guards what the monitor changes (Port::nic_*, ifindex, link; Socket::xsk, umem, rings, retired, spares) against
  // deviceStats and notes on the control thread. Never taken by an RX thread.
  mutable std::mutex mu_;
  std::thread monitor_;
  std::mutex monitor_mu_;
  std::condition_variable monitor_cv_;
  bool monitor_stop_ = false;  // guarded by monitor_mu_
};

absl::Status AfXdpBackend::openSocket(Port& port, size_t index, uint32_t queue) {
  auto s = std::make_unique<Socket>();
  s->port_index = index;
  s->meta_in_frame = port.program->metaInFrame();
  s->queue_id = queue;
  while (port_traffic_ns_.size() <= index) port_traffic_ns_.emplace_back(0);
  s->port_traffic_ns = &port_traffic_ns_[index];
  s->area_size = static_cast<size_t>(cfg_.frames) * cfg_.frame_size;
  void* area = mmap(nullptr, s->area_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat("interface '", port.config.interface, "' queue ", queue,
                                                     ": cannot map ", s->area_size, " bytes of UMEM"));
  }
  s->area = area;
  if (absl::Status st = bindSocket(*s, port); !st.ok()) return st;
  makeSpares(*s);
  s->producer = std::make_unique<QueueProducer>(cfg_.decoder, cfg_.ring_capacity);
  capture_ports_[index].rings.push_back(&s->producer->ring());
  capture_ports_[index].counters.push_back(&s->producer->counters());
  capture_ports_[index].bins.push_back(s->producer->bins());
  if (port.kernel_bins) static_cast<XdpKernelBins&>(*port.kernel_bins).addQueue(&s->no_metadata);
  sockets_.push_back(std::move(s));
  return absl::OkStatus();
}

absl::Status AfXdpBackend::bindSocket(Socket& sock, const Port& port) {
  Socket* s = &sock;
  const uint32_t queue = s->queue_id;
  const bool skb = port.program->mode() == XdpMode::kSkb;
  std::vector<std::pair<uint16_t, bool>> binds;  // bind flags, zero-copy
  if (!skb && cfg_.zero_copy != ZeroCopy::kOff) binds.emplace_back(XDP_ZEROCOPY | XDP_USE_NEED_WAKEUP, true);
  if (cfg_.zero_copy != ZeroCopy::kOn) binds.emplace_back(XDP_COPY | XDP_USE_NEED_WAKEUP, false);
  if (binds.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("interface '", port.config.interface,
                                                   "': zero-copy needs native "
                                                   "XDP mode, and the program runs in skb mode"));
  }
  std::string failures;
  for (const auto& [flags, zc] : binds) {
    xsk_umem_config uc{};
    uc.fill_size = fillRingSize(cfg_.frames);
    uc.comp_size = XSK_RING_CONS__DEFAULT_NUM_DESCS;
    uc.frame_size = cfg_.frame_size;
    uc.frame_headroom = 0;
    uc.flags = 0;
    if (int rc = xsk_umem__create(&s->umem, s->area, s->area_size, &s->fill, &s->comp, &uc); rc != 0) {
      s->umem = nullptr;
      return absl::ResourceExhaustedError(absl::StrCat("interface '", port.config.interface, "' queue ", queue,
                                                       ": cannot register the UMEM: ", errnoText(-rc),
                                                       -rc == ENOBUFS ? " (raise RLIMIT_MEMLOCK or grant CAP_IPC_LOCK)"
                                                       : -rc == EPERM ? " (AF_XDP sockets need CAP_NET_RAW)"
                                                                      : ""));
    }
    xsk_socket_config sc{};
    sc.rx_size = cfg_.rx_ring;
    sc.tx_size = 0;
    sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
    sc.bind_flags = flags;
    const int rc = xsk_socket__create(&s->xsk, port.config.interface.c_str(), queue, s->umem, &s->rx, nullptr, &sc);
    if (rc == 0) {
      s->zero_copy = zc;
      s->bind_flags = flags;
      break;
    }
    s->xsk = nullptr;
    absl::StrAppend(&failures, failures.empty() ? "" : "; ", zc ? "zero-copy" : "copy", ": ", errnoText(-rc));
    xsk_umem__delete(s->umem);
    s->umem = nullptr;
  }
  if (s->xsk == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("interface '", port.config.interface, "' queue ", queue,
                                                      ": cannot bind an AF_XDP socket (", failures, ")"));
  }
  return fillAndEnter(*s, port);
}

absl::Status AfXdpBackend::fillAndEnter(Socket& s, const Port& port) {
  // Hand every frame to the kernel through the fill ring.
  uint32_t idx = 0;
  if (xsk_ring_prod__reserve(&s.fill, cfg_.frames, &idx) != cfg_.frames) {
    return absl::InternalError("the fill ring cannot take every UMEM frame");
  }
  for (uint32_t i = 0; i < cfg_.frames; ++i) {
    *xsk_ring_prod__fill_addr(&s.fill, idx + i) = static_cast<uint64_t>(i) * cfg_.frame_size;
  }
  xsk_ring_prod__submit(&s.fill, cfg_.frames);
  const int fd = xsk_socket__fd(s.xsk);
  const uint32_t key = s.queue_id;
  if (bpf_map_update_elem(port.program->xskMapFd(), &key, &fd, BPF_ANY) != 0) {
    return absl::InternalError(absl::StrCat("interface '", port.config.interface, "' queue ", s.queue_id,
                                            ": cannot enter the socket in the XSKMAP: ", errnoText(errno)));
  }
  return absl::OkStatus();
}

// As many spares as can be registered (kSpareUmems): without CAP_IPC_LOCK each is charged to RLIMIT_MEMLOCK,
// and a limit sized for the capture alone must not fail the start; fewer spares, fewer re-attaches (notes()).
void AfXdpBackend::makeSpares(Socket& s) {
  xsk_umem_config uc{};
  uc.fill_size = fillRingSize(cfg_.frames);
  uc.comp_size = XSK_RING_CONS__DEFAULT_NUM_DESCS;
  uc.frame_size = cfg_.frame_size;
  for (Socket::Spare& sp : s.spares) {
    if (xsk_umem__create(&sp.umem, s.area, s.area_size, &sp.fill, &sp.comp, &uc) != 0) {
      sp.umem = nullptr;
      break;
    }
    ++s.spares_left;
  }
}

// After set-up: a spare UMEM (its AF_XDP socket made at start) bound to the interface as at start.
absl::Status AfXdpBackend::rebindSocket(Socket& s, const Port& port) {
  if (s.spares_left == 0) {
    return absl::ResourceExhaustedError(absl::StrCat("queue ", s.queue_id, ": no spare UMEM left (", kSpareUmems,
                                                     " re-attaches per run): restart burstscope"));
  }
  // The RX thread works on copies of the rings (the same shared memory); libxdp keeps the spare's own, in place
  // in `spares`, which a former spare's xsk_umem__delete reads.
  const Socket::Spare& sp = s.spares[--s.spares_left];
  s.umem = sp.umem;
  s.fill = sp.fill;
  s.comp = sp.comp;
  xsk_socket_config sc{};
  sc.rx_size = cfg_.rx_ring;
  sc.tx_size = 0;
  sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
  sc.bind_flags = s.bind_flags;
  if (int rc = xsk_socket__create(&s.xsk, port.config.interface.c_str(), s.queue_id, s.umem, &s.rx, nullptr, &sc);
      rc != 0) {
    s.xsk = nullptr;
    return absl::FailedPreconditionError(
        absl::StrCat("queue ", s.queue_id, ": cannot bind an AF_XDP socket: ", errnoText(-rc)));
  }
  return fillAndEnter(s, port);
}

XdpProgramConfig AfXdpBackend::programConfig() const {
  XdpProgramConfig xc;
  xc.ip_only = cfg_.ip_only;
  xc.snaplen = cfg_.snaplen;
  xc.nic_timestamps = cfg_.timestamps == XdpTimestamps::kNic;
  return xc;
}

absl::Status AfXdpBackend::initPort(const AfXdpPortConfig& pc, size_t index) {
  const std::string& ifname = pc.interface;
  const unsigned ifindex = if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    return absl::NotFoundError(absl::StrCat("interface '", ifname, "' does not exist (in this network namespace)"));
  }
  const uint32_t have = rxQueueCount(ifname);
  uint32_t queues = pc.queues == 0 ? std::max(1u, have) : pc.queues;
  if (have > 0 && queues > have) {
    return absl::InvalidArgumentError(absl::StrCat("interface '", ifname, "': ", queues,
                                                   " RX queues asked for, "
                                                   "it has ",
                                                   have));
  }
  if (queues > BS_MAX_QUEUES) {
    return absl::InvalidArgumentError(absl::StrCat("interface '", ifname, "': at most ", BS_MAX_QUEUES, " queues"));
  }
  Port port;
  port.config = pc;
  port.config.queues = queues;
  const XdpProgramConfig xc = programConfig();
  auto prog = XdpProgram::attach(xc, ifname, cfg_.mode, &port.replaced);
  if (!prog.ok()) return prog.status();
  port.program = std::move(*prog);
  for (size_t i = 0; i < std::size(kNicStages); ++i) port.nic_base[i] = sysfsCounter(ifname, kNicStages[i].second);
  port.ifindex = ifindex;
  // The program's bins and frame stamps in CLOCK_REALTIME from here on (kept by the monitor thread). The NIC's
  // stamps are not the bins' reckoning: with them the series is the RX threads' alone.
  port.bin_clock = monotonicToRealtime();
  port.program->setBinClock(port.bin_clock);
  if (!xc.nic_timestamps && port.program->hasBins()) {
    port.kernel_bins = std::make_unique<XdpKernelBins>(port.program.get());
  } else if (!xc.nic_timestamps) {
    std::fprintf(stderr, "burstscope: af-xdp port '%s': %s; its series is its RX threads' alone (SPEC \"Overload\")\n",
                 ifname.c_str(), port.program->binsError().c_str());
  }
  if (const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); fd >= 0) {
    port.link.up = interfaceUp(fd, ifname);
    close(fd);
  }
  port.link.since_ns = clockNs(CLOCK_REALTIME);
  port.link.queue_stalled.assign(queues, false);
  ports_.push_back(std::move(port));
  CapturePort lp;
  lp.name = ifname;
  lp.link_bps = pc.link_bps;
  lp.kernel_bins = ports_.back().kernel_bins.get();
  capture_ports_.push_back(std::move(lp));
  for (uint32_t q = 0; q < queues; ++q) {
    if (absl::Status s = openSocket(ports_.back(), index, q); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status AfXdpBackend::init() {
  if (cfg_.ports.empty()) return absl::InvalidArgumentError("af-xdp.ports: at least one interface is needed");
  if (cfg_.frame_size != 2048 && cfg_.frame_size != 4096) {
    return absl::InvalidArgumentError("af-xdp.frame-size: must be 2048 or 4096");
  }
  auto pow2 = [](uint32_t v) { return v >= 64 && (v & (v - 1)) == 0; };
  if (!pow2(cfg_.frames) || !pow2(cfg_.rx_ring)) {
    return absl::InvalidArgumentError("af-xdp.frames and af-xdp.rx-ring: must be powers of two, at least 64");
  }
  if (cfg_.batch == 0 || cfg_.batch > cfg_.rx_ring) {
    return absl::InvalidArgumentError("af-xdp.batch: must be in 1..rx-ring");
  }
  // Room for the frame after the kernel's XDP headroom (and the metadata, where the program puts it in front of the
  // frame); longer frames are cut to the snap length first.
  const bool meta_in_frame = metaInFrameFor(programConfig());
  const uint32_t room =
      cfg_.frame_size - XDP_PACKET_HEADROOM - (meta_in_frame ? static_cast<uint32_t>(sizeof(bs_xdp_meta)) : 0);
  if (cfg_.snaplen == 0 || cfg_.snaplen > room) cfg_.snaplen = room;
  for (size_t i = 0; i < cfg_.ports.size(); ++i) {
    if (absl::Status s = initPort(cfg_.ports[i], i); !s.ok()) return s;
  }
  rx_coalesce_us_ = rxCoalesceUs(cfg_.ports.front().interface);
  return absl::OkStatus();
}

absl::Status AfXdpBackend::start() {
  rx_stop_.store(false);
  for (auto& s : sockets_) {
    Socket* sp = s.get();
    s->thread = std::thread([this, sp] { rxLoop(*sp); });
    // "bs-xsk-P-Q" in top and /proc: the capture threads apart from the analysing worker.
    pthread_setname_np(s->thread.native_handle(), absl::StrCat("bs-xsk-", sp->port_index, "-", sp->queue_id).c_str());
  }
  for (Port& p : ports_) {
    if (!p.link.up) {
      std::fprintf(stderr, "burstscope: af-xdp port '%s': link down at %s (at start)\n", p.config.interface.c_str(),
                   utcMillis(p.link.since_ns).c_str());
    }
  }
  monitor_stop_ = false;
  monitor_ = std::thread([this] { monitorLoop(); });
  pthread_setname_np(monitor_.native_handle(), "bs-xsk-monitor");
  running_ = true;
  return absl::OkStatus();
}

void AfXdpBackend::stop() {
  if (!running_) return;
  // The monitor first: no re-attach runs while the capture closes.
  {
    std::lock_guard<std::mutex> l(monitor_mu_);
    monitor_stop_ = true;
  }
  monitor_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  // Detach first: once no program runs, nothing more enters the sockets, and the RX threads drain what
  // did, so that the ledger closes exactly.
  for (Port& p : ports_) {
    p.program->detach();
  }
  rx_stop_.store(true, std::memory_order_release);
  for (auto& s : sockets_) {
    if (s->thread.joinable()) s->thread.join();
  }
  running_ = false;
}

void AfXdpBackend::rxLoop(Socket& s) {
  const uint32_t batch = cfg_.batch;
  QueueProducer& producer = *s.producer;
  int64_t offset = monotonicToRealtime();
  int64_t next_resync = clockNs(CLOCK_MONOTONIC) + static_cast<int64_t>(cfg_.resync_s * 1e9);
  int64_t last_ts = INT64_MIN, last_tick = 0, last_traffic = 0;
  int fd = xsk_socket__fd(s.xsk);
  uint8_t* const area = static_cast<uint8_t*>(s.area);
  bool drained_once = false;
  uint64_t idle_polls = 0;  // consecutive empty looks at the RX ring
  auto tick = [&producer](int64_t wm) { producer.tick(wm); };
  for (;;) {
    uint32_t idx = 0;
    const uint32_t n = xsk_ring_cons__peek(&s.rx, batch, &idx);
    const int64_t mono_now = clockNs(CLOCK_MONOTONIC);
    if (n == 0) {
      if (s.park.load(std::memory_order_acquire) && !rx_stop_.load(std::memory_order_acquire)) {
        parkedWait(s, producer, offset, last_ts);  // the ring is drained: the monitor may replace the socket
        if (s.xsk == nullptr) break;               // the backend is stopping with no socket to drain
        fd = xsk_socket__fd(s.xsk);
        continue;
      }
      if (rx_stop_.load(std::memory_order_acquire)) {
        // The program is detached: what is in the ring now is all there will be. Look twice, a
        // millisecond apart, for frames a driver was still writing.
        if (drained_once) break;
        drained_once = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      // Idle: a watermark now and then (the worker merges queues by them), else sleep in poll() until a
      // frame comes; 1 ms at most, the reorder horizon's order, so a quiet queue never holds others back long.
      // Once the whole port has been silent for kDeepIdleNs nobody waits for this queue's watermark but the
      // report intervals, and it ticks every kDeepIdleTickNs: an idle port costs tens of wake-ups a second,
      // not thousands (its worker wakes at each tick). poll() still returns at the first frame.
      const bool deep = mono_now - s.port_traffic_ns->load(std::memory_order_relaxed) >= kDeepIdleNs;
      const int64_t period = deep ? kDeepIdleTickNs : 1'000'000;
      if (mono_now - last_tick >= period || idle_polls == 0) {
        last_tick = mono_now;
        tick(std::max(last_ts, mono_now + offset));
      }
      ++idle_polls;
      if (xsk_ring_prod__needs_wakeup(&s.fill)) recvfrom(fd, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
      pollfd p{fd, POLLIN, 0};
      const int timeout_ms = static_cast<int>(std::max<int64_t>(1, (last_tick + period - mono_now) / 1'000'000));
      // A socket whose interface went away may report an error at once: wait the period out, never spin.
      if (poll(&p, 1, timeout_ms) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
      }
      continue;
    }
    drained_once = false;
    idle_polls = 0;
    if (mono_now - last_traffic >= 1'000'000) {
      last_traffic = mono_now;
      s.port_traffic_ns->store(mono_now, std::memory_order_relaxed);
    }
    uint32_t fidx = 0;
    // These n frames are out of the fill ring, and it has room for them even while the kernel has not yet
    // published that it took them (fillRingSize).
    if (xsk_ring_prod__reserve(&s.fill, n, &fidx) != n) {
      std::fprintf(stderr, "burstscope: internal error: AF_XDP fill ring has no room for %u frames\n", n);
      std::abort();
    }
    uint64_t no_meta = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const xdp_desc* d = xsk_ring_cons__rx_desc(&s.rx, idx + i);
      uint8_t* pkt = static_cast<uint8_t*>(xsk_umem__get_data(area, d->addr));
      uint32_t len = d->len;
      auto marked = [](const bs_xdp_meta* m) { return (m->flags & BS_META_MAGIC_MASK) == BS_META_MAGIC; };
      bs_xdp_meta* meta = nullptr;
      if (!s.meta_in_frame) {
        if (auto* m = reinterpret_cast<bs_xdp_meta*>(pkt - sizeof(bs_xdp_meta)); marked(m)) meta = m;
      } else if (len >= sizeof(bs_xdp_meta) && marked(reinterpret_cast<bs_xdp_meta*>(pkt))) {
        // bs_capture_head: the metadata is the frame's first bytes (the program drops a frame it cannot mark).
        meta = reinterpret_cast<bs_xdp_meta*>(pkt);
        pkt += sizeof(bs_xdp_meta);
        len -= sizeof(bs_xdp_meta);
      }
      uint32_t wire_len = len;
      int64_t ts;
      if (meta != nullptr) {
        wire_len = std::max(wire_len, meta->wire_len);
        // The NIC's stamp, or the program's CLOCK_REALTIME reading (the one its bin was counted by), or, before
        // the program had its clock, CLOCK_MONOTONIC.
        ts = (meta->flags & (BS_META_NIC_TS | BS_META_REALTIME)) ? static_cast<int64_t>(meta->ts_ns)
                                                                 : static_cast<int64_t>(meta->ts_ns) + offset;
        meta->flags = 0;  // the frame goes back to the kernel: no stale metadata for its next use
      } else {
        ts = mono_now + offset;
        ++no_meta;
      }
      producer.add({pkt, len}, wire_len, ts);
      last_ts = std::max(last_ts, ts);
      *xsk_ring_prod__fill_addr(&s.fill, fidx + i) = xsk_umem__extract_addr(d->addr);
    }
    xsk_ring_prod__submit(&s.fill, n);
    xsk_ring_cons__release(&s.rx, n);
    if (no_meta) s.no_metadata.fetch_add(no_meta, std::memory_order_relaxed);
    producer.flush();
    // A partial batch means the ring is drained: let frames gather for a while rather than wake per frame
    // (TPACKET_V3's block timeout, in effect). They were stamped by the XDP program on arrival, so the
    // wait costs no accuracy; the RX ring holds a millisecond of line rate at well over 1 Mpps.
    if (n < batch) std::this_thread::sleep_for(std::chrono::microseconds(cfg_.coalesce_us));
    if (mono_now >= next_resync) {
      const int64_t fresh = monotonicToRealtime();
      const int64_t step = fresh - offset < 0 ? offset - fresh : fresh - offset;
      storeMax(max_step_ns_, step);
      offset = fresh;
      next_resync = mono_now + static_cast<int64_t>(cfg_.resync_s * 1e9);
    }
  }
  tick(std::max(last_ts, clockNs(CLOCK_MONOTONIC) + offset));  // final watermark
}

// Parked for a re-attach (Socket::park): no socket to read, so this queue only ticks (every millisecond, as an
// idle queue of a busy port does), so that the worker keeps merging the port's other queues and closing intervals.
void AfXdpBackend::parkedWait(Socket& s, QueueProducer& producer, int64_t offset, int64_t& last_ts) {
  s.parked.store(true, std::memory_order_release);
  while (s.park.load(std::memory_order_acquire) && !rx_stop_.load(std::memory_order_acquire)) {
    last_ts = std::max(last_ts, clockNs(CLOCK_MONOTONIC) + offset);
    producer.tick(last_ts);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s.parked.store(false, std::memory_order_release);
}

void AfXdpBackend::monitorLoop() {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);  // for the interface flags, every look
  std::unique_lock<std::mutex> l(monitor_mu_);
  int64_t next_resync = clockNs(CLOCK_MONOTONIC) + static_cast<int64_t>(cfg_.resync_s * 1e9);
  while (!monitor_cv_.wait_for(l, std::chrono::milliseconds(100), [this] { return monitor_stop_; })) {
    l.unlock();
    for (size_t i = 0; i < ports_.size(); ++i) watchPort(i, fd);
    // The programs' CLOCK_REALTIME reckoning (their frames' stamps and bins), re-synchronised as the RX threads'.
    if (const int64_t mono = clockNs(CLOCK_MONOTONIC); mono >= next_resync) {
      next_resync = mono + static_cast<int64_t>(cfg_.resync_s * 1e9);
      const int64_t fresh = monotonicToRealtime();
      for (Port& p : ports_) {
        storeMax(max_step_ns_, fresh > p.bin_clock ? fresh - p.bin_clock : p.bin_clock - fresh);
        p.bin_clock = fresh;
        p.program->setBinClock(fresh);
      }
    }
    l.lock();
  }
  if (fd >= 0) close(fd);
}

// One look at a port's interface: present (by name), up with carrier, the same interface as attached. Each
// change is logged once with its time and counted; an interface re-created under the configured name gets
// the program and the sockets again (reattach).
void AfXdpBackend::watchPort(size_t index, int fd) {
  Port& p = ports_[index];
  const std::string& name = p.config.interface;
  const unsigned ifindex = if_nametoindex(name.c_str());
  const bool present = ifindex != 0;
  const int64_t now = clockNs(CLOCK_REALTIME);
  bool was_present;
  {
    std::lock_guard<std::mutex> g(mu_);
    was_present = p.link.present;
    if (present && ifindex == p.ifindex) {
      for (size_t i = 0; i < std::size(kNicStages); ++i) {
        const std::optional<uint64_t> v = sysfsCounter(name, kNicStages[i].second);
        if (v && p.nic_base[i]) p.nic_last[i] = *v >= *p.nic_base[i] ? *v - *p.nic_base[i] : *v;
      }
    }
  }
  if (was_present && !present) {
    std::fprintf(stderr,
                 "burstscope: af-xdp port '%s': interface removed at %s (capture resumes when an interface of "
                 "that name is back)\n",
                 name.c_str(), utcMillis(now).c_str());
  }
  if (present && ifindex != p.ifindex) reattach(index, ifindex);
  const bool up = present && ifindex == p.ifindex && interfaceUp(fd, name);
  std::lock_guard<std::mutex> g(mu_);
  p.link.present = present;
  noteLinkChange(p.link, up, now, "af-xdp", name);
  // A stalled RX queue: frames the kernel put in the socket's RX ring (its producer index ahead of the consumer
  // index the RX thread releases) while the thread takes none. The rings change only while the thread is parked,
  // by this thread (reattach), so reading their indexes here is safe; a parked socket is not judged.
  for (const auto& s : sockets_) {
    if (s->port_index != index || s->xsk == nullptr || s->park.load(std::memory_order_acquire)) continue;
    const bool waiting =
        __atomic_load_n(s->rx.producer, __ATOMIC_ACQUIRE) != __atomic_load_n(s->rx.consumer, __ATOMIC_ACQUIRE);
    if (s->stall.look(s->producer->counters().received.load(std::memory_order_relaxed), waiting)) {
      noteQueueStall(p.link, s->queue_id, s->stall.stalled(), now, "af-xdp", name, "frames wait, none taken for 1 s");
    }
  }
}

// An interface of the port's name with a new index: the old one was removed (its program's attachment and its
// sockets' bindings went with it). Every RX thread of the port drains its ring and parks; the sockets' final
// counts are kept for the ledger and the sockets closed; the loaded program is attached to the new interface
// (CAP_NET_ADMIN, which set-up keeps) and each queue gets a socket on a spare UMEM made at start (Socket::spares);
// the threads resume. A failure is logged once (again only when it changes) and retried at the next look.
void AfXdpBackend::reattach(size_t index, unsigned ifindex) {
  Port& p = ports_[index];
  const std::string& name = p.config.interface;
  std::vector<Socket*> mine;
  for (const auto& s : sockets_) {
    if (s->port_index == index) mine.push_back(s.get());
  }
  for (Socket* s : mine) s->park.store(true, std::memory_order_release);
  auto release = [&mine] {
    for (Socket* s : mine) s->park.store(false, std::memory_order_release);
  };
  // RX threads park within a poll timeout (at most kDeepIdleTickNs); bounded, in case one is stuck.
  const int64_t deadline = clockNs(CLOCK_MONOTONIC) + 2'000'000'000;
  for (Socket* s : mine) {
    while (!s->parked.load(std::memory_order_acquire)) {
      if (clockNs(CLOCK_MONOTONIC) > deadline || rx_stop_.load()) {
        release();
        return;  // tried again at the next look
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::string error;
  size_t bound = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (Socket* s : mine) {
      if (s->xsk != nullptr) {
        s->retired.add(readXskStats(xsk_socket__fd(s->xsk)));
        xsk_socket__delete(s->xsk);
        s->xsk = nullptr;
      }
      if (s->umem != nullptr) {
        xsk_umem__delete(s->umem);
        s->umem = nullptr;
      }
    }
    if (p.ifindex != 0) {  // the NIC counters of the interface that went away, as last read
      for (size_t i = 0; i < std::size(kNicStages); ++i) {
        p.nic_retired[i] += p.nic_last[i];
        p.nic_last[i] = 0;
      }
      p.ifindex = 0;
    }
    // The loaded program, attached again (its maps and counters carry on; the closed sockets left its XSKMAP).
    if (absl::Status st = p.program->moveTo(name); !st.ok()) {
      error = std::string(st.message());
    } else {
      for (size_t i = 0; i < std::size(kNicStages); ++i) p.nic_base[i] = sysfsCounter(name, kNicStages[i].second);
      for (Socket* s : mine) {
        if (absl::Status st2 = rebindSocket(*s, p); !st2.ok()) {
          error = std::string(st2.message());
          if (s->xsk != nullptr) xsk_socket__delete(s->xsk);
          s->xsk = nullptr;
        } else {
          ++bound;
        }
      }
      p.ifindex = ifindex;
      ++p.link.reattached;
    }
  }
  // A queue left without a socket stays parked (ticking) until the next re-attach or the end.
  for (Socket* s : mine) {
    if (s->xsk != nullptr) s->park.store(false, std::memory_order_release);
  }
  const int64_t now = clockNs(CLOCK_REALTIME);
  if (error.empty()) {
    std::fprintf(stderr,
                 "burstscope: af-xdp port '%s': interface back at %s (ifindex %u): XDP program and %zu AF_XDP "
                 "socket%s re-attached\n",
                 name.c_str(), utcMillis(now).c_str(), ifindex, bound, bound == 1 ? "" : "s");
    p.attach_error.clear();
  } else if (error != p.attach_error) {
    std::fprintf(stderr, "burstscope: af-xdp port '%s': interface back at %s (ifindex %u), cannot re-attach: %s\n",
                 name.c_str(), utcMillis(now).c_str(), ifindex, error.c_str());
    p.attach_error = error;
  }
}

std::optional<LinkState> AfXdpBackend::linkState(size_t index) const {
  std::lock_guard<std::mutex> g(mu_);
  return ports_[index].link;
}

DeviceStats AfXdpBackend::deviceStats(size_t index) const {
  DeviceStats d;
  const Port& p = ports_[index];
  std::lock_guard<std::mutex> g(mu_);
  const XdpCounters c = p.program->counters();  // since start, over every interface it was attached to
  d.seen = c[BS_STAT_REDIRECTED] + c[BS_STAT_NO_SOCKET] + c[BS_STAT_ABORTED] + c[BS_STAT_FILTERED];
  d.filtered = c[BS_STAT_FILTERED];
  uint64_t rx_dropped = 0, ring_full = 0, fill_empty = 0, invalid = 0, no_meta = 0;
  bool have_ring_full = true;
  for (const auto& s : sockets_) {
    if (s->port_index != index) continue;
    XskStats st = s->retired;
    if (s->xsk != nullptr) st.add(readXskStats(xsk_socket__fd(s->xsk)));
    rx_dropped += st.rx_dropped;
    invalid += st.rx_invalid_descs;
    have_ring_full &= st.rx_ring_full.has_value();
    ring_full += st.rx_ring_full.value_or(0);
    fill_empty += st.rx_fill_ring_empty_descs.value_or(0);
    no_meta += s->no_metadata.load(std::memory_order_relaxed);
  }
  // The NIC's drops since the attach come first: they reached the port and never reached XDP, so `seen`
  // (what reached the port) counts them too. A counter that went backwards (an interface reset) counts anew.
  // On a re-created interface, the earlier interfaces' drops (as last read) come on top.
  for (size_t i = 0; i < std::size(kNicStages); ++i) {
    const std::optional<uint64_t> v = sysfsCounter(p.config.interface, kNicStages[i].second);
    if (!v || !p.nic_base[i]) continue;
    const uint64_t since = (*v >= *p.nic_base[i] ? *v - *p.nic_base[i] : *v) + p.nic_retired[i];
    d.drop_stages.emplace_back(kNicStages[i].first, since);
    *d.seen += since;
  }
  d.drop_stages.insert(
      d.drop_stages.end(),
      {{"xdp_no_socket", c[BS_STAT_NO_SOCKET]}, {"xdp_aborted", c[BS_STAT_ABORTED]}, {"xsk_rx_dropped", rx_dropped}});
  if (have_ring_full) d.drop_stages.emplace_back("xsk_rx_ring_full", ring_full);
  d.extra = {{"xdp_redirected", c[BS_STAT_REDIRECTED]},    {"xdp_truncated", c[BS_STAT_TRUNCATED]},
             {"xdp_no_metadata", c[BS_STAT_NO_METADATA]},  {"xdp_nic_timestamps", c[BS_STAT_NIC_TIMESTAMP]},
             {"xsk_rx_fill_ring_empty_descs", fill_empty}, {"xsk_rx_invalid_descs", invalid},
             {"rx_frames_without_metadata", no_meta}};
  d.link = p.link;
  return d;
}

TimestampInfo AfXdpBackend::timestampInfo() const {
  TimestampInfo t;
  t.max_resync_step_ns = max_step_ns_.load();
  const std::optional<uint32_t>& coalesce = rx_coalesce_us_;
  if (cfg_.timestamps == XdpTimestamps::kNic) {
    t.source = "nic";
    t.description =
        "the NIC's RX timestamp through the XDP metadata kfunc, taken as CLOCK_REALTIME (keep the "
        "NIC clock synchronised, e.g. phc2sys); frames the driver gives none are stamped by "
        "bpf_ktime_get_ns() (xstats xdp_nic_timestamps of xdp_redirected)";
  } else {
    t.source = "kernel";
    t.description = absl::StrCat("bpf_ktime_get_ns() when the XDP program runs, mapped to CLOCK_REALTIME every ",
                                 cfg_.resync_s, " s; ",
                                 coalesce ? absl::StrCat("RX interrupt moderation ", *coalesce, " us")
                                          : std::string("the driver reports no RX interrupt moderation"));
    // A frame waits at most the interrupt moderation time before the program stamps it.
    t.error_bound_ns = coalesce ? *coalesce * 1000.0 : 0;
  }
  return t;
}

std::vector<std::string> AfXdpBackend::notes() const {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> g(mu_);
  for (const Port& p : ports_) {
    if (!p.replaced.empty()) {
      out.push_back(absl::StrCat(p.config.interface,
                                 ": removed a stale burstscope XDP program left by an earlier "
                                 "run: ",
                                 p.replaced));
    }
    size_t zc = 0, n = 0;
    for (const auto& s : sockets_) {
      if (&ports_[s->port_index] != &p) continue;
      ++n;
      zc += s->zero_copy;
    }
    out.push_back(absl::StrCat(p.config.interface, ": XDP ", xdpModeName(p.program->mode()), " mode, ", n,
                               " AF_XDP socket", n == 1 ? "" : "s", ", ",
                               zc == n   ? "zero-copy"
                               : zc == 0 ? "copy mode"
                                         : "partly zero-copy",
                               ", snap length ", cfg_.snaplen, " bytes", cfg_.ip_only ? ", IP frames only" : ""));
    size_t spares = kSpareUmems;
    for (const auto& s : sockets_) {
      if (&ports_[s->port_index] == &p) spares = std::min<size_t>(spares, s->spares_left);
    }
    if (spares < kSpareUmems) {
      out.push_back(absl::StrCat(p.config.interface, ": ", spares,
                                 " re-attach(es) to a re-created interface possible, not ", kSpareUmems,
                                 " (no locked memory for more UMEMs: grant CAP_IPC_LOCK or raise RLIMIT_MEMLOCK)"));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CaptureSource>> openAfXdp(const AfXdpConfig& config) {
  auto b = std::make_unique<AfXdpBackend>(config);
  if (absl::Status s = b->init(); !s.ok()) return s;
  return std::unique_ptr<CaptureSource>(std::move(b));
}

}  // namespace burstscope
