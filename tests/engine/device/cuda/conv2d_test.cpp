// cuDNN convolution against the cpu device (oneDNN) on the same inputs, for
// both schemes and all three passes, plus the workspace contract the
// planner relies on and the determinism the offload modes rely on.
//
// Tolerances: both devices accumulate in f32 (the cuda device with
// CUDNN_FMA_MATH, so no TF32), in different orders. Outputs and data
// gradients sum at most c/groups*r*s = 576 products of values in [-1, 1]:
// 1e-4 relative plus 1e-4 absolute. Weight and bias gradients sum n*oh*ow
// products, up to 8192 for the ResNet-width case, whose rounding grows
// with the terms' total magnitude: 1e-4 relative plus 2e-3 absolute (a
// wrong index or a missed term is off by O(1)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::bit_equal;
using testing::close_to_cpu;
using testing::conv_shape;
using testing::ConvCase;
using testing::GpuTest;
using testing::kAllPasses;
using testing::kBothSchemes;
using testing::random_floats;
using testing::scheme_name;

// The shared cases, and a CIFAR ResNet layer at a real width, where cuDNN
// has many algorithms.
std::vector<ConvCase> cases() {
  std::vector<ConvCase> out = testing::conv_cases();
  out.push_back({"resnet_64x32x32", conv_shape(8, 64, 32, 32, 64, 3, 3, 1, 1)});
  return out;
}

constexpr double kRtol = 1e-4, kAtol = 1e-4, kGradAtol = 2e-3;

// Operands and the cpu device's results for one case and scheme.
struct CpuResults {
  std::vector<float> x, w, b, dy, y, dx, dw, db;
  CpuResults(CpuKernels& cpu, const ConvShape& s, ConvScheme scheme) {
    const auto nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto ny = static_cast<std::size_t>(s.n * s.k * s.out_h() * s.out_w());
    x = random_floats(nx, 1);
    w = random_floats(static_cast<std::size_t>(s.weight_numel()), 2);
    b = random_floats(static_cast<std::size_t>(s.k), 3);
    dy = random_floats(ny, 4);
    y.resize(ny), dx.resize(nx), dw.resize(w.size()), db.resize(b.size());
    auto ws = [&](ConvPass pass) {
      return std::vector<std::byte>(cpu.conv_workspace_bytes(s, scheme, pass));
    };
    auto wf = ws(ConvPass::forward), wd = ws(ConvPass::backward_data),
         ww = ws(ConvPass::backward_weights);
    cpu.conv_forward(s, scheme, x.data(), w.data(), s.bias ? b.data() : nullptr, y.data(),
                     wf.data());
    cpu.conv_backward_data(s, scheme, dy.data(), w.data(), dx.data(), wd.data());
    cpu.conv_backward_weights(s, scheme, x.data(), dy.data(), dw.data(),
                              s.bias ? db.data() : nullptr, ww.data());
  }
};

class GpuConv : public GpuTest {};

TEST_F(GpuConv, EveryPassOfEverySchemeMatchesTheCpuDevice) {
  // Ask for every workspace first: the device has not reserved its arena
  // yet, so the `p` scheme times its algorithms (cudnnFind*).
  const std::vector<ConvCase> all = cases();
  bool some_measured = false;
  for (const ConvCase& c : all)
    for (ConvScheme scheme : kBothSchemes)
      for (ConvPass pass : kAllPasses) {
        kernels().conv_workspace_bytes(c.shape, scheme, pass);
        some_measured = some_measured || kernels().conv_algorithm_measured(c.shape, scheme, pass);
      }
  EXPECT_TRUE(some_measured) << "no `p` algorithm was chosen by measurement";

  for (const ConvCase& c : all) {
    const ConvShape& s = c.shape;
    for (ConvScheme scheme : kBothSchemes) {
      const CpuResults want(cpu, s, scheme);
      reset_arena();
      float* x = upload(want.x);
      float* w = upload(want.w);
      float* b = upload(want.b);
      float* dy = upload(want.dy);
      float* y = nan_buffer(want.y.size());
      float* dx = nan_buffer(want.dx.size());
      float* dw = nan_buffer(want.dw.size());
      float* db = nan_buffer(want.db.size());
      void* wf = alloc_bytes(kernels().conv_workspace_bytes(s, scheme, ConvPass::forward));
      void* wd = alloc_bytes(kernels().conv_workspace_bytes(s, scheme, ConvPass::backward_data));
      void* ww = alloc_bytes(kernels().conv_workspace_bytes(s, scheme, ConvPass::backward_weights));
      run([&](Kernels& k) {
        k.conv_forward(s, scheme, x, w, s.bias ? b : nullptr, y, wf);
        k.conv_backward_data(s, scheme, dy, w, dx, wd);
        k.conv_backward_weights(s, scheme, x, dy, dw, s.bias ? db : nullptr, ww);
      });
      for (ConvPass pass : kAllPasses) {
        SCOPED_TRACE(c.name + " " + scheme_name(scheme) + " pass " +
                     std::to_string(static_cast<int>(pass)) + ": " +
                     kernels().conv_algorithm_name(s, scheme, pass));
        switch (pass) {
          case ConvPass::forward:
            EXPECT_TRUE(close_to_cpu(download(y, want.y.size()), want.y, kRtol, kAtol));
            break;
          case ConvPass::backward_data:
            EXPECT_TRUE(close_to_cpu(download(dx, want.dx.size()), want.dx, kRtol, kAtol));
            break;
          case ConvPass::backward_weights:
            EXPECT_TRUE(close_to_cpu(download(dw, want.dw.size()), want.dw, kRtol, kGradAtol));
            if (s.bias)
              EXPECT_TRUE(close_to_cpu(download(db, want.db.size()), want.db, kRtol, kGradAtol));
            break;
        }
      }
    }
  }
}

