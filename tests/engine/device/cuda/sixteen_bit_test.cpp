// The cuda device's 16-bit kernels (--precision bf16|fp16, takes_16bit):
// convolution (cuDNN in the 16-bit type, f32 accumulation, on a 16-bit copy
// of the weights), batch norm, ReLU, pooling and add (kernels of our own)
// against the cpu device in f32 on the same 16-bit values, and training in
// 16 bits: every offload mode gives base's bits, and bf16's losses follow
// the cpu device's (which computes on f32 copies). A GPU before Ampere has
// no bf16 convolutions; the bf16 cases skip there.
//
// Tolerances: the operands are 16-bit values, so products are exact in
// f32 on both devices; what differs is the order of the sums and the one
// rounding of each result to 16 bits (2^-8 relative for bf16, 2^-11 for
// f16), plus tensor-core accumulation orders. Results get 2^-7 (bf16) or
// 2^-10 (f16) relative of their own size plus 2e-2 (bf16) or 4e-3 (f16)
// absolute; weight gradients, summed over n*oh*ow before their rounding,
// get 4e-2 (bf16) or 8e-3 (f16) absolute. A wrong index is off by O(1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_device.h"
#include "engine/run/trainer.h"
#include "gpu_testing.h"
#include "testing/networks.h"
#include "testing/op_cases.h"
#include "testing/training.h"

namespace tidepool {
namespace {

using testing::close_to_cpu;
using testing::conv_shape;
using testing::GpuTest;
using testing::random_floats;

struct Tolerance {
  double rtol, atol, grad_atol;
};
Tolerance tolerance(DType t) { return t == DType::bf16 ? Tolerance{1.0 / 128, 2e-2, 4e-2} : Tolerance{1.0 / 1024, 4e-3, 8e-3}; }

class GpuSixteenBit : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (!kernels().takes_16bit(GetParam()))
      GTEST_SKIP() << "this GPU has no " << to_string(GetParam()) << " convolutions (compute capability before 8.0)";
  }

  // `values` rounded to the test's type: the 16-bit values, and the f32
  // ones the cpu device computes on.
  std::vector<std::uint16_t> rounded(const std::vector<float>& values, std::vector<float>& widened) {
    std::vector<std::uint16_t> bits(values.size());
    cpu.convert(static_cast<std::int64_t>(values.size()), DType::f32, values.data(), GetParam(), bits.data(), 1.0f);
    widened.resize(values.size());
    cpu.convert(static_cast<std::int64_t>(values.size()), GetParam(), bits.data(), DType::f32, widened.data(), 1.0f);
    return bits;
  }
  std::vector<float> widen(const std::vector<std::uint16_t>& bits) {
    std::vector<float> out(bits.size());
    cpu.convert(static_cast<std::int64_t>(bits.size()), GetParam(), bits.data(), DType::f32, out.data(), 1.0f);
    return out;
  }
  // 16-bit outputs start as NaN (0x7fc0 in bf16, 0x7e00 in f16).
  std::uint16_t* nan16(std::size_t count) {
    return upload(std::vector<std::uint16_t>(count, GetParam() == DType::bf16 ? 0x7fc0 : 0x7e00));
  }
};

