#include "ui/window.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>  // the frame's windows, to count its tooltips
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "ui/comparison.h"
#include "ui/dashboard.h"
#include "ui/scene/iteration_number.h"

namespace tidepool::ui {
namespace {

using Clock = std::chrono::steady_clock;

std::string glfw_error;  // the last GLFW error, for the exception text
void on_glfw_error(int code, const char* text) { glfw_error = std::to_string(code) + ": " + text; }

// RAII for GLFW, the window and the ImGui context.
class Gui {
 public:
  Gui(const WindowOptions& o) {
    glfwSetErrorCallback(on_glfw_error);
    if (!glfwInit())
      throw std::runtime_error("cannot open a window (" + glfw_error +
                               "); on a machine without a display train with --batch (and open its run folder with "
                               "`tidepool view` where there is one), or run under xvfb-run");
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
    window_ = glfwCreateWindow(o.width, o.height, o.title.c_str(), nullptr, nullptr);
    if (!window_) {
      glfwTerminate();
      throw std::runtime_error("cannot create a " + std::to_string(o.width) + "x" + std::to_string(o.height) +
                               " OpenGL 3 window (" + glfw_error + ")");
    }
    glfwMakeContextCurrent(window_);
    glfwSwapInterval(1);
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;  // the layout is computed, not saved
    ImGui::StyleColorsDark();
    ImGui::GetStyle().WindowRounding = 0;
    ImGui_ImplGlfw_InitForOpenGL(window_, true);
    ImGui_ImplOpenGL3_Init("#version 130");
  }
  ~Gui() {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window_);
    glfwTerminate();
  }
  Gui(const Gui&) = delete;
  Gui& operator=(const Gui&) = delete;
  GLFWwindow* window() const { return window_; }

