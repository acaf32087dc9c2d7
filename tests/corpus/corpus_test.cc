// Every frame of the committed malformed-input corpus (tests/corpus, written by tools/make_corpus.py) through
// the decoder: each must be counted under the reason its case names. Each frame is decoded from a heap
// buffer of exactly its captured length, so that under AddressSanitizer a read one byte past it fails.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "burstscope/decode.h"

namespace burstscope {
namespace {

const std::filesystem::path kCorpus = std::filesystem::path(BURSTSCOPE_SOURCE_ROOT) / "tests/corpus";

std::vector<uint8_t> readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json manifest() {
  std::ifstream in(kCorpus / "manifest.json");
  return nlohmann::json::parse(in);
}

TEST(Corpus, EveryFrameIsCountedUnderItsReason) {
  const nlohmann::json frames = manifest().at("frames");
  ASSERT_GT(frames.size(), 200u);
  std::map<std::string, int> reasons_seen;
  for (const auto& [name, expect] : frames.items()) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> file = readFile(kCorpus / "frames" / (name + ".frame"));
    ASSERT_GE(file.size(), 4u);
    uint32_t wire_len;
    std::memcpy(&wire_len, file.data(), 4);
    const size_t caplen = file.size() - 4;
    ASSERT_EQ(caplen, expect.at("caplen").get<size_t>());
    EXPECT_EQ(wire_len, expect.at("wire_len").get<uint32_t>());
    // Exactly caplen bytes on the heap (new[] of 0 is a valid, unreadable allocation).
    std::unique_ptr<uint8_t[]> bytes(new uint8_t[caplen]);
    std::memcpy(bytes.get(), file.data() + 4, caplen);
    Decoder d;
    PacketRecord r{};
    const DecodeError e = d.decode({bytes.get(), caplen}, wire_len, &r);
    EXPECT_STREQ(decodeErrorName(e), expect.at("reason").get<std::string>().c_str());
    // One count, under that reason; the record still measures the frame.
    EXPECT_EQ(d.stats().errors[static_cast<int>(e)], 1u);
    EXPECT_EQ(d.stats().errorTotal(), e == DecodeError::kNone ? 0u : 1u);
    // The outer frame is measured at its wire length (the captured length if that claimed less); an inner
    // frame at what remains of it after the encapsulation.
    const uint32_t outer = std::max<uint32_t>(wire_len, static_cast<uint32_t>(caplen));
    if (r.flags & kRecordEncapsulated) {
      EXPECT_LT(r.wire_len, outer);
    } else {
      EXPECT_EQ(r.wire_len, outer);
    }
    ++reasons_seen[decodeErrorName(e)];
  }
  // The corpus covers every reason the decoder has (a new reason needs its malformed case): a frame, or,
  // for the reasons of a host capture's link layer, which an Ethernet frame cannot show, a capture file
  // whose expected report counts it (tests/corpus/check_corpus.py checks that through the binary).
  const nlohmann::json files = manifest().at("files");
  for (const auto& [name, expect] : files.items()) {
    if (!expect.contains("json")) continue;
    for (const auto& [key, value] : expect.at("json").items()) {
      if (key.starts_with("decode.errors.") && value.is_number() && value.get<int>() > 0) {
        ++reasons_seen[key.substr(std::string("decode.errors.").size())];
      }
    }
  }
  for (int i = 0; i < kDecodeErrorCount; ++i) {
    const char* n = decodeErrorName(static_cast<DecodeError>(i));
    EXPECT_GT(reasons_seen[n], 0) << "no corpus frame is counted as " << n;
  }
}

}  // namespace
}  // namespace burstscope