INSTANTIATE_TEST_SUITE_P(Gpu, GpuSixteenBit, ::testing::Values(DType::bf16, DType::f16),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST_P(GpuSixteenBit, ConvolutionMatchesTheCpuDeviceOnTheSameValues) {
  const Tolerance tol = tolerance(GetParam());
  for (ConvShape s : {conv_shape(4, 16, 16, 16, 32, 3, 3, 1, 1), conv_shape(8, 64, 8, 8, 64, 3, 3, 1, 1)}) {
    s.bias = true;
    const auto nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto ny = static_cast<std::size_t>(s.n * s.k * s.out_h() * s.out_w());
    std::vector<float> x, dy, w = random_floats(static_cast<std::size_t>(s.weight_numel()), 2);
    const std::vector<std::uint16_t> x16 = rounded(random_floats(nx, 1), x), dy16 = rounded(random_floats(ny, 4), dy);
    std::vector<float> w_rounded;
    rounded(w, w_rounded);  // the cpu device computes with the weights' 16-bit copy, as the gpu does
    const std::vector<float> b = random_floats(static_cast<std::size_t>(s.k), 3);
    std::vector<float> y(ny), dx(nx), dw(w.size()), db(b.size());
    for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
      std::vector<std::byte> ws(cpu.conv_workspace_bytes(s, ConvScheme::p, pass));
      if (pass == ConvPass::forward) cpu.conv_forward(s, ConvScheme::p, x.data(), w_rounded.data(), b.data(), y.data(), ws.data());
      if (pass == ConvPass::backward_data) cpu.conv_backward_data(s, ConvScheme::p, dy.data(), w_rounded.data(), dx.data(), ws.data());
      if (pass == ConvPass::backward_weights)
        cpu.conv_backward_weights(s, ConvScheme::p, x.data(), dy.data(), dw.data(), db.data(), ws.data());
    }

    ConvShape g = s;
    g.dtype = GetParam();
    const float *gw = upload(w), *gb = upload(b);
    const std::uint16_t *gx = upload(x16), *gdy = upload(dy16);
    std::uint16_t *gy = nan16(ny), *gdx = nan16(nx);
    float *gdw = nan_buffer(w.size()), *gdb = nan_buffer(b.size());
    const std::size_t f32_ws = kernels().conv_workspace_bytes(s, ConvScheme::p, ConvPass::forward);
    const std::size_t ws16 = kernels().conv_workspace_bytes(g, ConvScheme::p, ConvPass::forward);
    EXPECT_GE(ws16, static_cast<std::size_t>(s.weight_numel()) * 2) << "the weights' 16-bit copy is in the workspace";
    (void)f32_ws;
    void* wsf = alloc_bytes(ws16);
    void* wsd = alloc_bytes(kernels().conv_workspace_bytes(g, ConvScheme::p, ConvPass::backward_data));
    void* wsw = alloc_bytes(kernels().conv_workspace_bytes(g, ConvScheme::p, ConvPass::backward_weights));
    run([&](Kernels& k) {
      k.conv_forward(g, ConvScheme::p, gx, gw, gb, gy, wsf);
      k.conv_backward_data(g, ConvScheme::p, gdy, gw, gdx, wsd);
      k.conv_backward_weights(g, ConvScheme::p, gx, gdy, gdw, gdb, wsw);
    });
    EXPECT_TRUE(close_to_cpu(widen(download(gy, ny)), y, tol.rtol, tol.atol)) << "y";
    EXPECT_TRUE(close_to_cpu(widen(download(gdx, nx)), dx, tol.rtol, tol.atol)) << "dx";
    EXPECT_TRUE(close_to_cpu(download(gdw, dw.size()), dw, tol.rtol, tol.grad_atol)) << "dw (via its 16-bit copy)";
    EXPECT_TRUE(close_to_cpu(download(gdb, db.size()), db, 1e-4, 1e-3)) << "db is summed in f32";
    reset_arena();
  }
}

TEST_P(GpuSixteenBit, BatchNormMatchesTheCpuDeviceOnTheSameValues) {
  const Tolerance tol = tolerance(GetParam());
  const BatchNormShape s{8, 32, 8, 8};
  const auto count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
  const auto c = static_cast<std::size_t>(s.c);
  std::vector<float> x, dy;
  const std::vector<std::uint16_t> x16 = rounded(random_floats(count, 11, -2.0f, 5.0f), x);
  const std::vector<std::uint16_t> dy16 = rounded(random_floats(count, 16), dy);
  const std::vector<float> gamma = random_floats(c, 12, 0.5f, 1.5f), beta = random_floats(c, 13);
  std::vector<float> rm = random_floats(c, 14), rv = random_floats(c, 15, 0.5f, 2.0f), cpu_rm = rm, cpu_rv = rv;
  std::vector<float> y(count), mean(c), var(c), dx(count), dgamma(c), dbeta(c), y_infer(count);
  cpu.batchnorm_forward_train(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(),
                              cpu_rm.data(), cpu_rv.data(), nullptr);
  cpu.batchnorm_backward(s, x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(), dgamma.data(),
                         dbeta.data(), nullptr);
  cpu.batchnorm_forward_infer(s, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(), y_infer.data());

  BatchNormShape g = s;
  g.dtype = GetParam();
  const std::uint16_t *gx = upload(x16), *gdy = upload(dy16);
  const float *gg = upload(gamma), *gb = upload(beta), *grm0 = upload(rm), *grv0 = upload(rv);
  float *grm = upload(rm), *grv = upload(rv), *gmean = nan_buffer(c), *gvar = nan_buffer(c);
  float *gdg = nan_buffer(c), *gdb = nan_buffer(c);
  std::uint16_t *gy = nan16(count), *gdx = nan16(count), *gyi = nan16(count);
  run([&](Kernels& k) {
    k.batchnorm_forward_train(g, gx, gg, gb, gy, gmean, gvar, grm, grv, nullptr);
    k.batchnorm_backward(g, gx, gdy, gg, gmean, gvar, gdx, gdg, gdb, nullptr);
    k.batchnorm_forward_infer(g, gx, gg, gb, grm0, grv0, gyi);
  });
  EXPECT_TRUE(close_to_cpu(download(gmean, c), mean, 1e-4, 1e-5)) << "statistics in double over 16-bit values";
  EXPECT_TRUE(close_to_cpu(download(gvar, c), var, 1e-4, 1e-5));
  EXPECT_TRUE(close_to_cpu(download(grm, c), cpu_rm, 1e-4, 1e-5));
  EXPECT_TRUE(close_to_cpu(download(grv, c), cpu_rv, 1e-4, 1e-5));
  EXPECT_TRUE(close_to_cpu(widen(download(gy, count)), y, tol.rtol, tol.atol)) << "y";
  EXPECT_TRUE(close_to_cpu(widen(download(gyi, count)), y_infer, tol.rtol, tol.atol)) << "evaluation's y";
  EXPECT_TRUE(close_to_cpu(widen(download(gdx, count)), dx, tol.rtol, tol.atol)) << "dx";
  EXPECT_TRUE(close_to_cpu(download(gdg, c), dgamma, 1e-4, 1e-3));
  EXPECT_TRUE(close_to_cpu(download(gdb, c), dbeta, 1e-4, 1e-3));
}

