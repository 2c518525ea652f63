// expect: residual<Body>: residual shape mismatch
// A residual body that changes the shape cannot be added to its input.
#include <tensoropt/model/model.hpp>
namespace to = tensoropt;
using bad = to::model<"bad", to::shape<to::axis<"b", 8>, to::axis<"h", 64>>,
                      to::seq<to::residual<to::seq<to::linear<64, 32>, to::relu>>, to::linear<64, 10>>>;
int main() { return int(to::lower<bad>().ops.size()); }
