// expect: linear<In, Out>: In and Out must be positive
// A layer of size zero.
#include <tensoropt/model/model.hpp>
namespace to = tensoropt;
using bad = to::model<"bad", to::shape<to::axis<"b", 8>, to::axis<"h", 64>>, to::seq<to::linear<64, 0>, to::relu>>;
int main() { return int(to::lower<bad>().ops.size()); }
