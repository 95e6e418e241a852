// Which build a scene is. Each scene builder (build_address_map,
// build_memory_load) stamps its scene with a number no other build in this
// process gets, so that what a picture keeps between frames
// (paint::AddressMapCache, paint::MemoryLoadCache) knows the scene it was
// worked out from: a window's dashboard builds its scenes again, into the
// same objects, for every new placement. 0 is a scene made by hand (the
// tests'), which a picture works out afresh every time it is drawn.
#pragma once

#include <cstdint>

namespace tidepool::ui {

std::uint64_t next_scene_generation();

}  // namespace tidepool::ui