// Max pooling picks one of its 16-bit inputs, so it is exact; average
// pooling and both backward passes sum in f32 and round once.
TEST_P(GpuSixteenBit, PoolingMatchesTheCpuDeviceOnTheSameValues) {
  const Tolerance tol = tolerance(GetParam());
  for (PoolKind kind : {PoolKind::max, PoolKind::avg}) {
    const PoolShape s = testing::pool_shape(kind, 4, 16, 16, 16, 3, 2, 1);
    const auto nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto ny = static_cast<std::size_t>(s.n * s.c * s.out_h() * s.out_w());
    const std::vector<std::uint16_t> x16 = testing::distinct_16bit(nx, GetParam() == DType::bf16 ? 0x3000 : 0x1000);
    const std::vector<float> x = widen(x16);
    std::vector<float> dy;
    const std::vector<std::uint16_t> dy16 = rounded(random_floats(ny, 42), dy);
    const testing::PoolPasses f32 = testing::f32_pool_passes(cpu, s, x, dy);
    const std::vector<float>&y = f32.y, &dx = f32.dx;

    PoolShape g = s;
    g.dtype = GetParam();
    const std::uint16_t *gx = upload(x16), *gdy = upload(dy16);
    std::uint16_t *gy = nan16(ny), *gdx = nan16(nx);
    void* saved = alloc_bytes(kernels().pool_saved_bytes(g));
    run([&](Kernels& k) {
      k.pool_forward(g, gx, gy, saved);
      k.pool_backward(g, gx, gdy, saved, gdx);
    });
    const std::vector<float> gpu_y = widen(download(gy, ny));
    if (kind == PoolKind::max)
      EXPECT_TRUE(testing::bit_equal(gpu_y, y)) << "a maximum is one of the inputs";
    else
      EXPECT_TRUE(close_to_cpu(gpu_y, y, tol.rtol, tol.atol)) << "avg y";
    EXPECT_TRUE(close_to_cpu(widen(download(gdx, nx)), dx, tol.rtol, tol.atol)) << "dx";
    reset_arena();
  }
}

// The residual add sums in f32 and rounds once, as the cpu device's f32
// add followed by its rounding does; its backward copies 16-bit values
// with a conversion to their own type. Both exact.
TEST_P(GpuSixteenBit, AddAndItsGradientCopyAreExact) {
  constexpr std::size_t kCount = 100003;
  std::vector<float> a, b;
  const std::vector<std::uint16_t> a16 = rounded(random_floats(kCount, 51), a), b16 = rounded(random_floats(kCount, 52), b);
  std::vector<float> sum(kCount);
  cpu.add_forward(kCount, DType::f32, a.data(), b.data(), sum.data());
  std::vector<float> expected;
  rounded(sum, expected);
  const std::uint16_t *ga = upload(a16), *gb = upload(b16);
  std::uint16_t *gy = nan16(kCount), *gcopy = nan16(kCount);
  run([&](Kernels& k) {
    k.add_forward(kCount, GetParam(), ga, gb, gy);
    k.convert(kCount, GetParam(), ga, GetParam(), gcopy, 1.0f);
  });
  EXPECT_TRUE(testing::bit_equal(widen(download(gy, kCount)), expected));
  EXPECT_EQ(download(gcopy, kCount), a16);
}

