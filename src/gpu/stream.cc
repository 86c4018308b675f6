#include "chorus/stream.hpp"

namespace chorus {
namespace {
thread_local void* tStream = nullptr;
}

void* currentStream() { return tStream; }

StreamScope::StreamScope(void* stream) : previous_(tStream) { tStream = stream; }
StreamScope::~StreamScope() { tStream = previous_; }

}  // namespace chorus
