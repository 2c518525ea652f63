// expect: models::gpt/bert: heads must divide hidden
// 12 heads do not divide a hidden size of 100 (a GPT configuration).
#include <tensoropt/models/gpt.hpp>
namespace to = tensoropt;
using bad = to::models::gpt<{.layers = 2, .hidden = 100, .heads = 12, .seq = 16, .vocab = 64, .batch = 4}>;
int main() { return int(to::lower<bad>().ops.size()); }
