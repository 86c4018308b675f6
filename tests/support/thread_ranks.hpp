// Runs a body on one thread per rank of a communicator of N ranks made in this process.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "chorus/communicator.hpp"

namespace chorus::testing {

inline void onThreads(int n, const std::function<void(Communicator&)>& body) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(n, &comms).isOk());
  std::vector<std::thread> threads;
  for (auto& c : comms) threads.emplace_back([&body, &c] { body(*c); });
  for (auto& t : threads) t.join();
}

}  // namespace chorus::testing