TEST_P(GpuSixteenBit, ReluIsExact) {
  constexpr std::size_t kCount = 100003;
  std::vector<float> x, dy;
  const std::vector<std::uint16_t> x16 = rounded(random_floats(kCount, 31), x), dy16 = rounded(random_floats(kCount, 32), dy);
  const std::uint16_t *gx = upload(x16), *gdy = upload(dy16);
  std::uint16_t *gy = nan16(kCount), *gdx = nan16(kCount);
  run([&](Kernels& k) {
    k.relu_forward(kCount, GetParam(), gx, gy);
    k.relu_backward(kCount, GetParam(), gy, gdy, gdx);
  });
  const std::vector<float> y = widen(download(gy, kCount)), dx = widen(download(gdx, kCount));
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f) << i;
    ASSERT_EQ(dx[i], x[i] > 0 ? dy[i] : 0.0f) << i;
  }
}

Precision precision_of(DType t) { return t == DType::bf16 ? Precision::bf16 : Precision::fp16; }

TEST_P(GpuSixteenBit, EveryOffloadModeGivesBaseParametersBitForBit) {
  const Network net = testing::residual_net();
  const TrainerOptions base_options{.batch = 16, .memory = {.precision = precision_of(GetParam())}, .seed = 4};
  auto trained = [&](const TrainerOptions& o) {
    CudaDevice device;
    return testing::train_on(device, net, o, 3).checksum;
  };
  const std::uint64_t base = trained(base_options);
  for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv})
    for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
      TrainerOptions o = base_options;
      o.memory.mode = mode, o.memory.transfer = transfer;
      EXPECT_EQ(trained(o), base) << to_string(mode) << " " << to_string(transfer);
    }
  TrainerOptions compressed = base_options;
  compressed.memory.mode = OffloadMode::all, compressed.memory.compress = true;
  EXPECT_EQ(trained(compressed), base) << "compressed";
}

// The cuda device computes its convolutions, batch norms and ReLUs on the
// 16-bit values, the cpu device on f32 copies of them: the same arithmetic
// up to the order of the sums and where results are rounded, so four steps'
// losses agree within a few 16-bit steps. fp16 starts both at a loss scale
// (2^8) under which neither overflows (fp16's weight gradients are 16-bit
// on the gpu and f32 on the cpu device, so at PyTorch's 2^16 their
// overflows, and with them the skipped steps, may differ): no step is
// skipped on either, so every update is compared.
TEST_P(GpuSixteenBit, LossesFollowTheCpuDevicesInTheSamePrecision) {
  const Network net = testing::residual_net();
  const TrainerOptions options{.batch = 16, .memory = {.precision = precision_of(GetParam())}, .seed = 9};
  auto losses = [&](Device& device, std::int64_t& skipped) {
    Trainer trainer(device, net, options);
    if (GetParam() == DType::f16) trainer.set_loss_scaler({.scale = 256.0f});
    std::vector<float> out;
    for (int i = 0; i < 4; ++i) {
      const testing::Batch b = testing::random_batch(options.batch, 50 + static_cast<unsigned>(i));
      out.push_back(trainer.train_step(b.images.data(), b.labels.data()).loss);
    }
    skipped = trainer.loss_scaler().state().skipped_steps;
    return out;
  };
  std::int64_t gpu_skipped = -1, cpu_skipped = -1;
  CudaDevice gpu;
  const std::vector<float> on_gpu = losses(gpu, gpu_skipped);
  CpuDevice cpu_device;
  const std::vector<float> on_cpu = losses(cpu_device, cpu_skipped);
  EXPECT_EQ(gpu_skipped, 0);
  EXPECT_EQ(cpu_skipped, 0);
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  for (std::size_t i = 0; i < on_gpu.size(); ++i)
    EXPECT_NEAR(on_gpu[i], on_cpu[i], 3e-2 * std::fabs(on_cpu[i]) + 1e-3) << "iteration " << i;
}

}  // namespace
}  // namespace tidepool
