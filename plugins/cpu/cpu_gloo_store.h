// Gloo's rendezvous store over the host's key-value store, and the choice of
// the address this rank's Gloo TCP device listens on (cpu_collectives.cpp).
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "oar/plugin_api.h"

namespace oar_cpu {

/// A failure of the host store seen through HostStore; `timeout` is true
/// when a key did not appear in time (the comm then reports OAR_ERROR_TIMEOUT).
struct HostStoreError : std::runtime_error {
  HostStoreError(const std::string& message, bool timeout)
      : std::runtime_error(message), timeout(timeout) {}
  bool timeout;
};

/// gloo::rendezvous::Store over OarHostApi.store_set/get/wait/free. Every
/// read waits at most `timeout` (the communicator's), and throws
/// HostStoreError naming the key otherwise. Not owned: the host's store
/// outlives comm_init, the only time Gloo uses it.
class HostStore final : public gloo::rendezvous::Store {
 public:
  HostStore(const OarHostApi* host, OarStore_t store, std::chrono::milliseconds timeout)
      : host_(host), store_(store), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  const OarHostApi* host_;  // not owned
  OarStore_t store_;        // not owned
  std::chrono::milliseconds timeout_;
};

/// The IPv4 address this rank's Gloo device binds to, and why (for the log).
/// Order: option GLOO_SOCKET_IFNAME or OAR_GLOO_IFNAME (an interface name:
/// its IPv4 address); else the local address the kernel routes MASTER_ADDR
/// through (UDP connect + getsockname, no packet sent); else 127.0.0.1.
/// Throws std::runtime_error when a named interface has no IPv4 address.
struct ListenAddress {
  std::string ip;
  std::string reason;
};
ListenAddress choose_listen_address(const OarHostApi* host);

}  // namespace oar_cpu
