// Where the window and the PNG used to differ: the axes, labels and lines
// are the PNG's (round address ticks, pool and footprint named right of the
// strip, the peak marked by an arrow above its column rather than a line
// across the blocks); the holes at the peak are drawn in its column, as the
// PNG did and the window did not; the largest free block at the peak fills
// its band of that column and of the strip (the window outlined its band
// across every step, where it was free at one); block outlines are the
// role's colour darkened (not translucent black), so every pixel of a block
// is a known colour; the strip is the window's, following the pointer's
// step there and showing the peak in the PNG. Parked blocks: see
// parked_fill.
#include "ui/paint/address_map_picture.h"
#include "ui/scene/iteration_number.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "engine/memory/figures.h"
#include "engine/plan/memory_facts.h"  // role_label
#include "ui/scene/colours.h"

namespace tidepool::ui::paint {
namespace {

constexpr const char* kTitle = "Address map";
constexpr float kStripGap = 10, kStripWidth = 20;  // the pool at one step, right of the plot
constexpr float kLabelGap = 6;                      // labels right of the strip
constexpr float kStripHeadingGap = 2;               // the strip's heading's bottom above it
constexpr Role kRoles[] = {Role::input,          Role::activation,      Role::activation_gradient, Role::weight,
                           Role::weight_gradient, Role::optimizer_state, Role::workspace};

// One look for a parked block (dead, still taken) in the plot, the strip and
// the legend: its role's colour darkened, opaque (the memory is as taken as
// a live block's, and no hole shows through it), outlined in kParked. The
// window used to fade it to 30% over the background instead and the PNG to
// leave it unoutlined; the darkened fill keeps the role readable and the
// outline says "parked" whatever the role.
std::uint32_t parked_fill(const MapBlock& b) { return shade(role_colour(b.role), 0.4); }

const LegendEntries& legend() {
  static const LegendEntries entries = [] {
    LegendEntries e;
    for (Role r : kRoles) e.emplace_back(role_label(r), role_colour(r));
    e.emplace_back("in flight to host", kInFlightToHost);
    e.emplace_back("in flight from host", kInFlightFromHost);
    e.emplace_back("parked (dead, still taken)", kParked);
    e.emplace_back("hole at the peak", kHole);
    e.emplace_back("largest free block at the peak", kLargestHole);
    return e;
  }();
  return entries;
}

std::string title_of(const AddressMapScene& scene) {
  std::string title = std::string(kTitle) + ": " + iterations_text(scene.iteration, scene.iteration) + "  |  peak load " +
                      format_bytes(scene.peak_load_bytes) + " at step " + std::to_string(scene.peak_step) +
                      "  |  footprint " + format_bytes(scene.footprint_bytes);
  title += "  |  ratio " + format_fixed(competitive_ratio(scene.footprint_bytes, scene.peak_load_bytes), 3);
  title += "  |  pool " + format_bytes(scene.pool_bytes);
  return title;
}

}  // namespace

std::size_t address_map_own_top(const AddressMapScene& scene) {
  std::size_t top = std::max(scene.pool_bytes, scene.footprint_bytes);
  for (const MapBlock& b : scene.blocks) top = std::max(top, b.end());
  return std::max<std::size_t>(top, 1);
}

bool AddressMapCache::use(const AddressMapScene& scene) {
  if (scene.generation == 0) return false;
  if (scene.generation != generation || scene.blocks.data() != blocks || scene.blocks.size() != block_count) {
    *this = {};
    generation = scene.generation;
    blocks = scene.blocks.data();
    block_count = scene.blocks.size();
  }
  return true;
}

std::size_t address_map_top(const AddressMapScene& scene, AddressMapCache* cache) {
  std::size_t own = 0;
  if (cache && cache->use(scene)) {
    if (!cache->own_top) cache->own_top = address_map_own_top(scene);
    own = *cache->own_top;
  } else {
    own = address_map_own_top(scene);
  }
  return std::max(own, scene.axis_bytes);
}

namespace {

// The longest labels right of the strip, which size the right margin.
std::vector<std::string> level_labels(const AddressMapScene& scene) {
  const std::string bytes = format_bytes(std::max(scene.pool_bytes, scene.footprint_bytes));
  return {"pool = footprint", "footprint " + bytes, "pool " + bytes,
          "at peak " + format_bytes(scene.largest_free_at_peak ? scene.largest_free_at_peak->bytes : 0)};
}

// A band of addresses [offset, offset + bytes) across [x0, x1).
Box band(const AddressMapLayout& l, float x0, float x1, std::size_t offset, std::size_t bytes) {
  return {x0, static_cast<float>(l.y(static_cast<double>(offset + bytes))), x1,
          static_cast<float>(l.y(static_cast<double>(offset)))};
}

void draw_parked(Painter& p, const Box& r, const MapBlock& b) {
  p.fill_rect(r, parked_fill(b));
  p.outline_rect(r, kParked);
}

void draw_block(Painter& p, const AddressMapLayout& l, const MapBlock& b) {
  const Box life = l.life_box(b);
  auto columns = [&](int first, int last, std::uint32_t colour) {
    p.fill_rect({static_cast<float>(l.x(first)), life.y0, static_cast<float>(l.x(last + 1)), life.y1}, colour);
  };
  columns(b.first_step, b.last_step, role_colour(b.role));
  if (b.parked_until_step > b.last_step) draw_parked(p, l.parked_box(b), b);
  // The steps during which the block's contents were moving.
  if (b.offload_step >= 0) columns(std::max(b.offload_step, b.first_step), b.last_step, kInFlightToHost);
  if (b.prefetch_done_step >= 0)
    columns(b.first_step, std::min(b.prefetch_done_step, b.last_step), kInFlightFromHost);
  if (life.width() >= 4 && life.height() >= 4)  // an outline only where it leaves some fill to see
    p.outline_rect(life, shade(role_colour(b.role), 0.55));
  // The tensor's name where it fits.
  const Point size = p.text_size(b.name, TextSize::small);
  if (!b.name.empty() && size.x + 8 <= life.width() && size.y + 4 <= life.height())
    p.text({(life.x0 + life.x1) / 2, (life.y0 + life.y1) / 2}, b.name, is_light(role_colour(b.role)) ? kDarkText : kText,
           TextSize::small, HAlign::centre, VAlign::middle);
}

// The blocks. A map of more than kMergeAbove blocks (a trace of 10^6
// events: a training iteration has a few thousand) would ask for a
// rectangle per block every frame, most of them narrower than a pixel,
// which the painter widens to one: there the blocks of one colour, with
// nothing else to draw, that fall in one pixel column are merged into
// that column's runs of addresses, which cover the same pixels.
constexpr std::size_t kMergeAbove = 20000;

}  // namespace

std::vector<BlockPiece> blocks_as_drawn(const AddressMapLayout& l, const AddressMapScene& scene) {
  std::vector<BlockPiece> pieces;
  auto whole = [&](const MapBlock& b) {
    pieces.push_back({.block = static_cast<std::uint32_t>(&b - scene.blocks.data())});
  };
  if (scene.blocks.size() <= kMergeAbove) {
    for (const MapBlock& b : scene.blocks) whole(b);
    return pieces;
  }
  // Blocks come in the order they were placed, so a column's thin blocks
  // come together: each column is drawn when the next begins. Per colour,
  // a count per pixel row of the plot (+1 where a block's snapped rows
  // start, -1 where they end, as the painter snaps them) gives the runs.
  const float top = std::floor(l.plot.y0);
  const std::size_t rows = static_cast<std::size_t>(std::ceil(l.plot.y1 - top)) + 2;
  std::vector<std::pair<std::uint32_t, std::vector<int>>> cover;  // per colour in the column
  float column = 0;
  bool any = false;
  auto flush = [&] {
    for (auto& [colour, count] : cover) {
      int depth = 0;
      std::size_t start = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        const int before = depth;
        depth += count[r];
        if (before == 0 && depth > 0) start = r;
        if (before > 0 && depth == 0)
          pieces.push_back({.colour = colour,
                            .box = {column, top + static_cast<float>(start), column + 1, top + static_cast<float>(r)}});
      }
      std::fill(count.begin(), count.end(), 0);
    }
    any = false;
  };
  for (const MapBlock& b : scene.blocks) {
    const Box life = l.life_box(b);
    const bool plain = b.parked_until_step <= b.last_step && b.offload_step < 0 && b.prefetch_done_step < 0;
    if (!plain || life.width() >= 1) {
      whole(b);
      continue;
    }
    const float x = std::round(life.x0);
    if (x != column && any) flush();
    column = x;
    any = true;
    const std::uint32_t colour = role_colour(b.role);
    auto it = std::find_if(cover.begin(), cover.end(), [&](const auto& c) { return c.first == colour; });
    if (it == cover.end()) it = cover.insert(cover.end(), {colour, std::vector<int>(rows, 0)});
    const auto row = [&](float y) {
      return static_cast<std::size_t>(std::clamp(std::round(y) - top, 0.0f, static_cast<float>(rows - 1)));
    };
    const std::size_t y0 = row(std::min(life.y0, life.y1));
    const std::size_t y1 = std::min(std::max(row(std::max(life.y0, life.y1)), y0 + 1), rows - 1);
    ++it->second[y0];
    --it->second[y1];
  }
  if (any) flush();
  return pieces;
}

