// libFuzzer target: the YAML configuration parser (yaml-cpp and our key-by-key reader behind
// `burstscope run --config`). Any input gives a configuration or an error; never a crash or a hang.
#include <cstdint>
#include <string>

#include "src/config/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto c = burstscope::parseRunConfig(text, "fuzz.yaml");
  if (!c.ok() && c.status().message().empty()) __builtin_trap();  // an error always says what is wrong
  (void)burstscope::parseDurationNs(text);
  return 0;
}
