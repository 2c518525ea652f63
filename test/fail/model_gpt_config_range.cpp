// expect: models::gpt/bert: a size is out of range
// A GPT whose vocabulary has one token (vocab must be at least 2; models::config_error).
#include <tensoropt/models/gpt.hpp>
namespace to = tensoropt;
using bad = to::models::gpt<{.layers = 2, .hidden = 64, .heads = 4, .seq = 16, .vocab = 1, .batch = 4}>;
int main() { return int(to::lower<bad>().ops.size()); }