namespace {

void draw_blocks(Painter& p, const AddressMapLayout& l, const AddressMapScene& scene,
                 const std::vector<BlockPiece>& pieces) {
  for (const BlockPiece& piece : pieces) {
    if (piece.block == BlockPiece::kMergedRun)
      p.fill_rect(piece.box, piece.colour);
    else
      draw_block(p, l, scene.blocks[piece.block]);
  }
}

// A block's colour at one step: its role's, or the transfer's while its
// contents are in flight (a prefetch over an offload, as drawn).
std::uint32_t colour_at(const MapBlock& b, int step) {
  if (b.prefetch_done_step >= 0 && step <= std::min(b.prefetch_done_step, b.last_step)) return kInFlightFromHost;
  if (b.offload_step >= 0 && step >= b.offload_step) return kInFlightToHost;
  return role_colour(b.role);
}

// The peak: its step's column marked above the plot, and the holes in the
// column then, the largest in its own colour.
void draw_peak(Painter& p, const AddressMapLayout& l, const AddressMapScene& scene) {
  const float x0 = static_cast<float>(l.x(scene.peak_step)), x1 = static_cast<float>(l.x(scene.peak_step + 1));
  const float cx = std::round((x0 + x1) / 2);
  const Point arrow[] = {{cx - 5, l.plot.y0 - 8}, {cx + 5, l.plot.y0 - 8}, {cx, l.plot.y0 - 1}};
  p.fill_convex(arrow, kLargestHole);
  p.text({cx + 8, l.plot.y0 - 2}, "peak", kLargestHole, TextSize::small, HAlign::left, VAlign::bottom);
  for (const MapHole& h : scene.holes_at_peak) p.fill_rect(band(l, x0, x1, h.offset, h.bytes), kHole);
  if (scene.largest_free_at_peak) {
    const MapHole& h = *scene.largest_free_at_peak;
    p.fill_rect(band(l, x0, x1, h.offset, h.bytes), kLargestHole);
  }
}

// The pool at one step, bottom to top, as a strip beside the plot: the live
// blocks as they are drawn in that step's column, the parked ones, the free
// space, and at the peak the largest free block.
void draw_strip(Painter& p, const AddressMapLayout& l, const AddressMapScene& scene, const Occupancy& o) {
  const Box& s = l.strip;
  const int step = o.step;
  p.fill_rect(s, kPlotBackground);
  p.text({(s.x0 + s.x1) / 2, s.y0 - kStripHeadingGap}, step == scene.peak_step ? "at peak" : "step " + std::to_string(step), kDimText,
         TextSize::small, HAlign::centre, VAlign::bottom);
  for (const MapHole& h : o.holes) p.fill_rect(band(l, s.x0, s.x1, h.offset, h.bytes), kHole);
  for (const MapBlock* b : o.live) p.fill_rect(band(l, s.x0, s.x1, b->offset, b->bytes), colour_at(*b, step));
  for (const MapBlock* b : o.parked) draw_parked(p, band(l, s.x0, s.x1, b->offset, b->bytes), *b);
  if (step == scene.peak_step && scene.largest_free_at_peak) {
    const MapHole& h = *scene.largest_free_at_peak;
    p.fill_rect(band(l, s.x0, s.x1, h.offset, h.bytes), kLargestHole);
  }
}

// A horizontal line across the plot and the strip with its name right of
// the strip, above or below the line.
void draw_level(Painter& p, const AddressMapLayout& l, double bytes, std::uint32_t colour, float thickness,
                bool dashed) {
  const float y = static_cast<float>(l.y.px(bytes));
  if (dashed)
    dashed_line(p, {l.plot.x0, y}, {l.strip.x1, y}, colour, 8, 5, thickness);
  else
    p.line({l.plot.x0, y}, {l.strip.x1, y}, colour, thickness);
}

// A name right of the strip: its lines, top down, and where its top wants
// to be.
struct SideLabel {
  float top = 0;
  std::vector<std::string> lines;
  std::uint32_t colour = 0;
};

// Each label where it wants to be, or just below the one above it where
// they would print over each other (a footprint just above the largest
// free block at the peak, as in most tight pools); and none below the
// plot, where the step axis is: labels pushed past it move back up
// together.
void draw_side_labels(Painter& p, const AddressMapLayout& l, std::vector<SideLabel> labels) {
  const float h = line_height(p, TextSize::small);
  auto height = [&](const SideLabel& label) { return h * static_cast<float>(label.lines.size()); };
  std::stable_sort(labels.begin(), labels.end(), [](const SideLabel& a, const SideLabel& b) { return a.top < b.top; });
  // Below the strip's heading ("at peak", wider than the strip, reaches
  // into this column): a pool label on a line near the top moves down.
  float free_from = l.strip.y0 - kStripHeadingGap;
  for (SideLabel& label : labels) {
    label.top = std::max(label.top, free_from);
    free_from = label.top + height(label) + 1;
  }
  float bottom = l.plot.y1;
  for (auto label = labels.rbegin(); label != labels.rend(); ++label) {
    label->top = std::min(label->top, bottom - height(*label));
    bottom = label->top - 1;
  }
  for (const SideLabel& label : labels)
    for (std::size_t i = 0; i < label.lines.size(); ++i)
      p.text({l.strip.x1 + kLabelGap, label.top + h * static_cast<float>(i)}, label.lines[i], label.colour,
             TextSize::small, HAlign::left, VAlign::top);
}

}  // namespace

