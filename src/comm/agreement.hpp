// Fault-tolerant agreement (MPI_Comm_agree's): the ranks that take part agree on the AND of their values and on
// who took part, even when others are dead, stopped or die during it. It runs through the rendezvous store, not the
// communicator's connections, so it works on a failed or aborted communicator; the store must outlive the ranks
// (a framework's store, or a UniqueId's root in a process that lives on).
#pragma once

#include <cstdint>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "chorus/status.hpp"

namespace chorus {

/// One agreement among the `bootstrap`'s ranks (its key space is this agreement's alone). Each caller votes with
/// `*value`; a rank that has not voted `graceSeconds` after a caller arrived is left out. The last rank to vote
/// proposes a decision from the votes at once; a caller whose grace ends before a decision appears proposes one from
/// the votes in by then. The store keeps the first proposal (setIfAbsent), so every caller reads that one decision,
/// whoever dies on the way: *value becomes the AND of the counted votes and *members their ranks. A caller left out
/// (it came too late) gets an error saying so. With a framework's store that cannot set-if-absent, the first
/// proposer alone decides; `timeoutSeconds` bounds the others' wait for its decision, which ends the agreement only
/// when that proposer dies between claiming the decision and writing it (a few store round trips).
Status agree(bootstrap::Bootstrap& bootstrap, uint32_t* value, std::vector<int>* members, double graceSeconds,
             double timeoutSeconds);

}  // namespace chorus
