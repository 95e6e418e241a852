// IDX files: the format of MNIST and Fashion-MNIST (LeCun's "idx3-ubyte"),
// plain or gzipped (the form they are distributed in).
//
//   2 bytes   zero
//   1 byte    element type: 0x08 unsigned byte (the only type read here;
//             0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64 are refused by name)
//   1 byte    number of dimensions D (1 to 4)
//   4*D bytes each dimension's size, big-endian
//   the elements, row-major, exactly the product of the dimensions
//
// Everything is parsed from memory so that the fuzzers (fuzz/) reach the
// same code a dataset uses; the file functions only read the bytes. A
// gzipped file is recognised by its content (0x1f 0x8b), not by its name.
// Every problem throws DatasetError naming the source: a missing, truncated
// or corrupt file, a wrong magic, trailing bytes, a decompressed size over
// the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace tidepool::datasets {

struct IdxArray {
  std::vector<std::uint32_t> dims;  // outermost first: {60000, 28, 28}
  std::vector<std::uint8_t> data;   // the elements, row-major
};

// Larger than any IDX file Tidepool reads (Fashion-MNIST's train images are
// 47 MB), small enough that a gzip bomb cannot take the machine's memory.
inline constexpr std::size_t kMaxIdxBytes = std::size_t{1} << 30;

bool is_gzip(std::span<const std::uint8_t> bytes);

// Decompresses a gzip stream (members one after another are joined, as
// gunzip does). Throws DatasetError naming `source` for corrupt or truncated
// data, or for more than `max_bytes` of output.
std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> bytes, const std::string& source,
                                 std::size_t max_bytes = kMaxIdxBytes);

// Parses an uncompressed IDX image; the header is removed from `bytes` and
// the rest becomes the array's data.
IdxArray parse_idx(std::vector<std::uint8_t> bytes, const std::string& source);

// gunzip() when the bytes are gzip, then parse_idx().
IdxArray decode_idx(std::span<const std::uint8_t> bytes, const std::string& source,
                    std::size_t max_bytes = kMaxIdxBytes);

// Reads `path` and decodes it; DatasetError names the path.
IdxArray read_idx_file(const std::filesystem::path& path);

}  // namespace tidepool::datasets
