// expect: an axis extent must be positive
#include <tensoropt/core/dims.hpp>
int main() { return int(tensoropt::axis<"h", 0>::extent); }
