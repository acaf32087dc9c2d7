#include "src/capture/afxdp/xdp_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bpf/capture.skel.h"
#include "bpf/capture_plain.skel.h"

// Linux 6.3 uapi; Debian 12's headers (6.1) predate it.
#ifndef BPF_F_XDP_DEV_BOUND_ONLY
#define BPF_F_XDP_DEV_BOUND_ONLY (1U << 6)
#endif

namespace burstscope {
namespace {

// libxdp's text for its own error numbers (LIBXDP_ERR_*, beyond errno's range) as well as errno's; errnoText
// (burstscope/status.h) knows only errno's.
std::string libxdpErrorText(int err) {
  char buf[128];
  libxdp_strerror(err < 0 ? err : -err, buf, sizeof(buf));
  return buf;
}

// What a failed load or attach most likely means, for the one line the operator reads.
std::string hint(int err) {
  err = err < 0 ? -err : err;
  if (err == EPERM || err == EACCES) {
    return " (loading and attaching XDP programs needs CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON, or root)";
  }
  return "";
}

// libxdp and libbpf print to stderr by default; their messages are folded into our own errors instead.
int quietLibxdp(enum libxdp_print_level, const char*, va_list) { return 0; }
int quietLibbpf(enum libbpf_print_level, const char*, va_list) { return 0; }

// How many CPU ids the kernel may give out (/sys/devices/system/cpu/possible); 0 when it cannot be read.
size_t possibleCpuIds() {
  std::ifstream f("/sys/devices/system/cpu/possible");
  std::string mask;
  if (!std::getline(f, mask)) return 0;
  return cpuIdsOfMask(mask);
}

void quietLibraries() {
  static const bool done = [] {
    libxdp_set_print(quietLibxdp);
    libbpf_set_print(quietLibbpf);
    return true;
  }();
  (void)done;
}

// The entry point for `c`: the NIC-timestamp variant, or the plain one with its metadata where `in_frame` says.
bpf_program* entryOf(capture* skel, const XdpProgramConfig& c, bool in_frame) {
  if (c.nic_timestamps) return in_frame ? skel->progs.bs_capture_nic_head : skel->progs.bs_capture_nic;
  return in_frame ? skel->progs.bs_capture_head : skel->progs.bs_capture;
}

// `capture`'s skeleton over the object built with the NIC timestamps' kfunc (`nic`), or over the one built without
// it (bpf/meson.build): the two have the same maps, programs and read-only data, and the object's name comes from
// the skeleton, so every name the skeleton binds is found in either. Without the kfunc libbpf does not read the
// kernel's BTF at load (59-80 ms on the project's VM; bench/README.md, issue 41's twenty-third session).
capture* openCaptureObject(bool nic) {
  auto* obj = static_cast<capture*>(calloc(1, sizeof(capture)));  // NOLINT: capture__destroy frees it
  if (obj == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  int err = capture__create_skeleton(obj);
  if (err == 0 && !nic) obj->skeleton->data = const_cast<void*>(capture_plain::elf_bytes(&obj->skeleton->data_sz));
  if (err == 0) err = bpf_object__open_skeleton(obj->skeleton, nullptr);
  if (err != 0) {
    capture__destroy(obj);
    errno = -err;
    return nullptr;
  }
  return obj;
}

absl::StatusOr<capture*> openSkeleton(const XdpProgramConfig& c, bool in_frame) {
  quietLibraries();
  capture* skel = openCaptureObject(c.nic_timestamps);
  if (skel == nullptr) {
    return absl::InternalError(absl::StrCat("cannot open the XDP capture program: ", libxdpErrorText(errno)));
  }
  skel->rodata->cfg_ip_only = c.ip_only ? 1 : 0;
  skel->rodata->cfg_snaplen = c.snaplen;
  skel->rodata->cfg_bins = c.bins ? 1 : 0;
  // A ring of bins for each CPU id the program may run on, one after another in the one array
  // (bpf/capture.bpf.c).
  const size_t cpus = possibleCpuIds();
  if (cpus == 0 || bpf_map__set_max_entries(skel->maps.bins, static_cast<uint32_t>(cpus * BS_BIN_SLOTS)) != 0) {
    capture::destroy(skel);
    return absl::InternalError("cannot size the XDP capture program's bins: the possible CPUs are not known");
  }
  // Only the entry point used is loaded: the verifier checks each loaded one, and one refused fails the load.
  bpf_program* entry = entryOf(skel, c, in_frame);
  for (bpf_program* prog : {skel->progs.bs_capture, skel->progs.bs_capture_nic, skel->progs.bs_capture_head,
                            skel->progs.bs_capture_nic_head}) {
    bpf_program__set_autoload(prog, prog == entry);
  }
  return skel;
}

// Removes burstscope programs a previous run left on the interface; refuses to touch anyone else's.
absl::Status removeStale(int ifindex, const std::string& ifname, std::string* replaced) {
  xdp_multiprog* mp = xdp_multiprog__get_from_ifindex(ifindex);
  if (mp == nullptr || libxdp_get_error(mp) != 0) {
    // libxdp reads attached programs by id, which needs CAP_SYS_ADMIN. Without it, the netlink query (which
    // needs only CAP_NET_ADMIN) still says whether a program is there, though not whose.
    LIBBPF_OPTS(bpf_xdp_query_opts, q);
    if (bpf_xdp_query(ifindex, 0, &q) == 0 && q.prog_id != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "interface '", ifname, "' already has XDP program id ", q.prog_id,
          " attached, which this process "
          "cannot identify without CAP_SYS_ADMIN; if it is a burstscope program left by a crashed run, remove it "
          "with `ip link set dev ",
          ifname, " xdp off`"));
    }
    return absl::OkStatus();  // nothing attached
  }
  std::vector<xdp_program*> ours;
  std::string others;
  auto consider = [&](xdp_program* p) {
    const std::string name = xdp_program__name(p);
    if (isBurstscopeProgramName(name)) {
      ours.push_back(p);
      absl::StrAppend(replaced, replaced->empty() ? "" : ", ", name, " (id ", xdp_program__id(p), ")");
    } else {
      absl::StrAppend(&others, others.empty() ? "" : ", ", name, " (id ", xdp_program__id(p), ")");
    }
  };
  const bool legacy = xdp_multiprog__is_legacy(mp);
  if (legacy) {
    if (xdp_program* p = xdp_multiprog__main_prog(mp)) consider(p);
  } else {
    for (xdp_program* p = xdp_multiprog__next_prog(nullptr, mp); p; p = xdp_multiprog__next_prog(p, mp)) {
      consider(p);
    }
  }
  absl::Status status;
  if (legacy && !others.empty()) {
    status = absl::FailedPreconditionError(absl::StrCat("interface '", ifname, "' already has XDP program ", others,
                                                        " attached; burstscope does not replace "
                                                        "another program (remove it with `ip link set dev ",
                                                        ifname, " xdp off` if it is not needed)"));
  } else if (!ours.empty()) {
    int rc = 0;
    if (legacy || others.empty()) {
      rc = xdp_multiprog__detach(mp);
    } else {
      for (xdp_program* p : ours) {
        if (rc == 0) rc = xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0);
      }
    }
    if (rc != 0) {
      status = absl::FailedPreconditionError(absl::StrCat("interface '", ifname,
                                                          "': cannot remove the stale "
                                                          "burstscope XDP program ",
                                                          *replaced, ": ", libxdpErrorText(rc), hint(rc)));
    }
  }
  xdp_multiprog__close(mp);
  return status;
}

}  // namespace