Box AddressMapLayout::life_box(const MapBlock& b) const {
  return {static_cast<float>(x(b.first_step)), static_cast<float>(y(static_cast<double>(b.end()))),
          static_cast<float>(x(b.last_step + 1)), static_cast<float>(y(static_cast<double>(b.offset)))};
}

Box AddressMapLayout::parked_box(const MapBlock& b) const {
  if (b.parked_until_step <= b.last_step) return {};
  const Box life = life_box(b);
  return {life.x1, life.y0, static_cast<float>(x(b.parked_until_step + 1)), life.y1};
}

namespace {

// The last step a block's boxes reach: its life's, or its parking's.
int reach_of(const MapBlock& b) { return std::max(b.last_step, b.parked_until_step); }

BlocksBySteps blocks_by_steps(const AddressMapScene& scene) {
  BlocksBySteps index;
  index.order.resize(scene.blocks.size());
  for (std::size_t i = 0; i < index.order.size(); ++i) index.order[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(index.order.begin(), index.order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return scene.blocks[a].first_step < scene.blocks[b].first_step;
  });
  for (std::uint32_t i : index.order) index.first.push_back(scene.blocks[i].first_step);
  index.leaves = 1;
  while (index.leaves < index.order.size()) index.leaves *= 2;
  index.reach.assign(2 * index.leaves, std::numeric_limits<int>::min());
  for (std::size_t i = 0; i < index.order.size(); ++i) index.reach[index.leaves + i] = reach_of(scene.blocks[index.order[i]]);
  for (std::size_t k = index.leaves - 1; k >= 1; --k) index.reach[k] = std::max(index.reach[2 * k], index.reach[2 * k + 1]);
  return index;
}

// The blocks whose first step is at most `last` and whose boxes reach step
// `first` or later: every block whose boxes cross [first, last].
void blocks_crossing(const BlocksBySteps& index, int first, int last, std::vector<std::uint32_t>& out) {
  const std::size_t starting =
      static_cast<std::size_t>(std::upper_bound(index.first.begin(), index.first.end(), last) - index.first.begin());
  // Node k covers the leaves [begin, begin + width).
  auto visit = [&](auto& self, std::size_t k, std::size_t begin, std::size_t width) -> void {
    if (begin >= starting || index.reach[k] < first) return;
    if (width == 1) return out.push_back(index.order[begin]);
    self(self, 2 * k, begin, width / 2);
    self(self, 2 * k + 1, begin + width / 2, width / 2);
  };
  if (starting > 0) visit(visit, 1, 0, index.leaves);
}

}  // namespace

