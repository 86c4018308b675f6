/// @file simulator.hpp
/// What a schedule does before it runs: validateSchedule() proves that it is complete, that every send has its
/// receive and that it cannot deadlock; simulateSchedule() predicts its step time, bubble and activation memory from
/// per-stage compute times.
///
/// Both run the schedule as the runtime does, as a discrete-event simulation: a rank runs its actions in order; a
/// group of consecutive communication actions is posted at once and the rank goes on when all of them completed.
/// A send completes when posted: the runtime queues it to its peer, on a communicator of that ordered pair of
/// ranks alone, whose thread sends the queue in order. A receive completes when its send was posted and the
/// transfer took its time. Messages from one rank to another meet in the order posted.
#pragma once

#include <vector>

#include "chorus/training/pipeline/schedule.hpp"

namespace chorus::training::pipeline {

/// Times in seconds. Per-stage vectors have one entry per stage, or one for all stages.
struct StageCosts {
  std::vector<double> forward{1.0}, backwardInput{1.0}, backwardWeight{1.0};  // B = BI + BW
  double transfer = 0;  // one activation or gradient between two ranks (latency + bytes / bandwidth)
};

struct SimulationResult {
  double makespan = 0;               // first action to the last rank's end
  std::vector<double> busy;          // per rank: time in compute actions
  std::vector<int> peakActivations;  // per rank: most micro-batch stage activations held at once
  double bubble() const;             // 1 - sum(busy) / (ranks x makespan)
};

/// Ok, or an error naming the first problem: a missing, repeated or misplaced compute action, an action out of
/// dependency order, a send without its receive (or matched with the wrong one), or a deadlock, with what each
/// stuck rank waits for.
Status validateSchedule(const Schedule& schedule);

/// Runs `schedule` (assumed valid) with `costs`; an error for a deadlock.
Status simulateSchedule(const Schedule& schedule, const StageCosts& costs, SimulationResult* result);

}  // namespace chorus::training::pipeline
