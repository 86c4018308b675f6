// Identity of this host and this process, used to pick a transport per peer pair.
#pragma once

#include <cstdint>
#include <string>

namespace chorus::bootstrap {

/// CHORUS_HOST_ID when set, else hostname + kernel boot id (two containers sharing a hostname stay distinct).
std::string hostId();
/// hostname + kernel boot id, whatever CHORUS_HOST_ID says: several simulated hosts on one machine share its cores.
std::string machineId();
/// A random number drawn once per process: equal tokens mean the same process.
uint64_t processToken();

}  // namespace chorus::bootstrap
