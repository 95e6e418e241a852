// The project's embedded default dataset: ten classes of drawn shapes,
// written on first use as CIFAR-10 binary files so that training on it runs
// through the real CIFAR-10 loader (make_dataset("generated", dir, ...)).
//
// The class is the shape alone; everything else is random per image: the
// foreground and background colours (any hue, with enough contrast), the
// shape's position, size and aspect, a faint background gradient and pixel
// noise. Colour therefore says nothing about the class, and a network has to
// look at shape - yet the shapes differ enough at 32x32 for a small ResNet to
// pass 90% test accuracy within a few epochs.
//
// Everything comes from a fixed seed with integer arithmetic and IEEE-exact
// float operations (no trigonometry), so every machine writes the same bytes.
// Files: data_batch_1..5.bin (2,000 images each) and test_batch.bin (2,000),
// every file holding exactly 200 images of each class in shuffled order.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace tidepool::datasets {

inline constexpr std::int64_t kGeneratedImagesPerFile = 2000;
inline constexpr std::int64_t kGeneratedTrainFiles = 5;
inline constexpr std::int64_t kGeneratedClasses = 10;

inline constexpr std::array<std::string_view, kGeneratedClasses> kGeneratedClassNames = {
    "disk", "square", "triangle", "plus", "horizontal bars", "vertical bars", "ring", "diamond", "cross",
    "frame"};

// Writes the six files into `dir` (created if needed) unless each is
// already there with the right size. Each file is written to a temporary
// name and renamed into place, so a crash or a concurrent run never leaves a
// half-written file under the real name. Returns how many files were
// written. Throws DatasetError, naming the path, when the folder or a file
// cannot be written.
int ensure_generated_cifar10(const std::filesystem::path& dir);

// Draws one 32x32 image of class `label` (0..9) from `seed` into `rgb_planes`
// (3072 bytes: R, G, B planes) - what the files hold, exposed for tests.
void render_generated_image(std::uint64_t seed, int label, std::uint8_t* rgb_planes);

}  // namespace tidepool::datasets
