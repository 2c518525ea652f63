// Convolutional and dense models of the zoo: VGG-16, ResNet-50, Wide-ResNet (Alpa's
// suite), Inception-v3 and the MLP, as compile-time model types.
//
// Wide-ResNet follows Alpa's definition: a bottleneck block is conv1x1 Cin -> F,
// conv3x3 F -> F * width (stride on this conv), conv1x1 F * width -> 4F, each
// followed by batch norm (and ReLU but the last), plus a projection shortcut
// (conv1x1 + bn) in the first block of each stage; F = base * 2^stage. ResNet-50 is
// the same with base 64 and width 1. Inception-v3 is torchvision's without the
// auxiliary head. All inputs are [b, 3, y, x] images; classifiers end with a
// 1000-way softmax cross-entropy.
#pragma once
#include "../model/model.hpp"

namespace tensoropt::models {

/// An image batch [b, 3, Size, Size].
template <index_t Batch, index_t Size, index_t Channels = 3>
using image_input = shape<axis<"b", Batch>, axis<"c", Channels>, axis<"y", Size>, axis<"x", Size>>;

/// conv + batch norm + ReLU (Inception's BasicConv2d), rectangular kernel.
template <index_t Cin, index_t Cout, index_t KH, index_t KW = KH, index_t Stride = 1, index_t PadH = 0,
          index_t PadW = PadH>
using conv_bn_relu = seq<conv2d_rect<Cin, Cout, KH, KW, Stride, PadH, PadW>, batch_norm<Cout>, relu>;

// --------------------------------------------------------------------------- ResNet

/// The main path of a (wide) bottleneck block.
template <index_t Cin, index_t F, index_t Width, index_t Stride>
using bottleneck_path =
    seq<named<"conv1", conv2d<Cin, F, 1>>, named<"bn1", batch_norm<F>>, named<"relu1", relu>,
        named<"conv2", conv2d<F, F * Width, 3, Stride, 1>>, named<"bn2", batch_norm<F * Width>>, named<"relu2", relu>,
        named<"conv3", conv2d<F * Width, 4 * F, 1>>, named<"bn3", batch_norm<4 * F>>>;

/// First block of a stage: projection shortcut ("main.*", "shortcut.*", "add", "relu").
template <index_t Cin, index_t F, index_t Width, index_t Stride>
using bottleneck_project =
    seq<branches<merge::add, named<"main", bottleneck_path<Cin, F, Width, Stride>>,
                 named<"shortcut", seq<named<"conv", conv2d<Cin, 4 * F, 1, Stride>>, named<"bn", batch_norm<4 * F>>>>>,
        named<"relu", relu>>;

/// Identity block ("conv1" ... "bn3", "add", "relu").
template <index_t F, index_t Width>
using bottleneck_identity = seq<residual<bottleneck_path<4 * F, F, Width, 1>>, named<"relu", relu>>;

/// A stage of Blocks bottlenecks: "<stage>.0.*" then "<stage>.rest.<i>.*".
template <index_t Cin, index_t F, index_t Width, index_t Stride, index_t Blocks>
using resnet_stage = seq<named<"0", bottleneck_project<Cin, F, Width, Stride>>,
                         named<"rest", repeat<bottleneck_identity<F, Width>, Blocks - 1>>>;

/// Blocks per stage for ResNet depth 50, 101, 152.
constexpr std::array<index_t, 4> resnet_stages(index_t depth) {
  if (depth == 101) return {3, 4, 23, 3};
  if (depth == 152) return {3, 8, 36, 3};
  return {3, 4, 6, 3};
}

/// (Wide) ResNet of depth 50, 101 or 152 on [b, 3, Size, Size], base channels Base,
/// width factor Width, 1000 classes.
template <index_t Depth, index_t Base, index_t Width, index_t Batch, fixed_string Name = "wide_resnet",
          index_t Size = 224>
struct wide_resnet
    : model<Name, image_input<Batch, Size>,
            seq<named<"stem", seq<named<"conv", conv2d<3, Base, 7, 2, 3>>, named<"bn", batch_norm<Base>>,
                                  named<"relu", relu>, named<"pool", max_pool<3, 2, 1>>>>,
                named<"stage1", resnet_stage<Base, Base, Width, 1, resnet_stages(Depth)[0]>>,
                named<"stage2", resnet_stage<4 * Base, 2 * Base, Width, 2, resnet_stages(Depth)[1]>>,
                named<"stage3", resnet_stage<8 * Base, 4 * Base, Width, 2, resnet_stages(Depth)[2]>>,
                named<"stage4", resnet_stage<16 * Base, 8 * Base, Width, 2, resnet_stages(Depth)[3]>>,
                named<"pool", global_avg_pool>, named<"fc", linear<32 * Base, 1000, "classes">>,
                named<"loss", softmax_cross_entropy<1000>>>> {
  static_assert(Depth == 50 || Depth == 101 || Depth == 152,
                "tensoropt::models::wide_resnet<Depth, ...>: Depth must be 50, 101 or 152");
};

// --------------------------------------------------------------------------- VGG

template <index_t Cin, index_t Cout, index_t Convs>
using vgg_block = seq<conv2d<Cin, Cout, 3, 1, 1, true>, relu,
                      std::conditional_t<(Convs >= 2), seq<conv2d<Cout, Cout, 3, 1, 1, true>, relu>, relu>,
                      std::conditional_t<(Convs >= 3), seq<conv2d<Cout, Cout, 3, 1, 1, true>, relu>, relu>,
                      max_pool<2>>;

/// VGG-16 on [b, 3, 224, 224]: 13 convs, 3 fully connected layers, dropout 0.5.
template <index_t Batch, fixed_string Name = "vgg16">
struct vgg16_model
    : model<Name, image_input<Batch, 224>,
            seq<named<"block1", vgg_block<3, 64, 2>>, named<"block2", vgg_block<64, 128, 2>>,
                named<"block3", vgg_block<128, 256, 3>>, named<"block4", vgg_block<256, 512, 3>>,
                named<"block5", vgg_block<512, 512, 3>>,
                named<"classifier", seq<named<"fc1", linear<512 * 7 * 7, 4096>>, named<"relu1", relu>,
                                        named<"drop1", dropout<0.5>>, named<"fc2", linear<4096, 4096>>,
                                        named<"relu2", relu>, named<"drop2", dropout<0.5>>,
                                        named<"fc3", linear<4096, 1000, "classes">>>>,
                named<"loss", softmax_cross_entropy<1000>>>> {};

// --------------------------------------------------------------------------- Inception

template <index_t Cin, index_t PoolFeatures>
using inception_a = branches<merge::concat<"c">, conv_bn_relu<Cin, 64, 1>,
                             seq<conv_bn_relu<Cin, 48, 1>, conv_bn_relu<48, 64, 5, 5, 1, 2>>,
                             seq<conv_bn_relu<Cin, 64, 1>, conv_bn_relu<64, 96, 3, 3, 1, 1>,
                                 conv_bn_relu<96, 96, 3, 3, 1, 1>>,
                             seq<avg_pool<3, 1, 1>, conv_bn_relu<Cin, PoolFeatures, 1>>>;
template <index_t Cin>
using inception_b = branches<merge::concat<"c">, conv_bn_relu<Cin, 384, 3, 3, 2>,
                             seq<conv_bn_relu<Cin, 64, 1>, conv_bn_relu<64, 96, 3, 3, 1, 1>,
                                 conv_bn_relu<96, 96, 3, 3, 2>>,
                             max_pool<3, 2>>;
template <index_t Cin, index_t C7>
using inception_c =
    branches<merge::concat<"c">, conv_bn_relu<Cin, 192, 1>,
             seq<conv_bn_relu<Cin, C7, 1>, conv_bn_relu<C7, C7, 1, 7, 1, 0, 3>, conv_bn_relu<C7, 192, 7, 1, 1, 3, 0>>,
             seq<conv_bn_relu<Cin, C7, 1>, conv_bn_relu<C7, C7, 7, 1, 1, 3, 0>, conv_bn_relu<C7, C7, 1, 7, 1, 0, 3>,
                 conv_bn_relu<C7, C7, 7, 1, 1, 3, 0>, conv_bn_relu<C7, 192, 1, 7, 1, 0, 3>>,
             seq<avg_pool<3, 1, 1>, conv_bn_relu<Cin, 192, 1>>>;
template <index_t Cin>
using inception_d = branches<merge::concat<"c">, seq<conv_bn_relu<Cin, 192, 1>, conv_bn_relu<192, 320, 3, 3, 2>>,
                             seq<conv_bn_relu<Cin, 192, 1>, conv_bn_relu<192, 192, 1, 7, 1, 0, 3>,
                                 conv_bn_relu<192, 192, 7, 1, 1, 3, 0>, conv_bn_relu<192, 192, 3, 3, 2>>,
                             max_pool<3, 2>>;
template <index_t C>
using split_1x3_3x1 =
    branches<merge::concat<"c">, conv_bn_relu<C, 384, 1, 3, 1, 0, 1>, conv_bn_relu<C, 384, 3, 1, 1, 1, 0>>;
template <index_t Cin>
using inception_e = branches<merge::concat<"c">, conv_bn_relu<Cin, 320, 1>,
                             seq<conv_bn_relu<Cin, 384, 1>, split_1x3_3x1<384>>,
                             seq<conv_bn_relu<Cin, 448, 1>, conv_bn_relu<448, 384, 3, 3, 1, 1>, split_1x3_3x1<384>>,
                             seq<avg_pool<3, 1, 1>, conv_bn_relu<Cin, 192, 1>>>;

/// Inception-v3 on [b, 3, 299, 299] (no auxiliary classifier).
template <index_t Batch, fixed_string Name = "inception-v3">
struct inception_v3_model
    : model<Name, image_input<Batch, 299>,
            seq<named<"stem", seq<conv_bn_relu<3, 32, 3, 3, 2>, conv_bn_relu<32, 32, 3>,
                                  conv_bn_relu<32, 64, 3, 3, 1, 1>, max_pool<3, 2>, conv_bn_relu<64, 80, 1>,
                                  conv_bn_relu<80, 192, 3>, max_pool<3, 2>>>,
                named<"mixed_5b", inception_a<192, 32>>, named<"mixed_5c", inception_a<256, 64>>,
                named<"mixed_5d", inception_a<288, 64>>, named<"mixed_6a", inception_b<288>>,
                named<"mixed_6b", inception_c<768, 128>>, named<"mixed_6c", inception_c<768, 160>>,
                named<"mixed_6d", inception_c<768, 160>>, named<"mixed_6e", inception_c<768, 192>>,
                named<"mixed_7a", inception_d<768>>, named<"mixed_7b", inception_e<1280>>,
                named<"mixed_7c", inception_e<2048>>, named<"pool", global_avg_pool>,
                named<"drop", dropout<0.5>>, named<"fc", linear<2048, 1000, "classes">>,
                named<"loss", softmax_cross_entropy<1000>>>> {};

// --------------------------------------------------------------------------- MLP

/// A multi-layer perceptron on [b, In] features: Layers x (linear to Hidden + relu),
/// then a linear to Classes and softmax cross-entropy.
template <index_t Batch, index_t In, index_t Hidden, index_t Layers, index_t Classes,
          fixed_string Name = "mlp">
struct mlp_model
    : model<Name, shape<axis<"b", Batch>, axis<"h", In>>,
            seq<named<"first", seq<named<"fc", linear<In, Hidden>>, named<"relu", relu>>>,
                named<"layers", repeat<seq<named<"fc", linear<Hidden, Hidden, "h">>, named<"relu", relu>>, Layers - 1>>,
                named<"head", linear<Hidden, Classes, "classes">>, named<"loss", softmax_cross_entropy<Classes>>>> {};

/// A small Inception-like CNN for tests: [b, 3, 32, 32] -> stem conv + pool ->
/// one block of three concatenated branches (1x1; 1x1 -> 3x3; avg pool -> 1x1)
/// -> global pool -> 10 classes.
template <index_t Batch = 8, fixed_string Name = "tiny-inception">
struct tiny_inception
    : model<Name, image_input<Batch, 32>,
            seq<named<"stem", seq<conv_bn_relu<3, 16, 3, 3, 1, 1>, max_pool<2>>>,
                named<"mixed", branches<merge::concat<"c">, conv_bn_relu<16, 8, 1>,
                                        seq<conv_bn_relu<16, 8, 1>, conv_bn_relu<8, 8, 3, 3, 1, 1>>,
                                        seq<avg_pool<3, 1, 1>, conv_bn_relu<16, 8, 1>>>>,
                named<"pool", global_avg_pool>, named<"fc", linear<24, 10, "classes">>,
                named<"loss", softmax_cross_entropy<10>>>> {};

// --------------------------------------------------------------------------- zoo instances

// Wide-ResNet suite (Alpa): 224x224, global batch 1536.
using wresnet_250m = wide_resnet<50, 160, 2, 1536, "wresnet-250m">;
using wresnet_1b = wide_resnet<50, 320, 2, 1536, "wresnet-1b">;
using wresnet_2b = wide_resnet<50, 448, 2, 1536, "wresnet-2b">;
using wresnet_6_8b = wide_resnet<50, 320, 16, 1536, "wresnet-6.8b">;
using wresnet_13b = wide_resnet<101, 320, 16, 1536, "wresnet-13b">;
// Older CNN line: batch 128.
using vgg16 = vgg16_model<128>;
using resnet50 = wide_resnet<50, 64, 1, 128, "resnet50">;
using inception_v3 = inception_v3_model<128>;
// Unity's MLP: input 1024, 8 hidden layers of 8192, 1000 classes, batch 256.
using mlp = mlp_model<256, 1024, 8192, 8, 1000>;

}  // namespace tensoropt::models
