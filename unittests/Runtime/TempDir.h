//===- TempDir.h - A temporary directory for runtime tests ------*- C++ -*-===//
//
// The bootstrap tests and the CUDA launch tests both need a fresh directory
// for rendezvous files, removed with its files at the end of the test.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_UNITTESTS_RUNTIME_TEMPDIR_H
#define OVERLAP_UNITTESTS_RUNTIME_TEMPDIR_H

#include "gtest/gtest.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace overlap {
namespace testing {

class TempDir {
public:
  explicit TempDir(const char *prefix = "overlap-test") {
    std::string pattern = std::string("/tmp/") + prefix + "-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    const char *made = mkdtemp(buffer.data());
    EXPECT_NE(made, nullptr) << std::strerror(errno);
    path_ = made ? made : "/tmp";
  }
  ~TempDir() {
    for (const std::string &name : files())
      unlink((path_ + "/" + name).c_str());
    rmdir(path_.c_str());
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }

  /// The names of the files in the directory (not "." and "..").
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR *dir = opendir(path_.c_str())) {
      while (dirent *entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..")
          out.push_back(name);
      }
      closedir(dir);
    }
    return out;
  }

private:
  std::string path_;
};

} // namespace testing
} // namespace overlap

#endif // OVERLAP_UNITTESTS_RUNTIME_TEMPDIR_H