bool metaInFrameFor(const XdpProgramConfig& c) {
  switch (c.meta_place) {
    case XdpMetaPlace::kMetaArea:
      return false;
    case XdpMetaPlace::kInFrame:
      return true;
    case XdpMetaPlace::kAuto:
      break;
  }
  return !kernelAllowsXdpMetaArea();
}

const char* xdpModeName(XdpMode m) {
  switch (m) {
    case XdpMode::kNative:
      return "native";
    case XdpMode::kSkb:
      return "skb";
    case XdpMode::kAuto:
      break;
  }
  return "auto";
}

bool isBurstscopeProgramName(const std::string& name) { return name.rfind("bs_capture", 0) == 0; }

bool kernelAllowsXdpMetaArea() {
  // An XDP program of four instructions that calls the helper as the capture program does: r2 = -8; call
  // bpf_xdp_adjust_meta (r1 is the context); r0 = XDP_PASS; exit. libbpf_probe_bpf_helper is no help here: it
  // calls with arguments the verifier rejects and counts any rejection but an unknown helper as support, and a
  // kernel that refuses the helper to XDP says "program of this type cannot use helper".
  static const bool allowed = [] {
    const bpf_insn insns[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .src_reg = 0, .off = 0, .imm = -8},
        {.code = BPF_JMP | BPF_CALL, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = BPF_FUNC_xdp_adjust_meta},
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = XDP_PASS},
        {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
    };
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_XDP);  // as libbpf loads SEC("xdp")
    const int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "bs_probe_meta", "GPL", insns, std::size(insns), &opts);
    if (fd >= 0) {
      close(fd);
      return true;
    }
    return errno != EINVAL;  // not allowed to load at all (EPERM): the capture program's own load says so
  }();
  return allowed;
}

