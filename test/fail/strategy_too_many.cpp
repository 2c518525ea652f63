// expect: degrees for some op need more devices than the mesh has
// Explicit degrees b=8 on a mesh of 4.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/fits.hpp>
namespace to = tensoropt;
using tiny = to::models::gpt<{.layers = 1, .hidden = 48, .heads = 6, .seq = 16, .vocab = 96, .batch = 8}>;
static_assert(to::fits<tiny, to::strategies::explicit_degrees<"*:b=8">, to::mesh<4>, to::bytes(1e9)>);
int main() {}
