// Rank and size from the launcher's environment, and the rendezvous that goes with it.
#pragma once

#include <string>

#include "chorus/status.hpp"
#include "chorus/unique_id.hpp"

namespace chorus::bootstrap {

struct LaunchInfo {
  int rank = 0;
  int size = 1;
  int localRank = 0;
  std::string launcher;  // "torchrun", "openmpi", "slurm", "pmi", or "" when none was found
  std::string jobId;     // names the file rendezvous when no address is given
};

/// Reads torchrun (RANK/WORLD_SIZE/LOCAL_RANK), Open MPI (OMPI_COMM_WORLD_*), Slurm (SLURM_PROCID/NTASKS/LOCALID)
/// and PMI (PMI_RANK/PMI_SIZE). False when none of them is present.
bool detectLauncher(LaunchInfo* info);

/// The UniqueId every rank of this launch agrees on:
///  - CHORUS_COMM_ID / NCCL_COMM_ID = host:port: rank 0 runs the root there;
///  - torchrun: MASTER_ADDR and MASTER_PORT + 1 (MASTER_PORT itself belongs to torch's own store);
///  - otherwise, on one host: rank 0 creates an id and publishes it in a file named after the job id.
Status launchUniqueId(const LaunchInfo& info, UniqueId* id);
/// Removes the file rendezvous of rank 0 once every rank has joined (no-op elsewhere).
void removeRendezvousFile(const LaunchInfo& info);

}  // namespace chorus::bootstrap
