// A minimal consumer of the installed / embedded library.
#include <tensoropt/tensoropt.hpp>
#include <cstdio>

int main() {
  const tensoropt::device_mesh m(2, 4);
  std::printf("tensoropt consumer: %s\n", m.describe().c_str());
  return m.devices() == 8 ? 0 : 1;
}
