// The rendezvous root, fed any bytes by a client: it must drop what is malformed and keep serving. A rank stays
// connected throughout (the root would end when its last rank leaves), and after every input it must still answer
// that rank, so a root wedged or killed by an input fails the target. Inputs whose first byte is odd start with a
// valid hello, so that the requests behind it are explored too.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "bootstrap/socket.hpp"
#include "bootstrap/store.hpp"

namespace {

constexpr uint64_t kSecret = 0x5eC7e75eC7e75eC7ull;

struct Root {
  chorus::net::Endpoint at;
  std::unique_ptr<chorus::bootstrap::StoreClient> rank;
  // Under a namespace no input can name (it is drawn at start): inputs may set, fail or wait on any key they write.
  std::string alive = std::to_string(std::random_device{}()) + std::to_string(std::random_device{}()) + "/alive";
  Root() {
    if (!chorus::bootstrap::startStoreServer(htonl(INADDR_LOOPBACK), 0, kSecret, &at).isOk()) abort();
    if (!chorus::bootstrap::StoreClient::connect(at, kSecret, chorus::Deadline::after(5), &rank).isOk()) abort();
    if (!rank->set(alive, "1").isOk()) abort();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Root root;
  int fd = -1;
  if (!chorus::net::connectTo(root.at, chorus::Deadline::after(5), &fd).isOk()) abort();
  std::string bytes;
  if (size > 0 && (data[0] & 1)) {
    chorus::bootstrap::wire::Hello hello{chorus::bootstrap::wire::kHelloMagic, kSecret};
    bytes.assign(reinterpret_cast<const char*>(&hello), sizeof(hello));
  }
  bytes.append(reinterpret_cast<const char*>(data), size);
  (void)chorus::net::sendAll(fd, bytes.data(), bytes.size(), chorus::Deadline::after(1));
  shutdown(fd, SHUT_WR);
  chorus::net::closeFd(fd);
  std::string value;
  if (!root.rank->get(root.alive, &value, chorus::Deadline::after(5)).isOk() || value != "1") abort();
  return 0;
}