const MapBlock* block_at(const AddressMapLayout& l, const AddressMapScene& scene, Point at, AddressMapCache* cache) {
  const auto holds = [&](const MapBlock& b) { return l.life_box(b).contains(at) || l.parked_box(b).contains(at); };
  AddressMapCache fresh;
  AddressMapCache& kept = cache && cache->use(scene) ? *cache : fresh;
  if (&kept == &fresh) {  // once: no index to make
    const MapBlock* found = nullptr;
    for (const MapBlock& b : scene.blocks)
      if (holds(b)) found = &b;
    return found;
  }
  if (!kept.by_steps) kept.by_steps = blocks_by_steps(scene);
  // The steps within a pixel of the point either side: a box's edges are
  // floats, a pixel holds many steps of a long trace, and the boxes are
  // tested exactly below.
  const double lo = std::floor(std::min(l.x.invert(at.x - 1), l.x.invert(at.x + 1))) - 1;
  const double hi = std::ceil(std::max(l.x.invert(at.x - 1), l.x.invert(at.x + 1))) + 1;
  constexpr double kMin = std::numeric_limits<int>::min(), kMax = std::numeric_limits<int>::max();
  std::vector<std::uint32_t> near;
  blocks_crossing(*kept.by_steps, static_cast<int>(std::clamp(lo, kMin, kMax)), static_cast<int>(std::clamp(hi, kMin, kMax)),
                  near);
  std::sort(near.begin(), near.end());
  for (auto i = near.rbegin(); i != near.rend(); ++i)
    if (holds(scene.blocks[*i])) return &scene.blocks[*i];
  return nullptr;
}

