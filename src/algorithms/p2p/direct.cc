// Send and Recv: the byte count travels first, so a count or type mismatch between the two sides is reported as
// an error instead of corrupting the stream.
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan directSend(const CollShape& s) {
  Plan p;
  const size_t bytes = s.count * s.elemSize;
  p.add({StepKind::kSendSize, s.root, {}, {}, bytes});
  p.add({StepKind::kSend, s.root, {BufferKind::kSend, 0}, {}, bytes});
  return p;
}

Plan directRecv(const CollShape& s) {
  Plan p;
  const size_t bytes = s.count * s.elemSize;
  p.add({StepKind::kRecvSize, s.root, {}, {}, bytes});
  p.add({StepKind::kRecv, s.root, {}, {BufferKind::kRecv, 0}, bytes});
  return p;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(send_direct, "direct", CollType::kSend, directSend, nullptr);
CHORUS_REGISTER_ALGORITHM(recv_direct, "direct", CollType::kRecv, directRecv, nullptr);

}  // namespace chorus::algo