size_t cpuIdsOfMask(const std::string& text) {
  const absl::string_view mask = absl::StripAsciiWhitespace(text);
  if (mask.empty()) return 0;
  size_t ids = 0;
  for (absl::string_view range : absl::StrSplit(mask, ',')) {
    const std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
    uint32_t lo = 0, hi = 0;
    if (ends.size() > 2 || !absl::SimpleAtoi(ends.front(), &lo) || !absl::SimpleAtoi(ends.back(), &hi) || hi < lo ||
        hi >= (1u << 16)) {
      return 0;
    }
    ids = std::max<size_t>(ids, size_t{hi} + 1);
  }
  return ids;
}

XdpProgram::~XdpProgram() {
  detach();
  if (bin_rings_ != nullptr) munmap(const_cast<bs_bin*>(bin_rings_), bin_rings_bytes_);
  if (prog_ != nullptr) xdp_program__close(prog_);
  if (skel_ != nullptr) capture::destroy(skel_);
}

absl::StatusOr<std::unique_ptr<XdpProgram>> XdpProgram::load(const XdpProgramConfig& config) {
  if (config.nic_timestamps) {
    return absl::InvalidArgumentError("the NIC-timestamp variant is device-bound: it loads only when attached");
  }
  std::unique_ptr<XdpProgram> p(new XdpProgram());
  p->config_ = config;
  p->meta_in_frame_ = metaInFrameFor(config);
  auto skel = openSkeleton(config, p->meta_in_frame_);
  if (!skel.ok()) return skel.status();
  p->skel_ = *skel;
  if (int rc = capture::load(p->skel_); rc != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot load the XDP capture program: ", libxdpErrorText(rc), hint(rc)));
  }
  p->mapBins();
  return p;
}

// The loaded program's bins, read-only: readBins reads them as memory. Without them the program still captures
// (binsError says why; the port's series is then its RX threads' alone).
void XdpProgram::mapBins() {
  bin_cpus_ = bpf_map__max_entries(skel_->maps.bins) / BS_BIN_SLOTS;
  bin_rings_bytes_ = bin_cpus_ * BS_BIN_SLOTS * sizeof(bs_bin);
  void* m = mmap(nullptr, bin_rings_bytes_, PROT_READ, MAP_SHARED, bpf_map__fd(skel_->maps.bins), 0);
  if (m == MAP_FAILED) {
    bins_error_ = absl::StrCat("cannot map the XDP program's bins into memory: ", libxdpErrorText(errno));
    return;
  }
  bin_rings_ = static_cast<const bs_bin*>(m);
}

