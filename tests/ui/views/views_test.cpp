// The window's views, drawn headless: an ImGui context with no window and
// no renderer runs whole frames (the pointer placed where a test wants
// it), and what a frame drew is read back from its draw lists: every
// rectangle with its colour, every line of text with its colour and
// place, decoded from the font's glyph quads. So these tests assert on
// what a view shows (labels, values, colours, tooltips), not on pixel
// counts: the address map, the memory load and the timeline on the
// pictures' hand-made scenes (tests/testing/picture_scenes.h, values
// worked out from them here), and the whole dashboard on a simulated run's
// recorded events, whose peak each view must show.
#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "app/session.h"
#include "engine/core/bytes_text.h"
#include "engine/observe/sinks/ring_sink.h"
#include "testing/picture_scenes.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"
#include "ui/dashboard.h"
#include "ui/paint/chart.h"
#include "ui/scene/colours.h"
#include "ui/views/address_map_view.h"
#include "ui/views/controls_view.h"
#include "ui/views/memory_load_view.h"
#include "ui/views/timeline_view.h"

namespace tidepool::ui {
namespace {

// ---- reading a frame back -----------------------------------------------------

// ImGui's packed colour (R in the low byte) to the palette's 0xRRGGBB.
std::uint32_t rgb_of(ImU32 c) { return ((c & 0xFF) << 16) | (c & 0xFF00) | ((c >> 16) & 0xFF); }
int alpha_of(ImU32 c) { return static_cast<int>(c >> 24); }

// A line of text as drawn: one run of glyphs of one colour on one baseline,
// each after the one before (spaces, which draw nothing, are put back from
// the gaps).
struct DrawnText {
  std::string window;  // the ImGui window whose draw list holds it
  std::string text;
  float x = 0, y = 0;  // the pen's start: the text's top-left corner
  float x1 = 0;        // where the pen ended
  std::uint32_t rgb = 0;
};

// A filled axis-aligned quad in one colour: a rectangle, or a straight
// horizontal or vertical line.
struct DrawnQuad {
  std::string window;
  paint::Box box;
  std::uint32_t rgb = 0;
  int alpha = 255;
};

struct Drawn {
  std::vector<DrawnText> texts;
  std::vector<DrawnQuad> quads;

