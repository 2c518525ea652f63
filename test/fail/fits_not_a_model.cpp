// expect: satisfaction of .*ModelOrGraph<Model>.* \[with Model = int\]
// A type that is not a model: one error naming the kind of argument expected.
#include <tensoropt/plan/fits.hpp>
namespace to = tensoropt;
static_assert(to::fits<int, to::strategies::data_parallel, to::mesh<4>, to::bytes(1e9)>);
int main() {}
