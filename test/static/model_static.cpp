// Compile-time checks of model/: the Layer and Model concepts, shape inference of
// every layer kind and composite (positives and negatives), and lower<> in a
// constant expression.
#include <tensoropt/model/model.hpp>
#include <tensoropt/models/cnn.hpp>
#include <tensoropt/models/gpt.hpp>
#include <type_traits>

namespace to = tensoropt;
using to::axis;
using to::ids;
using to::shape;

using bh = shape<axis<"b", 8>, axis<"h", 64>>;
using bsh = shape<axis<"b", 4>, axis<"s", 16>, axis<"h", 64>>;
using img = shape<axis<"b", 2>, axis<"c", 3>, axis<"y", 32>, axis<"x", 32>>;
using tok = ids<shape<axis<"b", 4>, axis<"s", 16>>>;

// Concepts.
static_assert(to::Layer<to::linear<4, 8>> && to::Layer<to::relu> && to::Layer<to::seq<to::relu, to::gelu>>);
static_assert(to::Layer<to::residual<to::relu>> && to::Layer<to::repeat<to::relu, 3>>);
static_assert(to::Layer<to::named<"x", to::relu>> && to::Layer<to::attention<4>> && to::Layer<to::moe<4, 16>>);
static_assert(!to::Layer<int> && !to::Layer<bh> && !to::Layer<to::layer_base> && !to::Layer<void>);
static_assert(to::Tensor<bh> && to::Tensor<tok> && !to::Tensor<int> && !to::Tensor<to::invalid_shape>);
static_assert(to::Model<to::models::gpt3_1_3b> && to::Model<to::models::resnet50> && !to::Model<int>);
static_assert(!to::Model<to::linear<4, 8>>);

// linear: output axis alternates h -> f -> h; several trailing axes flatten.
static_assert(std::is_same_v<to::output_t<to::linear<64, 32>, bh>, shape<axis<"b", 8>, axis<"f", 32>>>);
static_assert(std::is_same_v<to::output_t<to::linear<32, 16>, shape<axis<"b", 8>, axis<"f", 32>>>,
                             shape<axis<"b", 8>, axis<"h", 16>>>);
static_assert(std::is_same_v<to::output_t<to::linear<64, 10, "classes">, bh>, shape<axis<"b", 8>, axis<"classes", 10>>>);
static_assert(std::is_same_v<to::output_t<to::linear<3 * 32 * 32, 10>, img>, shape<axis<"b", 2>, axis<"h", 10>>>);
static_assert(!to::Accepts<to::linear<32, 16>, bh> && !to::Accepts<to::linear<64, 16>, tok>);
static_assert(!to::Accepts<to::linear<7, 16>, img>);
static_assert(to::Accepts<to::linear<64, 16>, bh>);

// embedding, layer_norm, activations, loss.
static_assert(std::is_same_v<to::output_t<to::embedding<100, 64, true>, tok>, bsh>);
static_assert(!to::Accepts<to::embedding<100, 64>, bsh>);
static_assert(!to::Accepts<to::embedding<100, 64, true>, ids<shape<axis<"b", 4>>>>);
static_assert(to::Accepts<to::embedding<100, 64>, ids<shape<axis<"b", 4>>>>);
static_assert(std::is_same_v<to::output_t<to::layer_norm<64>, bsh>, bsh> && !to::Accepts<to::layer_norm<32>, bsh>);
static_assert(!to::Accepts<to::layer_norm<16>, tok> && !to::Accepts<to::gelu, tok> && to::Accepts<to::gelu, img>);
static_assert(std::is_same_v<to::output_t<to::dropout<0.5>, img>, img>);
static_assert(std::is_same_v<to::output_t<to::softmax_cross_entropy<64>, bsh>, shape<>>);
static_assert(!to::Accepts<to::softmax_cross_entropy<10>, bsh> && !to::Accepts<to::softmax_cross_entropy<64>, shape<axis<"h", 64>>>);

// attention and MoE keep [b, s, h]; heads must divide h.
static_assert(std::is_same_v<to::output_t<to::attention<8, true>, bsh>, bsh>);
static_assert(!to::Accepts<to::attention<6>, bsh> && !to::Accepts<to::attention<4>, bh>);
static_assert(std::is_same_v<to::output_t<to::moe<4, 128>, bsh>, bsh> && !to::Accepts<to::moe<4, 128>, bh>);
static_assert(to::moe<4, 128, 2>::capacity(16) == 8 && to::moe<3, 8, 1, 1.0>::capacity(16) == 6);

// conv and pooling: (in + 2 pad - k) / stride + 1.
static_assert(std::is_same_v<to::output_t<to::conv2d<3, 16, 3, 2, 1>, img>,
                             shape<axis<"b", 2>, axis<"c", 16>, axis<"y", 16>, axis<"x", 16>>>);
