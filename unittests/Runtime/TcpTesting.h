//===- TcpTesting.h - Forked ranks over loopback for TCP tests --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_UNITTESTS_RUNTIME_TCPTESTING_H
#define OVERLAP_UNITTESTS_RUNTIME_TCPTESTING_H

#include "ProcessBackend.h"

#include <cstdlib>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace overlap {
namespace testing {

inline const overlap_mpi_transport &tcp() { return *process::tcpTransport(); }

/// A loopback port that was free a moment ago.
inline int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

/// The text of transport error `rc`.
inline std::string text(int rc) {
  char buffer[512];
  tcp().errorString(rc, buffer, sizeof buffer);
  return buffer;
}

/// In a forked process: the variables that make it rank `rank` of `size`,
/// meeting rank 0 at `port` of this host within `timeoutMs`.
inline void setRankVariables(int rank, int size, int port,
                             const char *timeoutMs) {
  ::setenv("OVERLAP_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("OVERLAP_WORLD_SIZE", std::to_string(size).c_str(), 1);
  ::setenv("OVERLAP_BOOTSTRAP_KEY", "tcp-test", 1);
  ::setenv("OVERLAP_BOOTSTRAP_TIMEOUT_MS", timeoutMs, 1);
  ::setenv("OVERLAP_PROCESS_ADDR",
           ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
}

} // namespace testing
} // namespace overlap

#endif // OVERLAP_UNITTESTS_RUNTIME_TCPTESTING_H
