// Compile-time checks of core: static ints stay static, axes and shapes, meshes.
#include <tensoropt/core/dims.hpp>
#include <tensoropt/core/mesh.hpp>
#include <tensoropt/core/units.hpp>
#include <type_traits>

namespace to = tensoropt;
using namespace to::literals;

static_assert(std::is_same_v<decltype(to::int_c<3> * to::int_c<4>), to::static_int<12>>);
static_assert(std::is_base_of_v<std::integral_constant<to::index_t, 5>, to::static_int<5>>);
using seq = to::axis<"seq", 2048>;
static_assert(seq::name == "seq" && seq::extent == 2048);
using s3 = to::shape<to::axis<"b", 8>, seq, to::axis<"h", 1024>>;
static_assert(s3::rank == 3 && s3::size() == 8 * 2048 * 1024);
static_assert(s3::find("h") == 2 && s3::find("nope") == -1);
static_assert(std::is_empty_v<s3>);
static_assert(to::Shape<s3> && !to::Shape<int> && !to::Axis<int> && to::Axis<seq>);
static_assert(to::Mesh<to::mesh<8>> && !to::Mesh<int>);
static_assert(to::mesh<8, 4>::devices == 32);
static_assert((80_GiB).value == 80.0 * 1024 * 1024 * 1024);
static_assert(to::device_mesh(2, 4).devices() == 8);