absl::StatusOr<std::unique_ptr<XdpProgram>> XdpProgram::attach(const XdpProgramConfig& config,
                                                               const std::string& ifname, XdpMode mode,
                                                               std::string* replaced) {
  quietLibraries();
  const int ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (ifindex == 0) {
    return absl::NotFoundError(absl::StrCat("interface '", ifname, "' does not exist (in this network namespace)"));
  }
  if (absl::Status s = removeStale(ifindex, ifname, replaced); !s.ok()) return s;
  std::unique_ptr<XdpProgram> p(new XdpProgram());
  p->config_ = config;
  p->ifindex_ = ifindex;
  p->meta_in_frame_ = metaInFrameFor(config);
  auto skel = openSkeleton(config, p->meta_in_frame_);
  if (!skel.ok()) return skel.status();
  p->skel_ = *skel;

  xdp_program_opts opts{};  // DECLARE_LIBXDP_OPTS mixes designated and plain initialisers: C only
  opts.sz = sizeof(opts);
  if (config.nic_timestamps) {
    // The metadata kfuncs exist only in programs bound to their device at load time, in native mode;
    // loaded here, handed to libxdp as a loaded program.
    if (mode == XdpMode::kSkb) {
      return absl::InvalidArgumentError("NIC timestamps need native XDP mode: generic (skb) mode runs no driver code");
    }
    bpf_program* nic = entryOf(p->skel_, config, p->meta_in_frame_);
    bpf_program__set_ifindex(nic, static_cast<__u32>(ifindex));
    bpf_program__set_flags(nic, bpf_program__flags(nic) | BPF_F_XDP_DEV_BOUND_ONLY);
    if (int rc = capture::load(p->skel_); rc != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("interface '", ifname,
                       "': NIC timestamps: the kernel or driver refused the device-bound program "
                       "with the XDP RX-timestamp kfunc (",
                       libxdpErrorText(rc), ")", hint(rc)));
    }
    opts.fd = bpf_program__fd(nic);
    mode = XdpMode::kNative;
  } else {
    opts.obj = p->skel_->obj;
    opts.prog_name = bpf_program__name(entryOf(p->skel_, config, p->meta_in_frame_));
  }
  p->prog_ = xdp_program__create(&opts);
  if (long err = libxdp_get_error(p->prog_); err != 0) {
    p->prog_ = nullptr;
    return absl::InternalError(absl::StrCat("cannot prepare the XDP capture program: ",
                                            libxdpErrorText(static_cast<int>(err)), hint(static_cast<int>(err))));
  }
  std::vector<XdpMode> tries =
      mode == XdpMode::kAuto ? std::vector{XdpMode::kNative, XdpMode::kSkb} : std::vector{mode};
  std::string failures;
  for (XdpMode m : tries) {
    const int rc = xdp_program__attach(p->prog_, ifindex, m == XdpMode::kNative ? XDP_MODE_NATIVE : XDP_MODE_SKB, 0);
    if (rc == 0) {
      p->mode_ = m;
      p->attached_ = true;
      p->mapBins();
      return p;
    }
    absl::StrAppend(&failures, failures.empty() ? "" : "; ", xdpModeName(m), " mode: ", libxdpErrorText(rc), hint(rc));
    if (rc == -EOPNOTSUPP) absl::StrAppend(&failures, " (the driver has no XDP support in this mode)");
    if (rc == -EPERM || rc == -EACCES) break;  // no other mode will be allowed either
  }
  return absl::FailedPreconditionError(absl::StrCat("interface '", ifname,
                                                    "': cannot attach the XDP capture "
                                                    "program: ",
                                                    failures));
}

void XdpProgram::detach() {
  if (!attached_) return;
  // Detach by netlink, naming our program (XDP_FLAGS_REPLACE): that needs only CAP_NET_ADMIN, where libxdp's
  // detach first reads the attached program by id (CAP_SYS_ADMIN). If libxdp put ours behind its
  // dispatcher, the attached program is not ours, and libxdp's detach is the way.
  LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = xdp_program__fd(prog_));
  const uint32_t mode = mode_ == XdpMode::kNative ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
  if (bpf_xdp_detach(ifindex_, mode | XDP_FLAGS_REPLACE, &opts) != 0) {
    xdp_program__detach(prog_, ifindex_, mode_ == XdpMode::kNative ? XDP_MODE_NATIVE : XDP_MODE_SKB, 0);
  }
  attached_ = false;
}

