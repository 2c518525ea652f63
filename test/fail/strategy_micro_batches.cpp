// expect: micro-batch count must divide the model's global batch
// 3 micro-batches of a global batch of 8.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/fits.hpp>
namespace to = tensoropt;
using tiny = to::models::gpt<{.layers = 1, .hidden = 48, .heads = 6, .seq = 16, .vocab = 96, .batch = 8}>;
static_assert(to::fits<tiny, to::strategies::micro_batched<to::strategies::data_parallel, 3>, to::mesh<2>,
                       to::bytes(1e9)>);
int main() {}
