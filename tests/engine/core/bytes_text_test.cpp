// Sizes as people write them (--budget, checkpoints' settings): what reads,
// and that everything else is refused with the text and the reason rather
// than read as some other size.
#include "engine/core/bytes_text.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tidepool {
namespace {

TEST(ParseBytes, ReadsUnitsAndRoundsToWholeBytes) {
  EXPECT_EQ(parse_bytes("900MiB"), 900ull << 20);
  EXPECT_EQ(parse_bytes("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_bytes("2TiB"), 2ull << 40);
  EXPECT_EQ(parse_bytes("512MB"), 512'000'000ull);
  EXPECT_EQ(parse_bytes("64 KiB"), 64ull << 10);
  EXPECT_EQ(parse_bytes("1e9"), 1'000'000'000ull);
  EXPECT_EQ(parse_bytes("4096"), 4096ull);
  EXPECT_EQ(parse_bytes("0.6"), 1ull);
  EXPECT_EQ(parse_bytes("15G"), 15ull << 30);
  EXPECT_EQ(parse_bytes("16777215TiB"), 16777215ull << 40);  // the largest whole TiB a size_t holds
  for (std::size_t b : {std::size_t{1} << 20, std::size_t{65536000}, std::size_t{63} << 20})
    EXPECT_EQ(parse_bytes(exact_bytes_text(b)), b);
}

// As people write sizes for Docker, Kubernetes and df: any case, k/m/g
// and Ki/Mi/Gi as powers of 1024, KB/MB/GB as powers of 1000.
TEST(ParseBytes, ReadsTheUnitsOfOtherToolsInAnyCase) {
  EXPECT_EQ(parse_bytes("2g"), 2ull << 30);
  EXPECT_EQ(parse_bytes("900m"), 900ull << 20);
  EXPECT_EQ(parse_bytes("512k"), 512ull << 10);
  EXPECT_EQ(parse_bytes("2Gi"), 2ull << 30);
  EXPECT_EQ(parse_bytes("900mb"), 900'000'000ull);
  EXPECT_EQ(parse_bytes("1gib"), 1ull << 30);
  EXPECT_EQ(parse_bytes("3 GB"), 3'000'000'000ull);
  EXPECT_EQ(parse_bytes("100b"), 100ull);
}

void expect_refused(const std::string& text, const std::string& why) {
  try {
    const std::size_t bytes = parse_bytes(text);
    ADD_FAILURE() << "'" << text << "' read as " << bytes << " bytes";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the size '" + text + "' " + why, 0), 0u) << e.what();
  }
}

TEST(ParseBytes, RefusesWhatIsNotASize) {
  expect_refused("nan", "is not a finite number");
  expect_refused("-inf", "is not a finite number");
  expect_refused("infGiB", "is not a finite number");
  expect_refused("-5MiB", "is not positive");
  expect_refused("-0", "is not positive");
  expect_refused("0", "is not positive");
  expect_refused("0.4", "is less than a byte");
  expect_refused("1e-300", "is less than a byte");
  expect_refused("1e-400", "is out of range");
  expect_refused("1e400", "is out of range");
  expect_refused("99999999999TiB", "does not fit in 64 bits");
  expect_refused("16384PiB", "cannot be read");  // no such unit here
  expect_refused("16777216TiB", "does not fit in 64 bits");  // exactly 2^64
  expect_refused("", "cannot be read");
  expect_refused("MiB", "cannot be read");
  expect_refused("12XB", "cannot be read");
  expect_refused("900MiB of it", "cannot be read");
  // Found by fuzz/bytes_fuzzer (fuzz/corpus/bytes/regress_*).
  expect_refused("0.225B", "is less than a byte");
  expect_refused("690e18", "does not fit in 64 bits");
}

}  // namespace
}  // namespace tidepool
