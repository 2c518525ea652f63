// expect: linear<In, Out>: in-features mismatch
// A linear whose In does not match the incoming features: one error naming the layer.
#include <tensoropt/model/model.hpp>
namespace to = tensoropt;
using bad = to::model<"bad", to::shape<to::axis<"b", 8>, to::axis<"h", 64>>,
                      to::seq<to::linear<64, 32>, to::relu, to::linear<128, 10>, to::relu, to::linear<10, 2>>>;
int main() { return int(to::lower<bad>().ops.size()); }
