// The model zoo by name: the workloads the field benchmarks on (Alpa's GPT-3, Wide-ResNet
// and GShard MoE suites, Megatron-LM's weak-scaling table, the CNNs of OptCNN and
// FlexFlow, BERT-large, Unity's MLP), listable and
// reachable at run time ("gpt3-1.3b", "megatron-1t", ...), with its defaults.
//
// Default global batches: GPT-3 suite 1024, Megatron per its table (512 ... 3072),
// Wide-ResNet 1536 (as the suites publish them); GShard MoE 1024 (Alpa's suite, which
// does not state it); vgg16, resnet50, inception-v3 128; bert-large 256; mlp 256.
// Default devices: the suites' GPU counts; Alpa's suites (GPT-3,
// Wide-ResNet, MoE) ran on 8 x V100-16GB per node, Megatron on 8 x A100-80GB per
// node; the CNN line, BERT and the MLP default to V100-16GB with 4 per node.
//
// The table is built on first use (every model is lowered once to count its
// parameters: about 10 ms for the whole zoo). list/find/lower are templates with a
// defaulted parameter only so that a translation unit that never calls them does
// not compile the zoo's lowering code.
#pragma once
#include <string>
#include <string_view>
#include <vector>
#include "../core/error.hpp"
#include "../model/graph.hpp"
#include "cnn.hpp"
#include "gpt.hpp"
#include "model_spec.hpp"