static_assert(std::is_same_v<to::output_t<to::conv2d_rect<3, 8, 1, 7, 1, 0, 3>, img>,
                             shape<axis<"b", 2>, axis<"c", 8>, axis<"y", 32>, axis<"x", 32>>>);
static_assert(!to::Accepts<to::conv2d<4, 16, 3>, img> && !to::Accepts<to::conv2d<3, 16, 33>, img>);
static_assert(!to::Accepts<to::conv2d<3, 16, 3>, bsh>);
static_assert(std::is_same_v<to::output_t<to::max_pool<3, 2, 1>, img>,
                             shape<axis<"b", 2>, axis<"c", 3>, axis<"y", 16>, axis<"x", 16>>>);
static_assert(std::is_same_v<to::output_t<to::avg_pool<2>, img>,
                             shape<axis<"b", 2>, axis<"c", 3>, axis<"y", 16>, axis<"x", 16>>>);
static_assert(std::is_same_v<to::output_t<to::global_avg_pool, img>, shape<axis<"b", 2>, axis<"c", 3>>>);
static_assert(to::Accepts<to::batch_norm<3>, img> && !to::Accepts<to::batch_norm<4>, img> && !to::Accepts<to::batch_norm<3>, bh>);

// Composition.
static_assert(std::is_same_v<to::output_t<to::seq<to::linear<64, 32>, to::relu, to::linear<32, 64>>, bh>,
                             shape<axis<"b", 8>, axis<"h", 64>>>);
static_assert(!to::Accepts<to::seq<to::linear<64, 32>, to::linear<64, 32>>, bh>);
static_assert(std::is_same_v<to::output_t<to::residual<to::seq<to::linear<64, 32>, to::linear<32, 64>>>, bh>, bh>);
static_assert(to::Accepts<to::residual<to::linear<64, 64>>, bh>);  // names may differ, extents may not
static_assert(!to::Accepts<to::residual<to::linear<64, 32>>, bh>);
using cat3 = to::branches<to::merge::concat<"c">, to::conv2d<3, 4, 1>, to::conv2d<3, 6, 3, 1, 1>, to::max_pool<3, 1, 1>>;
static_assert(std::is_same_v<to::output_t<cat3, img>, shape<axis<"b", 2>, axis<"c", 13>, axis<"y", 32>, axis<"x", 32>>>);
static_assert(!to::Accepts<to::branches<to::merge::concat<"c">, to::conv2d<3, 4, 1>, to::conv2d<3, 4, 3>>, img>);
static_assert(!to::Accepts<to::branches<to::merge::concat<"z">, to::conv2d<3, 4, 1>, to::conv2d<3, 4, 1>>, img>);
static_assert(to::Accepts<to::branches<to::merge::add, to::conv2d<3, 4, 1>, to::conv2d<3, 4, 3, 1, 1>>, img>);
static_assert(!to::Accepts<to::branches<to::merge::add, to::conv2d<3, 4, 1>, to::conv2d<3, 8, 1>>, img>);
static_assert(std::is_same_v<to::output_t<to::repeat<to::residual<to::linear<64, 64>>, 5>, bh>, bh>);
static_assert(!to::Accepts<to::repeat<to::linear<64, 32>, 2>, bh>);
static_assert(std::is_same_v<to::output_t<to::named<"fc", to::linear<64, 32>>, bh>, to::output_t<to::linear<64, 32>, bh>>);

// Models: batch, name, validity, and lower<> in a constant expression.
using tiny_gpt = to::models::gpt<{.layers = 2, .hidden = 64, .heads = 4, .seq = 16, .vocab = 128, .batch = 8}, "tiny">;
static_assert(tiny_gpt::batch == 8 && tiny_gpt::name == "tiny" && tiny_gpt::valid);
static_assert(std::is_same_v<tiny_gpt::output, shape<>>);
// tokens, embed, 2 x 12 layer ops, ln_f, head, labels, loss
static_assert(to::lower<tiny_gpt>().ops.size() == 2 + 2 * 12 + 4);
// 12Lh^2 + 13Lh + vh + sh + 2h
static_assert(to::lower<tiny_gpt>().parameter_count() == 12 * 2 * 64 * 64 + 13 * 2 * 64 + 128 * 64 + 16 * 64 + 2 * 64);
static_assert(to::lower<tiny_gpt>().batch == 8);
using tiny_mlp = to::models::mlp_model<16, 32, 64, 3, 10>;
// forward FLOPs: 2 b (32*64 + 2*64*64 + 64*10) + relus 3 b 64 + loss 5 b 10
static_assert(to::lower<tiny_mlp>().fwd_flops() == 2.0 * 16 * (32 * 64 + 2 * 64 * 64 + 64 * 10) + 3.0 * 16 * 64 + 5.0 * 16 * 10);
static_assert(to::lower<to::models::tiny_inception<>>().ops.size() > 10);