TEST_F(GpuConv, MemorySchemeNeedsNoMoreWorkspaceThanPerformance) {
  for (const ConvCase& c : cases())
    for (ConvPass pass : kAllPasses) {
      EXPECT_LE(kernels().conv_workspace_bytes(c.shape, ConvScheme::m, pass),
                kernels().conv_workspace_bytes(c.shape, ConvScheme::p, pass))
          << c.name << " pass " << static_cast<int>(pass);
    }
}

// The same inputs give the same bits, run after run: the algorithms are
// deterministic ones, and the choice for a shape never changes in a process.
TEST_F(GpuConv, RepeatedPassesAreBitIdentical) {
  const ConvShape s = conv_shape(16, 64, 16, 16, 128, 3, 3, 2, 1);
  // Decide the algorithms (and, for p, time them) before the arena exists.
  for (ConvScheme scheme : kBothSchemes)
    for (ConvPass pass : kAllPasses) kernels().conv_workspace_bytes(s, scheme, pass);
  const std::vector<float> xh = random_floats(static_cast<std::size_t>(s.n * s.c * s.h * s.w), 7);
  const std::vector<float> wh = random_floats(static_cast<std::size_t>(s.weight_numel()), 8);
  const std::vector<float> dyh =
      random_floats(static_cast<std::size_t>(s.n * s.k * s.out_h() * s.out_w()), 9);
  float* x = upload(xh);
  float* w = upload(wh);
  float* dy = upload(dyh);
  float* dx = alloc<float>(xh.size());
  float* dw = alloc<float>(wh.size());
  const std::vector<float> nan_x = testing::nan_filled(xh.size()),
                           nan_w = testing::nan_filled(wh.size());
  for (ConvScheme scheme : kBothSchemes) {
    // Backward-data and backward-weights share one workspace, as the planner arranges.
    void* ws = alloc_bytes(
        std::max(kernels().conv_workspace_bytes(s, scheme, ConvPass::backward_data),
                 kernels().conv_workspace_bytes(s, scheme, ConvPass::backward_weights)));
    std::vector<float> first_dx, first_dw;
    for (int round = 0; round < 3; ++round) {
      write(dx, nan_x);
      write(dw, nan_w);
      run([&](Kernels& k) {
        k.conv_backward_data(s, scheme, dy, w, dx, ws);
        k.conv_backward_weights(s, scheme, x, dy, dw, nullptr, ws);
      });
      std::vector<float> got_dx = download(dx, xh.size()), got_dw = download(dw, wh.size());
      if (round == 0) {
        first_dx = got_dx, first_dw = got_dw;
        continue;
      }
      EXPECT_TRUE(bit_equal(got_dx, first_dx)) << scheme_name(scheme) << " round " << round;
      EXPECT_TRUE(bit_equal(got_dw, first_dw)) << scheme_name(scheme) << " round " << round;
    }
  }
}

// After the arena is reserved no memory outside it may be taken, so a shape
// seen for the first time then is decided by cuDNN's heuristic ranking; it
// still runs and still matches the cpu device.
TEST_F(GpuConv, ShapesFirstSeenAfterTheArenaUseTheHeuristicRanking) {
  // An odd size no other test plans, so this process has not decided it yet.
  const ConvShape s = conv_shape(3, 24, 13, 11, 40, 3, 3, 1, 1);
  const CpuResults want(cpu, s, ConvScheme::p);
  float* x = upload(want.x);  // reserves the arena
  float* w = upload(want.w);
  float* y = nan_buffer(want.y.size());
  const std::size_t bytes = kernels().conv_workspace_bytes(s, ConvScheme::p, ConvPass::forward);
  EXPECT_FALSE(kernels().conv_algorithm_measured(s, ConvScheme::p, ConvPass::forward))
      << kernels().conv_algorithm_name(s, ConvScheme::p, ConvPass::forward);
  void* ws = alloc_bytes(bytes);
  run([&](Kernels& k) { k.conv_forward(s, ConvScheme::p, x, w, nullptr, y, ws); });
  EXPECT_TRUE(close_to_cpu(download(y, want.y.size()), want.y, kRtol, kAtol));
}

