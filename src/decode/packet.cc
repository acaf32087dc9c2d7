#include <arpa/inet.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "burstscope/decode.h"
#include "burstscope/packet.h"

namespace burstscope {

std::string addressToString(const FlowKey& k, bool source) {
  const auto& a = source ? k.src : k.dst;
  char buf[INET6_ADDRSTRLEN] = {};
  if (k.family == 4) {
    inet_ntop(AF_INET, a.data(), buf, sizeof(buf));
  } else if (k.family == 6) {
    inet_ntop(AF_INET6, a.data(), buf, sizeof(buf));
  } else {
    return "-";
  }
  return buf;
}

namespace {
const char* protoName(uint8_t p) {
  switch (p) {
    case 6:
      return "tcp";
    case 17:
      return "udp";
    case 132:
      return "sctp";
    case 1:
      return "icmp";
    case 58:
      return "icmpv6";
    default:
      return nullptr;
  }
}
std::string endpoint(const FlowKey& k, bool source) {
  std::string a = addressToString(k, source);
  uint16_t port = source ? k.src_port : k.dst_port;
  if (k.family == 6) a = absl::StrCat("[", a, "]");
  return absl::StrCat(a, ":", port);
}
}  // namespace

std::string flowToString(const FlowKey& k) {
  if (static_cast<FlowKind>(k.kind) == FlowKind::kRoceQp) {
    return absl::StrCat(pairToString(k), " qp 0x", absl::Hex(k.qp(), absl::kZeroPad6), " rocev2");
  }
  const char* name = protoName(k.proto);
  return absl::StrCat(endpoint(k, true), " > ", endpoint(k, false), " ",
                      name ? std::string(name) : absl::StrCat("proto", k.proto));
}

const char* flowKindName(const FlowKey& k) {
  if (static_cast<FlowKind>(k.kind) == FlowKind::kRoceQp) return "rocev2";
  const bool transport = k.proto == 6 || k.proto == 17 || k.proto == 132;  // tcp, udp, sctp: ports in the key
  return transport ? protoName(k.proto) : "other";
}

std::string pairToString(const FlowKey& k) {
  return absl::StrCat(addressToString(k, true), " > ", addressToString(k, false));
}

bool parsePrefix(std::string_view text, IpPrefix* out) {
  size_t slash = text.find('/');
  std::string addr(text.substr(0, slash));
  IpPrefix p;
  if (inet_pton(AF_INET, addr.c_str(), p.addr.data()) == 1) {
    p.family = 4;
  } else if (inet_pton(AF_INET6, addr.c_str(), p.addr.data()) == 1) {
    p.family = 6;
  } else {
    return false;
  }
  int max_len = p.family == 4 ? 32 : 128;
  p.length = max_len;
  if (slash != std::string_view::npos &&
      (!absl::SimpleAtoi(std::string(text.substr(slash + 1)), &p.length) || p.length < 0 || p.length > max_len)) {
    return false;
  }
  *out = p;
  return true;
}

}  // namespace burstscope