const MapBlock* find_block(const AddressMapScene& scene, const BlockKey& key, AddressMapCache* cache) {
  if (!cache || !cache->use(scene)) return ui::find_block(scene, key);
  if (!cache->pinned || !(cache->pinned->first == key)) cache->pinned = std::make_pair(key, ui::find_block(scene, key));
  return cache->pinned->second;
}

AddressMapLayout address_map_layout(const Painter& p, const AddressMapScene& scene, const Box& area,
                                    AddressMapCache* cache) {
  AddressMapLayout l;
  const float top = area.y0 + heading_height(p, area, title_of(scene), legend()) + axis_title_height(p);
  const float bottom = area.y1 - x_axis_height(p, true);
  const float left = area.x0 + kMargin + p.text_size("0000.0", TextSize::small).x + 12;
  // The strip and the labels right of it; a narrow picture gives the plot
  // at least two thirds of its width (the labels, "pool = footprint" and
  // "at peak 1.00 MiB", fit beside a 540-px map, the window's at
  // 1280x720), and the labels may then be cut, the strip never is.
  float labels = 0;
  for (const std::string& label : level_labels(scene)) labels = std::max(labels, p.text_size(label, TextSize::small).x);
  const float strip_room = kStripGap + kStripWidth + kLabelGap;
  const float right = std::max(strip_room + 4, std::min(strip_room + labels + kMargin, area.width() / 3));
  l.plot = {left, top, std::max(left + 1, area.x1 - right), std::max(top + 20, bottom)};
  l.strip = {l.plot.x1 + kStripGap, l.plot.y0, l.plot.x1 + kStripGap + kStripWidth, l.plot.y1};
  const double steps = std::max({scene.steps, scene.axis_steps, 1});
  l.x = {0, steps, l.plot.x0, l.plot.x1};
  // 4% headroom above the highest address, for the pool line's label.
  const double top_bytes = static_cast<double>(address_map_top(scene, cache)) * 1.04;
  l.y = {0, top_bytes, l.plot.y1, l.plot.y0};
  return l;
}

