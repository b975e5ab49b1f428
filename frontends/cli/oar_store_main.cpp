// The `oar-store` command: serves a TCP rendezvous store for one job until
// SIGINT or SIGTERM, for jobs whose rank 0 should not serve it (Note [TCP
// store protocol], core/src/runtime/store_tcp.h).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "oar/error.h"
#include "oar/store.h"

namespace {

constexpr const char* kUsage = "usage: oar-store [--host H] [--port P] [--job-id J]\n";

constexpr const char* kHelp =
    "Serves the TCP key-value store the ranks of one job rendezvous through.\n"
    "\n"
    "  --host H      the name clients use for this machine, shown in messages\n"
    "                (default 127.0.0.1; the store listens on every IPv4 interface)\n"
    "  --port P      port to listen on (default 6170; 0 picks a free one)\n"
    "  --job-id J    job id every client must present (default \"default\")\n"
    "\n"
    "Prints \"oar-store: serving job J on H:P\" once it listens, then serves until\n"
    "SIGINT or SIGTERM. Exit status: 0 after a signal, 1 when the port cannot be\n"
    "bound, 2 for bad usage.\n";

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1", job_id = "default";
  int port = 6170;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage << "\n" << kHelp;
      return 0;
    }
    if ((arg == "--host" || arg == "--port" || arg == "--job-id") && i + 1 < argc) {
      std::string value = argv[++i];
      if (arg == "--host") host = value;
      if (arg == "--job-id") job_id = value;
      if (arg == "--port") {
        char* end = nullptr;
        long p = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || p < 0 || p > 65535) {
          std::cerr << "oar-store: --port takes a number in 0..65535, not '" << value << "'\n"
                    << kUsage;
          return 2;
        }
        port = static_cast<int>(p);
      }
      continue;
    }
    std::cerr << "oar-store: unknown or incomplete argument '" << arg << "'\n" << kUsage;
    return 2;
  }
  // Block the stop signals in every thread (the server's inherits the mask),
  // then wait for one here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    oar::TCPStore store(host, port, /*serve=*/true, job_id, /*timeout_ms=*/10000);
    std::cout << "oar-store: serving job " << job_id << " on " << host << ":" << store.port()
              << std::endl;
    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::cout << "oar-store: stopping on " << strsignal(signal) << std::endl;
  } catch (const oar::Error& e) {
    std::cerr << "oar-store: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
