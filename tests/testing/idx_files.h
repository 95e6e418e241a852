// IDX files (MNIST's format) written byte by byte, plain or gzipped with
// zlib, so the tests read the format as it is published rather than what
// our own reader expects; and a tiny Fashion-MNIST folder made of them.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

namespace tidepool::testing {

// The header (two zeros, type 0x08, rank, big-endian sizes) and `data`.
inline std::vector<std::uint8_t> idx_bytes(const std::vector<std::uint32_t>& dims,
                                           const std::vector<std::uint8_t>& data, std::uint8_t type = 0x08) {
  std::vector<std::uint8_t> out = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<std::uint8_t>(d >> shift));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// One gzip member (what `gzip` writes), by zlib's deflate.
inline std::vector<std::uint8_t> gzip_bytes(const std::vector<std::uint8_t>& in) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::vector<std::uint8_t> out(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int ret = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  if (ret != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(z.total_out);
  return out;
}

// A pixel that differs by image, row and column, so a misplaced byte shows.
inline std::uint8_t fashion_pixel(int image, int y, int x) {
  return static_cast<std::uint8_t>((image * 31 + y * 9 + x * 5 + 1) % 256);
}

// A Fashion-MNIST folder: `train` and `test` images of 28x28 with
// fashion_pixel() values and labels (i * 3) % 10, under the published names,
// gzipped or plain.
inline void write_tiny_fashion_mnist(const std::filesystem::path& dir, int train = 6, int test = 4, bool gz = true) {
  auto write = [&](const std::string& prefix, int count, int first) {
    std::vector<std::uint8_t> pixels, labels;
    for (int i = first; i < first + count; ++i) {
      labels.push_back(static_cast<std::uint8_t>((i * 3) % 10));
      for (int y = 0; y < 28; ++y)
        for (int x = 0; x < 28; ++x) pixels.push_back(fashion_pixel(i, y, x));
    }
    const auto images = idx_bytes({static_cast<std::uint32_t>(count), 28, 28}, pixels);
    const auto label_file = idx_bytes({static_cast<std::uint32_t>(count)}, labels);
    const std::string suffix = gz ? ".gz" : "";
    write_bytes(dir / (prefix + "-images-idx3-ubyte" + suffix), gz ? gzip_bytes(images) : images);
    write_bytes(dir / (prefix + "-labels-idx1-ubyte" + suffix), gz ? gzip_bytes(label_file) : label_file);
  };
  write("train", train, 0);
  write("t10k", test, 100);
}

}  // namespace tidepool::testing
