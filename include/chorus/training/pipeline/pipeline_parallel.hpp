/// @file pipeline_parallel.hpp
/// Pipeline parallelism: a Sequential model cut into stages (partition.hpp), stage s on rank s mod p, trained one
/// step at a time by running a schedule (schedule.hpp) action by action: forwards and backwards of micro-batches,
/// activations and gradients between the stages' ranks, then each rank's optimizer over its own stages. Messages
/// travel on communicators split off for each ordered pair of ranks: a send is queued there and the rank computes
/// on, a receive waits (the model the validator proves deadlock-free). The gradients add up micro-batch after
/// micro-batch in order on every stage, so a step gives the bits the whole model gives in one process on the same
/// micro-batches (gradients summed over the micro-batches, each the mean over its rows).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/model.hpp"
#include "chorus/training/optimizer.hpp"
#include "chorus/training/pipeline/schedule.hpp"

namespace chorus::training::pipeline {

struct PipelineConfig {
  std::string schedule = "1f1b";  // scheduleNames()
  int microBatches = 4;
  int stagesPerRank = 1;  // v; more than one for interleaved-1f1b
  /// The first layer of each stage (p v entries), or empty: cut by `layerCosts`, or by parameter count when that
  /// is empty too. Give every rank the same.
  std::vector<int> stageStarts;
  std::vector<double> layerCosts;
  OptimizerConfig optimizer;
  uint64_t seed = 1;  // every rank initialises the whole model from it and keeps its stages
  /// Seconds each F, BI and BW (B: both) spends asleep besides its compute: a device busy for that long, so that
  /// stages sharing a few cores still run side by side as they would on their own devices. 0 in training.
  double emulatedForward = 0, emulatedBackwardInput = 0, emulatedBackwardWeight = 0;
};

/// When one action of the last step ran, in seconds from the step's start.
struct TracedAction {
  Action action;
  double start = 0, end = 0;
};

struct StepResult {
  bool hasLoss = false;  // the rank of the last stage has the loss
  float loss = 0;        // mean of the micro-batches' mean losses
  int correct = 0;
  double seconds = 0;
};

class PipelineParallel {
 public:
  /// Collective over `comm` (which must outlive the pipeline). An error for an unknown schedule, fewer layers
  /// than stages, or a configuration that differs between ranks.
  static Status create(Communicator& comm, const std::function<Sequential()>& makeModel, const PipelineConfig& config,
                       std::unique_ptr<PipelineParallel>* out);
  ~PipelineParallel();

  /// One training step on a batch cut into the configured number of micro-batches, as evenly as rows allow (the
  /// first rows % m get one row more). Every rank passes the same batch: the first stage reads x, the last the
  /// labels. An error when the batch has fewer rows than micro-batches.
  Status trainStep(const Tensor& x, const std::vector<int>& labels, StepResult* result);

  /// The whole model's parameters, gathered from the stages' ranks onto every rank (collective).
  Status gatherParams(std::vector<float>* params);

  const Schedule& schedule() const;
  std::vector<int> stageStarts() const;
  /// The compute and communication actions of the last step with their times.
  const std::vector<TracedAction>& trace() const;
  /// This rank's pipeline messages so far (its links' counters, summed).
  CallCounters traffic() const;

 private:
  struct Impl;
  explicit PipelineParallel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace chorus::training::pipeline
