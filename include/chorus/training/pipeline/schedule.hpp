/// @file schedule.hpp
/// A pipeline schedule as data: for each rank, the ordered list of what it does in one training step.
///
/// The model is cut into S = p v stages; stage s runs on rank s mod p (v "virtual" stages per rank, Megatron's
/// interleaving when v > 1). Each of the m micro-batches goes forward through stages 0..S-1 and backward through
/// S-1..0. Backward is one action (B) or, for zero-bubble schedules, two: the input gradient (BI), which the stage
/// before waits for, and the weight gradient (BW), which nobody waits for and so can fill idle time.
///
/// A generator only orders the compute actions of each rank; lowerSchedule() then adds the communication: the sends
/// of what a compute action produced just after it, and the receives a compute action needs before it (in the
/// order the peer sends them). Consecutive communication actions of a rank form one group, posted together; the
/// rank goes on when the group's receives arrived. A send never waits: it is queued to its peer (simulator.hpp).
#pragma once

#include <string>
#include <vector>

#include "chorus/status.hpp"

namespace chorus::training::pipeline {

enum class Op : unsigned char {
  kForward,         // F: the stage's forward (the last stage also computes the loss and its gradient)
  kBackward,        // B: input and weight gradients together
  kBackwardInput,   // BI: the input gradient only
  kBackwardWeight,  // BW: the weight gradient of a micro-batch whose BI ran
  kSendActivation,  // the stage's output to the rank of the next stage
  kRecvActivation,  // the stage's input from the rank of the previous stage
  kSendGradient,    // the gradient of the stage's input to the rank of the previous stage
  kRecvGradient,    // the gradient of the stage's output from the rank of the next stage
  kOptimizerStep,   // the update of this rank's parameters, last
};
const char* opName(Op op);
bool isCompute(Op op);
bool isCommunication(Op op);

struct Action {
  Op op = Op::kForward;
  int microBatch = -1;
  int stage = -1;  // the stage computing, or whose input/output is moved
  int peer = -1;   // communication only: the other rank
  bool operator==(const Action&) const = default;
};

struct Schedule {
  std::string name;
  int ranks = 1, microBatches = 1, stagesPerRank = 1;
  bool splitBackward = false;
  std::vector<std::vector<Action>> actions;  // per rank, in order

  int stages() const { return ranks * stagesPerRank; }
  int rankOf(int stage) const { return stage % ranks; }
};

/// A schedule generator: fills compute-only per-rank orders (F and B, or F, BI and BW) for p ranks, m micro-batches
/// and v stages per rank.
struct ScheduleGenerator {
  const char* name;
  const char* description;
  bool splitBackward;
  bool virtualStages;  // takes v > 1 (and then requires it)
  Status (*generate)(int ranks, int microBatches, int stagesPerRank, std::vector<std::vector<Action>>* order);
};
/// Registers a generator at static-initialisation time: one file per schedule.
struct ScheduleRegistrar {
  explicit ScheduleRegistrar(const ScheduleGenerator& generator);
};
#define CHORUS_REGISTER_PIPELINE_SCHEDULE(ident, ...) \
  static const ::chorus::training::pipeline::ScheduleRegistrar ident##_registrar({__VA_ARGS__})

const std::vector<ScheduleGenerator>& scheduleGenerators();
std::vector<std::string> scheduleNames();

/// The named schedule ("gpipe", "1f1b", "interleaved-1f1b", "zb-h1"), lowered and validated. v must be 1 for the
/// schedules without virtual stages and at least 2 for interleaved-1f1b.
Status makeSchedule(const std::string& name, int ranks, int microBatches, int stagesPerRank, Schedule* out);

/// Adds the communication to compute-only orders (see the file comment).
void lowerSchedule(Schedule* schedule);

/// One line per rank: "F0.1 sA0.1 ..." (op, micro-batch.stage), for logs and test messages.
std::string toString(const Schedule& schedule);

}  // namespace chorus::training::pipeline
