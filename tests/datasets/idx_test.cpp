// IDX files written here in the published layout, plain and gzipped, read
// back; and every way such a file can be broken, each refused by name.
#include "datasets/idx.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "testing/dataset_errors.h"
#include "testing/idx_files.h"
#include "testing/temp_dir.h"

namespace tidepool::datasets {
namespace {

using testing::gzip_bytes;
using testing::idx_bytes;
using testing::TempDir;
using testing::write_bytes;

std::vector<std::uint8_t> counting(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + 3);
  return v;
}

TEST(Idx, PlainAndGzippedFilesReadToTheSameArray) {
  TempDir dir;
  const auto data = counting(3 * 4 * 5);
  const auto plain = idx_bytes({3, 4, 5}, data);
  write_bytes(dir / "a-idx3-ubyte", plain);
  write_bytes(dir / "a-idx3-ubyte.gz", gzip_bytes(plain));
  for (const char* name : {"a-idx3-ubyte", "a-idx3-ubyte.gz"}) {
    const IdxArray a = read_idx_file(dir / name);
    EXPECT_EQ(a.dims, (std::vector<std::uint32_t>{3, 4, 5})) << name;
    EXPECT_EQ(a.data, data) << name;
  }
  // Recognised by content, not by name: gzip bytes under a plain name.
  write_bytes(dir / "b", gzip_bytes(plain));
  EXPECT_EQ(read_idx_file(dir / "b").data, data);
}

TEST(Idx, SizesAreBigEndianAndOneToFourDimensionsAreRead) {
  // 258 = 0x00000102: a little-endian reader would see 0x02010000.
  const auto one = decode_idx(idx_bytes({258}, counting(258)), "one");
  EXPECT_EQ(one.dims, (std::vector<std::uint32_t>{258}));
  const auto four = decode_idx(idx_bytes({2, 1, 3, 2}, counting(12)), "four");
  EXPECT_EQ(four.dims, (std::vector<std::uint32_t>{2, 1, 3, 2}));
  EXPECT_EQ(four.data, counting(12));
}

TEST(Idx, GzipMembersOneAfterAnotherAreJoined) {
  const auto whole = idx_bytes({2, 8}, counting(16));
  const std::vector<std::uint8_t> head(whole.begin(), whole.begin() + 10), tail(whole.begin() + 10, whole.end());
  auto joined = gzip_bytes(head);
  const auto second = gzip_bytes(tail);
  joined.insert(joined.end(), second.begin(), second.end());
  EXPECT_EQ(decode_idx(joined, "joined").data, counting(16));
}

TEST(Idx, WrongMagicAndTypesAreRefused) {
  auto bytes = idx_bytes({4}, counting(4));
  bytes[1] = 0x08;
  testing::expect_dataset_error([&] { decode_idx(bytes, "x.idx"); }, {"x.idx", "not an IDX file", "0x08"});
  testing::expect_dataset_error([&] { decode_idx(idx_bytes({4}, counting(16), 0x0D), "f.idx"); }, {"f.idx", "32-bit float", "0x08"});
  testing::expect_dataset_error([&] { decode_idx(idx_bytes({4}, counting(4), 0x42), "u.idx"); }, {"u.idx", "unknown element type 0x42"});
  testing::expect_dataset_error([&] { decode_idx(idx_bytes({}, {}), "r0"); }, {"r0", "1 to 4 dimensions", "says 0"});
  testing::expect_dataset_error([&] { decode_idx(idx_bytes({1, 1, 1, 1, 1}, {1}), "r5"); }, {"r5", "says 5"});
  testing::expect_dataset_error([&] { decode_idx(std::vector<std::uint8_t>{0, 0}, "tiny"); }, {"tiny", "truncated", "2 bytes"});
}

TEST(Idx, TruncatedOrOverlongDataIsRefused) {
  auto bytes = idx_bytes({10, 28, 28}, counting(10 * 28 * 28));
  auto cut = bytes;
  cut.resize(cut.size() - 1);
  testing::expect_dataset_error([&] { decode_idx(cut, "cut"); }, {"cut", "truncated", "10x28x28 = 7840", "has 7839"});
  cut.resize(10);  // mid-header
  testing::expect_dataset_error([&] { decode_idx(cut, "head"); }, {"head", "truncated", "16-byte header"});
  auto longer = bytes;
  longer.push_back(0);
  testing::expect_dataset_error([&] { decode_idx(longer, "long"); }, {"long", "1 bytes more than the header's 10x28x28"});
  // Sizes whose product overflows 64 bits are a truncated file, not a crash.
  testing::expect_dataset_error([&] { decode_idx(idx_bytes({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {}), "huge"); },
               {"huge", "truncated", "4294967295x4294967295x4294967295"});
}

TEST(Idx, BrokenGzipIsRefusedWithTheFileName) {
  TempDir dir;
  const auto gz = gzip_bytes(idx_bytes({100}, counting(100)));
  auto truncated = gz;
  truncated.resize(gz.size() / 2);
  write_bytes(dir / "t.gz", truncated);
  testing::expect_dataset_error([&] { read_idx_file(dir / "t.gz"); }, {(dir / "t.gz").string(), "truncated gzip data"});

  auto corrupt = gz;
  corrupt[gz.size() - 6] ^= 0xFF;  // inside the CRC-32 of the trailer
  write_bytes(dir / "c.gz", corrupt);
  testing::expect_dataset_error([&] { read_idx_file(dir / "c.gz"); }, {(dir / "c.gz").string(), "corrupt gzip data"});

  auto trailing = gz;
  trailing.insert(trailing.end(), {1, 2, 3});
  testing::expect_dataset_error([&] { decode_idx(trailing, "tr"); }, {"tr", "3 bytes of trailing data"});

  testing::expect_dataset_error([&] { gunzip(gz, "small", 50); }, {"small", "more than 50 bytes"});
}

TEST(Idx, MissingFileIsNamed) {
  TempDir dir;
  testing::expect_dataset_error([&] { read_idx_file(dir / "nothing.gz"); }, {"file missing", (dir / "nothing.gz").string()});
}

}  // namespace
}  // namespace tidepool::datasets