  // Every text of `window` ("" for any) that holds `part`.
  std::vector<const DrawnText*> with(std::string_view part, std::string_view window = "") const {
    std::vector<const DrawnText*> out;
    for (const DrawnText& t : texts)
      if ((window.empty() || t.window == window) && t.text.find(part) != std::string::npos) out.push_back(&t);
    return out;
  }
  // The one text that is exactly `text`; fails the test when there is not exactly one.
  const DrawnText* exactly(std::string_view text, std::string_view window = "") const {
    std::vector<const DrawnText*> found;
    for (const DrawnText& t : texts)
      if ((window.empty() || t.window == window) && t.text == text) found.push_back(&t);
    EXPECT_EQ(found.size(), 1u) << "\"" << text << "\" drawn " << found.size() << " times; texts:\n" << listing();
    return found.size() == 1 ? found[0] : nullptr;
  }
  std::vector<const DrawnQuad*> quads_of(std::uint32_t rgb, std::string_view window = "") const {
    std::vector<const DrawnQuad*> out;
    for (const DrawnQuad& q : quads)
      if ((window.empty() || q.window == window) && q.rgb == rgb && q.alpha == 255) out.push_back(&q);
    return out;
  }
  // The largest opaque quad of a colour (a plot's background, a block).
  const DrawnQuad* largest(std::uint32_t rgb, std::string_view window = "") const {
    const DrawnQuad* best = nullptr;
    for (const DrawnQuad* q : quads_of(rgb, window))
      if (!best || q->box.width() * q->box.height() > best->box.width() * best->box.height()) best = q;
    return best;
  }
  // What the tooltip windows drew (ImGui names them "##Tooltip_<n>").
  Drawn tooltip() const {
    Drawn out;
    for (const DrawnText& t : texts)
      if (t.window.rfind("##Tooltip", 0) == 0) out.texts.push_back(t);
    for (const DrawnQuad& q : quads)
      if (q.window.rfind("##Tooltip", 0) == 0) out.quads.push_back(q);
    return out;
  }
  // The colour of the one text that is exactly `text` (a failure, and no
  // colour of the palette, where there is not exactly one).
  std::uint32_t colour_of(std::string_view text, std::string_view window = "") const {
    const DrawnText* t = exactly(text, window);
    return t ? t->rgb : 0xFF000000u;
  }
  std::string listing() const {
    std::string out;
    for (const DrawnText& t : texts) out += "  [" + t.window + "] " + t.text + "\n";
    return out;
  }
};

void append_utf8(std::string& s, unsigned c) {
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// Reads the rendered frame back. ImGui draws a glyph as four vertices
// (top-left, top-right, bottom-right, bottom-left) carrying the corners of
// the glyph's rectangle in the font atlas, and a filled rectangle (or a
// straight line without anti-aliasing) as four vertices on the atlas's
// white pixel: both are recognised wherever they start in a list's vertex
// buffer.
Drawn read_back(const ImDrawData& data) {
  const ImFontAtlas& atlas = *ImGui::GetIO().Fonts;
  const ImFont& font = *atlas.Fonts[0];
  std::map<std::array<float, 4>, const ImFontGlyph*> by_uv;
  for (const ImFontGlyph& g : font.Glyphs)
    if (g.Visible) by_uv[{g.U0, g.V0, g.U1, g.V1}] = &g;
  const float space = font.FindGlyph(' ')->AdvanceX;
  const ImVec2 white = atlas.TexUvWhitePixel;
  auto same = [](ImVec2 a, ImVec2 b) { return a.x == b.x && a.y == b.y; };

  Drawn out;
  for (int l = 0; l < data.CmdListsCount; ++l) {
    const ImDrawList& list = *data.CmdLists[l];
    const std::string window = list._OwnerName ? list._OwnerName : "";
    const ImDrawVert* v = list.VtxBuffer.Data;
    const int n = list.VtxBuffer.Size;
    DrawnText* run = nullptr;  // the text the next glyph may continue
    for (int i = 0; i + 3 < n;) {
      const ImDrawVert* q = v + i;
      const bool one_colour = q[0].col == q[1].col && q[0].col == q[2].col && q[0].col == q[3].col;
      // A glyph?
      const auto g = by_uv.find({q[0].uv.x, q[0].uv.y, q[2].uv.x, q[2].uv.y});
      if (one_colour && g != by_uv.end() && same(q[1].uv, {q[2].uv.x, q[0].uv.y}) &&
          same(q[3].uv, {q[0].uv.x, q[2].uv.y})) {
        const ImFontGlyph& glyph = *g->second;
        const float pen = q[0].pos.x - glyph.X0, line = q[0].pos.y - glyph.Y0;
        const std::uint32_t rgb = rgb_of(q[0].col);
        const float gap = run ? pen - run->x1 : -1;
        const float spaces = std::round(gap / space);
        if (!run || run->rgb != rgb || run->y != line || gap < -0.01f || std::abs(gap - spaces * space) > 0.01f ||
            spaces > 8) {
          out.texts.push_back({window, "", pen, line, pen, rgb});
          run = &out.texts.back();
        } else {
          run->text.append(static_cast<std::size_t>(spaces), ' ');
        }
        append_utf8(run->text, glyph.Codepoint);
        run->x1 = pen + glyph.AdvanceX;
        i += 4;
        continue;
      }
      // A rectangle: on the white pixel, each corner one step round from the last.
      const bool on_white = same(q[0].uv, white) && same(q[1].uv, white) && same(q[2].uv, white) && same(q[3].uv, white);
      auto step = [&](int a, int b, bool along_x) {
        return along_x ? q[a].pos.y == q[b].pos.y && q[a].pos.x != q[b].pos.x
                       : q[a].pos.x == q[b].pos.x && q[a].pos.y != q[b].pos.y;
      };
      const bool x_first = q[0].pos.y == q[1].pos.y;
      if (one_colour && on_white && step(0, 1, x_first) && step(1, 2, !x_first) && step(2, 3, x_first) &&
          step(3, 0, !x_first)) {
        paint::Box b{std::min(q[0].pos.x, q[2].pos.x), std::min(q[0].pos.y, q[2].pos.y),
                     std::max(q[0].pos.x, q[2].pos.x), std::max(q[0].pos.y, q[2].pos.y)};
        out.quads.push_back({window, b, rgb_of(q[0].col), alpha_of(q[0].col)});
        run = nullptr;
        i += 4;
        continue;
      }
      ++i;
    }
  }
  return out;
}

// ---- frames without a window ----------------------------------------------------

const ImVec2 kNoPointer{-FLT_MAX, -FLT_MAX};

class Headless : public ::testing::Test {
 protected:
  void SetUp() override {
    context_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.LogFilename = nullptr;
    io.DisplaySize = {1200, 700};
    io.DeltaTime = 1.0f / 60;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);  // builds the atlas: the default font, as the window's
  }
  void TearDown() override { ImGui::DestroyContext(context_); }

  // Runs `frames` frames with the pointer at `pointer` (and the wheel
  // turned by `wheel` in the first), each calling `draw`, and reads the
  // last one back. The pointer needs a frame to find the window under it
  // and one more for a tooltip to show.
  Drawn frames(const std::function<void()>& draw, ImVec2 pointer = kNoPointer, int frames = 3, float wheel = 0) {
    ImGuiIO& io = ImGui::GetIO();
    for (int f = 0; f < frames; ++f) {
      io.MousePos = pointer;
      io.MouseWheel = f == 0 ? wheel : 0;
      ImGui::NewFrame();
      draw();
      ImGui::Render();
    }
    return read_back(*ImGui::GetDrawData());
  }

  // A view's draw(frame) in a window filling the display, as the dashboard
  // gives each view its rectangle of the window.
  template <typename View>
  Drawn view_frames(View& view, const Frame& frame, ImVec2 pointer = kNoPointer, int frames = 3, float wheel = 0) {
    return this->frames(
        [&] {
          ImGui::SetNextWindowPos({0, 0});
          ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
          ImGui::Begin("view", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove);
          view.draw(frame);
          ImGui::End();
        },
        pointer, frames, wheel);
  }

 private:
  ImGuiContext* context_ = nullptr;
};

// A link the views can be handed; they only read the frame.
class StillLink final : public SessionLink {
 public:
  SessionStatus status() const override { return status_; }
  RingSnapshot events(int) const override { return events_; }
  std::uint64_t events_version(int) const override { return events_.version; }
  void request(const MemorySettings&) override {}
  void pause() override {}
  void resume() override {}
  void step() override {}
  void restart(const RunSettings&) override {}
  void record_next(std::int64_t iterations) override { asked_to_record = iterations; }
  SessionStatus status_;
  RingSnapshot events_;
  std::int64_t asked_to_record = 0;  // record_next's last
};

// One frame's inputs, each view's scene as a test sets it.
struct Inputs {
  SessionStatus status;
  RingSnapshot events;
  TimelineScene timeline;
  AddressMapScene map;
  MemoryLoadScene load;
  IterationStats stats;
  std::vector<TimelineIteration> stalls;
  StillLink link;
  Frame frame() { return {status, events, timeline, map, load, stats, stalls, link}; }
};

// The legend's swatch for a label: the square just left of it, level with it.
const DrawnQuad* swatch_of(const Drawn& d, const DrawnText& label) {
  const DrawnQuad* found = nullptr;
  for (const DrawnQuad& q : d.quads) {
    const float middle = (q.box.y0 + q.box.y1) / 2;
    if (q.window == label.window && q.box.width() == q.box.height() && q.box.x1 <= label.x &&
        q.box.x1 >= label.x - 8 && middle > label.y && middle < label.y + 13)
      found = &q;
  }
  return found;
}

void expect_legend(const Drawn& d, const std::vector<std::pair<std::string, std::uint32_t>>& entries) {
  for (const auto& [name, rgb] : entries) {
    SCOPED_TRACE("legend: " + name);
    // The legend's label: the one with a swatch (a lane may have the same name).
    const DrawnQuad* swatch = nullptr;
    for (const DrawnText& t : d.texts)
      if (t.text == name && !swatch) swatch = swatch_of(d, t);
    ASSERT_NE(swatch, nullptr) << d.listing();
    EXPECT_EQ(swatch->rgb, rgb) << std::hex << "swatch 0x" << swatch->rgb << ", palette 0x" << rgb;
  }
}

paint::Point centre(const paint::Box& b) { return {(b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2}; }

// ---- the address map ------------------------------------------------------------

// address_map_scene_with_parking(): a 1 MiB pool over 10 steps, weights
// (256 KiB, steps 0-9), an activation (256 KiB, 1-6, offloaded from 4), a
// gradient (128 KiB at 768 KiB, 5-8, prefetched until 6), a workspace
// (256 KiB, 7-8), a parked activation; the peak at step 5, 640 KiB.
TEST_F(Headless, AddressMapShowsTheRolesPeakAndBlocksInThePalettesColours) {
  Inputs in;
  in.map = testing::address_map_scene_with_parking();
  AddressMapView view;
  const Drawn d = view_frames(view, in.frame());

  const auto title = d.with("Address map: iteration 8");  // the scene's iteration 7, counted from 1
  ASSERT_EQ(title.size(), 1u) << d.listing();
  for (const char* part : {"peak load 640 KiB at step 5", "footprint 896 KiB", "pool 1.00 MiB", "ratio 1.400"})
    EXPECT_NE(title[0]->text.find(part), std::string::npos) << part << " in " << title[0]->text;
  expect_legend(d, {{"input", role_colour(Role::input)},
                    {"activation", role_colour(Role::activation)},
                    {"activation gradient", role_colour(Role::activation_gradient)},
                    {"weight", role_colour(Role::weight)},
                    {"weight gradient", role_colour(Role::weight_gradient)},
                    {"optimizer state", role_colour(Role::optimizer_state)},
                    {"workspace", role_colour(Role::workspace)},
                    {"in flight to host", kInFlightToHost},
                    {"in flight from host", kInFlightFromHost},
                    {"parked (dead, still taken)", kParked},
                    {"hole at the peak", kHole},
                    {"largest free block at the peak", kLargestHole}});
  // The peak's marker and the largest free block, in its colour.
  const DrawnText* peak = d.exactly("peak");
  ASSERT_NE(peak, nullptr);
  EXPECT_EQ(peak->rgb, kLargestHole);
  const DrawnText* largest = d.exactly("at peak 256 KiB");
  ASSERT_NE(largest, nullptr);
  EXPECT_EQ(largest->rgb, kLargestHole);
  EXPECT_EQ(d.colour_of("pool 1.00 MiB"), kBudget);
  EXPECT_EQ(d.colour_of("footprint 896 KiB"), kExtent);

  // The blocks, sized by their bytes and steps: the weights are 256 KiB over
  // all 10 steps, the workspace 256 KiB over 2, the gradient 128 KiB over 4
  // (its role's colour under the prefetch's for steps 5-6).
  const DrawnQuad* weights = d.largest(role_colour(Role::weight));
  const DrawnQuad* workspace = d.largest(role_colour(Role::workspace));
  const DrawnQuad* gradient = d.largest(role_colour(Role::activation_gradient));
  ASSERT_TRUE(weights && workspace && gradient);
  const float column = weights->box.width() / 10;
  EXPECT_NEAR(workspace->box.width(), 2 * column, 1.5f);
  EXPECT_NEAR(gradient->box.width(), 4 * column, 1.5f);
  EXPECT_NEAR(workspace->box.height(), weights->box.height(), 1.5f);
  EXPECT_NEAR(gradient->box.height(), weights->box.height() / 2, 1.5f);
  EXPECT_NEAR(weights->box.y0 - gradient->box.y1, weights->box.height() * 2, 1.5f) << "the gradient starts at 768 KiB";
  const DrawnQuad* prefetching = d.largest(kInFlightFromHost);
  ASSERT_NE(prefetching, nullptr);
  EXPECT_NEAR(prefetching->box.width(), 2 * column, 1.5f) << "in flight for steps 5 and 6";
  EXPECT_NEAR(prefetching->box.x0, gradient->box.x0, 1.5f);
}

TEST_F(Headless, AddressMapTellsTheBlockUnderThePointer) {
  Inputs in;
  in.map = testing::address_map_scene_with_parking();
  AddressMapView view;
  const Drawn first = view_frames(view, in.frame());  // kept: `gradient` points into it
  const DrawnQuad* gradient = first.largest(role_colour(Role::activation_gradient));
  ASSERT_NE(gradient, nullptr);
  const paint::Point at = centre(gradient->box);
  const Drawn d = view_frames(view, in.frame(), {at.x, at.y}).tooltip();
  for (const char* line : {"activation_gradient", "layer     activation_gradient", "role      activation_gradient",
                           "offset    768 KiB (786432)", "size      128 KiB", "lifetime  steps 5 to 8",
                           "prefetched, back by step 6"})
    EXPECT_NE(d.exactly(line), nullptr) << line;
  EXPECT_EQ(d.texts.size(), 7u) << "nothing else: not offloaded, not parked\n" << d.listing();
}

// Where two frames read back first differ ("" where they are the same):
// every text and quad, its window, place and colour.
std::string difference(const Drawn& a, const Drawn& b) {
  for (std::size_t i = 0; i < std::min(a.texts.size(), b.texts.size()); ++i) {
    const DrawnText &x = a.texts[i], &y = b.texts[i];
    if (x.window != y.window || x.text != y.text || x.x != y.x || x.y != y.y || x.x1 != y.x1 || x.rgb != y.rgb)
      return "text " + std::to_string(i) + ": \"" + x.text + "\" against \"" + y.text + "\"";
  }
  if (a.texts.size() != b.texts.size())
    return std::to_string(a.texts.size()) + " texts against " + std::to_string(b.texts.size());
  for (std::size_t i = 0; i < std::min(a.quads.size(), b.quads.size()); ++i) {
    const DrawnQuad &x = a.quads[i], &y = b.quads[i];
    if (x.window != y.window || !(x.box == y.box) || x.rgb != y.rgb || x.alpha != y.alpha)
      return "quad " + std::to_string(i) + " at " + std::to_string(x.box.x0) + "," + std::to_string(x.box.y0) +
             " against " + std::to_string(y.box.x0) + "," + std::to_string(y.box.y0);
  }
  if (a.quads.size() != b.quads.size())
    return std::to_string(a.quads.size()) + " quads against " + std::to_string(b.quads.size());
  return "";
}

// The views keep what their pictures work out from every block and every
// sample between frames (paint::AddressMapCache, MemoryLoadCache). A big
// map (past the 20 000 blocks the picture merges) and big load curves,
// drawn frame after frame as the window is resized and the pointer moves
// over them, are what views drawing copies made by hand (generation 0:
// worked out afresh every frame) draw, tooltips included.
TEST_F(Headless, BigScenesDrawnThroughTheViewsCachesAreTheScenesDrawnAfresh) {
  Inputs kept, afresh;
  // Four slots: ImGui's 16-bit indices hold what a test's draw list, with
  // no renderer to split it, can take.
  kept.map = testing::big_address_map_scene(30000, 4);
  kept.load = testing::big_memory_load_scene();
  afresh.map = kept.map;
  afresh.map.generation = 0;
  afresh.load = kept.load;
  afresh.load.generation = 0;
  AddressMapView kept_map, afresh_map;
  MemoryLoadView kept_load, afresh_load;
  int tooltips = 0;
  for (const ImVec2 size : {ImVec2{1200, 700}, ImVec2{900, 500}, ImVec2{1200, 700}}) {
    ImGui::GetIO().DisplaySize = size;
    for (const ImVec2 pointer : {kNoPointer, ImVec2{400, 400}, ImVec2{610, 300}, ImVec2{300, 450}}) {
      SCOPED_TRACE("display " + std::to_string(size.x) + "x" + std::to_string(size.y) + ", pointer at " +
                   std::to_string(pointer.x) + "," + std::to_string(pointer.y));
      const Drawn map = view_frames(kept_map, kept.frame(), pointer);
      EXPECT_EQ(difference(map, view_frames(afresh_map, afresh.frame(), pointer)), "");
      const Drawn load = view_frames(kept_load, kept.frame(), pointer);
      EXPECT_EQ(difference(load, view_frames(afresh_load, afresh.frame(), pointer)), "");
      tooltips += !map.tooltip().texts.empty() + !load.tooltip().texts.empty();
    }
  }
  EXPECT_GE(tooltips, 6) << "the pointer was over the pictures";
}

// ---- the memory load ------------------------------------------------------------

// memory_load_scene(): two iterations of ten steps against a 1 MiB budget;
// the load climbs 100 + 80 step KiB to step 5 and falls, 100 KiB higher in
// the second iteration, so its peak is 600 KiB at event iteration 1, step 5
// (sample 15 of 20), the extent 64 KiB above it. The views count
// iterations from 1, as the command line does: that is iteration 2.
TEST_F(Headless, MemoryLoadShowsThePeakTheBudgetAndTheLegend) {
  Inputs in;
  in.load = testing::memory_load_scene();
  MemoryLoadView view;
  const Drawn d = view_frames(view, in.frame());

  const auto title = d.with("Memory load: iterations 1-2");
  ASSERT_EQ(title.size(), 1u) << d.listing();
  for (const char* part : {"peak 600 KiB (iteration 2, step 5)", "highest extent 664 KiB", "budget 1.00 MiB"})
    EXPECT_NE(title[0]->text.find(part), std::string::npos) << part << " in " << title[0]->text;
  const DrawnText* peak = d.exactly("peak 600 KiB");
  ASSERT_NE(peak, nullptr);
  EXPECT_EQ(peak->rgb, 0xFFFFFFu) << "the peak's white";
  const DrawnText* budget = d.exactly("budget 1.00 MiB");
  ASSERT_NE(budget, nullptr);
  EXPECT_EQ(budget->rgb, kBudget);
  expect_legend(d, {{"memory load (bytes of live tensors)", kLoad},
                    {"pool extent (highest byte in use + 1)", kExtent},
                    {"budget", kBudget}});
  // The budget line across the curves' plot, at 1 MiB of the axis: the
  // axis runs to 1.08 MiB (the highest value, the budget, and 8% headroom).
  const DrawnQuad* plot = d.largest(paint::kPlotBackground);
  ASSERT_NE(plot, nullptr);
  const auto lines = d.quads_of(kBudget);
  const DrawnQuad* line = nullptr;
  for (const DrawnQuad* q : lines)
    if (q->box.width() >= plot->box.width() - 1) line = q;
  ASSERT_NE(line, nullptr) << "no budget line across the plot";
  EXPECT_NEAR((line->box.y0 + line->box.y1) / 2, plot->box.y1 - plot->box.height() / 1.08, 1.5f);
  // The panels' titles, each in its series' colour where the palette names it.
  EXPECT_EQ(d.colour_of("peak load"), kLoad);
  EXPECT_EQ(d.colour_of("footprint"), kExtent);
  for (const char* name : {"loss", "accuracy (%)", "images / s"}) EXPECT_NE(d.exactly(name), nullptr) << name;
  EXPECT_TRUE(d.with(kNoNumbers).empty()) << "this device computes values";
  EXPECT_NE(d.exactly("it 1"), nullptr);
  EXPECT_NE(d.exactly("it 2"), nullptr);
  for (const DrawnText& t : d.texts) EXPECT_NE(t.text, "it 0") << "iterations count from 1";
}

TEST_F(Headless, MemoryLoadOfADeviceWithoutNumbersSaysSoInItsLossAndAccuracyPanels) {
  Inputs in;
  in.load = testing::memory_load_scene();
  in.load.computes_values = false;
  MemoryLoadView view;
  const Drawn d = view_frames(view, in.frame());
  EXPECT_EQ(d.with(kNoNumbers).size(), 2u) << d.listing();
  EXPECT_NE(d.exactly("peak 600 KiB"), nullptr) << "the memory figures are the run's";
}

TEST_F(Headless, MemoryLoadTellsTheSampleAndTheIterationUnderThePointer) {
  Inputs in;
  in.load = testing::memory_load_scene();
  MemoryLoadView view;
  const Drawn still = view_frames(view, in.frame());
  // The curves' plot holds 20 samples side by side: sample 15 is the peak.
  const DrawnQuad* plot = still.largest(paint::kPlotBackground);
  ASSERT_NE(plot, nullptr);
  const float x = plot->box.x0 + plot->box.width() * 15.5f / 20;
  Drawn d = view_frames(view, in.frame(), {x, centre(plot->box).y}).tooltip();
  for (const char* line : {"iteration 2, step 5", "load 600 KiB", "extent 664 KiB"})
    EXPECT_NE(d.exactly(line), nullptr) << line;

  // Over the images/s panel, right of its middle: the second iteration.
  const DrawnText* images = still.exactly("images / s");
  ASSERT_NE(images, nullptr);
  const DrawnQuad* panel = nullptr;
  for (const DrawnQuad* q : still.quads_of(paint::kPlotBackground))
    if (q->box.x0 == images->x && q->box.y0 > images->y && (!panel || q->box.y0 < panel->box.y0)) panel = q;
  ASSERT_NE(panel, nullptr);
  d = view_frames(view, in.frame(), {panel->box.x1 - 6, centre(panel->box).y}).tooltip();
  for (const char* line : {"iteration 2", "peak load 600 KiB", "footprint 664 KiB", "loss 2.1000",
                           "accuracy 25.0 % of the batch", "900.0 images/s"})
    EXPECT_NE(d.exactly(line), nullptr) << line;
}

// ---- the timeline ---------------------------------------------------------------

// timeline_scene(): 2 ms of one iteration: conv1 forward 0-1000 us on the
// compute stream while its output goes to the host 200-900 us, a prefetch
// 1000-1500 us, the compute stream stalled on it 1000-1400 us, then the
// backward 1400-2000 us.
TEST_F(Headless, TimelineShowsTheLanesSpansStallAndLegendInThePalettesColours) {
  Inputs in;
  in.timeline = testing::timeline_scene();
  TimelineView view;
  const Drawn d = view_frames(view, in.frame());

  EXPECT_NE(d.exactly("follow newest"), nullptr);
  EXPECT_NE(d.exactly("Stream timeline: iteration 1  |  compute stalled 0.40 ms of 2.00 ms"), nullptr) << d.listing();
  expect_legend(d, {{"forward", span_colour(SpanKind::forward)},
                    {"backward", span_colour(SpanKind::backward)},
                    {"accumulate", span_colour(SpanKind::accumulate)},
                    {"update", span_colour(SpanKind::update)},
                    {"offload D2H", span_colour(SpanKind::offload)},
                    {"prefetch H2D", span_colour(SpanKind::prefetch)},
                    {"compute stall (hatched)", span_colour(SpanKind::wait)},
                    {"transfer stream idle", paint::shade(span_colour(SpanKind::wait), 0.45)}});
  EXPECT_TRUE(d.with("all-reduce").empty()) << "no comm lane without all-reduces";
  EXPECT_TRUE(d.with("compress").empty()) << "nor compression";
  // The lanes' names, top to bottom (the legend's "offload D2H" and
  // "prefetch H2D" sit above, right of their swatches).
  std::vector<float> lane_y;
  for (const char* lane : {"compute", "offload D2H", "prefetch H2D"}) {
    const auto named = d.with(lane);
    const DrawnText* left = nullptr;
    for (const DrawnText* t : named)
      if (t->text == lane && (!left || t->y > left->y)) left = t;
    ASSERT_NE(left, nullptr) << lane;
    lane_y.push_back(left->y);
  }
  EXPECT_LT(lane_y[0], lane_y[1]);
  EXPECT_LT(lane_y[1], lane_y[2]);

  // The spans in their kinds' colours, as long as they lasted: forward
  // 1000 us, backward 600, offload 700, prefetch 500.
  const DrawnQuad* forward = d.largest(span_colour(SpanKind::forward));
  const DrawnQuad* backward = d.largest(span_colour(SpanKind::backward));
  const DrawnQuad* offload = d.largest(span_colour(SpanKind::offload));
  const DrawnQuad* prefetch = d.largest(span_colour(SpanKind::prefetch));
  ASSERT_TRUE(forward && backward && offload && prefetch);
  const float us = forward->box.width() / 1000;
  EXPECT_NEAR(backward->box.width(), 600 * us, 1.5f);
  EXPECT_NEAR(offload->box.width(), 700 * us, 1.5f);
  EXPECT_NEAR(prefetch->box.width(), 500 * us, 1.5f);
  EXPECT_NEAR(offload->box.x0 - forward->box.x0, 200 * us, 1.5f);
  EXPECT_NEAR(backward->box.x0 - forward->box.x0, 1400 * us, 1.5f);
  EXPECT_LT(forward->box.y1, offload->box.y0) << "compute above offload";
  EXPECT_LT(offload->box.y1, prefetch->box.y0) << "offload above prefetch";
  // Labels where they fit, and the stall's length on it.
  EXPECT_NE(d.exactly("conv1 fwd"), nullptr);
  EXPECT_NE(d.exactly("conv1 bwd"), nullptr);
  EXPECT_NE(d.exactly("offload conv1.out"), nullptr);
  EXPECT_NE(d.exactly("stall 0.40 ms"), nullptr);
  EXPECT_NE(d.exactly("it 1  stall 0.40 ms"), nullptr);
}

TEST_F(Headless, TimelineTellsTheSpanUnderThePointerAndZoomsAroundIt) {
  Inputs in;
  in.timeline = testing::timeline_scene();
  TimelineView view;
  const Drawn still = view_frames(view, in.frame());
  const DrawnQuad* backward = still.largest(span_colour(SpanKind::backward));
  const DrawnQuad* prefetch = still.largest(span_colour(SpanKind::prefetch));
  ASSERT_TRUE(backward && prefetch);
  const float width = prefetch->box.width();
  const paint::Point at = centre(backward->box);
  const Drawn d = view_frames(view, in.frame(), {at.x, at.y}).tooltip();
  for (const char* line : {"conv1 bwd", "stream    compute", "layer     conv1", "tensor    conv1.out", "duration  600 us",
                           "iteration 1, step 0"})
    EXPECT_NE(d.exactly(line), nullptr) << line;
  EXPECT_TRUE(d.with("compute stalled on this transfer").empty()) << "the backward is no stall";

  // One notch of the wheel zooms in by 1/0.8 around the pointer: the
  // prefetch (1000-1500 us) stays in view, 1/0.8 times as wide, and the
  // backward's middle (1700 us) stays under the pointer.
  const Drawn zoomed = view_frames(view, in.frame(), {at.x, at.y}, 1, /*wheel=*/1);
  const DrawnQuad* wider = zoomed.largest(span_colour(SpanKind::prefetch));
  ASSERT_NE(wider, nullptr);
  EXPECT_NEAR(wider->box.width(), width / 0.8f, 2.0f);
  EXPECT_NEAR(wider->box.x1 + (at.x - prefetch->box.x1) / 0.8f, at.x, 2.0f) << "200 us right of its end";
}

// ---- the dashboard on a run -----------------------------------------------------

// The five views as the window draws them, on the events a simulated run
// recorded: the address map's title and the memory load's peak label are
// that run's recorded peak (its last iteration's summary), the budget is
// the plan's pool, and the timeline names the streams the run used.
// Controls' "Record the next iterations": off, saying why, where the session
// keeps no run folder; where it does, a click asks the session for the
// iterations beside the button (2, a run's pictures' two), and what became
// of the request is shown.
TEST_F(Headless, ControlsRecordTheNextIterationsOfASavedSessionAndSayWhyNotOtherwise) {
  Inputs in;
  in.status.state = RunState::training;
  ControlsView controls;
  // Hover, press, release: ImGui's button is clicked on the release.
  auto click = [&](ImVec2 at) {
    for (bool down : {false, false, true, false}) {
      ImGui::GetIO().MouseDown[0] = down;
      view_frames(controls, in.frame(), at, 1);
    }
  };
  Drawn d = view_frames(controls, in.frame());
  ASSERT_EQ(d.with("start the window with --out DIR").size(), 1u);
  const DrawnText* label = d.exactly("Record the next iterations");
  ASSERT_NE(label, nullptr);
  const ImVec2 button{label->x + 4, label->y + 4};  // `d` is drawn again below
  click(button);
  EXPECT_EQ(in.link.asked_to_record, 0) << "the button is off without a run folder";

  in.status.can_capture = true;
  in.status.capture = "recording the next iterations into runs/r/captures/5-6";
  d = view_frames(controls, in.frame());
  EXPECT_TRUE(d.with("--out DIR").empty());
  EXPECT_EQ(d.with("recording the next iterations into runs/r/captures/5-6").size(), 1u);
  click(button);
  EXPECT_EQ(in.link.asked_to_record, 2);
}

TEST_F(Headless, TheDashboardShowsTheRunsRecordedPeakInEveryView) {
  testing::TempDir dir("views");
  testing::write_tiny_cifar10(dir.path());
  RunSettings settings;
  settings.model = "resnet20";
  settings.dataset = "cifar10";
  settings.data_dir = dir.path().string();
  settings.batch_size = 32;
  settings.progress = false;
  settings.device = DeviceKind::sim;
  settings.profile = "m40";
  settings.memory.mode = OffloadMode::all;
  app::TrainingSession session(settings);
  RingSink ring;
  session.start(&ring);
  session.train_iteration();
  session.train_iteration();
  StillLink link;
  link.status_ = session.status();
  link.events_ = ring.snapshot();
  ASSERT_EQ(link.events_.iterations.size(), 2u);
  const IterationSummary& last = link.events_.iterations.back();
  std::size_t peak = 0;
  for (const IterationSummary& s : link.events_.iterations) peak = std::max(peak, s.peak_load_bytes);
  ASSERT_GT(peak, 0u);

  // Wide enough for the address map's whole title.
  ImGui::GetIO().DisplaySize = {2400, 1400};
  Dashboard dashboard(link);
  const Drawn d = frames([&] { dashboard.draw(2400, 1400); }, kNoPointer, 2);
  const std::string map_window(view_title(ViewId::address_map)), load_window(view_title(ViewId::memory_load)),
      timeline_window(view_title(ViewId::timeline));
  const auto map_title = d.with("Address map: iteration " + std::to_string(last.iteration + 1), map_window);  // counted from 1
  ASSERT_EQ(map_title.size(), 1u) << d.listing();
  const std::string expected_peak = "peak load " + format_bytes(last.peak_load_bytes) + " at step " +
                                    std::to_string(last.peak_step);
  EXPECT_NE(map_title[0]->text.find(expected_peak), std::string::npos) << map_title[0]->text;
  EXPECT_NE(map_title[0]->text.find("footprint " + format_bytes(last.footprint_bytes)), std::string::npos)
      << map_title[0]->text;
  EXPECT_NE(d.exactly("peak " + format_bytes(peak), load_window), nullptr);
  EXPECT_EQ(d.colour_of("budget " + format_bytes(link.status_.memory.pool_bytes), load_window), kBudget);
  EXPECT_EQ(d.with(kNoNumbers, load_window).size(), 2u) << "the sim device computes no values";
  for (const char* lane : {"compute", "offload D2H", "prefetch H2D"})
    EXPECT_FALSE(d.with(lane, timeline_window).empty()) << lane;
  EXPECT_FALSE(d.quads_of(span_colour(SpanKind::offload), timeline_window).empty()) << "the run offloads (mode all)";
}

}  // namespace
}  // namespace tidepool::ui
