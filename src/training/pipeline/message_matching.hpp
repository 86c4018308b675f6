// Which receive each send of a schedule meets: from one rank to another, the k-th send meets the k-th receive.
#pragma once

#include <utility>
#include <vector>

#include "chorus/training/pipeline/schedule.hpp"

namespace chorus::training::pipeline {

/// counterpart[rank][i] = {peer, index in the peer's actions} of communication action i (-1, -1 for others); an
/// error when a rank posts more sends to a peer than the peer posts receives from it, or the other way round.
Status matchMessages(const Schedule& schedule, std::vector<std::vector<std::pair<int, int>>>* counterpart);

/// "sA 3.1 to rank 2", for messages.
std::string describe(const Action& action);

}  // namespace chorus::training::pipeline
