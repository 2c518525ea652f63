// train_cnn: plans a small Inception-like CNN (parallel branches merged by concat) on
// 4 devices, picks the fastest plan within a memory budget and trains it on a
// synthetic image task (which quadrant holds the bright blob), on 4 local devices
// or with `--comm mpi` under `mpirun -np 4`.
//
//   train_cnn [--comm local|mpi] [--steps N] [--budget-mib M] (--help)
#include <tensoropt/core/command_line.hpp>
#include <tensoropt/plan/planner.hpp>
#include <tensoropt/runtime.hpp>
#ifdef TENSOROPT_EXAMPLE_MPI
#include <tensoropt/runtime/mpi_comm.hpp>
#endif
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>

namespace to = tensoropt;
using namespace to::literals;
namespace rt = tensoropt::runtime;
using to::axis;
using to::shape;

using inception_block =
    to::branches<to::merge::concat<"c">, to::conv2d<16, 8, 1>, to::seq<to::conv2d<16, 8, 3, 1, 1>, to::relu>,
                 to::seq<to::max_pool<3, 1, 1>, to::conv2d<16, 8, 1>>>;
using model = to::model<"cnn", shape<axis<"b", 16>, axis<"c", 3>, axis<"y", 8>, axis<"x", 8>>,
                        to::seq<to::conv2d<3, 16, 3, 1, 1>, to::batch_norm<16>, to::relu, inception_block,
                                to::max_pool<2>, to::global_avg_pool, to::linear<24, 4, "k">,
                                to::softmax_cross_entropy<4>>>;

/// The command line: one table gives parsing, range checks, --help and the errors.
struct train_cnn_options {
  std::string comm = "local";
  long steps = 60;
  std::optional<double> budget_mib;
  bool help = false;
};
template <>
struct to::reflection<train_cnn_options> {
  using o = train_cnn_options;
  static constexpr auto fields = boost::hana::make_tuple(
      to::field("comm", &o::comm, "local threads, or MPI ranks under mpirun -np 4").one_of("local|mpi").meta("KIND"),
      to::field("steps", &o::steps, "training steps").range(1, 1000000).meta("N"),
      to::field("budget-mib", &o::budget_mib, "fastest plan within M MiB per device; default: the geometric "
                                              "mean of the frontier's least and largest memory")
          .range_open_lo(0, 1e9).meta("M"),
      to::field("help", &o::help, "print this help"));
};

namespace {
constexpr int devices = 4;

/// 16 images of global step `step`: class q = the quadrant with a bright blob (on
/// channel q % 3), plus noise; drawn from a stream seeded by the step.
rt::batch make_batch(std::int64_t step) {
  std::seed_seq seed{5, int(step), int(step >> 31)};
  std::mt19937 rng(seed);
  rt::batch out{std::vector<float>(16 * 3 * 8 * 8), std::vector<float>(16)};
  std::normal_distribution<float> noise(0.f, 0.3f);
  for (int i = 0; i < 16; ++i) {
    const int q = int(rng() % 4);
    out[1][std::size_t(i)] = float(q);
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x) {
          const bool blob = c == q % 3 && (y / 4) == q / 2 && (x / 4) == q % 2;
          out[0][std::size_t(((i * 3 + c) * 8 + y) * 8 + x)] = (blob ? 1.f : 0.f) + noise(rng);
        }
  }
  return out;
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "train_cnn: %s\n", msg.c_str());
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  train_cnn_options o;
  try {
    to::parse_command_line(argc, argv, o);
  } catch (const to::error& e) {
    return fail(e.what());
  }
  if (o.help) {
    std::fputs(to::command_line_help<train_cnn_options>(
                   "train_cnn [options]",
                   "Plans a small Inception-like CNN on 4 devices, picks the fastest plan within a memory budget\n"
                   "and trains it on a synthetic image task.")
                   .c_str(),
               stdout);
    return 0;
  }
  const std::string comm_kind = o.comm;
  const int steps = int(o.steps);
  const double budget_mib = o.budget_mib.value_or(0);
  bool leader = true;
#ifdef TENSOROPT_EXAMPLE_MPI
  std::unique_ptr<rt::mpi_session> session;
  std::unique_ptr<rt::mpi_comm> mpi;
  if (comm_kind == "mpi") {
    session = std::make_unique<rt::mpi_session>(&argc, &argv);
    mpi = std::make_unique<rt::mpi_comm>();
    leader = mpi->rank() == 0;
  }
#else
  if (comm_kind == "mpi") return fail("this build has no MPI; rebuild with MPI found, or use --comm local");
#endif
  try {
    const auto g = to::lower<model>();
    const auto cl = to::cluster::single_node(devices);
    to::planner_options po;
    po.baselines = false;
    po.micro_batches = {1};  // batch norm statistics are per micro-batch: keep the whole batch
    po.build.prec = to::precisions::fp32;
    std::optional<to::bytes> budget;
    if (budget_mib > 0) budget = budget_mib * 1_MiB;
    const auto chosen = rt::choose_training_plan(g, cl, po, budget);
    if (leader)
      std::printf("%s on %d devices: predicted %.3f ms/step, %.3f MiB per device\n%s\n", chosen.source.c_str(),
                  devices, chosen.time / 1_ms, chosen.memory / 1_MiB, chosen.summary.c_str());
    rt::training_options run;
    run.steps = steps;
    run.optimizer.lr = 0.05f;
    run.on_step = [&](std::int64_t step, float loss, double dt) {
      if (leader) std::printf("step %3lld  loss %.4f  %8.0f images/s\n", (long long)step, double(loss), 16 / dt);
    };
    rt::training_result r;
    if (comm_kind == "local") {
      rt::local_world world(devices);
      r = rt::train(g, chosen.plan, world, make_batch, run);
    } else {
#ifdef TENSOROPT_EXAMPLE_MPI
      r = rt::train(g, chosen.plan, *mpi, make_batch, run);
#endif
    }
    if (leader) std::printf("loss %.4f -> %.4f\n", double(r.first_loss), double(r.last_loss));
    if (steps >= 20 && !(r.last_loss < 0.8f * r.first_loss)) {
      if (leader) std::printf("train_cnn: the loss did not fall clearly below the starting loss\n");
      return 1;
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
