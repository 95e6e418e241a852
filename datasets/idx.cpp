#include "datasets/idx.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <system_error>

#include "datasets/dataset.h"

namespace tidepool::datasets {
namespace {

std::string hex_byte(std::uint8_t b) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02X", b);
  return text;
}

// The IDX element types other than unsigned byte, named so the refusal says
// what the file holds.
const char* type_name(std::uint8_t type) {
  switch (type) {
    case 0x09: return "signed byte";
    case 0x0B: return "16-bit integer";
    case 0x0C: return "32-bit integer";
    case 0x0D: return "32-bit float";
    case 0x0E: return "64-bit float";
    default: return nullptr;
  }
}

// Ends the inflate stream however gunzip() leaves.
struct InflateStream {
  z_stream z{};
  bool open = false;
  ~InflateStream() {
    if (open) inflateEnd(&z);
  }
};

}  // namespace

bool is_gzip(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> in, const std::string& source,
                                 std::size_t max_bytes) {
  auto fail = [&](const std::string& why) { return DatasetError(source + ": " + why); };
  InflateStream s;
  if (inflateInit2(&s.z, 16 + MAX_WBITS) != Z_OK) throw fail("cannot start zlib's inflate");
  s.open = true;

  std::vector<std::uint8_t> out;
  // gzip's trailer holds the size modulo 2^32: a good guess for one member,
  // believed only as far as deflate can compress (about 1032:1), so that a
  // damaged trailer cannot make us reserve a gigabyte.
  if (in.size() >= 4) {
    const std::size_t isize = std::size_t{in[in.size() - 4]} | std::size_t{in[in.size() - 3]} << 8 |
                              std::size_t{in[in.size() - 2]} << 16 | std::size_t{in[in.size() - 1]} << 24;
    out.reserve(std::min({isize, max_bytes, in.size() * 1032}));
  }
  std::size_t fed = 0;  // bytes of `in` handed to zlib so far
  auto feed = [&] {
    // avail_in is 32 bits wide; larger inputs go in pieces.
    const std::size_t n = std::min<std::size_t>(in.size() - fed, UINT_MAX);
    s.z.next_in = const_cast<Bytef*>(in.data() + fed);
    s.z.avail_in = static_cast<uInt>(n);
    fed += n;
  };
  feed();
  std::uint8_t buffer[1 << 16];
  for (;;) {
    if (s.z.avail_in == 0 && fed < in.size()) feed();
    s.z.next_out = buffer;
    s.z.avail_out = sizeof buffer;
    const int ret = inflate(&s.z, Z_NO_FLUSH);
    const std::size_t produced = sizeof buffer - s.z.avail_out;
    if (out.size() + produced > max_bytes)
      throw fail("decompresses to more than " + std::to_string(max_bytes) + " bytes (corrupt, or not a dataset file)");
    out.insert(out.end(), buffer, buffer + produced);
    if (ret == Z_STREAM_END) {
      const std::size_t left = s.z.avail_in + (in.size() - fed);
      if (left == 0) return out;
      // Another gzip member may follow (gunzip joins them); anything else
      // is not part of a gzip file.
      const std::size_t at = in.size() - left;
      if (!is_gzip(in.subspan(at)))
        throw fail(std::to_string(left) + " bytes of trailing data after the gzip stream (corrupt file)");
      if (inflateReset(&s.z) != Z_OK) throw fail("cannot restart zlib's inflate");
      continue;
    }
    if (ret == Z_OK) continue;
    if (ret == Z_BUF_ERROR) {
      // No progress possible: zlib needs input and there is none left.
      throw fail("truncated gzip data (the file ends mid-stream after " + std::to_string(out.size()) +
                 " decompressed bytes)");
    }
    if (ret == Z_MEM_ERROR) throw fail("out of memory while decompressing");
    throw fail(std::string("corrupt gzip data (") + (s.z.msg ? s.z.msg : "zlib error " + std::to_string(ret)) +
               ")");
  }
}

IdxArray parse_idx(std::vector<std::uint8_t> bytes, const std::string& source) {
  auto fail = [&](const std::string& why) { return DatasetError(source + ": " + why); };
  if (bytes.size() < 4)
    throw fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than an IDX header");
  if (bytes[0] != 0 || bytes[1] != 0)
    throw fail("not an IDX file (it starts with " + hex_byte(bytes[0]) + " " + hex_byte(bytes[1]) +
               ", not two zero bytes)");
  const std::uint8_t type = bytes[2];
  if (type != 0x08) {
    if (const char* name = type_name(type))
      throw fail(std::string("IDX elements are ") + name + "s; only unsigned-byte (0x08) files are read");
    throw fail("not an IDX file (unknown element type " + hex_byte(type) + ")");
  }
  const std::size_t rank = bytes[3];
  if (rank < 1 || rank > 4)
    throw fail("not an IDX file of 1 to 4 dimensions (the header says " + std::to_string(rank) + ")");
  const std::size_t header = 4 + 4 * rank;
  if (bytes.size() < header)
    throw fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than its " + std::to_string(header) +
               "-byte header");

  IdxArray a;
  std::uint64_t elements = 1;
  bool overflow = false;
  std::string shape;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::uint8_t* p = bytes.data() + 4 + 4 * d;
    const std::uint32_t n = std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
    a.dims.push_back(n);
    overflow = overflow || __builtin_mul_overflow(elements, std::uint64_t{n}, &elements);
    if (d) shape += 'x';
    shape += std::to_string(n);
  }
  const std::uint64_t have = bytes.size() - header;
  if (overflow || elements > have)
    throw fail("truncated: the header says " + shape + (overflow ? "" : " = " + std::to_string(elements)) +
               " bytes of data, the file has " + std::to_string(have));
  if (elements < have)
    throw fail(std::to_string(have - elements) + " bytes more than the header's " + shape +
               " (corrupt, or not an IDX file)");
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header));
  a.data = std::move(bytes);
  return a;
}

IdxArray decode_idx(std::span<const std::uint8_t> bytes, const std::string& source, std::size_t max_bytes) {
  if (is_gzip(bytes)) return parse_idx(gunzip(bytes, source, max_bytes), source);
  return parse_idx(std::vector<std::uint8_t>(bytes.begin(), bytes.end()), source);
}

IdxArray read_idx_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw DatasetError("file missing: " + path.string());
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw DatasetError("cannot stat " + path.string() + ": " + ec.message());
  std::vector<std::uint8_t> bytes(size);
  std::ifstream in(path, std::ios::binary);
  if (!in || !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)))
    throw DatasetError("cannot read " + path.string());
  if (is_gzip(bytes)) return parse_idx(gunzip(bytes, path.string()), path.string());
  return parse_idx(std::move(bytes), path.string());
}

}  // namespace tidepool::datasets
