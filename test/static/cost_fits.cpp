// Compile-time strategy checks: fits<Model, Strategy, Mesh, Budget> on a small GPT.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/fits.hpp>

namespace to = tensoropt;
using namespace to::literals;

namespace {
using tiny = to::models::gpt<{.layers = 2, .hidden = 64, .heads = 8, .seq = 32, .vocab = 128, .batch = 8}>;
namespace st = to::strategies;

// about 0.12 M parameters x 16 bytes + activations: well under 16 MiB, over 1 MiB
static_assert(to::fits<tiny, st::data_parallel, to::mesh<8>, 16_MiB>);
static_assert(!to::fits<tiny, st::data_parallel, to::mesh<8>, 1_MiB>);
static_assert(to::fits<tiny, st::megatron<4>, to::mesh<8>, 16_MiB>);
static_assert(to::fits<tiny, st::megatron<8, true>, to::mesh<8>, 16_MiB>);
static_assert(to::fits<tiny, st::data_parallel, to::mesh<4, 2>, 16_MiB>);

using dp = to::fits_check<tiny, st::data_parallel, to::mesh<8>, 16_MiB>;
using tp8 = to::fits_check<tiny, st::megatron<8>, to::mesh<8>, 16_MiB>;
using zo = to::fits_check<tiny, st::with_switches<st::data_parallel, false, true>, to::mesh<8>, 16_MiB>;
using rc = to::fits_check<tiny, st::with_switches<st::data_parallel, true>, to::mesh<8>, 16_MiB>;
static_assert(tp8::memory < dp::memory, "tensor parallelism splits the parameters");
static_assert(zo::memory < dp::memory, "sharded optimizer state is smaller");
static_assert(rc::memory < dp::memory, "recomputation keeps less");
// the parameter state alone: 16 bytes per parameter, once per device under data parallelism
static_assert(dp::memory.value > 16.0 * 100000);

// gradient accumulation shrinks activations; fp32 activations are twice bf16's
using k4 = to::fits_check<tiny, st::micro_batched<st::data_parallel, 4>, to::mesh<2>, 16_MiB>;
using k1 = to::fits_check<tiny, st::data_parallel, to::mesh<2>, 16_MiB>;
static_assert(k4::memory < k1::memory);
using f32 = to::fits_check<tiny, st::with_precision<st::data_parallel, to::precisions::fp32>, to::mesh<2>, 16_MiB>;
static_assert(f32::memory > k1::memory);
// a real zoo model: gpt3-125m, Megatron t = 4 x data parallel 2, 64 micro-batches of 16
static_assert(to::fits<to::models::gpt3_125m, st::micro_batched<st::megatron<4>, 64>, to::mesh<8>, 40_GiB>);

// explicit per-op degrees, and a cluster instead of a mesh
using ex = to::fits_check<tiny, st::explicit_degrees<"*:b=8", "layers.1.mlp:b=2,f=4">, to::mesh<8>, 16_MiB>;
static_assert(ex::value && ex::memory != dp::memory);
struct dgx {
  static constexpr to::cluster value() { return to::cluster::nodes(1).gpus_per_node(8).gpu(to::gpus::h100_80gb); }
};
static_assert(to::fits<tiny, st::megatron<2>, dgx, 80_GiB>);
}  // namespace
