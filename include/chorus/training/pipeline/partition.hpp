/// @file partition.hpp
/// Cutting a Sequential model into pipeline stages: contiguous runs of layers, at least one per stage, with the
/// largest stage cost as small as it can be (the slowest stage sets the pipeline's pace).
#pragma once

#include <functional>
#include <vector>

#include "chorus/status.hpp"
#include "chorus/training/model.hpp"

namespace chorus::training::pipeline {

/// The first layer of each of `stages` stages (starts[0] = 0, increasing) over layers costing `layerCosts`,
/// minimising the most expensive stage. An error when there are fewer layers than stages or a cost is negative.
Status partitionLayers(const std::vector<double>& layerCosts, int stages, std::vector<int>* starts);

/// Seconds per layer of forward plus backward on a batch of `rows` random samples, the median of `repeats` runs:
/// measured costs for partitionLayers (measure on one rank and hand the same costs to all).
Status measureLayerCosts(const std::function<Sequential()>& makeModel, size_t rows, int repeats,
                         std::vector<double>* costs);

}  // namespace chorus::training::pipeline
