// A consumer of the installed runtime (tensoropt::runtime): trains a small MLP on
// two local CPU devices, data parallel, and checks that the loss falls.
#include <tensoropt/model/model.hpp>
#include <tensoropt/runtime.hpp>
#include <cstdio>

namespace to = tensoropt;
namespace rt = tensoropt::runtime;
using mlp = to::model<"mlp", to::shape<to::axis<"b", 8>, to::axis<"i", 4>>,
                      to::seq<to::linear<4, 16>, to::relu, to::linear<16, 3>, to::softmax_cross_entropy<3>>>;

int main() {
  const auto g = to::lower<mlp>();
  rt::training_plan plan{{}, 1, to::device_mesh(1, 2)};
  for (auto& op : g.ops) {
    to::op_config c;
    if (op.kind != to::op_kind::input && op.dims[0].batch) c.degree[1][0] = 2;
    plan.configs.push_back(c);
  }
  rt::local_world world(2);
  rt::trainer t(g, plan, world);
  rt::batch b{std::vector<float>(32), std::vector<float>(8)};
  for (int i = 0; i < 32; ++i) b[0][std::size_t(i)] = float(i % 7) / 7.f - 0.5f;
  for (int i = 0; i < 8; ++i) b[1][std::size_t(i)] = float(i % 3);
  const float first = t.step(b);
  float last = first;
  for (int s = 0; s < 30; ++s) last = t.step(b);
  std::printf("tensoropt runtime consumer: loss %.4f -> %.4f on 2 local cpu devices\n", double(first), double(last));
  return last < first ? 0 : 1;
}
