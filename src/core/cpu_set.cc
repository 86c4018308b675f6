#include "core/cpu_set.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

namespace chorus {
namespace {

constexpr int kCpuLimit = 1 << 20;

// The number at the front of `text` (decimal digits only), taken off it; false where there is none or it is too large.
bool takeNumber(std::string_view* text, int* out) {
  const char* begin = text->data();
  const char* end = begin + text->size();
  if (begin == end || *begin < '0' || *begin > '9') return false;
  auto [ptr, ec] = std::from_chars(begin, end, *out);
  if (ec != std::errc() || *out >= kCpuLimit) return false;
  text->remove_prefix(static_cast<size_t>(ptr - begin));
  return true;
}

}  // namespace

std::vector<int> allowedCpus() {
  // The mask must cover every CPU the kernel knows; grow it until sched_getaffinity stops saying it is too small.
  for (int size = 1024; size <= kCpuLimit; size *= 2) {
    cpu_set_t* set = CPU_ALLOC(size);
    if (set == nullptr) break;
    const size_t bytes = CPU_ALLOC_SIZE(size);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(0, bytes, set) == 0) {
      std::vector<int> cpus;
      for (int cpu = 0; cpu < size; ++cpu)
        if (CPU_ISSET_S(cpu, bytes, set)) cpus.push_back(cpu);
      CPU_FREE(set);
      if (!cpus.empty()) return cpus;
      break;
    }
    const bool tooSmall = errno == EINVAL;
    CPU_FREE(set);
    if (!tooSmall) break;
  }
  std::vector<int> online(static_cast<size_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))));
  for (size_t i = 0; i < online.size(); ++i) online[i] = static_cast<int>(i);
  return online;
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t last = i;
    while (last + 1 < cpus.size() && cpus[last + 1] == cpus[last] + 1) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (last - i >= 2) {
      out += '-' + std::to_string(cpus[last]);
    } else if (last > i) {
      out += ',' + std::to_string(cpus[last]);
    }
    i = last + 1;
  }
  return out;
}

bool parseCpuList(std::string_view text, std::vector<int>* cpus) {
  std::vector<int> out;
  while (true) {
    int first = 0, last = 0;
    if (!takeNumber(&text, &first)) return false;
    last = first;
    if (!text.empty() && text.front() == '-') {
      text.remove_prefix(1);
      if (!takeNumber(&text, &last) || last < first) return false;
    }
    if (!out.empty() && first <= out.back()) return false;
    for (int cpu = first; cpu <= last; ++cpu) out.push_back(cpu);
    if (text.empty()) break;
    if (text.front() != ',') return false;
    text.remove_prefix(1);
  }
  *cpus = std::move(out);
  return true;
}

}  // namespace chorus
