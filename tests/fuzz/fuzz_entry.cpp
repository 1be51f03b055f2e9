// The libFuzzer entry point of one harness (GOPT_FUZZ=ON); GOPT_FUZZ_CHECK names the check
// of tests/fuzz/fuzz_targets.h. A check lets every finding escape as an exception or a
// crash, which libFuzzer reports with the input.
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)gopt::fuzz::GOPT_FUZZ_CHECK(data, size);
  return 0;
}
