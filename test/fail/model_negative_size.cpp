// expect: conv2d<Cin, Cout, K, Stride>: channels, kernel and stride must be positive
// A negative channel count.
#include <tensoropt/model/model.hpp>
namespace to = tensoropt;
using img = to::shape<to::axis<"b", 4>, to::axis<"c", 3>, to::axis<"y", 32>, to::axis<"x", 32>>;
using bad = to::model<"bad", img, to::seq<to::conv2d<3, -16, 3>, to::relu>>;
int main() { return int(to::lower<bad>().ops.size()); }