absl::Status XdpProgram::moveTo(const std::string& ifname) {
  if (config_.nic_timestamps) {
    return absl::FailedPreconditionError(
        "the NIC-timestamp program is bound to the device it was loaded for: restart burstscope to capture on the "
        "new interface");
  }
  const int ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (ifindex == 0) return absl::NotFoundError(absl::StrCat("interface '", ifname, "' does not exist"));
  detach();  // from the interface that went away: a no-op there, nothing else can match our program
  const uint32_t mode = mode_ == XdpMode::kNative ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
  if (int rc = bpf_xdp_attach(ifindex, progFd(), mode | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr); rc != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("interface '", ifname, "': cannot attach the XDP capture program (", xdpModeName(mode_),
                     " mode): ", libxdpErrorText(rc), rc == -EBUSY ? " (the interface has another XDP program)" : ""));
  }
  ifindex_ = ifindex;
  attached_ = true;
  return absl::OkStatus();
}

void XdpProgram::setBinClock(int64_t realtime_minus_monotonic_ns) {
  const uint32_t key = 0;
  const auto v = static_cast<uint64_t>(realtime_minus_monotonic_ns);
  bpf_map_update_elem(bpf_map__fd(skel_->maps.bin_clock), &key, &v, BPF_ANY);
}

uint64_t XdpProgram::readBins(uint64_t from, uint64_t to, std::vector<KernelBinCount>* out) const {
  if (bin_rings_ == nullptr || to <= from) return 0;
  // A range longer than the ring: the oldest part is gone already.
  uint64_t overwritten = 0;
  if (to - from > BS_BIN_SLOTS) {
    overwritten += to - from - BS_BIN_SLOTS;
    from = to - BS_BIN_SLOTS;
  }
  // Each field read as one load, as the program may be writing it: a slot the program moves on to a later bin while
  // it is read is counted as taken (its count is then lost to this one).
  auto load = [](const uint64_t& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); };
  for (uint64_t bin = from; bin < to; ++bin) {
    const size_t slot = static_cast<size_t>(bin & (BS_BIN_SLOTS - 1));
    KernelBinCount kb;
    kb.start_ns = static_cast<int64_t>(bin * BS_BIN_NS);
    bool taken = false;
    for (size_t c = 0; c < bin_cpus_; ++c) {
      const bs_bin& v = bin_rings_[c * BS_BIN_SLOTS + slot];
      const uint64_t held = load(v.bin);
      if (held == bin) {
        const uint64_t packets = load(v.packets);
        const uint64_t bytes = load(v.bytes);
        // Moved on while its counts were read (the program writes the bin before it clears the counts): they may
        // be the later bin's.
        if (load(v.bin) == bin) {
          kb.packets += packets;
          kb.bytes += bytes;
        } else {
          taken = true;
        }
      } else if (held > bin) {
        taken = true;  // this CPU's slot moved on to a later bin: what it held of this one is lost
      }
    }
    overwritten += taken;
    if (kb.packets > 0) out->push_back(kb);
  }
  return overwritten;
}

int XdpProgram::progFd() const { return bpf_program__fd(entryOf(skel_, config_, meta_in_frame_)); }

int XdpProgram::xskMapFd() const { return bpf_map__fd(skel_->maps.xsks); }

XdpCounters XdpProgram::counters() const {
  XdpCounters out{};
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return out;
  std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
  const int fd = bpf_map__fd(skel_->maps.stats);
  for (uint32_t k = 0; k < BS_STAT_COUNT; ++k) {
    if (bpf_map_lookup_elem(fd, &k, per_cpu.data()) != 0) continue;
    for (uint64_t v : per_cpu) out[k] += v;
  }
  return out;
}

}  // namespace burstscope
