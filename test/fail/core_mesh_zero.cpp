// expect: the device count per node must be at least 1
#include <tensoropt/core/mesh.hpp>
int main() { return int(tensoropt::mesh<0>::devices); }
