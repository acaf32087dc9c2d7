// Re-encapsulates every frame of a pcap as a switch mirror would send it: ERSPAN type I/II/III, GRE
// transparent Ethernet bridging, VXLAN, or a QinQ tag stack. The inner frame is left untouched and both
// captured and wire length grow by the header bytes added, so `burstscope analyze` of the output must equal
// analyze of the input. Used by the tests and for checking against the reference oracle.
// usage: wrap_trace MODE IN.pcap OUT.pcap [--drop-every N] [--repeat N] [--duplicate-every N]
//   MODE: erspan1 | erspan2 | erspan3 | erspan3-sub | teb | vxlan | qinq | pad-usec
//   pad-usec writes no encapsulation: it pads every frame with zero bytes to its wire length and writes a
//   microsecond pcap (timestamps truncated, as libpcap reads a nanosecond file at microsecond precision).
//   That is what DPDK's net_pcap can replay honestly: it reports the captured length as the packet length
//   and reads microseconds, so `analyze` of the output is what `run` on net_pcap of it must measure.
//   pad-usec --repeat N writes the trace N times, each copy 100 ms after the previous one ends: a longer
//   replay of the same real traffic (for the exporter tests, which need several scrapes' worth). Each copy
//   continues the TCP connections of the one before: sequence and acknowledgement numbers advance by what
//   the direction carried in the first copy, so the replay is one long job, not the same bytes sent again.
//   --drop-every N leaves out every Nth frame while still advancing the mirror sequence (ERSPAN II/III,
//   TEB), to simulate mirror loss that burstscope must count as sequence gaps; with pad-usec, a frame the
//   mirror lost (a TCP hole the receiver acknowledges). pad-usec --duplicate-every N writes every Nth frame
//   twice with the same timestamp: the mirror's copy of a frame it saw on two ports.
#include <pcap/pcap.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

void put16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v >> 16));
  put16(b, static_cast<uint16_t>(v));
}

// Outer Ethernet + IPv4 (no options) carrying `proto`; the IPv4 total length covers `payload_len`.
void outerIpv4(std::vector<uint8_t>& b, uint8_t proto, size_t payload_len) {
  const uint8_t macs[12] = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01};
  b.insert(b.end(), macs, macs + 12);
  put16(b, 0x0800);
  b.push_back(0x45);
  b.push_back(0);
  put16(b, static_cast<uint16_t>(std::min<size_t>(20 + payload_len, 0xFFFF)));
  put32(b, 0);  // id, flags, fragment offset
  b.push_back(64);
  b.push_back(proto);
  put16(b, 0);           // checksum (not checked by a monitor)
  put32(b, 0xC0A80A01);  // 192.168.10.1: the switch
  put32(b, 0xC0A80A02);  // 192.168.10.2: the collector
}

uint32_t get32(const uint8_t* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }
void set32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

// The TCP segments of an Ethernet frame (untagged or one VLAN tag, IPv4 or IPv6 without extension headers),
// for continuing connections across repeated copies of a trace.
struct TcpView {
  std::string dir;         // addresses and ports, this direction
  std::string reverse;     // the same, the other direction
  uint8_t* seq = nullptr;  // the sequence number field (acknowledgement follows)
  uint32_t advance = 0;    // sequence space this segment occupies (payload, SYN, FIN)
  bool ack = false;
};
bool tcpView(uint8_t* f, size_t len, TcpView* v) {
  size_t off = 12;
  if (len < off + 2) return false;
  uint16_t type = static_cast<uint16_t>(f[off] << 8 | f[off + 1]);
  if (type == 0x8100 && len >= off + 6) {
    off += 4;
    type = static_cast<uint16_t>(f[off] << 8 | f[off + 1]);
  }
  off += 2;
  size_t addr = 0, alen = 0, l4 = 0, ip_end = 0;
  if (type == 0x0800 && len >= off + 20 && f[off + 9] == 6) {
    addr = off + 12, alen = 4, l4 = off + (f[off] & 0x0F) * 4u;
    ip_end = off + (f[off + 2] << 8 | f[off + 3]);
  } else if (type == 0x86DD && len >= off + 40 && f[off + 6] == 6) {
    addr = off + 8, alen = 16, l4 = off + 40;
    ip_end = l4 + (f[off + 4] << 8 | f[off + 5]);
  } else {
    return false;
  }
  if (len < l4 + 20 || ip_end > len) return false;
  const size_t tcp_len = (f[l4 + 12] >> 4) * 4u;
  if (tcp_len < 20 || l4 + tcp_len > ip_end) return false;
  const std::string src(reinterpret_cast<char*>(f + addr), alen), dst(reinterpret_cast<char*>(f + addr + alen), alen);
  const std::string sport(reinterpret_cast<char*>(f + l4), 2), dport(reinterpret_cast<char*>(f + l4 + 2), 2);
  v->dir = src + dst + sport + dport;
  v->reverse = dst + src + dport + sport;
  v->seq = f + l4 + 4;
  const uint8_t flags = f[l4 + 13];
  v->advance = static_cast<uint32_t>(ip_end - l4 - tcp_len) + ((flags & 0x02) ? 1 : 0) + ((flags & 0x01) ? 1 : 0);
  v->ack = (flags & 0x10) != 0;
  return true;
}

