// The model zoo: every registered model builds and infers shapes for each of
// its input kinds, parameter counts match the published figures, and the
// registry reports bad names clearly. Everything here is shape inference and
// parameter bookkeeping: no kernel runs, so the tests are fast even for
// vgg191 at 224x224.
#include "models/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/resnet.h"
#include "models/vgg.h"

namespace tidepool::models {
namespace {

struct Count {
  const char* name;
  std::int64_t classes;
  std::int64_t parameters;
};

// torchvision's published parameter counts (models.<name>().parameters(),
// which, like Network::parameter_count, leaves out batchnorm running
// statistics). vgg116/vgg191 have no published count: they are vgg16
// (138,357,544) plus 20 or 35 extra 3x3 convs with bias per group, each
// extra conv in a group of c channels adding 9c^2 + c; over the five groups
// (64, 128, 256, 512, 512) that is 5,494,208 per round, so
// vgg116 = 138,357,544 + 20 * 5,494,208 = 248,241,704 and
// vgg191 = 138,357,544 + 35 * 5,494,208 = 330,654,824.
// vdnn_constructed (see models/vdnn.h): 535,107 in the convs (conv1 1,792;
// five times 1x1 4,160 + 5x5 102,464; conv3 195) plus Linear(3, classes).
const Count kImageNetCounts[] = {
    {"alexnet", 1000, 61'100'840},    {"vgg11", 1000, 132'863'336},
    {"vgg13", 1000, 133'047'848},     {"vgg16", 1000, 138'357'544},
    {"vgg19", 1000, 143'667'240},     {"vgg116", 1000, 248'241'704},
    {"vgg191", 1000, 330'654'824},    {"resnet18", 1000, 11'689'512},
    {"resnet34", 1000, 21'797'672},   {"resnet50", 1000, 25'557'032},
    {"resnet101", 1000, 44'549'160},  {"resnet152", 1000, 60'192'808},
    {"mobilenet", 1000, 4'231'976},   {"vdnn_constructed", 1000, 539'107},
    {"vdnn_constructed", 2, 535'115},  // Table III's own two outputs
};

// CIFAR counts, computed by hand from the layer lists (and cross-checked
// with an independent per-layer tally). A change of classes from 10 to 100
// adds 90 * (features + 1) to the classifier.
//  - resnet20/32/44/56/110, He et al. with option B projections: the
//    option-A figures (269,722 for resnet20, ...) plus 2,752 for the two
//    1x1 conv + batchnorm projections (16->32: 512 + 64, 32->64: 2,048 + 128).
//  - resnet18..152: kuangliu/pytorch-cifar's published figures (its convs
//    have no bias either): resnet18 11,173,962 = torchvision's 11,689,512 -
//    the 7x7 stem (9,408) + the 3x3 stem (1,728) - fc(512, 1000) (513,000) +
//    fc(512, 10) (5,130).
//  - vgg*: kuangliu's VGG-BN (vgg16 14,728,266) minus the conv biases it keeps
//    in front of batchnorm (vgg16: 4,224 conv channels), so 14,724,042.
//  - mobilenet: ImageNet's 4,231,976 - fc(1024, 1000) + fc(1024, 10); the
//    stem stride does not change any weight. Equals kuangliu's 3,217,226.
//  - alexnet (our adaptation, models/alexnet.h): convs 2,448,192 + fc6
//    Linear(4096, 4096) 16,781,312 + fc7 16,781,312 + fc8 40,970.
//  - vdnn_constructed: the ImageNet structure, so 535,107 + 4 * classes.
const Count kCifarCounts[] = {
    {"resnet20", 10, 272'474},         {"resnet20", 100, 278'324},
    {"resnet32", 10, 466'906},         {"resnet44", 10, 661'338},
    {"resnet56", 10, 855'770},         {"resnet56", 100, 861'620},
    {"resnet110", 10, 1'730'714},      {"resnet18", 10, 11'173'962},
    {"resnet18", 100, 11'220'132},     {"resnet34", 10, 21'282'122},
    {"resnet50", 10, 23'520'842},      {"resnet50", 100, 23'705'252},
    {"resnet101", 10, 42'512'970},     {"resnet152", 10, 58'156'618},
    {"vgg11", 10, 9'228'362},          {"vgg13", 10, 9'413'066},
    {"vgg16", 10, 14'724'042},         {"vgg16", 100, 14'770'212},
    {"vgg19", 10, 20'035'018},         {"mobilenet", 10, 3'217'226},
    {"mobilenet", 100, 3'309'476},     {"alexnet", 10, 36'051'786},
    {"alexnet", 100, 36'420'516},      {"vdnn_constructed", 10, 535'147},
};

int count_kind(const Network& net, std::string_view kind) {
  return static_cast<int>(std::count_if(net.nodes().begin(), net.nodes().end(),
                                        [&](const Node& n) { return n.layer->kind() == kind; }));
}

Shape output_of(const Network& net, const NetworkShapes& s, const std::string& layer) {
  return s.node_outputs[net.producer(layer)];
}

std::vector<std::string> param_suffixes(const Network& net, const NetworkShapes& s, int node) {
  std::vector<std::string> out;
  for (const auto& p : net.nodes()[node].layer->params(s.node_inputs[node]))
    out.push_back(p.suffix);
  return out;
}

TEST(ModelRegistry, ListsTheZoo) {
  const std::vector<std::string> names = model_names();
  for (const char* expected :
       {"resnet20", "resnet32", "resnet56", "resnet110", "resnet18", "resnet34", "resnet50",
        "resnet101", "resnet152", "vgg11", "vgg13", "vgg16", "vgg19", "vgg116", "vgg191",
        "mobilenet", "alexnet", "vdnn_constructed"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());

  // CIFAR-only and ImageNet-only families.
  EXPECT_TRUE(supports("resnet20", InputKind::cifar));
  EXPECT_FALSE(supports("resnet20", InputKind::imagenet));
  EXPECT_TRUE(supports("vgg116", InputKind::imagenet));
  EXPECT_FALSE(supports("vgg191", InputKind::cifar));
  EXPECT_TRUE(supports("vdnn_constructed", InputKind::cifar));
  EXPECT_TRUE(supports("vdnn_constructed", InputKind::imagenet));
  EXPECT_FALSE(supports("lenet", InputKind::cifar));
  // vgg116/vgg191 have no CIFAR variant; the five 6n+2 ResNets no ImageNet one.
  EXPECT_EQ(model_names(InputKind::cifar).size(), names.size() - 2);
  EXPECT_EQ(model_names(InputKind::imagenet).size(), names.size() - 5);
}

TEST(ModelRegistry, EveryModelBuildsAndInfersForItsInputKinds) {
  for (InputKind input : {InputKind::cifar, InputKind::imagenet}) {
    const Shape image = image_shape(input);
    for (std::int64_t classes : input == InputKind::cifar ? std::vector<std::int64_t>{10, 100}
                                                          : std::vector<std::int64_t>{1000}) {
      for (const std::string& name : model_names(input)) {
        SCOPED_TRACE(name + " on " + std::string(to_string(input)) + ", " +
                     std::to_string(classes) + " classes");
        Network net = make_model(name, input, classes);
        EXPECT_EQ(net.name(), name);
        EXPECT_EQ(net.image_shape(), image);
        EXPECT_EQ(net.classes(), classes);

        NetworkShapes s;
        ASSERT_NO_THROW(s = net.shapes(2));
        const int loss = net.loss_node();
        ASSERT_EQ(loss, static_cast<int>(net.nodes().size()) - 1);
        const Node& last = net.nodes()[loss];
        EXPECT_EQ(last.layer->kind(), "softmax_xent");
        ASSERT_EQ(last.inputs.size(), 2u);
        EXPECT_EQ(last.inputs[1], kLabelsTensor);
        // The logits: one row per image, one column per class.
        EXPECT_EQ(s.node_inputs[loss][0], (Shape{2, classes}));
        EXPECT_GT(net.parameter_count(), 0);
      }
    }
  }
}

TEST(ModelRegistry, ImageNetParameterCountsMatchTorchvision) {
  for (const Count& c : kImageNetCounts) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(make_model(c.name, InputKind::imagenet, c.classes).parameter_count(), c.parameters);
  }
}

TEST(ModelRegistry, CifarParameterCounts) {
  for (const Count& c : kCifarCounts) {
    SCOPED_TRACE(std::string(c.name) + " with " + std::to_string(c.classes) + " classes");
    EXPECT_EQ(make_model(c.name, InputKind::cifar, c.classes).parameter_count(), c.parameters);
  }
}

// Convs followed by batchnorm carry no bias (batchnorm's beta is one); convs
// without batchnorm (plain VGG, AlexNet, vdnn_constructed) keep it. Every
// linear layer has a bias, and a flatten comes before the first of them.
TEST(ModelRegistry, BiasesAndFlattenFollowTheConventions) {
  for (InputKind input : {InputKind::cifar, InputKind::imagenet}) {
    for (const std::string& name : model_names(input)) {
      SCOPED_TRACE(name + " on " + std::string(to_string(input)));
      const Network net = make_model(name, input, 10);
      const NetworkShapes s = net.shapes(1);
      bool seen_flatten = false, seen_linear = false;
      for (int i = 0; i < static_cast<int>(net.nodes().size()); ++i) {
        const Layer& layer = *net.nodes()[i].layer;
        const std::vector<std::string> params = param_suffixes(net, s, i);
        const bool has_bias = std::find(params.begin(), params.end(), "bias") != params.end();
        if (layer.kind() == "flatten") seen_flatten = true;
        if (layer.kind() == "linear") {
          EXPECT_TRUE(seen_linear || seen_flatten) << layer.name() << " before any flatten";
          seen_linear = true;
          EXPECT_TRUE(has_bias) << layer.name();
        }
        if (layer.kind() != "conv2d" && layer.kind() != "depthwise_conv") continue;
        bool feeds_batchnorm = false;
        for (const Node& n : net.nodes())
          if (n.layer->kind() == "batchnorm" && n.inputs[0] == layer.name()) feeds_batchnorm = true;
        EXPECT_EQ(has_bias, !feeds_batchnorm) << layer.name();
      }
      EXPECT_TRUE(seen_linear);
    }
  }
}

TEST(ModelRegistry, UnknownNamesAndKindsThrow) {
  try {
    make_model("resnet1001", InputKind::cifar, 10);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("resnet1001"), std::string::npos) << what;
    for (const std::string& name : model_names())
      EXPECT_NE(what.find(name), std::string::npos) << name << " missing from: " << what;
  }
  EXPECT_THROW(make_model("resnet20", InputKind::imagenet, 1000), std::invalid_argument);
  EXPECT_THROW(make_model("vgg116", InputKind::cifar, 10), std::invalid_argument);
  EXPECT_THROW(make_model("resnet18", InputKind::cifar, 0), std::invalid_argument);
  EXPECT_THROW(resnet(26, InputKind::imagenet, 1000), std::invalid_argument);
  EXPECT_THROW(cifar_resnet(21, 10), std::invalid_argument);
  EXPECT_THROW(vgg(15, InputKind::cifar, 10), std::invalid_argument);
}

TEST(ModelRegistry, InputKindsRoundTrip) {
  for (InputKind input : {InputKind::cifar, InputKind::imagenet})
    EXPECT_EQ(parse_input_kind(to_string(input)), input);
  EXPECT_EQ(image_shape(InputKind::cifar), (Shape{3, 32, 32}));
  EXPECT_EQ(image_shape(InputKind::imagenet), (Shape{3, 224, 224}));
  try {
    parse_input_kind("mnist");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("mnist"), std::string::npos);
    EXPECT_NE(what.find("cifar"), std::string::npos);
    EXPECT_NE(what.find("imagenet"), std::string::npos);
  }
}

TEST(ResNets, CifarResNetsAreSixNPlusTwoWithTwoProjections) {
  for (int depth : {20, 32, 44, 56, 110}) {
    SCOPED_TRACE(depth);
    const Network net = cifar_resnet(depth, 10);
    // depth = convs on the main path + the classifier; two 1x1 projections.
    EXPECT_EQ(count_kind(net, "conv2d"), depth - 1 + 2);
    EXPECT_EQ(count_kind(net, "linear"), 1);
    EXPECT_EQ(count_kind(net, "add"), (depth - 2) / 2);
    const NetworkShapes s = net.shapes(1);
    const std::string last = "layer3." + std::to_string((depth - 2) / 6 - 1) + ".relu2";
    EXPECT_EQ(output_of(net, s, last), (Shape{1, 64, 8, 8}));
    EXPECT_EQ(output_of(net, s, "layer2.0.downsample.0"), (Shape{1, 32, 16, 16}));
  }
}

TEST(ResNets, StemsAndStagesPerInputKind) {
  const Network imagenet = resnet(50, InputKind::imagenet, 1000);
  const NetworkShapes si = imagenet.shapes(1);
  EXPECT_EQ(output_of(imagenet, si, "maxpool"), (Shape{1, 64, 56, 56}));
  EXPECT_EQ(output_of(imagenet, si, "layer1.0.downsample.1"), (Shape{1, 256, 56, 56}));
  EXPECT_EQ(output_of(imagenet, si, "layer4.2.relu3"), (Shape{1, 2048, 7, 7}));
  // Every stage's first bottleneck projects (layer1 too: 64 -> 256 channels).
  EXPECT_EQ(count_kind(imagenet, "conv2d"), 1 + 3 * 16 + 4);

  const Network cifar = resnet(18, InputKind::cifar, 10);
  const NetworkShapes sc = cifar.shapes(1);
  EXPECT_THROW(cifar.producer("maxpool"), std::invalid_argument);
  EXPECT_EQ(output_of(cifar, sc, "layer1.1.relu2"), (Shape{1, 64, 32, 32}));
  EXPECT_EQ(output_of(cifar, sc, "layer4.1.relu2"), (Shape{1, 512, 4, 4}));
  // layer1 of a basic-block ResNet keeps 64 channels at stride 1: no projection.
  EXPECT_THROW(cifar.producer("layer1.0.downsample.0"), std::invalid_argument);
  EXPECT_EQ(count_kind(cifar, "conv2d"), 1 + 16 + 3);

  const Network deep = resnet(152, InputKind::imagenet, 1000);
  EXPECT_EQ(count_kind(deep, "conv2d"), 1 + 3 * 50 + 4);
  EXPECT_NO_THROW(deep.producer("layer3.35.conv3"));
}

TEST(Vggs, DeepVggsAddConvsToEveryGroup) {
  const Network v116 = make_model("vgg116", InputKind::imagenet, 1000);
  const Network v191 = make_model("vgg191", InputKind::imagenet, 1000);
  EXPECT_EQ(count_kind(v116, "conv2d") + count_kind(v116, "linear"), 116);
  EXPECT_EQ(count_kind(v191, "conv2d") + count_kind(v191, "linear"), 191);
  EXPECT_EQ(count_kind(v116, "maxpool"), 5);
  const NetworkShapes s = v116.shapes(1);
  // Extras keep their group's channels and sit before the group's pool.
  EXPECT_EQ(output_of(v116, s, "conv1_extra20"), (Shape{1, 64, 224, 224}));
  EXPECT_EQ(output_of(v116, s, "conv3_extra1"), (Shape{1, 256, 56, 56}));
  EXPECT_EQ(output_of(v116, s, "conv5_extra20"), (Shape{1, 512, 14, 14}));
  EXPECT_EQ(v116.nodes()[v116.producer("pool1")].inputs[0], "relu1_extra20");
  EXPECT_THROW(v116.producer("conv1_extra21"), std::invalid_argument);
  EXPECT_NO_THROW(v191.producer("conv4_extra35"));
}

TEST(Vggs, ImageNetAndCifarShapes) {
  const Network in = vgg(16, InputKind::imagenet, 1000);
  const NetworkShapes si = in.shapes(1);
  EXPECT_EQ(output_of(in, si, "pool5"), (Shape{1, 512, 7, 7}));
  EXPECT_EQ(output_of(in, si, "flatten"), (Shape{1, 25088}));
  EXPECT_EQ(count_kind(in, "batchnorm"), 0);
  EXPECT_EQ(count_kind(in, "dropout"), 2);

  const Network cifar = vgg(11, InputKind::cifar, 100);
  const NetworkShapes sc = cifar.shapes(1);
  EXPECT_EQ(output_of(cifar, sc, "pool5"), (Shape{1, 512, 1, 1}));
  EXPECT_EQ(count_kind(cifar, "batchnorm"), 8);
  EXPECT_EQ(count_kind(cifar, "linear"), 1);
}

TEST(OtherModels, MobileNetAlexNetAndTheConstructedNetwork) {
  for (InputKind input : {InputKind::cifar, InputKind::imagenet}) {
    const Network m = make_model("mobilenet", input, 10);
    const NetworkShapes s = m.shapes(1);
    EXPECT_EQ(count_kind(m, "depthwise_conv"), 13);
    EXPECT_EQ(count_kind(m, "conv2d"), 14);
    EXPECT_EQ(output_of(m, s, "layers.12.pw_relu"),
              input == InputKind::cifar ? (Shape{1, 1024, 2, 2}) : (Shape{1, 1024, 7, 7}));
  }

  const Network a_in = make_model("alexnet", InputKind::imagenet, 1000);
  EXPECT_EQ(output_of(a_in, a_in.shapes(1), "pool5"), (Shape{1, 256, 6, 6}));
  const Network a_c = make_model("alexnet", InputKind::cifar, 10);
  EXPECT_EQ(output_of(a_c, a_c.shapes(1), "pool5"), (Shape{1, 256, 4, 4}));

  // Table III: every conv keeps the image size, the max-pool covers it all.
  const Network v = make_model("vdnn_constructed", InputKind::imagenet, 2);
  const NetworkShapes sv = v.shapes(1);
  EXPECT_EQ(count_kind(v, "conv2d"), 12);
  EXPECT_EQ(output_of(v, sv, "conv2.4.conv5x5"), (Shape{1, 64, 224, 224}));
  EXPECT_EQ(output_of(v, sv, "pool1"), (Shape{1, 64, 1, 1}));
  EXPECT_EQ(output_of(v, sv, "conv3"), (Shape{1, 3, 1, 1}));
  EXPECT_EQ(output_of(v, sv, "fc1"), (Shape{1, 2}));
  const Network vc = make_model("vdnn_constructed", InputKind::cifar, 10);
  EXPECT_EQ(output_of(vc, vc.shapes(1), "conv2.0.conv1x1"), (Shape{1, 64, 32, 32}));
}

}  // namespace
}  // namespace tidepool::models
