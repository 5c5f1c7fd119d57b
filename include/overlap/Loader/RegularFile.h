//===- RegularFile.h - Read a file that must be a regular one ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What the loader reads whole (a program library, an .npz of inputs) must be
// a regular file: a FIFO would block the read for ever, /dev/zero would
// grow the buffer without end, a directory reads as an error only after
// opening it. The loader and the runtime (its MPI transport) read so.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_REGULARFILE_H
#define OVERLAP_LOADER_REGULARFILE_H

#include <string>
#include <sys/types.h>
#include <vector>

namespace overlap {
namespace exec {

/// "a FIFO", "a directory", "a character device", ...: what a path that is
/// not a regular file is.
std::string fileKind(mode_t mode);

/// Reads the whole of the regular file `path` into `bytes`. A path that is
/// not one fails with "<kind>, not <expected>" (e.g. "a FIFO, not an .npz
/// archive") without opening it for long: it is opened without waiting for
/// a writer and checked again once open. Other failures give strerror.
bool readRegularFile(const std::string &path, std::string &bytes,
                     const std::string &expected, std::string &error);
bool readRegularFile(const std::string &path, std::vector<char> &bytes,
                     const std::string &expected, std::string &error);

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_REGULARFILE_H
