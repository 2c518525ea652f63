// expect: linear<In, Out>: the input is integer token ids
// Token ids fed straight into a linear.
#include <tensoropt/model/model.hpp>
namespace to = tensoropt;
using bad = to::model<"bad", to::ids<to::shape<to::axis<"b", 8>, to::axis<"s", 16>>>, to::seq<to::linear<16, 8>>>;
int main() { return int(to::lower<bad>().ops.size()); }
