// The dataset boundary: everything the trainer needs to know about a set of
// labelled images, whatever format they are stored in.
//
// A Dataset is immutable after construction (GeneratedDataset writes its
// files once, on the first read, behind a once-flag) and read() is const and
// thread-safe, so the BatchLoader's workers can decode samples concurrently
// without locks of their own. Randomness (augmentation) comes only from the Rng the caller
// passes in, seeded per sample from (seed, epoch, index) - never from a global
// generator - so a run's batches are the same whatever the thread timing.
//
// Formats, one per file: cifar.h (CIFAR-10/100 binary), fashion_mnist.h
// (IDX files, read by idx.h), imagenet.h (ILSVRC folders), generated.h (the
// embedded default, written as CIFAR-10 binary), imagenet_shapes.h (noise at
// ImageNet's shapes, no files: for timing and memory only).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tidepool::datasets {

// Every problem a user can cause with their data (missing folder, truncated
// file, unknown name): the message names the problem and the path.
class DatasetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Split { train, test };
std::string_view to_string(Split s);

struct ImageShape {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t elements() const { return channels * height * width; }
  friend bool operator==(const ImageShape&, const ImageShape&) = default;
};

// Per-channel statistics, in [0, 1] pixel units: stored = (pixel/255 - mean) / std.
// Exposed so that a viewer can undo the normalisation to show an image.
struct Normalization {
  float mean[3] = {0.f, 0.f, 0.f};
  float stddev[3] = {1.f, 1.f, 1.f};
};

// SplitMix64. Chosen over <random> because std::uniform_*_distribution and
// std::shuffle are implementation-defined: the same seed must give the same
// crops and the same epoch order with libstdc++ and libc++.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n) for n > 0. Lemire's multiply-shift; the bias
  // for n far below 2^64 is negligible and, unlike rejection, it always
  // consumes exactly one draw, which keeps draw sequences easy to reason about.
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // Uniform integer in [lo, hi], inclusive (Python's randint).
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo + 1)));
  }
  bool coin() { return (next() >> 63) != 0; }

 private:
  std::uint64_t state_;
};

// A well-mixed seed from several words (order matters), so that nearby
// (seed, epoch, index) triples give unrelated streams.
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0);

// The seed of sample `index` in epoch `epoch` of a run seeded with `seed`:
// the only source of augmentation randomness.
inline std::uint64_t sample_seed(std::uint64_t seed, std::int64_t epoch, std::int64_t index) {
  return mix_seed(seed, static_cast<std::uint64_t>(epoch), static_cast<std::uint64_t>(index));
}

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual std::string name() const = 0;  // "cifar10 (train, /data/cifar)"
  virtual Split split() const = 0;
  virtual std::int64_t size() const = 0;
  virtual ImageShape image_shape() const = 0;
  virtual std::int64_t classes() const = 0;
  virtual Normalization normalization() const = 0;
  // Whether read() applies random augmentation (training) or the fixed
  // evaluation transform.
  virtual bool augments() const = 0;

  // The label of sample `index` without decoding it (0 <= index < size()).
  virtual std::int32_t label(std::int64_t index) const = 0;

  // Decodes sample `index` into `image_chw` (image_shape().elements() floats,
  // CHW, normalised) and its label into `label`, drawing any augmentation
  // from `rng`. Thread-safe. Returns false when the sample cannot be decoded
  // (a corrupt image file): the image is then left unspecified, the problem
  // has been reported once on stderr and counted in skipped(); the caller
  // decides what to put in its place. Throws DatasetError only for problems
  // that make the whole dataset unusable.
  virtual bool read(std::int64_t index, float* image_chw, std::int32_t& label, Rng& rng) const = 0;

  // How many distinct samples have failed to decode so far.
  virtual std::int64_t skipped() const { return 0; }
};

struct DatasetOptions {
  // Random augmentation; unset means "on for the train split, off for test".
  std::optional<bool> augment;
  // CIFAR-100: the 20 coarse superclasses instead of the 100 fine classes.
  bool cifar100_coarse = false;
  // ImageNet (and imagenet-shapes): the side of the square crop fed to the network...
  std::int64_t image_size = 224;
  // ...and, for evaluation, the shorter side the image is resized to before
  // the centre crop; 0 means image_size * 256 / 224 (the usual 256 for 224).
  std::int64_t resize_size = 0;
};

// Names make_dataset accepts, in the order they are listed to the user.
std::span<const std::string_view> dataset_names();

// "generated" (written to `dir` when an image is first read, then read as
// CIFAR-10; nothing is written before),
// "cifar10", "cifar100", "fashion-mnist", "imagenet" or "imagenet-shapes"
// (which reads no files: `dir` is not used). An unknown name throws
// DatasetError listing the valid ones.
std::unique_ptr<Dataset> make_dataset(std::string_view name, const std::filesystem::path& dir,
                                      Split split, const DatasetOptions& options = {});

// The folder a dataset is read from when none is given: data/generated for
// "generated", Debian's package folder for "fashion-mnist"; empty for the
// others, which must be told where their files are.
std::filesystem::path default_data_dir(std::string_view name);

// Whether the dataset is read from files; "imagenet-shapes" is made from
// nothing, and a folder given for it would be a mistake to point out.
bool reads_files(std::string_view name);

// Shared by the formats: the folder exists and is a folder, or DatasetError.
void require_directory(const std::filesystem::path& dir, std::string_view what);

}  // namespace tidepool::datasets
