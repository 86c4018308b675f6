#include "transports/ib/device_selection.hpp"

#include <sstream>

namespace chorus::transport::ib {

bool HcaFilter::accepts(const std::string& device, int port) const {
  if (entries.empty()) return true;
  bool listed = false;
  for (const HcaEntry& e : entries) {
    const bool nameMatches = exact ? device == e.device : device.compare(0, e.device.size(), e.device) == 0;
    listed = listed || (nameMatches && (e.port == 0 || e.port == port));
  }
  return exclude ? !listed : listed;
}

Status parseHcaFilter(const std::string& text, HcaFilter* out) {
  *out = HcaFilter{};
  size_t at = 0;
  while (at < text.size() && (text[at] == '^' || text[at] == '=')) {
    (text[at] == '^' ? out->exclude : out->exact) = true;
    ++at;
  }
  std::stringstream list(text.substr(at));
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    HcaEntry e;
    const size_t colon = item.find(':');
    e.device = item.substr(0, colon);
    if (colon != std::string::npos) {
      const std::string port = item.substr(colon + 1);
      if (port.empty() || port.size() > 3 || port.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(port) == 0) {
        return invalidUsage("NCCL_IB_HCA entry '" + item + "': the port after ':' must be a number from 1");
      }
      e.port = std::stoi(port);
    }
    if (e.device.empty()) return invalidUsage("NCCL_IB_HCA entry '" + item + "' names no device");
    out->entries.push_back(e);
  }
  return Status::ok();
}

double portGbps(int activeWidth, int activeSpeed) {
  int lanes = 0;
  switch (activeWidth) {
    case 1:
      lanes = 1;
      break;
    case 2:
      lanes = 4;
      break;
    case 4:
      lanes = 8;
      break;
    case 8:
      lanes = 12;
      break;
    case 16:
      lanes = 2;
      break;
    default:
      return 0;
  }
  double lane = 0;  // Gbit/s of one lane: SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR
  switch (activeSpeed) {
    case 1:
      lane = 2.5;
      break;
    case 2:
      lane = 5;
      break;
    case 4:
      lane = 10;
      break;
    case 8:
      lane = 10;
      break;
    case 16:
      lane = 14;
      break;
    case 32:
      lane = 25;
      break;
    case 64:
      lane = 50;
      break;
    case 128:
      lane = 100;
      break;
    case 256:
      lane = 200;
      break;
    default:
      return 0;
  }
  return lanes * lane;
}

}  // namespace chorus::transport::ib
