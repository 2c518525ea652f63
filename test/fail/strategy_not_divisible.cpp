// expect: op .*tokens.*: degree 16 does not divide dim .*b.* of extent 8.*a strategy degree does not divide
// Data parallel over 16 devices of a batch of 8.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/fits.hpp>
namespace to = tensoropt;
using tiny = to::models::gpt<{.layers = 1, .hidden = 48, .heads = 6, .seq = 16, .vocab = 96, .batch = 8}>;
static_assert(to::fits<tiny, to::strategies::data_parallel, to::mesh<16>, to::bytes(1e9)>);
int main() {}
