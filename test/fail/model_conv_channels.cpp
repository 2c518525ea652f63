// expect: conv2d<Cin, Cout, ...>: channel mismatch
// A conv whose Cin differs from the image channels.
#include <tensoropt/model/model.hpp>
namespace to = tensoropt;
using img = to::shape<to::axis<"b", 4>, to::axis<"c", 3>, to::axis<"y", 32>, to::axis<"x", 32>>;
using bad = to::model<"bad", img, to::seq<to::conv2d<3, 16, 3, 1, 1>, to::relu, to::conv2d<32, 16, 3>, to::global_avg_pool>>;
int main() { return int(to::lower<bad>().ops.size()); }
