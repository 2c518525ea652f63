// Which GPU a rank of the cuda backend uses, decided on the host so that the rule and
// its errors are tested without a GPU (cuda_backend.cuh calls it).
//
// Rank r uses GPU (first + l) mod gpus, where l is r's local rank (its index among the
// ranks on its machine) and first is the requested device (0 when none is asked for).
// Ranks that are threads of one process may share a GPU (the device data plane moves
// their buffers); ranks that are processes talk through NCCL, which refuses two ranks
// of one communicator on one GPU, so there each process needs a GPU of its own: more
// processes on a machine than it has GPUs (from the requested one on) is an error that
// says how many to start, never NCCL's duplicate-device failure halfway through a step.
#pragma once
#include <string>
#include "../core/error.hpp"

namespace tensoropt::runtime {

/// The GPU of the rank with local rank `local_rank` on a machine with `gpus` GPUs;
/// `requested` < 0: none asked for (start at GPU 0); `processes`: the ranks are
/// processes (MPI), not threads of one process. Throws runtime_error naming the fix
/// when there is no GPU, the requested one does not exist, or processes outnumber the
/// GPUs they may use.
inline int choose_device(int gpus, int requested, int local_rank, bool processes) {
  if (gpus <= 0) throw runtime_error("no CUDA device found (no GPU or no NVIDIA driver); use --backend cpu");
  if (requested >= gpus)
    throw runtime_error("CUDA device " + std::to_string(requested) + " does not exist: this machine has " +
                        std::to_string(gpus) + " GPU(s); pick --device 0.." + std::to_string(gpus - 1));
  const int first = requested < 0 ? 0 : requested;
  if (processes && first + local_rank >= gpus)
    throw runtime_error("process " + std::to_string(local_rank) + " on this machine needs GPU " +
                        std::to_string(first + local_rank) + ", but the machine has " + std::to_string(gpus) +
                        " GPU(s)" + (first ? " from device " + std::to_string(first) + " on" : std::string()) +
                        ": NCCL needs one GPU per process; start at most " + std::to_string(gpus - first) +
                        " process(es) per machine (mpirun --map-by ppr:" + std::to_string(gpus - first) +
                        ":node), or run the ranks as threads of one process, which may share a GPU");
  return (first + local_rank) % gpus;
}

}  // namespace tensoropt::runtime
