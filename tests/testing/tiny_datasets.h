// Datasets small enough for tests that train end to end in well under a
// second, written in the real file formats so the real loaders read them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tidepool::testing {

// A CIFAR-10 binary folder: data_batch_1..5.bin with `per_file` records
// each and test_batch.bin with `test` records (label byte + 3072 pixel
// bytes). The class is the brightest colour plane, so the data is learnable.
inline void write_tiny_cifar10(const std::filesystem::path& dir, int per_file = 64, int test = 64) {
  std::filesystem::create_directories(dir);
  std::uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  auto write = [&](const std::string& name, int records) {
    std::ofstream out(dir / name, std::ios::binary);
    std::vector<unsigned char> rec(3073);
    for (int r = 0; r < records; ++r) {
      const int label = static_cast<int>(next() % 10);
      rec[0] = static_cast<unsigned char>(label);
      for (int i = 0; i < 3072; ++i)
        rec[1 + i] = static_cast<unsigned char>((next() >> 24) % 64 + (i / 1024 == label % 3 ? 150 : 0));
      out.write(reinterpret_cast<const char*>(rec.data()), static_cast<std::streamsize>(rec.size()));
    }
  };
  for (int f = 1; f <= 5; ++f) write("data_batch_" + std::to_string(f) + ".bin", per_file);
  write("test_batch.bin", test);
}

}  // namespace tidepool::testing