// A choice recorded by an earlier measurement (a checkpoint's, rank 0's,
// Device::adopt_kernel_choices) is the algorithm that runs, and the device
// records it again. The adopted one here is IMPLICIT_GEMM (algorithm 0,
// no workspace), which timing seldom picks, for a batch no other test plans.
TEST_F(GpuConv, AnAdoptedChoiceIsTheAlgorithmThatRunsAndIsRecordedAgain) {
  const ConvShape timed = conv_shape(5, 24, 15, 9, 40, 3, 3, 1, 1);
  (void)kernels().conv_workspace_bytes(timed, ConvScheme::p, ConvPass::forward);  // before the arena: timed
  ASSERT_TRUE(kernels().conv_algorithm_measured(timed, ConvScheme::p, ConvPass::forward));
  std::string line;
  for (const std::string& l : device().kernel_choices())
    if (l.rfind("forward f32 n=5 c=24 h=15 w=9 k=40 ", 0) == 0) line = l;
  ASSERT_FALSE(line.empty()) << "the timed choice is not among the device's kernel choices";

  std::string shape = line.substr(0, line.find(" -> "));
  shape.replace(shape.find("n=5 "), 4, "n=7 ");
  device().adopt_kernel_choices({shape + " -> 0 fma"});
  const ConvShape adopted = conv_shape(7, 24, 15, 9, 40, 3, 3, 1, 1);
  const std::string name = kernels().conv_algorithm_name(adopted, ConvScheme::p, ConvPass::forward);
  EXPECT_EQ(name.rfind("IMPLICIT_GEMM (p: recorded", 0), 0u) << name;
  const std::vector<std::string> again = device().kernel_choices();
  EXPECT_NE(std::find(again.begin(), again.end(), shape + " -> 0 fma"), again.end());

  const CpuResults want(cpu, adopted, ConvScheme::p);
  float* x = upload(want.x);
  float* w = upload(want.w);
  float* y = nan_buffer(want.y.size());
  void* ws = alloc_bytes(std::max<std::size_t>(1, kernels().conv_workspace_bytes(adopted, ConvScheme::p, ConvPass::forward)));
  run([&](Kernels& k) { k.conv_forward(adopted, ConvScheme::p, x, w, nullptr, y, ws); });
  EXPECT_TRUE(close_to_cpu(download(y, want.y.size()), want.y, kRtol, kAtol));
}

// Workspace queries may come from any thread: here four threads plan new
// shapes while the compute stream's table enqueues convolutions. Plans are
// built with a cuDNN handle of their own (a cuDNN handle must not be used
// by two threads at once), so every query answers and the running
// convolution keeps giving the same bits.
TEST_F(GpuConv, WorkspaceQueriesFromOtherThreadsLeaveRunningConvolutionsAlone) {
  const ConvShape s = conv_shape(8, 32, 16, 16, 32, 3, 3, 1, 1);
  const auto nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
  const auto ny = static_cast<std::size_t>(s.n * s.k * s.out_h() * s.out_w());
  float* x = upload(random_floats(nx, 51));
  float* w = upload(random_floats(static_cast<std::size_t>(s.weight_numel()), 52));
  float* y = nan_buffer(ny);
  void* ws = alloc_bytes(kernels().conv_workspace_bytes(s, ConvScheme::m, ConvPass::forward));
  auto forward = [&](Kernels& k) { k.conv_forward(s, ConvScheme::m, x, w, nullptr, y, ws); };
  run(forward);
  const std::vector<float> first = download(y, ny);

  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> planners;
  for (int t = 0; t < 4; ++t) {
    planners.emplace_back([&, t] {
      try {
        // Shapes no other test plans (n = 2 + t keeps the threads apart).
        for (int i = 0; i < 40; ++i) {
          const ConvShape q = conv_shape(2 + t, 5 + i, 7 + t, 9, 3 + i, 3, 3, 1, 1);
          for (ConvScheme scheme : kBothSchemes)
            for (ConvPass pass : kAllPasses) (void)kernels().conv_workspace_bytes(q, scheme, pass);
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        failures.push_back(e.what());
      }
    });
  }
  for (int round = 0; round < 200; ++round) device().submit(Stream::compute, forward);
  for (std::thread& p : planners) p.join();
  device().synchronize();
  EXPECT_TRUE(failures.empty()) << failures.front();
  EXPECT_TRUE(bit_equal(download(y, ny), first));
}

}  // namespace
}  // namespace tidepool
