// libFuzzer target: the frame decoder. Input: a 4-byte little-endian wire length, then the captured bytes
// (the format of tests/corpus/frames/*.frame). The bytes are copied to a buffer of exactly their length, so
// that AddressSanitizer sees any read past the captured length.
#include <cstdint>
#include <cstring>
#include <memory>

#include "burstscope/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return -1;  // not an input of this format: keep it out of the corpus
  uint32_t wire_len;
  std::memcpy(&wire_len, data, 4);
  const size_t caplen = size - 4;
  std::unique_ptr<uint8_t[]> frame(new uint8_t[caplen]);
  std::memcpy(frame.get(), data + 4, caplen);

  // Two configurations: the default, and one that treats outer tags as the mirror's and has local prefixes.
  static burstscope::Decoder plain;
  static burstscope::Decoder configured = [] {
    burstscope::DecoderConfig c;
    c.mirror_vlan_tags = 2;
    burstscope::IpPrefix p;
    burstscope::parsePrefix("10.0.0.0/8", &p);
    c.local_nets.push_back(p);
    burstscope::parsePrefix("fd00::/16", &p);
    c.local_nets.push_back(p);
    return burstscope::Decoder(c);
  }();
  for (burstscope::Decoder* d : {&plain, &configured}) {
    burstscope::PacketRecord r{};
    const burstscope::DecodeError e = d->decode({frame.get(), caplen}, wire_len, &r);
    // What the decoder promises, checked on every input.
    if (static_cast<int>(e) >= burstscope::kDecodeErrorCount) __builtin_trap();
    if (r.wire_len > std::max<uint32_t>(wire_len, static_cast<uint32_t>(caplen))) __builtin_trap();
    if ((e != burstscope::DecodeError::kNone) != ((r.flags & burstscope::kRecordDecodeError) != 0)) __builtin_trap();
  }
  return 0;
}
