// The XDP capture program run through bpf_prog_test_run_opts on packets built here (katran's approach): no
// NIC, the real kernel verifier and JIT. A socket for the redirect case is an AF_XDP socket bound to the
// loopback of a network namespace of the test's own.
#include "src/capture/afxdp/xdp_program.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <cstring>
#include <string>
#include <vector>

#include "bpf/capture.skel.h"
#include "bpf/capture_plain.skel.h"
#include "gtest/gtest.h"

namespace burstscope {
namespace {

int64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// An Ethernet frame of `len` bytes: `tags` 802.1Q tags, then `ethertype` and an IPv4/UDP-looking body.
std::vector<uint8_t> frame(size_t len, uint16_t ethertype = 0x0800, int tags = 0) {
  std::vector<uint8_t> f(len, 0);
  const uint8_t macs[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
  std::memcpy(f.data(), macs, 12);
  size_t off = 12;
  for (int i = 0; i < tags; ++i) {
    f[off] = i == 0 && tags > 1 ? 0x88 : 0x81;
    f[off + 1] = i == 0 && tags > 1 ? 0xa8 : 0x00;
    f[off + 3] = static_cast<uint8_t>(10 + i);
    off += 4;
  }
  f[off] = static_cast<uint8_t>(ethertype >> 8);
  f[off + 1] = static_cast<uint8_t>(ethertype);
  if (len > off + 2) f[off + 2] = 0x45;
  return f;
}

struct RunResult {
  uint32_t retval = 0;
  std::vector<uint8_t> out;  // the metadata (if any) followed by the frame, as the program left them
  uint32_t meta_len = 0;
};

RunResult run(const XdpProgram& p, const std::vector<uint8_t>& in, int repeat = 1) {
  RunResult r;
  r.out.resize(in.size() + 64);
  xdp_md ctx_in{}, ctx_out{};
  ctx_in.data_end = static_cast<__u32>(in.size());
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  opts.data_in = in.data();
  opts.data_size_in = static_cast<__u32>(in.size());
  opts.data_out = r.out.data();
  opts.data_size_out = static_cast<__u32>(r.out.size());
  opts.ctx_in = &ctx_in;
  opts.ctx_size_in = sizeof(ctx_in);
  opts.ctx_out = &ctx_out;
  opts.ctx_size_out = sizeof(ctx_out);
  opts.repeat = repeat;
  EXPECT_EQ(bpf_prog_test_run_opts(p.progFd(), &opts), 0)
      << std::strerror(errno) << " (frame " << in.size() << " bytes, out " << opts.data_size_out << ")";
  r.retval = opts.retval;
  r.out.resize(opts.data_size_out);
  r.meta_len = ctx_out.data - ctx_out.data_meta;
  return r;
}

class XdpProgramTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return;
    // A namespace of our own, so that binding a socket to its loopback touches nothing else.
    ASSERT_EQ(unshare(CLONE_NEWNET), 0) << std::strerror(errno);
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ifreq ifr{};
    std::strcpy(ifr.ifr_name, "lo");
    ASSERT_EQ(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
    ifr.ifr_flags |= IFF_UP;
    ASSERT_EQ(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
    close(fd);
  }
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "loading BPF programs needs root (CAP_BPF)";
  }
};

TEST_F(XdpProgramTest, WithoutSocketEveryFramePassesAndCountsNoSocket) {
  auto p = XdpProgram::load({});
  ASSERT_TRUE(p.ok()) << p.status();
  const RunResult r = run(**p, frame(200), 5);
  EXPECT_EQ(r.retval, XDP_PASS);
  EXPECT_EQ(r.meta_len, 0u);
  const XdpCounters c = (*p)->counters();
  EXPECT_EQ(c[BS_STAT_NO_SOCKET], 5u);
  EXPECT_EQ(c[BS_STAT_REDIRECTED] + c[BS_STAT_ABORTED] + c[BS_STAT_FILTERED] + c[BS_STAT_TRUNCATED], 0u);
}

TEST_F(XdpProgramTest, IpOnlyFilterPassesNonIpAndLooksThroughTwoVlanTags) {
  XdpProgramConfig cfg;
  cfg.ip_only = true;
  auto p = XdpProgram::load(cfg);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(run(**p, frame(64, 0x0806)).retval, XDP_PASS);     // ARP: filtered
  EXPECT_EQ(run(**p, frame(64, 0x86dd)).retval, XDP_PASS);     // IPv6: no socket
  EXPECT_EQ(run(**p, frame(64, 0x0800, 1)).retval, XDP_PASS);  // 802.1Q + IPv4: no socket
  EXPECT_EQ(run(**p, frame(64, 0x0800, 2)).retval, XDP_PASS);  // QinQ + IPv4: no socket
  EXPECT_EQ(run(**p, frame(64, 0x0800, 3)).retval, XDP_PASS);  // three tags: not looked through, filtered
  EXPECT_EQ(run(**p, frame(17, 0x8100, 0)).retval, XDP_PASS);  // a tag cut short: filtered, not read past
  const XdpCounters c = (*p)->counters();
  EXPECT_EQ(c[BS_STAT_FILTERED], 3u);
  EXPECT_EQ(c[BS_STAT_NO_SOCKET], 3u);
}

// An AF_XDP socket bound (copy mode) to queue 0 of the namespace's loopback, entered in the XSKMAP.
class BoundSocket {
 public:
  explicit BoundSocket(const XdpProgram& p) {
    area_ = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    xsk_umem_config uc{XSK_RING_PROD__DEFAULT_NUM_DESCS, XSK_RING_CONS__DEFAULT_NUM_DESCS, 4096, 0, 0};
    ok_ = xsk_umem__create(&umem_, area_, kSize, &fill_, &comp_, &uc) == 0;
    xsk_socket_config sc{};
    sc.rx_size = 64;
    sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
    sc.bind_flags = XDP_COPY;
    // The kernel lets go of a closed socket's queue a little later (deferred work): EBUSY until then.
    int rc = -EBUSY;
    for (int i = 0; ok_ && rc == -EBUSY && i < 200; ++i) {
      if (i > 0) usleep(5000);
      rc = xsk_socket__create(&xsk_, "lo", 0, umem_, &rx_, nullptr, &sc);
    }
    ok_ = ok_ && rc == 0;
    if (rc != 0) xsk_ = nullptr;
    const int fd = ok_ ? xsk_socket__fd(xsk_) : -1;
    const uint32_t key = 0;
    ok_ = ok_ && bpf_map_update_elem(p.xskMapFd(), &key, &fd, BPF_ANY) == 0;
  }
  ~BoundSocket() {
    if (xsk_) xsk_socket__delete(xsk_);
    if (umem_) xsk_umem__delete(umem_);
    munmap(area_, kSize);
  }
  bool ok() const { return ok_; }