namespace tensoropt::models {

/// One zoo entry.
struct model_info {
  std::string_view name;         ///< "gpt3-1.3b"
  std::string_view family;       ///< "gpt3", "megatron", "wresnet", "moe", "cnn", "bert", "mlp"
  std::string_view description;  ///< one line
  index_t batch = 0;             ///< default global batch
  index_t gpus = 1;              ///< default device count (the suite's)
  index_t gpus_per_node = 8;
  std::string_view gpu;          ///< GPU preset name, e.g. "v100-16gb"
  double parameters = 0;         ///< parameter count (from the lowered graph)
  op_graph (*lower)() = nullptr; ///< lowers the model at its default batch
  std::string spec;              ///< "gpt:layers=...,..." for GPT and BERT (model_spec.hpp), else empty
};

namespace detail {
template <class M>
op_graph lower_model() {
  return tensoropt::lower<M>();
}
template <class M>
model_info entry(std::string_view family, std::string_view description, index_t gpus, index_t per_node,
                 std::string_view gpu) {
  std::string spec;
  if constexpr (requires { M::kind; }) spec = to_spec(M::config, M::kind);
  return model_info{M::name, family, description, M::batch, gpus, per_node, gpu, 0, &lower_model<M>, spec};
}

template <class = void>
std::vector<model_info> make_zoo() {
  constexpr std::string_view v16 = "v100-16gb", a80 = "a100-80gb";
  std::vector<model_info> z = {
      entry<gpt3_125m>("gpt3", "GPT-3 125M: 12 layers, hidden 768, 12 heads, seq 1024", 1, 8, v16),
      entry<gpt3_350m>("gpt3", "GPT-3 350M: 24 layers, hidden 1024, 16 heads, seq 1024", 1, 8, v16),
      entry<gpt3_760m>("gpt3", "GPT-3 760M: 24 layers, hidden 1536, 16 heads, seq 1024", 2, 8, v16),
      entry<gpt3_1_3b>("gpt3", "GPT-3 1.3B: 24 layers, hidden 2048, 32 heads, seq 1024", 4, 8, v16),
      entry<gpt3_2_6b>("gpt3", "GPT-3 2.6B: 32 layers, hidden 2560, 32 heads, seq 1024", 8, 8, v16),
      entry<gpt3_6_7b>("gpt3", "GPT-3 6.7B: 32 layers, hidden 4096, 32 heads, seq 1024", 16, 8, v16),
      entry<gpt3_15b>("gpt3", "GPT-3 15B: 48 layers, hidden 5120, 40 heads, seq 1024", 32, 8, v16),
      entry<gpt3_39b>("gpt3", "GPT-3 39B: 48 layers, hidden 8192, 64 heads, seq 1024", 64, 8, v16),
      entry<megatron_1_7b>("megatron", "Megatron-LM 1.7B: 24 layers, hidden 2304, 24 heads, seq 2048", 32, 8, a80),
      entry<megatron_18_4b>("megatron", "Megatron-LM 18.4B: 40 layers, hidden 6144, 48 heads, seq 2048", 256, 8, a80),
      entry<megatron_39_1b>("megatron", "Megatron-LM 39.1B: 48 layers, hidden 8192, 64 heads, seq 2048", 512, 8, a80),
      entry<megatron_145_6b>("megatron", "Megatron-LM 145.6B: 80 layers, hidden 12288, 96 heads, seq 2048", 1536, 8, a80),
      entry<megatron_1t>("megatron", "Megatron-LM 1T: 128 layers, hidden 25600, 160 heads, seq 2048", 3072, 8, a80),
      entry<wresnet_250m>("wresnet", "Wide-ResNet-50, base 160, width 2, 224x224", 1, 8, v16),
      entry<wresnet_1b>("wresnet", "Wide-ResNet-50, base 320, width 2, 224x224", 4, 8, v16),
      entry<wresnet_2b>("wresnet", "Wide-ResNet-50, base 448, width 2, 224x224", 8, 8, v16),
      entry<wresnet_6_8b>("wresnet", "Wide-ResNet-50, base 320, width 16, 224x224", 32, 8, v16),
      entry<wresnet_13b>("wresnet", "Wide-ResNet-101, base 320, width 16, 224x224", 64, 8, v16),
      entry<moe_380m>("moe", "GShard MoE: 8 layers, hidden 768, 16 heads, 8 experts, seq 1024", 1, 8, v16),
      entry<moe_1_3b>("moe", "GShard MoE: 16 layers, hidden 768, 16 heads, 16 experts, seq 1024", 4, 8, v16),
      entry<moe_10b>("moe", "GShard MoE: 16 layers, hidden 1536, 16 heads, 32 experts, seq 1024", 16, 8, v16),
      entry<moe_70b>("moe", "GShard MoE: 32 layers, hidden 2048, 16 heads, 64 experts, seq 1024", 64, 8, v16),
      entry<vgg16>("cnn", "VGG-16 on 224x224 ImageNet", 4, 4, v16),
      entry<resnet50>("cnn", "ResNet-50 on 224x224 ImageNet", 4, 4, v16),
      entry<inception_v3>("cnn", "Inception-v3 on 299x299 ImageNet (no auxiliary head)", 16, 4, v16),
      entry<bert_large>("bert", "BERT-large: 24 layers, hidden 1024, 16 heads, seq 512", 8, 4, v16),
      entry<mlp>("mlp", "MLP: input 1024, 8 hidden layers of 8192, 1000 classes", 4, 4, v16),
  };
  for (auto& m : z) m.parameters = m.lower().parameter_count();
  return z;
}
}  // namespace detail

/// Every zoo model: GPT-3, Megatron, Wide-ResNet, MoE, then the CNNs, BERT and the MLP.
template <class = void>
const std::vector<model_info>& list() {
  static const std::vector<model_info> zoo = detail::make_zoo();
  return zoo;
}

/// The zoo entry called `name`. Throws invalid_argument naming the valid names.
template <class = void>
const model_info& find(std::string_view name) {
  for (auto& m : list())
    if (m.name == name) return m;
  std::string msg = "unknown model '";
  msg += name;
  msg += "'; valid models:";
  for (auto& m : list()) {
    msg += ' ';
    msg += m.name;
  }
  throw invalid_argument(msg);
}

/// The operator graph of the zoo model `name` at its default batch, or of a
/// gpt:/bert: spec (model_spec.hpp). Throws invalid_argument for an unknown name
/// or a bad spec.
template <class = void>
op_graph lower(std::string_view name) {
  if (is_model_spec(name)) return parse_model_spec(name).lower();
  return find(name).lower();
}

}  // namespace tensoropt::models
