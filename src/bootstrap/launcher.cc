#include "bootstrap/launcher.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "bootstrap/settings.hpp"
#include "core/deadline.hpp"

namespace chorus::bootstrap {
namespace {

bool readInt(const char* name, int* out) {
  const char* v = getenv(name);
  if (!v || !*v) return false;
  *out = atoi(v);
  return true;
}

std::string env(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

std::string rendezvousPath(const LaunchInfo& info) {
  std::string safe;
  for (char c : info.jobId) safe += isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return "/tmp/chorus-" + safe + ".id";
}

}  // namespace

bool detectLauncher(LaunchInfo* info) {
  LaunchInfo l;
  if (readInt("OMPI_COMM_WORLD_RANK", &l.rank) && readInt("OMPI_COMM_WORLD_SIZE", &l.size)) {
    readInt("OMPI_COMM_WORLD_LOCAL_RANK", &l.localRank);
    l.launcher = "openmpi";
    l.jobId = env("OMPI_MCA_ess_base_jobid") + env("OMPI_MCA_orte_ess_jobid") + env("PMIX_NAMESPACE");
  } else if (readInt("RANK", &l.rank) && readInt("WORLD_SIZE", &l.size)) {
    readInt("LOCAL_RANK", &l.localRank);
    l.launcher = "torchrun";
    l.jobId = env("TORCHELASTIC_RUN_ID");
  } else if (readInt("SLURM_PROCID", &l.rank) && readInt("SLURM_NTASKS", &l.size)) {
    readInt("SLURM_LOCALID", &l.localRank);
    l.launcher = "slurm";
    l.jobId = env("SLURM_JOB_ID") + "." + env("SLURM_STEP_ID");
  } else if (readInt("PMI_RANK", &l.rank) && readInt("PMI_SIZE", &l.size)) {
    l.launcher = "pmi";
    l.jobId = env("PMI_JOBID");
  } else {
    return false;
  }
  *info = l;
  return true;
}

Status launchUniqueId(const LaunchInfo& info, UniqueId* id) {
  if (!settings()[kCommId].empty()) return UniqueId::fromAddress(settings()[kCommId], id);
  if (info.launcher == "torchrun" && !env("MASTER_ADDR").empty() && !env("MASTER_PORT").empty()) {
    int port = atoi(env("MASTER_PORT").c_str()) + 1;
    return UniqueId::fromAddress(env("MASTER_ADDR") + ":" + std::to_string(port), id);
  }
  if (info.jobId.empty()) {
    return invalidUsage("launched by " + (info.launcher.empty() ? std::string("an unknown launcher") : info.launcher) +
                        " without a job id: set CHORUS_COMM_ID=host:port for the rendezvous");
  }
  // Single-host fallback: rank 0 writes the id to a file; rename() makes it appear whole.
  const std::string path = rendezvousPath(info);
  if (info.rank == 0) {
    CHORUS_TRY(UniqueId::create(id));
    const std::string tmp = path + "." + std::to_string(getpid());
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(id->bytes.data(), static_cast<std::streamsize>(id->bytes.size()));
      if (!f) return systemError("cannot write the rendezvous file " + tmp);
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) return systemError("cannot publish " + path + ": " + strerror(errno));
    return Status::ok();
  }
  Deadline deadline = Deadline::fromSettings();
  while (true) {
    std::ifstream f(path, std::ios::binary);
    if (f.read(id->bytes.data(), static_cast<std::streamsize>(id->bytes.size()))) return Status::ok();
    if (deadline.expired()) {
      return timeoutError("rank 0 did not publish " + path + " (ranks on other hosts need CHORUS_COMM_ID=host:port)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void removeRendezvousFile(const LaunchInfo& info) {
  if (info.rank == 0 && !info.jobId.empty() && settings()[kCommId].empty()) unlink(rendezvousPath(info).c_str());
}

}  // namespace chorus::bootstrap