 private:
  static constexpr size_t kSize = 4096 * 4096;
  void* area_ = nullptr;
  xsk_umem* umem_ = nullptr;
  xsk_socket* xsk_ = nullptr;
  xsk_ring_prod fill_{};
  xsk_ring_cons comp_{}, rx_{};
  bool ok_ = false;
};

// The redirect cases with the metadata in each place the program can put it (XdpMetaPlace): the metadata area,
// where the kernel's verifier allows bpf_xdp_adjust_meta to XDP programs, and in front of the frame
// (bs_capture_head), which every kernel allows. Either way the bytes out are the metadata, then the frame; only
// where the metadata lies in the context differs.
class XdpRedirectTest : public XdpProgramTest, public ::testing::WithParamInterface<XdpMetaPlace> {
 protected:
  void SetUp() override {
    XdpProgramTest::SetUp();
    if (IsSkipped()) return;
    if (GetParam() == XdpMetaPlace::kMetaArea && !kernelAllowsXdpMetaArea()) {
      GTEST_SKIP() << "this kernel refuses bpf_xdp_adjust_meta to XDP programs (the in-frame case covers it)";
    }
  }
  absl::StatusOr<std::unique_ptr<XdpProgram>> load(XdpProgramConfig cfg) {
    cfg.meta_place = GetParam();
    return XdpProgram::load(cfg);
  }
  // Where the metadata lies in the context: before data (the metadata area), or none (it is in the frame).
  uint32_t metaLen() const { return GetParam() == XdpMetaPlace::kMetaArea ? sizeof(bs_xdp_meta) : 0; }
};

TEST_P(XdpRedirectTest, WithSocketRedirectsWithTimestampAndWireLengthInMetadata) {
  auto p = load({});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->metaInFrame(), GetParam() == XdpMetaPlace::kInFrame);
  BoundSocket sock(**p);
  ASSERT_TRUE(sock.ok()) << std::strerror(errno);
  const int64_t before = monotonicNs();
  const RunResult r = run(**p, frame(300));
  const int64_t after = monotonicNs();
  EXPECT_EQ(r.retval, XDP_REDIRECT);
  ASSERT_EQ(r.meta_len, metaLen());
  ASSERT_EQ(r.out.size(), sizeof(bs_xdp_meta) + 300);
  bs_xdp_meta m;
  std::memcpy(&m, r.out.data(), sizeof(m));
  EXPECT_EQ(m.flags, BS_META_MAGIC);  // kernel clock, not the NIC's
  EXPECT_EQ(m.wire_len, 300u);
  EXPECT_GE(static_cast<int64_t>(m.ts_ns), before);
  EXPECT_LE(static_cast<int64_t>(m.ts_ns), after);
  EXPECT_EQ(std::vector<uint8_t>(r.out.begin() + sizeof(m), r.out.end()), frame(300));
  const XdpCounters c = (*p)->counters();
  EXPECT_EQ(c[BS_STAT_REDIRECTED], 1u);
  EXPECT_EQ(
      c[BS_STAT_NO_SOCKET] + c[BS_STAT_ABORTED] + c[BS_STAT_FILTERED] + c[BS_STAT_TRUNCATED] + c[BS_STAT_NO_METADATA],
      0u);
}

TEST_P(XdpRedirectTest, SnapLengthCutsLongFramesAndKeepsTheirWireLength) {
  XdpProgramConfig cfg;
  cfg.snaplen = 128;
  auto p = load(cfg);
  ASSERT_TRUE(p.ok()) << p.status();
  BoundSocket sock(**p);
  ASSERT_TRUE(sock.ok()) << std::strerror(errno);
  const std::vector<uint8_t> big = frame(1500);
  const RunResult r = run(**p, big);
  EXPECT_EQ(r.retval, XDP_REDIRECT);
  EXPECT_EQ(r.meta_len, metaLen());
  ASSERT_EQ(r.out.size(), sizeof(bs_xdp_meta) + 128);
  bs_xdp_meta m;
  std::memcpy(&m, r.out.data(), sizeof(m));
  EXPECT_EQ(m.wire_len, 1500u);
  EXPECT_TRUE(std::equal(r.out.begin() + sizeof(m), r.out.end(), big.begin()));
  const RunResult small = run(**p, frame(100));  // shorter than the snap length: whole
  EXPECT_EQ(small.out.size(), sizeof(bs_xdp_meta) + 100);
  const RunResult exact = run(**p, frame(128));
  EXPECT_EQ(exact.out.size(), sizeof(bs_xdp_meta) + 128);
  const XdpCounters c = (*p)->counters();
  EXPECT_EQ(c[BS_STAT_REDIRECTED], 3u);
  EXPECT_EQ(c[BS_STAT_TRUNCATED], 1u);
}

INSTANTIATE_TEST_SUITE_P(MetaPlaces, XdpRedirectTest,
                         ::testing::Values(XdpMetaPlace::kMetaArea, XdpMetaPlace::kInFrame),
                         [](const ::testing::TestParamInfo<XdpMetaPlace>& i) {
                           return i.param == XdpMetaPlace::kMetaArea ? "MetaArea" : "InFrame";
                         });

// The probe that picks the place agrees with the kernel's verifier: the metadata-area program loads exactly where
// the probe says the helper is allowed, and by default the program puts its metadata in front of the frame exactly
// where it is not.
TEST_F(XdpProgramTest, TheMetadataGoesInFrontOfTheFrameExactlyWhereTheKernelRefusesTheMetadataArea) {
  XdpProgramConfig area;
  area.meta_place = XdpMetaPlace::kMetaArea;
  EXPECT_EQ(XdpProgram::load(area).ok(), kernelAllowsXdpMetaArea());
  auto p = XdpProgram::load({});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->metaInFrame(), !kernelAllowsXdpMetaArea());
}

