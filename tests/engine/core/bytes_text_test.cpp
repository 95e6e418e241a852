// Sizes as people write them (--budget) and as every view prints them.
#include "engine/core/bytes_text.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tidepool {
namespace {

constexpr std::size_t KiB = 1024, MiB = KiB * KiB, GiB = MiB * KiB;

TEST(BytesText, ParseReadsBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_bytes("900MiB"), 900 * MiB);
  EXPECT_EQ(parse_bytes("1.5GiB"), GiB + GiB / 2);
  EXPECT_EQ(parse_bytes("512MB"), 512'000'000u);
  EXPECT_EQ(parse_bytes("64KiB"), 64 * KiB);
  EXPECT_EQ(parse_bytes("2 G"), 2 * GiB);
  EXPECT_EQ(parse_bytes("1e9"), 1'000'000'000u);
  EXPECT_EQ(parse_bytes("123456"), 123456u);
  EXPECT_EQ(parse_bytes("0.6B"), 1u);  // to the nearest byte
}

TEST(BytesText, ParseRefusesWhatIsNotASize) {
  for (const char* text : {"", "MiB", "-5MiB", "0", "0GiB", "12 parsecs", "nan", "inf", "5MiBs"})
    EXPECT_THROW(parse_bytes(text), std::invalid_argument) << text;
}

// Found by fuzz/bytes_fuzzer (inputs in fuzz/corpus/bytes/regress_*):
// "0.225B" rounded to a size of zero, and "690e18" overflowed llround into
// 2^63 bytes; both are refused now.
TEST(BytesText, ParseRefusesUnderHalfAByteAndOver8EiB) {
  try {
    parse_bytes("0.225B");
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("less than one byte"), std::string::npos) << e.what();
  }
  try {
    parse_bytes("690e18");
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_bytes("8EiB"), std::invalid_argument);  // no such unit
  EXPECT_EQ(parse_bytes("7GiB"), 7 * GiB);
}

TEST(BytesText, ExactTextReadsBackToTheSameSize) {
  for (std::size_t bytes : {std::size_t{1}, std::size_t{255}, 63 * MiB, std::size_t{65'536'000}, 3 * GiB + 1})
    EXPECT_EQ(parse_bytes(exact_bytes_text(bytes)), bytes) << exact_bytes_text(bytes);
  EXPECT_EQ(exact_bytes_text(63 * MiB), "63MiB");
  EXPECT_EQ(exact_bytes_text(65'536'000u), "65536000");
}

}  // namespace
}  // namespace tidepool
