// The pictures a --batch run leaves in its folder, drawn from the run's
// events with the same scenes the live views draw: the stream timeline of
// the last iterations, the address map of the last complete iteration and
// the memory-load curves with the run's per-iteration figures.
//
// This header needs no OpenCV, so the batch runner can call it without
// seeing the drawing library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "engine/observe/sinks/ring_sink.h"

namespace tidepool::ui {

inline constexpr int kRunPictureWidth = 1600;
inline constexpr int kRunPictureHeight = 900;
inline constexpr const char* kTimelinePicture = "timeline.png";
inline constexpr const char* kAddressMapPicture = "address_map.png";
inline constexpr const char* kMemoryLoadPicture = "memory_load.png";
// The iterations every picture of a run shows, the same for all three so
// that they read together: the last two finished, which show the overlap
// of one iteration with the next; the address map, one iteration across,
// shows the last of them. Their titles name them, counting from 1.
inline constexpr int kRunPictureIterations = 2;

// Writes timeline.png (the last kRunPictureIterations finished iterations),
// address_map.png (the last of them, against a pool of `pool_bytes`) and
// memory_load.png (the same iterations' steps, with every iteration's
// figures; `batch` images per iteration for images/s) into
// `folder`, creating it if needed, each kRunPictureWidth x
// kRunPictureHeight. A snapshot with no events still gives three pictures,
// each saying so. Throws std::runtime_error naming the file when one cannot
// be written. `load_limit_bytes`: AutoSwap's limit, drawn on the memory
// load (0: none). `computes_values`: false for a device that computes no
// numbers (sim), whose loss and accuracy panels say so instead of drawing
// zeros.
void write_run_pictures(const RingSnapshot& events, std::size_t pool_bytes, std::int64_t batch,
                        const std::filesystem::path& folder, std::size_t load_limit_bytes = 0,
                        bool computes_values = true);

}  // namespace tidepool::ui