TEST_F(XdpProgramTest, CountersSumOverCpusAndVerdictsAccountForEveryRun) {
  XdpProgramConfig cfg;
  cfg.ip_only = true;
  auto p = XdpProgram::load(cfg);
  ASSERT_TRUE(p.ok()) << p.status();
  run(**p, frame(64), 7);
  run(**p, frame(64, 0x88cc), 3);  // LLDP
  {
    BoundSocket sock(**p);
    ASSERT_TRUE(sock.ok());
    // One run at a time: with `repeat`, test_run keeps the buffer, so the metadata would pile up.
    for (int i = 0; i < 11; ++i) run(**p, frame(64));
  }
  run(**p, frame(64), 2);  // the socket is gone: its map entry with it
  const XdpCounters c = (*p)->counters();
  EXPECT_EQ(c[BS_STAT_NO_SOCKET], 9u);
  EXPECT_EQ(c[BS_STAT_FILTERED], 3u);
  EXPECT_EQ(c[BS_STAT_REDIRECTED], 11u);
  EXPECT_EQ(c[BS_STAT_ABORTED], 0u);
}

int64_t realtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// SPEC "Overload": the kernel's 100 µs bins hold every frame the program would capture — redirected, or passed
// for want of a socket — at its wire length, in the CLOCK_REALTIME bin of its arrival; a frame the filter leaves
// out is not the capture's and is not binned.
TEST_F(XdpProgramTest, EveryFrameIsCountedIntoItsRealtimeBinWhateverBecomesOfIt) {
  XdpProgramConfig cfg;
  cfg.ip_only = true;
  cfg.snaplen = 128;
  auto p = XdpProgram::load(cfg);
  ASSERT_TRUE(p.ok()) << p.status();
  (*p)->setBinClock(realtimeNs() - monotonicNs());
  const int64_t before = realtimeNs();
  run(**p, frame(1500), 40);        // no socket: passed
  run(**p, frame(60, 0x0806), 25);  // ARP: filtered
  {
    BoundSocket sock(**p);
    ASSERT_TRUE(sock.ok());
    for (int i = 0; i < 9; ++i) run(**p, frame(900));  // redirected, cut to 128 bytes: counted at 900
  }
  const int64_t after = realtimeNs();
  std::vector<KernelBinCount> bins;
  const uint64_t from = static_cast<uint64_t>(before) / BS_BIN_NS, to = static_cast<uint64_t>(after) / BS_BIN_NS + 1;
  EXPECT_EQ((*p)->readBins(from - 3, to + 3, &bins), 0u);
  uint64_t packets = 0, bytes = 0;
  for (const KernelBinCount& b : bins) {
    EXPECT_EQ(b.start_ns % static_cast<int64_t>(BS_BIN_NS), 0);
    // Within the bins the runs spanned (the offset is measured, so up to a bin either side).
    EXPECT_GE(b.start_ns, (static_cast<int64_t>(from) - 1) * static_cast<int64_t>(BS_BIN_NS));
    EXPECT_LE(b.start_ns, after + static_cast<int64_t>(BS_BIN_NS));
    packets += b.packets;
    bytes += b.bytes;
  }
  EXPECT_EQ(packets, 40u + 9u);
  EXPECT_EQ(bytes, 40u * 1500 + 9u * 900);
  const XdpCounters c = (*p)->counters();
  EXPECT_EQ(c[BS_STAT_FILTERED], 25u);
  EXPECT_EQ(packets, c[BS_STAT_NO_SOCKET] + c[BS_STAT_REDIRECTED] + c[BS_STAT_ABORTED]);
}

