// expect: satisfaction of .*StrategyType<Strategy>.* \[with Strategy = tensoropt::mesh<4
// The strategy and the mesh swapped: one error naming the kind of argument expected.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/fits.hpp>
namespace to = tensoropt;
using tiny = to::models::gpt<{.layers = 1, .hidden = 48, .heads = 6, .seq = 16, .vocab = 96, .batch = 8}>;
static_assert(to::fits<tiny, to::mesh<4>, to::strategies::data_parallel, to::bytes(1e9)>);
int main() {}
