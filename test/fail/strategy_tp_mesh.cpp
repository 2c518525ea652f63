// expect: the strategy does not match the mesh
// A tensor-parallel degree of 3 does not divide the 8 devices of the node.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/fits.hpp>
namespace to = tensoropt;
using tiny = to::models::gpt<{.layers = 1, .hidden = 48, .heads = 6, .seq = 16, .vocab = 96, .batch = 8}>;
static_assert(to::fits<tiny, to::strategies::megatron<3>, to::mesh<8>, to::bytes(1e9)>);
int main() {}
