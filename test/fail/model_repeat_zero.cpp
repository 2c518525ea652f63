// expect: models::gpt/bert: layers must be at least 1
// A GPT with zero layers.
#include <tensoropt/models/gpt.hpp>
namespace to = tensoropt;
using bad = to::models::gpt<{.layers = 0, .hidden = 64, .heads = 4, .seq = 16, .vocab = 64, .batch = 4}>;
int main() { return int(to::lower<bad>().ops.size()); }
