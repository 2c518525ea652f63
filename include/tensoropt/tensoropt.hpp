// Umbrella header: everything host-compilable (no .cuh).
#pragma once
#include "core/config.hpp"
#include "core/dims.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/mesh.hpp"
#include "core/units.hpp"
#include "model/graph.hpp"
#include "model/model.hpp"
#include "models/zoo.hpp"
#include "cost/config.hpp"
#include "search/problem.hpp"
