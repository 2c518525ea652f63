// Umbrella header of the runtime (CPU backend, local communicator, executor,
// trainer, checkpoints). Needs CBLAS (link tensoropt::runtime); the MPI
// communicator is separate: <tensoropt/runtime/mpi_comm.hpp>. Programs that run
// only on GPUs include the backend-neutral headers (runtime/trainer.hpp) and link
// tensoropt::cuda instead, without BLAS.
#pragma once
#include "tensoropt.hpp"
#include "runtime/buffer.hpp"
#include "runtime/backend.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/data_plane.hpp"
#include "runtime/comm.hpp"
#include "runtime/sharding.hpp"
#include "runtime/op_context.hpp"
#include "runtime/kernels.hpp"
#include "runtime/optimizer.hpp"
#include "runtime/executor.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/trainer.hpp"
#include "runtime/sub_communicator.hpp"
#include "runtime/pipeline.hpp"
#include "runtime/pipeline_trainer.hpp"
#include "runtime/calibrate.hpp"
#include "runtime/training_run.hpp"
