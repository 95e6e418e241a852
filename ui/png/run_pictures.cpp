#include "ui/png/run_pictures.h"

#include <stdexcept>
#include <string>
#include <system_error>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "ui/png/images.h"
#include "ui/scene/address_map.h"
#include "ui/scene/memory_load.h"
#include "ui/scene/timeline.h"

namespace tidepool::ui {
namespace {

void write_png(const cv::Mat& image, const std::filesystem::path& file) {
  bool written = false;
  std::string why = "the encoder refused it";
  try {
    written = cv::imwrite(file.string(), image);
  } catch (const cv::Exception& e) {
    why = e.what();
  }
  if (!written) throw std::runtime_error("cannot write " + file.string() + ": " + why);
}

}  // namespace

void write_run_pictures(const RingSnapshot& events, std::size_t pool_bytes, std::int64_t batch,
                        const std::filesystem::path& folder, std::size_t load_limit_bytes, bool computes_values) {
  // A folder that cannot be made is reported by the first write, with the
  // file's name.
  std::error_code ignored;
  std::filesystem::create_directories(folder, ignored);

  const TimelineScene timeline = build_timeline(events, kRunPictureIterations);
  write_png(png::timeline_image(timeline, kRunPictureWidth, kRunPictureHeight), folder / kTimelinePicture);
  const AddressMapScene map = build_address_map(events, pool_bytes);
  write_png(png::address_map_image(map, kRunPictureWidth, kRunPictureHeight), folder / kAddressMapPicture);
  const MemoryLoadScene load = build_memory_load(events, pool_bytes, kRunPictureIterations, batch, load_limit_bytes,
                                                  computes_values);
  write_png(png::memory_load_image(load, kRunPictureWidth, kRunPictureHeight), folder / kMemoryLoadPicture);
}

}  // namespace tidepool::ui
