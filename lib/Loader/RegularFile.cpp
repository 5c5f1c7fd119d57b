//===- RegularFile.cpp - Read a file that must be a regular one -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/RegularFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace overlap;

std::string exec::fileKind(mode_t mode) {
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

template <typename Bytes>
static bool readInto(const std::string &path, Bytes &bytes,
                     const std::string &expected, std::string &error) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    error = std::strerror(errno);
    return false;
  }
  if (!S_ISREG(info.st_mode)) {
    error = exec::fileKind(info.st_mode) + ", not " + expected;
    return false;
  }
  // O_NONBLOCK: should the path become a FIFO after the stat, opening it
  // does not wait for a writer (and fstat below refuses it).
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  bool ok = fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  if (!ok)
    error = exec::fileKind(info.st_mode) + ", not " + expected;
  bytes.clear();
  if (ok)
    bytes.reserve(static_cast<size_t>(info.st_size));
  char chunk[1 << 16];
  while (ok) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = std::strerror(errno);
      ok = false;
    }
    if (n <= 0)
      break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  close(fd);
  return ok;
}

bool exec::readRegularFile(const std::string &path, std::string &bytes,
                           const std::string &expected, std::string &error) {
  return readInto(path, bytes, expected, error);
}

bool exec::readRegularFile(const std::string &path, std::vector<char> &bytes,
                           const std::string &expected, std::string &error) {
  return readInto(path, bytes, expected, error);
}
