// Training on a real dataset: resnet20 on Fashion-MNIST (Debian's
// dataset-fashion-mnist) to the accuracy README.md reports. About 80
// minutes on the shared 2-core development machine: run with
// `ctest --test-dir build -L long -R FashionMnist`.
#include <gtest/gtest.h>

#include <filesystem>

#include "app/batch_run.h"
#include "datasets/fashion_mnist.h"
#include "testing/temp_dir.h"

namespace tidepool::app {
namespace {

// The README's run: `tidepool --batch --model resnet20 --dataset
// fashion-mnist --epochs 5 --seed 1` (batch 128, lr 0.1 with the cosine
// schedule, momentum 0.9, weight decay 5e-4: the defaults).
TEST(FashionMnistTraining, Resnet20ReachesNinetyTwoPercentInFiveEpochs) {
  if (!std::filesystem::exists(std::filesystem::path(datasets::FashionMnistDataset::kPackageFolder) /
                               "train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  RunSettings o;
  o.model = "resnet20";
  o.dataset = "fashion-mnist";  // the package's folder by default
  o.epochs = 5;
  o.seed = 1;
  o.progress = false;
  const testing::TempDir dir("long_fashion");
  o.out = (dir / "run").string();
  const auto summary = run_batch(o, std::nullopt);
  EXPECT_EQ(summary["iterations"].get<std::int64_t>(), 5 * (60000 / 128));
  EXPECT_GE(summary["final_test_accuracy"].get<double>(), 0.92);
}

}  // namespace
}  // namespace tidepool::app
