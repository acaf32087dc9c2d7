#include "src/privileges/privileges.h"

#include <linux/capability.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "burstscope/status.h"

namespace burstscope {
namespace {

struct CapFree {
  void operator()(void* p) const { cap_free(p); }
};

constexpr cap_value_t kKeep[] = {CAP_NET_ADMIN};

bool kept(cap_value_t c) {
  for (cap_value_t k : kKeep) {
    if (k == c) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> dropCapabilitiesAfterSetup() {
  std::unique_ptr<_cap_struct, CapFree> now(cap_get_proc());
  if (!now) return errnoStatus(errno, "cannot read the process's capabilities");
  // Ambient capabilities would survive an exec; we exec nothing, but clear them so none can.
  if (CAP_AMBIENT_SUPPORTED()) (void)cap_reset_ambient();
  // The bounding set first: dropping from it needs CAP_SETPCAP, which goes next.
  cap_flag_value_t setpcap = CAP_CLEAR;
  (void)cap_get_flag(now.get(), CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
  if (setpcap == CAP_SET) {
    for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) {
      if (!kept(c) && CAP_IS_SUPPORTED(c) && cap_drop_bound(c) != 0) {
        return errnoStatus(errno, "cannot drop a capability from the bounding set");
      }
    }
  }
  std::unique_ptr<_cap_struct, CapFree> next(cap_init());  // all clear
  if (!next) return errnoStatus(errno, "cannot allocate a capability set");
  std::vector<std::string> left;
  for (cap_value_t c : kKeep) {
    cap_flag_value_t have = CAP_CLEAR;
    if (cap_get_flag(now.get(), c, CAP_PERMITTED, &have) != 0 || have != CAP_SET) continue;
    if (cap_set_flag(next.get(), CAP_PERMITTED, 1, &c, CAP_SET) != 0 ||
        cap_set_flag(next.get(), CAP_EFFECTIVE, 1, &c, CAP_SET) != 0) {
      return errnoStatus(errno, "cannot build the capability set to keep");
    }
    std::unique_ptr<char, CapFree> name(cap_to_name(c));
    left.emplace_back(name ? name.get() : "?");
  }
  if (cap_set_proc(next.get()) != 0) return errnoStatus(errno, "cannot drop capabilities");
  // Capabilities are per thread: libpsx (linked into burstscope) carries this to the threads created through
  // our own pthread_create calls, and threads created later inherit it; threads a shared library created
  // earlier (DPDK's EAL) keep theirs — see dropThreadCapabilities().
  return left;
}

absl::Status dropThreadCapabilities() {
  // cap_set_proc would go to every thread libpsx tracks; the raw capset(2) changes this thread only.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return errnoStatus(errno, "cannot read the thread's capabilities");
  __user_cap_data_struct keep[_LINUX_CAPABILITY_U32S_3] = {};
  for (cap_value_t c : kKeep) {
    const uint32_t bit = 1u << (c % 32);
    if (data[c / 32].permitted & bit) {
      keep[c / 32].permitted |= bit;
      keep[c / 32].effective |= bit;
    }
  }
  if (syscall(SYS_capset, &header, keep) != 0) return errnoStatus(errno, "cannot drop the thread's capabilities");
  return absl::OkStatus();
}

}  // namespace burstscope
