//===- PrivateDirectory.cpp - The rendezvous directory ----------*- C++ -*-===//
//
// Part of the Overlap project: the default rendezvous directory of the
// bootstrap (Bootstrap.h), this user's only.
//
//===----------------------------------------------------------------------===//

#include "overlap/Runtime/Bootstrap.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

std::string overlap::bootstrap::notThisUsersAlone(const struct stat &st,
                                                  const std::string &risk) {
  if (st.st_uid != ::geteuid())
    return "belongs to uid " + std::to_string(st.st_uid) +
           ", not to this user (uid " + std::to_string(::geteuid()) + ")";
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return std::string("has mode ") + mode + ": " + risk;
  }
  return "";
}

std::string overlap::bootstrap::defaultRendezvousDirectory() {
  return "/tmp/overlap-" + std::to_string(::geteuid());
}

bool overlap::bootstrap::ensurePrivateDirectory(const std::string &directory,
                                                bool create,
                                                std::string &error) {
  const std::string what = "the rendezvous directory " + directory;
  const std::string fix = " (remove it, or set OVERLAP_BOOTSTRAP_DIR to a "
                          "directory of the job's user)";
  if (create && ::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
    error = "cannot make " + what + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::lstat(directory.c_str(), &st) != 0) {
    error = "cannot stat " + what + ": " + std::strerror(errno);
    return false;
  }
  std::string why;
  if (S_ISLNK(st.st_mode))
    why = "is a symbolic link";
  else if (!S_ISDIR(st.st_mode))
    why = "is not a directory";
  else
    why = notThisUsersAlone(st, "other users could write in it (expected "
                                "0700)");
  if (why.empty())
    return true;
  error = what + " " + why + fix;
  return false;
}
