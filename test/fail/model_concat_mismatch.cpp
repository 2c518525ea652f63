// expect: merge::concat<Axis>, ...>: concat mismatch
// Branches whose spatial sizes differ cannot be concatenated along channels.
#include <tensoropt/model/model.hpp>
namespace to = tensoropt;
using img = to::shape<to::axis<"b", 4>, to::axis<"c", 8>, to::axis<"y", 16>, to::axis<"x", 16>>;
using bad = to::model<"bad", img, to::seq<to::branches<to::merge::concat<"c">, to::conv2d<8, 4, 1>, to::conv2d<8, 4, 3, 2, 1>>, to::global_avg_pool>>;
int main() { return int(to::lower<bad>().ops.size()); }