// Sequence space each TCP direction covers in the first copy: first sequence number to the furthest end.
struct SeqSpan {
  uint32_t first = 0, end = 0;
  uint32_t span() const { return end - first; }
};

struct Wrapper {
  std::string mode;
  uint32_t seq = 0;

  // Returns the header bytes to put before a frame of wire length `inner_len`.
  std::vector<uint8_t> header(uint32_t inner_len, const uint8_t* inner, uint32_t caplen) {
    std::vector<uint8_t> h;
    if (mode == "qinq") {
      h.insert(h.end(), inner, inner + std::min<uint32_t>(12, caplen));
      put16(h, 0x88A8);
      put16(h, 100);
      put16(h, 0x8100);
      put16(h, 200);
      return h;  // the caller skips the inner MACs, which are already in h
    }
    if (mode == "vxlan") {
      outerIpv4(h, 17, 16 + inner_len);
      put16(h, 49152);
      put16(h, 4789);
      put16(h, static_cast<uint16_t>(std::min<size_t>(16 + inner_len, 0xFFFF)));
      put16(h, 0);
      put32(h, 0x08000000);  // I flag
      put32(h, 42 << 8);     // VNI 42
      return h;
    }
    const bool with_seq = mode != "erspan1";
    std::vector<uint8_t> gre;
    put16(gre, with_seq ? 0x1000 : 0x0000);
    put16(gre, mode == "teb" ? 0x6558 : (mode.rfind("erspan3", 0) == 0 ? 0x22EB : 0x88BE));
    if (with_seq) put32(gre, seq);
    if (mode == "erspan2") {
      put32(gre, 0x10000000u | 7);  // version 1, VLAN 0, session 7
      put32(gre, 0);
    } else if (mode == "erspan3" || mode == "erspan3-sub") {
      put32(gre, 0x20000000u | 9);                          // version 2, session 9
      put32(gre, 0);                                        // timestamp
      put16(gre, 0);                                        // SGT
      put16(gre, mode == "erspan3-sub" ? 0x0001 : 0x0000);  // ingress (D=0), O flag for the subheader
      if (mode == "erspan3-sub") {
        put32(gre, 0);
        put32(gre, 0);
      }
    }
    outerIpv4(h, 47, gre.size() + inner_len);
    h.insert(h.end(), gre.begin(), gre.end());
    return h;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: wrap_trace MODE IN.pcap OUT.pcap [--drop-every N] [--repeat N] [--duplicate-every N]\n"
      "  --drop-every N       leave out every Nth frame (a wrapping mode: an ERSPAN/GRE sequence gap;\n"
      "                       pad-usec: a frame the mirror lost)\n"
      "  --repeat N           pad-usec: the trace N times over, each copy 100 ms after the last\n"
      "  --duplicate-every N  pad-usec: write every Nth frame twice (the mirror's copy, same timestamp)\n";
  if (argc < 4 || argc % 2 != 0) {
    std::fputs(usage, stderr);
    return 2;
  }
  Wrapper w{argv[1]};
  const std::vector<std::string> modes = {"erspan1", "erspan2", "erspan3", "erspan3-sub",
                                          "teb",     "vxlan",   "qinq",    "pad-usec"};
  if (std::find(modes.begin(), modes.end(), w.mode) == modes.end()) {
    std::fprintf(stderr, "wrap_trace: unknown mode '%s'\n", argv[1]);
    return 2;
  }
  long drop_every = 0, repeat = 1, duplicate_every = 0;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    char* end = nullptr;
    const long value = std::strtol(argv[i + 1], &end, 10);
    if (*argv[i + 1] == '\0' || *end != '\0' || value < 1) {
      std::fprintf(stderr, "wrap_trace: %s needs a positive integer, not '%s'\n", opt.c_str(), argv[i + 1]);
      return 2;
    }
    const bool pad_only = opt == "--repeat" || opt == "--duplicate-every";
    if ((opt != "--drop-every" && !pad_only) || (pad_only && w.mode != "pad-usec")) {
      std::fprintf(stderr, "wrap_trace: %s is not an option of mode %s\n%s", opt.c_str(), w.mode.c_str(), usage);
      return 2;
    }
    (opt == "--drop-every" ? drop_every : opt == "--repeat" ? repeat : duplicate_every) = value;
  }
  char err[PCAP_ERRBUF_SIZE];
  const bool pad = w.mode == "pad-usec";
  const u_int precision = pad ? PCAP_TSTAMP_PRECISION_MICRO : PCAP_TSTAMP_PRECISION_NANO;
  pcap_t* in = pcap_open_offline_with_tstamp_precision(argv[2], precision, err);
  if (!in) {
    std::fprintf(stderr, "wrap_trace: %s\n", err);
    return 1;
  }
  pcap_t* dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 262144, precision);
  pcap_dumper_t* out = pcap_dump_open(dead, argv[3]);
  if (!out) {
    std::fprintf(stderr, "wrap_trace: %s\n", pcap_geterr(dead));
    return 1;
  }
  pcap_pkthdr* h;
  const u_char* data;
  long n = 0;
  std::vector<uint8_t> padded;
  std::map<std::string, SeqSpan> spans;
  // Microseconds: the span of the trace, for the shift between repeated copies.
  int64_t first_us = -1, last_us = 0;
  for (long copy = 0; pad && copy < repeat; ++copy) {
    if (copy > 0) {
      pcap_close(in);
      in = pcap_open_offline_with_tstamp_precision(argv[2], precision, err);
      if (!in) {
        std::fprintf(stderr, "wrap_trace: %s\n", err);
        return 1;
      }
    }
    const int64_t shift_us = copy * (last_us - first_us + 100'000);
    while (pcap_next_ex(in, &h, &data) == 1) {
      const int64_t ts_us = int64_t{h->ts.tv_sec} * 1'000'000 + h->ts.tv_usec;
      if (copy == 0) {
        if (first_us < 0) first_us = ts_us;
        last_us = std::max(last_us, ts_us);
      }
      padded.assign(data, data + h->caplen);
      padded.resize(std::max(h->len, h->caplen), 0);
      TcpView tcp;
      if (tcpView(padded.data(), padded.size(), &tcp)) {
        const uint32_t seq = get32(tcp.seq), end = seq + tcp.advance;
        if (copy == 0) {
          auto [it, added] = spans.try_emplace(tcp.dir, SeqSpan{seq, end});
          if (!added && static_cast<int32_t>(end - it->second.end) > 0) it->second.end = end;
        } else {
          const auto c = static_cast<uint32_t>(copy);
          if (auto it = spans.find(tcp.dir); it != spans.end()) set32(tcp.seq, seq + c * it->second.span());
          if (auto it = spans.find(tcp.reverse); tcp.ack && it != spans.end()) {
            set32(tcp.seq + 4, get32(tcp.seq + 4) + c * it->second.span());
          }
        }
      }
      pcap_pkthdr oh = *h;
      oh.caplen = oh.len = static_cast<uint32_t>(padded.size());
      const int64_t t = ts_us + shift_us;
      oh.ts.tv_sec = t / 1'000'000;
      oh.ts.tv_usec = t % 1'000'000;
      ++n;
      if (drop_every > 0 && n % drop_every == 0) continue;
      pcap_dump(reinterpret_cast<u_char*>(out), &oh, padded.data());
      if (duplicate_every > 0 && n % duplicate_every == 0) {
        pcap_dump(reinterpret_cast<u_char*>(out), &oh, padded.data());
      }
    }
  }
  while (!pad && pcap_next_ex(in, &h, &data) == 1) {
    ++n;
    std::vector<uint8_t> frame = w.header(h->len, data, h->caplen);
    ++w.seq;
    if (drop_every > 0 && n % drop_every == 0) continue;
    const uint32_t skip = w.mode == "qinq" ? std::min<uint32_t>(12, h->caplen) : 0;
    const size_t added = frame.size() - skip;
    frame.insert(frame.end(), data + skip, data + h->caplen);
    pcap_pkthdr oh = *h;
    oh.caplen = static_cast<uint32_t>(frame.size());
    oh.len = h->len + static_cast<uint32_t>(added);
    pcap_dump(reinterpret_cast<u_char*>(out), &oh, frame.data());
  }
  pcap_dump_close(out);
  pcap_close(dead);
  pcap_close(in);
  return 0;
}
