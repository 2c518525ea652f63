// expect: attention<Heads>: the number of heads must divide the hidden size
// 12 heads do not divide a hidden size of 100 (here through the GPT template).
#include <tensoropt/tensoropt.hpp>
namespace to = tensoropt;
using bad = to::models::gpt<{.layers = 2, .hidden = 100, .heads = 12, .seq = 16, .vocab = 64, .batch = 4}>;
int main() { return int(to::lower<bad>().ops.size()); }
