// Scenes built by hand for the picture tests (ui/png/png_test.cpp,
// ui/paint/paint_test.cpp), so the checks do not depend on how the scene
// builders read events: small enough to reason about pixel by pixel, with
// one of everything the pictures draw.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "ui/scene/address_map.h"
#include "ui/scene/memory_load.h"
#include "ui/scene/timeline.h"

namespace tidepool::testing {

inline constexpr std::size_t KiB = 1024;

inline ui::TimelineSpan span(Stream lane, SpanKind kind, double start_us, double end_us, std::string layer = "") {
  ui::TimelineSpan s;
  s.lane = lane;
  s.kind = kind;
  s.start_us = start_us;
  s.end_us = end_us;
  s.layer = std::move(layer);
  s.tensor = "conv1.out";
  return s;
}

// One iteration: conv1 forward while its input goes to the host, a stall
// on the prefetch the backward needs, then the backward.
inline ui::TimelineScene timeline_scene() {
  ui::TimelineScene t;
  t.start_us = 0;
  t.end_us = 2000;
  t.spans = {span(Stream::compute, SpanKind::forward, 0, 1000, "conv1"),
             span(Stream::offload, SpanKind::offload, 200, 900),
             span(Stream::prefetch, SpanKind::prefetch, 1000, 1500),
             span(Stream::compute, SpanKind::wait, 1000, 1400, "conv1"),
             span(Stream::compute, SpanKind::backward, 1400, 2000, "conv1")};
  t.iterations = {{0, 0, 2000, 400}};
  return t;
}

// A 1 MiB pool over 10 steps: the weights for the whole iteration, an
// activation offloaded from step 4, a prefetched gradient in flight for
// steps 5-6, a workspace reusing the activation's space, and at the peak
// (step 5) one hole between the activation and the gradient.
inline ui::AddressMapScene address_map_scene() {
  ui::AddressMapScene m;
  m.iteration = 7;
  m.steps = 10;
  m.pool_bytes = 1024 * KiB;
  auto block = [](Role role, std::size_t offset, std::size_t bytes, int first, int last) {
    ui::MapBlock b;
    b.role = role;
    b.name = std::string(to_string(role));
    b.offset = offset;
    b.bytes = bytes;
    b.first_step = first;
    b.last_step = last;
    return b;
  };
  ui::MapBlock weights = block(Role::weight, 0, 256 * KiB, 0, 9);
  weights.persistent = true;
  ui::MapBlock activation = block(Role::activation, 256 * KiB, 256 * KiB, 1, 6);
  activation.offload_step = 4;
  ui::MapBlock gradient = block(Role::activation_gradient, 768 * KiB, 128 * KiB, 5, 8);
  gradient.prefetch_done_step = 6;
  ui::MapBlock workspace = block(Role::workspace, 256 * KiB, 256 * KiB, 7, 8);
  m.blocks = {weights, activation, gradient, workspace};
  m.peak_step = 5;
  m.peak_load_bytes = 640 * KiB;
  m.footprint_bytes = 896 * KiB;
  m.holes_at_peak = {{512 * KiB, 256 * KiB}};
  m.largest_free_at_peak = ui::MapHole{512 * KiB, 256 * KiB};
  return m;
}

// address_map_scene() with an async offload's block parked after it died:
// an activation at 512-640 KiB for steps 1-2, offloaded from step 1 and
// parked through step 3 (the largest free block at the peak, step 5, is
// above it and untouched).
inline ui::AddressMapScene address_map_scene_with_parking() {
  ui::AddressMapScene m = address_map_scene();
  ui::MapBlock parked;
  parked.role = Role::activation;
  parked.name = "conv2.out";
  parked.offset = 512 * KiB;
  parked.bytes = 128 * KiB;
  parked.first_step = 1;
  parked.last_step = 2;
  parked.offload_step = 1;
  parked.parked_until_step = 3;
  m.blocks.push_back(parked);
  return m;
}

inline ui::MemoryLoadScene memory_load_scene() {
  ui::MemoryLoadScene s;
  s.budget_bytes = 1024 * KiB;
  // Two iterations of ten steps: the load climbs through the forward pass
  // and falls through the backward; the second one peaks higher.
  for (int it = 0; it < 2; ++it)
    for (int step = 0; step < 10; ++step) {
      const std::size_t load = (step <= 5 ? 100 + 80 * step : 500 - 80 * (step - 5)) * KiB + it * 100 * KiB;
      s.points.push_back({it, step, 100.0 * (10 * it + step), load, load + 64 * KiB});
    }
  s.peak_index = 15;
  s.peak_load_bytes = s.points[15].load_bytes;
  s.max_extent_bytes = s.peak_load_bytes + 64 * KiB;
  s.iterations = {{0, 500 * KiB, 564 * KiB, 2.3f, 0.10f, 850, 0.1}, {1, 600 * KiB, 664 * KiB, 2.1f, 0.25f, 900, 0.1}};
  return s;
}

// A map of more blocks than the picture draws one by one (past 20 000, as
// a 10^6-event snapshot's), with a scene's identity as a builder gives one
// (generation 1), so the views' caches keep what they work out from it:
// blocks one after the other in `slots` slots of 256 KiB, their role
// changing every 64, most of them a step or two long (thinner than a
// pixel), every 97th long (wider), every 101st parked for three steps,
// every 103rd offloaded, every 107th prefetched; four weights above the
// slots span the whole iteration. Every 7th block's name holds "conv".
inline ui::AddressMapScene big_address_map_scene(int blocks = 30000, int slots = 64) {
  constexpr Role roles[] = {Role::input,           Role::activation,      Role::activation_gradient, Role::weight_gradient,
                            Role::optimizer_state, Role::workspace};
  ui::AddressMapScene m;
  m.iteration = 0;
  m.generation = 1;
  const std::size_t slot = 256 * KiB;
  m.steps = 2 * blocks + 8;
  const std::size_t used = static_cast<std::size_t>(slots) * slot;
  m.pool_bytes = 2 * used;
  m.footprint_bytes = used + 4 * slot;
  m.peak_step = blocks;
  m.peak_load_bytes = used / 2;
  m.after_step.assign(static_cast<std::size_t>(m.steps), {m.peak_load_bytes, m.footprint_bytes, slot});
  m.holes_at_peak = {{used, 4 * slot}};
  m.largest_free_at_peak = ui::MapHole{used, 4 * slot};
  for (int w = 0; w < 4; ++w) {
    ui::MapBlock b;
    b.tensor = w;
    b.name = "fc" + std::to_string(w) + ".weight";
    b.role = Role::weight;
    b.offset = used + static_cast<std::size_t>(w) * slot;
    b.bytes = slot;
    b.first_step = 0;
    b.last_step = m.steps - 1;
    b.persistent = true;
    m.blocks.push_back(b);
  }
  for (int i = 0; i < blocks; ++i) {
    ui::MapBlock b;
    b.tensor = 4 + i;
    b.name = (i % 7 == 0 ? "conv" : "relu") + std::to_string(i) + ".out";
    b.role = roles[(i / 64) % 6];
    b.offset = static_cast<std::size_t>(i % slots) * slot + static_cast<std::size_t>(i % 3) * 4 * KiB;
    b.bytes = slot / 2 + static_cast<std::size_t>(i % 5) * 8 * KiB;
    b.first_step = 2 * i;
    b.last_step = 2 * i + (i % 97 == 0 ? 900 : i % 2);
    if (i % 101 == 0) b.parked_until_step = b.last_step + 3;
    if (i % 103 == 0) b.offload_step = b.first_step;
    if (i % 107 == 0) b.prefetch_done_step = b.first_step;
    m.blocks.push_back(b);
  }
  return m;
}

// Load curves of more samples than pixel columns (a 10^6-event snapshot's):
// three iterations of `samples` / 3 steps, a sawtooth of loads with the
// extent above, and an identity as a builder gives one (generation 1).
inline ui::MemoryLoadScene big_memory_load_scene(std::size_t samples = 120000) {
  ui::MemoryLoadScene s;
  s.generation = 1;
  s.budget_bytes = 64 * 1024 * KiB;
  s.computes_values = false;
  const std::size_t per_iteration = samples / 3;
  for (std::size_t i = 0; i < samples; ++i) {
    const std::size_t load = (4 + (i * 7919) % 40) * 1024 * KiB + (i % 1000) * KiB;
    s.points.push_back({static_cast<std::int64_t>(i / per_iteration), static_cast<int>(i % per_iteration),
                        static_cast<double>(i), load, load + (i % 13) * 512 * KiB});
    if (load > s.peak_load_bytes) {
      s.peak_load_bytes = load;
      s.peak_index = i;
    }
    s.max_extent_bytes = std::max(s.max_extent_bytes, s.points.back().extent_bytes);
  }
  for (std::int64_t it = 0; it < 3; ++it)
    s.iterations.push_back({it, s.peak_load_bytes, s.max_extent_bytes, 0, 0, 100, 1});
  return s;
}

}  // namespace tidepool::testing