// Each CPU counts into its own ring of bins and the reader sums them: frames run on every CPU of this process's in
// turn (bpf_prog_test_run runs the program on the calling CPU), a different count on each, all read back.
TEST_F(XdpProgramTest, BinsOfEveryCpuAreSummed) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs to run on";
  auto p = XdpProgram::load({});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->hasBins()) << (*p)->binsError();
  (*p)->setBinClock(realtimeNs() - monotonicNs());
  const int64_t before = realtimeNs();
  uint64_t sent = 0;
  for (size_t i = 0; i < cpus.size(); ++i) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[i], &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    const int n = static_cast<int>(3 + 2 * i);
    run(**p, frame(100 + i), n);
    sent += static_cast<uint64_t>(n);
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(allowed), &allowed), 0);
  const uint64_t from = static_cast<uint64_t>(before) / BS_BIN_NS - 1;
  const uint64_t to = static_cast<uint64_t>(realtimeNs()) / BS_BIN_NS + 2;
  std::vector<KernelBinCount> bins;
  EXPECT_EQ((*p)->readBins(from, to, &bins), 0u);
  uint64_t packets = 0, bytes = 0;
  for (const KernelBinCount& b : bins) {
    packets += b.packets;
    bytes += b.bytes;
  }
  uint64_t want_bytes = 0;
  for (size_t i = 0; i < cpus.size(); ++i) want_bytes += (3 + 2 * i) * (100 + i);
  EXPECT_EQ(packets, sent);
  EXPECT_EQ(bytes, want_bytes);
}

// The bins array has a ring per CPU id the program may run on: with holes among the possible CPUs that is the
// highest id + 1, not their count (which would leave the high ids' frames uncounted).
TEST(XdpCpuIdsTest, AMaskWithHolesCoversItsHighestId) {
  EXPECT_EQ(cpuIdsOfMask("0-3,8-11\n"), 12u);
  EXPECT_EQ(cpuIdsOfMask("0"), 1u);
  EXPECT_EQ(cpuIdsOfMask("0-1"), 2u);
  EXPECT_EQ(cpuIdsOfMask("0,2,5"), 6u);
  EXPECT_EQ(cpuIdsOfMask(""), 0u);
  EXPECT_EQ(cpuIdsOfMask("3-1"), 0u);
  EXPECT_EQ(cpuIdsOfMask("a-b"), 0u);
  EXPECT_EQ(cpuIdsOfMask("0-1-2"), 0u);
}