 private:
  GLFWwindow* window_ = nullptr;
};

// Mesa's CPU rasterisers name themselves in GL_RENDERER.
bool software_renderer() {
  const auto* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  if (!renderer) return false;
  const std::string r = renderer;
  for (const char* name : {"llvmpipe", "softpipe", "swrast", "Software Rasterizer"})
    if (r.find(name) != std::string::npos) return true;
  return false;
}

// The back buffer as a PNG (OpenGL's rows run bottom-up).
void write_png(const std::string& path, int width, int height) {
  std::vector<unsigned char> rgba(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  cv::Mat image(height, width, CV_8UC4, rgba.data()), bgr;
  cv::cvtColor(image, bgr, cv::COLOR_RGBA2BGR);
  cv::flip(bgr, bgr, 0);
  if (!cv::imwrite(path, bgr)) throw std::runtime_error("cannot write the screenshot " + path);
}

// The address map's words, for a reader (or a test) without the pixels:
// its blocks, and the names they carry, most blocks first (a snapshot's
// block labels: the frames they were allocated from).
void print_address_map(const AddressMapScene& map) {
  std::map<std::string, int> names;
  for (const MapBlock& b : map.blocks) ++names[b.name];
  std::printf("address map | iteration %lld, %d steps, %zu blocks, %zu names\n", static_cast<long long>(map.iteration),
              map.steps, map.blocks.size(), names.size());
  std::vector<std::pair<int, std::string>> most(names.size());
  std::transform(names.begin(), names.end(), most.begin(), [](const auto& n) { return std::pair{-n.second, n.first}; });
  std::sort(most.begin(), most.end());
  if (most.size() > 20) most.resize(20);
  for (const auto& [count, name] : most) std::printf("address map name | %s | %d blocks\n", name.c_str(), -count);
}

// The tooltips the last frame drew (ImGui makes each a window of its own):
// what a screenshot's reader is told, so that a picture with one over the
// views is no surprise.
int tooltips_on_show() {
  int n = 0;
  for (const ImGuiWindow* w : ImGui::GetCurrentContext()->Windows)
    if ((w->Flags & ImGuiWindowFlags_Tooltip) && w->Active && !w->Hidden) ++n;
  return n;
}

// What a screenshot prints of one dashboard's views, for a reader (or a
// test) without the pixels.
void print_shown(const Dashboard& dashboard) {
  const IterationStats& shown = dashboard.shown();
  std::printf("on show: iteration %lld, %.3f ms, the compute stream stalled %.3f ms\n",
              static_cast<long long>(shown_iteration(shown.iteration)), shown.iteration_ms, shown.stall_ms);
  for (const StatsRow& row : dashboard.shown_table()) std::printf("stats | %s | %s\n", row.figure.c_str(), row.value.c_str());
  print_address_map(dashboard.shown_map());
  if (const MapBlock* pinned = dashboard.pinned_block())
    for (const std::string& line : block_details(*pinned, !dashboard.link().block_stack(pinned->tensor).empty()))
      std::printf("address map pinned | %s\n", line.c_str());
}

int run_dashboards(const std::vector<Dashboard*>& dashboards, const WindowOptions& o) {
  Gui gui(o);
  if (o.on_open) o.on_open();
  const bool screenshot = !o.screenshot.empty();
  const bool software = software_renderer();
  const double fps_cap = software ? std::min(o.max_fps, o.software_max_fps) : o.max_fps;
  if (software)
    std::printf("tidepool: OpenGL draws on the CPU (%s): at most %.0f frames/s, training has the rest\n",
                reinterpret_cast<const char*>(glGetString(GL_RENDERER)), fps_cap);
  const auto frame_period = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(1.0 / std::max(fps_cap, 1.0)));
  Clock::time_point next_frame = Clock::now();
  const auto started = Clock::now();
  int live_frames = 0;
  Clock::time_point first_live{};
  std::int64_t first_live_iteration = 0;  // training's progress while frames were measured
  // Where frame time goes once live data is on show (no pacing sleep):
  // building (the dashboard and ImGui's draw lists), rendering them with
  // OpenGL, and presenting (swap, where a software rasteriser does its work).
  double build_seconds = 0, render_seconds = 0, present_seconds = 0;
  double vertices = 0;  // summed over live frames
  bool clicked = false;  // --click done
  while (!glfwWindowShouldClose(gui.window())) {
    const auto frame_start = Clock::now();
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    // A screenshot shows what --hover asks for, not wherever the display's
    // pointer happens to be (Xvfb puts it mid-screen, over the views).
    // --click presses the button there on the frame after the first with
    // data, and lets go on the next.
    const bool pressing = screenshot && o.click && live_frames == 1 && !clicked;
    if (screenshot) {
      ImGuiIO& io = ImGui::GetIO();
      io.MousePos = pressing ? ImVec2((*o.click)[0], (*o.click)[1])
                    : o.hover ? ImVec2((*o.hover)[0], (*o.hover)[1])
                              : ImVec2(-FLT_MAX, -FLT_MAX);
      io.MouseDown[0] = pressing;
      if (pressing) clicked = true;
    }
    ImGui::NewFrame();
    int width = 0, height = 0;
    glfwGetFramebufferSize(gui.window(), &width, &height);
    if (dashboards.size() == 1)
      dashboards.front()->draw(static_cast<float>(width), static_cast<float>(height));
    else
      draw_comparison(*dashboards[0], *dashboards[1], static_cast<float>(width), static_cast<float>(height));
    ImGui::Render();
    const auto built = Clock::now();
    glViewport(0, 0, width, height);
    glClearColor(0.09f, 0.09f, 0.11f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    const auto rendered = Clock::now();
    if (live_frames > 0) {
      build_seconds += std::chrono::duration<double>(built - frame_start).count();
      render_seconds += std::chrono::duration<double>(rendered - built).count();
      vertices += ImGui::GetDrawData()->TotalVtxCount;
    }

    if (screenshot) {
      // The first whose views wait for data; once none does, the first's
      // training is what the frame rate is measured against.
      const auto waiting = std::find_if(dashboards.begin(), dashboards.end(),
                                        [](const Dashboard* d) { return !d->showing_live_data(); });
      const Dashboard& shown = waiting == dashboards.end() ? *dashboards.front() : **waiting;
      SessionLink& link = shown.link();
      const std::string which = shown.label().empty() ? "" : " " + shown.label();
      if (waiting == dashboards.end()) {
        if (live_frames++ == 0) {
          first_live = Clock::now();
          first_live_iteration = link.status().iteration;
        }
      } else if (const SessionStatus now = link.status();
                 link.read_only() || (now.state == RunState::snapshot && !now.replanning)) {
        // A recorded run's events were all there for the first frame: what
        // is missing now never comes.
        std::fprintf(stderr, "tidepool: error: the %s%s has no iteration that every view can show\n",
                     link.read_only() ? "recorded run" : "snapshot", which.c_str());
        return 1;
      } else if (const SessionStatus s = link.status(); s.state == RunState::failed) {
        return 1;  // no data will come (a budget too small, a missing dataset): the caller says why
      } else if (std::chrono::duration<double>(Clock::now() - started).count() > o.live_data_timeout_seconds) {
        std::fprintf(stderr, "tidepool: error: no iteration reached the views within %.0f s (state %s%s%s)\n",
                     o.live_data_timeout_seconds, to_string(s.state), s.error.empty() ? "" : ": ", s.error.c_str());
        return 1;
      }
      // ImGui hides a tooltip on the frame it first shows: with the pointer
      // placed on the first live frame (--hover), or clicked on the second
      // and placed again on the third (--click), the picture waits a frame
      // more.
      const int least_frames = o.click ? 4 : o.hover ? 2 : 1;
      if (live_frames >= std::max(o.frames, least_frames)) {
        write_png(o.screenshot, width, height);
        const double live_seconds = std::chrono::duration<double>(Clock::now() - first_live).count();
        const double per_frame = 1e3 / std::max(live_frames, 1);
        std::printf("screenshot %s (%dx%d) after %d frames with live data in %.1f s: %.1f frames/s; "
                    "per frame %.1f ms building, %.1f ms rendering, %.1f ms presenting, %.0f vertices; "
                    "meanwhile %lld training iterations\n",
                    o.screenshot.c_str(), width, height, live_frames, live_seconds,
                    live_seconds > 0 ? live_frames / live_seconds : 0.0, build_seconds * per_frame,
                    render_seconds * per_frame, present_seconds * per_frame, vertices / std::max(live_frames, 1),
                    static_cast<long long>(link.status().iteration - first_live_iteration));
        if (o.hover)
          std::printf("tooltips on show: %d (the pointer at %.0f,%.0f)\n", tooltips_on_show(), (*o.hover)[0], (*o.hover)[1]);
        else
          std::printf("tooltips on show: %d (the pointer off the window)\n", tooltips_on_show());
        if (dashboards.size() == 1) {
          print_shown(*dashboards.front());
          return 0;
        }
        // Compared: each run's words under its name, and the axes they share.
        for (const Dashboard* d : dashboards) {
          const Dashboard::Axes a = d->shown_axes();
          std::printf("run | %s\n", d->label().c_str());
          std::printf("axes | map 0..%zu bytes over %d steps | load 0..%zu bytes over %zu samples | timeline %.0f us\n",
                      a.map_bytes, a.map_steps, a.load_bytes, a.load_samples, a.timeline_us);
          print_shown(*d);
        }
        return 0;
      }
    }
    const auto before_swap = Clock::now();
    glfwSwapBuffers(gui.window());
    if (live_frames > 0) present_seconds += std::chrono::duration<double>(Clock::now() - before_swap).count();
    // Paced against a schedule rather than per frame, so oversleeping one
    // frame is made up by the next; a frame that ran late starts a new one.
    next_frame = std::max(next_frame + frame_period, Clock::now() - frame_period);
    std::this_thread::sleep_until(next_frame);
  }
  return 0;
}

}  // namespace

int run_window(SessionLink& link, const WindowOptions& o) {
  Dashboard dashboard(link);
  dashboard.show_fragmentation(o.show_fragmentation, o.fragmentation_events);
  if (o.overlap_scenario) dashboard.adopt_overlap_scenario();
  dashboard.show_rank(o.show_rank);
  return run_dashboards({&dashboard}, o);
}

int run_window(SessionLink& a, const std::string& label_a, SessionLink& b, const std::string& label_b,
               const WindowOptions& o) {
  Dashboard first(a, label_a), second(b, label_b);
  return run_dashboards({&first, &second}, o);
}

}  // namespace tidepool::ui
