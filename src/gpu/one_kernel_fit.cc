#include "gpu/one_kernel_fit.hpp"

#include "gpu/one_kernel_step.hpp"

namespace chorus::gpu {

bool runsAsOneKernel(const algo::peer::Plan& plan, int nranks, size_t elementBytes, size_t oneKernelBytes) {
  using algo::peer::Combine;
  using algo::peer::Phase;
  if (plan.steps.size() != 1 || nranks > kOneKernelRanks) return false;
  const std::vector<Phase>& phases = plan.steps[0].phases;
  if (phases.empty() || phases.size() > 2 || !phases[0].combines.empty()) return false;
  for (const Phase& p : phases)
    if (p.moves.size() > static_cast<size_t>(kOneKernelMoves)) return false;
  if (phases.size() == 2) {
    // A reduction runs beside its phase's moves in the kernel (not after them, as its own kernel would), so it
    // takes a phase of its own.
    const std::vector<Combine>& combines = phases[1].combines;
    if (combines.size() > 1 || (combines.size() == 1 && (combines[0].to.size() > 2 || !phases[1].moves.empty())))
      return false;
  }
  return algo::peer::movedBytes(plan.steps[0], nranks, elementBytes) <= oneKernelBytes;
}

}  // namespace chorus::gpu
