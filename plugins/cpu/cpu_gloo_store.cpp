// Gloo's rendezvous store over the host store, and the listen address.
#include "cpu_gloo_store.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace oar_cpu {

namespace {
std::string option(const OarHostApi* host, const char* name) {
  if (host->struct_size < OAR_STRUCT_SIZE(OarHostApi, get_option) || !host->get_option) return {};
  const char* v = host->get_option(host->host, name);
  return v ? std::string(v) : std::string();
}

std::string ipv4_of_interface(const std::string& name) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  std::string ip;
  for (ifaddrs* a = list; a && ip.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || name != a->ifa_name) continue;
    char buf[INET_ADDRSTRLEN] = {};
    auto* sin = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf)) ip = buf;
  }
  freeifaddrs(list);
  return ip;
}

// The source address of a route to `host` (no packet is sent: a UDP
// connect only picks the route).
std::string route_source_to(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || !res) return {};
  std::string ip;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char buf[INET_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf))
      ip = buf;
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  return ip;
}
}  // namespace

void HostStore::set(const std::string& key, const std::vector<char>& data) {
  OarStatus st = host_->store_set(store_, key.c_str(), data.data(), data.size());
  if (st != OAR_OK)
    throw HostStoreError(
        "the host store failed to write '" + key + "' (status " + std::to_string(st) + ")",
        st == OAR_ERROR_TIMEOUT);
}

std::vector<char> HostStore::get(const std::string& key) {
  void* value = nullptr;
  uint64_t size = 0;
  OarStatus st = host_->store_get(store_, key.c_str(), timeout_.count(), &value, &size);
  if (st != OAR_OK)
    throw HostStoreError("the host store has no key '" + key + "' after waiting " +
                             std::to_string(timeout_.count()) + " ms (status " +
                             std::to_string(st) + ")",
                         st == OAR_ERROR_TIMEOUT);
  std::vector<char> out(static_cast<char*>(value), static_cast<char*>(value) + size);
  if (value) host_->store_free(value);
  return out;
}

void HostStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const std::string& key : keys) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int64_t ms = left.count() > 0 ? left.count() : 1;
    OarStatus st = host_->store_wait(store_, key.c_str(), ms);
    if (st != OAR_OK)
      throw HostStoreError("rendezvous key '" + key + "' did not appear in the host store within " +
                               std::to_string(timeout.count()) +
                               " ms: the rank that writes it did not arrive (status " +
                               std::to_string(st) + ")",
                           st == OAR_ERROR_TIMEOUT);
  }
}

ListenAddress choose_listen_address(const OarHostApi* host) {
  for (const char* name : {"GLOO_SOCKET_IFNAME", "OAR_GLOO_IFNAME"}) {
    std::string iface = option(host, name);
    if (iface.empty()) continue;
    std::string ip = ipv4_of_interface(iface);
    if (ip.empty())
      throw std::runtime_error(std::string(name) + "='" + iface +
                               "' names no interface with an IPv4 address on this machine");
    return {ip, std::string("interface ") + iface + " (" + name + ")"};
  }
  std::string master = option(host, "MASTER_ADDR");
  if (!master.empty()) {
    std::string ip = route_source_to(master);
    if (!ip.empty()) return {ip, "the local address of the route to MASTER_ADDR=" + master};
  }
  return {"127.0.0.1", "loopback (no GLOO_SOCKET_IFNAME, OAR_GLOO_IFNAME or MASTER_ADDR)"};
}

}  // namespace oar_cpu