void draw_address_map(Painter& p, const AddressMapScene& scene, const Box& area, const AddressMapFocus& focus,
                      AddressMapCache* cache) {
  p.fill_rect(area, kBackground);
  if (scene.empty()) return draw_no_events(p, area, kTitle);
  // What is worked out from every block, kept in `cache` while what it
  // depends on stays, or here for this draw alone.
  AddressMapCache fresh;
  AddressMapCache& kept = cache && cache->use(scene) ? *cache : fresh;
  const AddressMapLayout l = address_map_layout(p, scene, area, &kept);
  draw_heading(p, area, title_of(scene), legend());
  p.fill_rect(l.plot, kPlotBackground);

  const ByteUnit unit = byte_unit_for(l.y.d1);
  draw_y_axis(p, l.plot, l.y, nice_ticks_in(0, l.y.d1, std::max(2, static_cast<int>(l.plot.height() / 60)), unit.bytes),
              unit.bytes, std::string("address (") + unit.name + ")");
  // Step numbers under the middle of their columns, whole steps only.
  const LinearScale column_centres{-0.5, l.x.d1 - 0.5, l.x.r0, l.x.r1};
  std::vector<double> step_ticks;
  for (double t : nice_ticks(0, l.x.d1 - 1, std::max(2, static_cast<int>(l.plot.width() / 90))))
    if (std::abs(t - std::round(t)) < 1e-9) step_ticks.push_back(std::round(t));
  draw_x_axis(p, l.plot, column_centres, step_ticks, 1, "step of the iteration");

  const auto drawn_on = std::make_pair(l.plot, std::make_pair(l.x, l.y));
  if (kept.pieces_for != drawn_on) {
    kept.pieces = blocks_as_drawn(l, scene);
    kept.pieces_for = drawn_on;
  }
  draw_blocks(p, l, scene, kept.pieces);
  // What the user looks for: the blocks the search finds, and the one pinned.
  if (kept.found_for != focus.search) {
    kept.found.clear();
    for (const MapBlock& b : scene.blocks)
      if (name_matches(b, focus.search)) kept.found.push_back(static_cast<std::uint32_t>(&b - scene.blocks.data()));
    kept.found_for = std::string(focus.search);
  }
  for (std::uint32_t i : kept.found) {
    const Box r = l.life_box(scene.blocks[i]);
    p.outline_rect({r.x0 - 1, r.y0 - 1, r.x1 + 1, r.y1 + 1}, kHighlight, 1);
  }
  if (focus.pinned) {
    const Box r = l.life_box(*focus.pinned);
    p.outline_rect({r.x0 - 2, r.y0 - 2, r.x1 + 2, r.y1 + 2}, kHighlight, 2);
  }
  draw_peak(p, l, scene);
  const bool focused = focus.step >= 0 && focus.step < scene.steps;
  if (focused)
    p.outline_rect({static_cast<float>(l.x(focus.step)), l.plot.y0, static_cast<float>(l.x(focus.step + 1)), l.plot.y1},
                   {kHighlight, 0.35f});
  const int strip_step = focused ? focus.step : scene.peak_step;
  if (!kept.strip || kept.strip->step != strip_step) kept.strip = occupancy_at(scene, strip_step);
  draw_strip(p, l, scene, *kept.strip);

  // The pool above the footprint: labels go on opposite sides of their
  // lines (the pool's above, the footprint's below), and the largest free
  // block at the peak is named level with its middle.
  const bool same_line = scene.pool_bytes == scene.footprint_bytes;
  const float h = line_height(p, TextSize::small);
  std::vector<SideLabel> labels;
  if (scene.pool_bytes > 0) {
    draw_level(p, l, static_cast<double>(scene.pool_bytes), kBudget, 2, false);
    // One pool that is the footprint says so on a line of its own, the
    // bytes under it: the labels' column stays narrow.
    std::vector<std::string> lines = {"pool " + format_bytes(scene.pool_bytes)};
    if (same_line) lines = {"pool = footprint", format_bytes(scene.pool_bytes)};
    labels.push_back({static_cast<float>(l.y.px(static_cast<double>(scene.pool_bytes))) - 3 -
                          h * static_cast<float>(lines.size()),
                      std::move(lines), kBudget});
  }
  if (!same_line || scene.pool_bytes == 0) {
    draw_level(p, l, static_cast<double>(scene.footprint_bytes), kExtent, 1, true);
    const float y = static_cast<float>(l.y.px(static_cast<double>(scene.footprint_bytes)));
    labels.push_back({scene.pool_bytes == 0 ? y - 3 - h : y + 3,
                      {"footprint " + format_bytes(scene.footprint_bytes)}, kExtent});
  }
  if (scene.largest_free_at_peak) {
    const MapHole& hole = *scene.largest_free_at_peak;
    const float mid = static_cast<float>(l.y(static_cast<double>(hole.offset) + static_cast<double>(hole.bytes) / 2));
    labels.push_back({mid - h, {"largest free", "at peak " + format_bytes(hole.bytes)}, kLargestHole});
  }
  draw_side_labels(p, l, std::move(labels));
}

}  // namespace tidepool::ui::paint