// Until user space has given the program its CLOCK_REALTIME offset there is no bin to count a frame in.
TEST_F(XdpProgramTest, NoBinsBeforeTheClockIsSet) {
  auto p = XdpProgram::load({});
  ASSERT_TRUE(p.ok()) << p.status();
  run(**p, frame(64), 5);
  const uint64_t now = static_cast<uint64_t>(realtimeNs()) / BS_BIN_NS;
  std::vector<KernelBinCount> bins;
  EXPECT_EQ((*p)->readBins(now - 100, now + 100, &bins), 0u);
  EXPECT_TRUE(bins.empty());
  (*p)->setBinClock(realtimeNs() - monotonicNs());
  run(**p, frame(64), 5);
  EXPECT_EQ((*p)->readBins(now - 100, now + 10'000, &bins), 0u);
  uint64_t packets = 0;
  for (const KernelBinCount& b : bins) packets += b.packets;
  EXPECT_EQ(packets, 5u);
}

TEST_F(XdpProgramTest, WithoutBinsNothingIsBinnedAndALaggingReaderIsTold) {
  XdpProgramConfig cfg;
  cfg.bins = false;
  auto off = XdpProgram::load(cfg);
  ASSERT_TRUE(off.ok()) << off.status();
  const uint64_t now = static_cast<uint64_t>(realtimeNs()) / BS_BIN_NS;
  run(**off, frame(64), 5);
  std::vector<KernelBinCount> bins;
  EXPECT_EQ((*off)->readBins(now - 5, now + 100, &bins), 0u);
  EXPECT_TRUE(bins.empty());
  // A range longer than the ring: the part before the ring's reach is reported lost, not read.
  auto on = XdpProgram::load({});
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ((*on)->readBins(now - BS_BIN_SLOTS - 10, now, &bins), 10u);
}

TEST_F(XdpProgramTest, NicTimestampVariantLoadsOnlyBoundToADevice) {
  XdpProgramConfig cfg;
  cfg.nic_timestamps = true;
  auto p = XdpProgram::load(cfg);
  EXPECT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message()).find("device-bound"), std::string::npos);
}

// The capture program is built twice (bpf/meson.build): only the object whose NIC entry points ask the driver for
// timestamps names the kfunc, whose presence makes libbpf read the kernel's BTF at every load; and the two have the
// same programs and maps, by which `capture`'s skeleton binds either (xdp_program.cc, openCaptureObject).
TEST(XdpObjectsTest, OnlyTheNicObjectNamesTheKfuncAndBothHaveTheSkeletonsProgramsAndMaps) {
  struct Seen {
    bool kfunc;
    std::vector<std::string> programs, maps;
  };
  auto look = [](const void* bytes, size_t size) {
    Seen seen{};
    LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "capture");
    bpf_object* obj = bpf_object__open_mem(bytes, size, &opts);
    EXPECT_NE(obj, nullptr);
    if (obj == nullptr) return seen;
    seen.kfunc = btf__find_by_name_kind(bpf_object__btf(obj), "bpf_xdp_metadata_rx_timestamp", BTF_KIND_FUNC) >= 0;
    bpf_program* prog;
    bpf_object__for_each_program(prog, obj) seen.programs.emplace_back(bpf_program__name(prog));
    bpf_map* map;
    bpf_object__for_each_map(map, obj) seen.maps.emplace_back(bpf_map__name(map));
    bpf_object__close(obj);
    return seen;
  };
  size_t nic_size = 0, plain_size = 0;
  const void* nic_bytes = capture::elf_bytes(&nic_size);
  const void* plain_bytes = capture_plain::elf_bytes(&plain_size);
  const Seen nic = look(nic_bytes, nic_size);
  const Seen plain = look(plain_bytes, plain_size);
  EXPECT_TRUE(nic.kfunc);
  EXPECT_FALSE(plain.kfunc);
  EXPECT_EQ(plain.programs, nic.programs);
  EXPECT_EQ(plain.maps, nic.maps);
  EXPECT_EQ(nic.programs.size(), 4u);
}

TEST_F(XdpProgramTest, AttachNamesAMissingInterface) {
  std::string replaced;
  auto p = XdpProgram::attach({}, "bs_nosuch0", XdpMode::kAuto, &replaced);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "interface 'bs_nosuch0' does not exist (in this network namespace)");
}

}  // namespace
}  // namespace burstscope
