#include "datasets/dataset.h"

#include <array>
#include <system_error>

#include "datasets/cifar.h"
#include "datasets/fashion_mnist.h"
#include "datasets/generated.h"
#include "datasets/imagenet.h"
#include "datasets/imagenet_shapes.h"

namespace tidepool::datasets {
namespace {

constexpr std::array<std::string_view, 6> kNames = {"generated", "cifar10",  "cifar100",
                                                    "fashion-mnist", "imagenet", "imagenet-shapes"};

std::uint64_t finalize(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::string_view to_string(Split s) { return s == Split::train ? "train" : "test"; }

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  // Each word goes through the full SplitMix finaliser before the next is
  // folded in, so (1, 2, 3) and (2, 1, 3) land far apart.
  std::uint64_t h = finalize(a + 0x9E3779B97F4A7C15ull);
  h = finalize(h ^ (b + 0x632BE59BD9B4E019ull));
  h = finalize(h ^ (c + 0x85157AF5ull));
  return h;
}

std::span<const std::string_view> dataset_names() { return kNames; }

std::filesystem::path default_data_dir(std::string_view name) {
  if (name == "generated") return "data/generated";
  if (name == "fashion-mnist") return FashionMnistDataset::kPackageFolder;
  return {};
}

bool reads_files(std::string_view name) { return name != "imagenet-shapes"; }

void require_directory(const std::filesystem::path& dir, std::string_view what) {
  std::error_code ec;
  const auto st = std::filesystem::status(dir, ec);
  if (!std::filesystem::exists(st)) {
    throw DatasetError(std::string(what) + " folder not found: " + dir.string());
  }
  if (!std::filesystem::is_directory(st)) {
    throw DatasetError(std::string(what) + " path is not a folder: " + dir.string());
  }
}

std::unique_ptr<Dataset> make_dataset(std::string_view name, const std::filesystem::path& dir,
                                      Split split, const DatasetOptions& options) {
  // Written when a loader first reads an image, not here (datasets/generated.h).
  if (name == "generated") return std::make_unique<GeneratedDataset>(dir, split, options);
  if (name == "cifar10") return std::make_unique<CifarDataset>(CifarKind::cifar10, dir, split, options);
  if (name == "cifar100") return std::make_unique<CifarDataset>(CifarKind::cifar100, dir, split, options);
  if (name == "fashion-mnist") return std::make_unique<FashionMnistDataset>(dir, split, options);
  if (name == "imagenet") return std::make_unique<ImageNetDataset>(dir, split, options);
  if (name == "imagenet-shapes") return std::make_unique<ImageNetShapesDataset>(split, options);

  std::string valid;
  for (std::string_view n : kNames) {
    if (!valid.empty()) valid += ", ";
    valid += n;
  }
  throw DatasetError("unknown dataset '" + std::string(name) + "' for " + dir.string() +
                     " (valid names: " + valid + ")");
}

}  // namespace tidepool::datasets
