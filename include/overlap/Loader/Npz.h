//===- Npz.h - NumPy .npz archives of a run's buffers -----------*- C++ -*-===//
//
// overlap-exec's --inputs and --outputs: the arrays of a .npz (a zip of
// .npy files, as np.savez and np.savez_compressed write them) read as a
// run's given inputs (run::GivenInputs), and a run's outputs written as one
// that numpy.load reads. No MLIR and no LLVM, like the rest of the loader;
// compressed entries (deflate) need zlib, which the build links when it
// finds it (OVERLAP_HAVE_ZLIB).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_NPZ_H
#define OVERLAP_LOADER_NPZ_H

#include "overlap/Loader/Run.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace overlap {
namespace npz {

/// One array of an archive, as its .npy header describes it.
struct Array {
  /// The entry's name without ".npy": np.savez's keyword.
  std::string name;
  /// The dtype as the header spells it ("<f4", "<u2", "|V2"; a structured
  /// dtype's list as written).
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  /// Everything after the header: `bytes` bytes at `data`, which points
  /// into the Archive that holds the array.
  const char *data = nullptr;
  size_t bytes = 0;
};

/// The arrays of a .npz, read into memory. Movable, not copyable: the
/// arrays point into its buffers.
struct Archive {
  std::string path;
  std::vector<Array> arrays;
  /// The file, and the entries that were compressed, inflated.
  std::vector<char> file;
  std::vector<std::vector<char>> inflated;

  Archive() = default;
  Archive(Archive &&) = default;
  Archive &operator=(Archive &&) = default;
  Archive(const Archive &) = delete;
  Archive &operator=(const Archive &) = delete;
};

/// Whether compressed entries (deflate, np.savez_compressed) can be read:
/// this build has zlib.
bool haveDeflate();

/// Reads the .npz at `path` through its zip central directory (zip64
/// records included): stored and, with zlib, deflated entries, their CRC-32
/// checked, each an .npy array of format 1.0, 2.0 or 3.0. An entry whose
/// size by the directory passes `maxEntryBytes`, or more than deflate can
/// produce from its compressed bytes, is refused before anything is
/// inflated. On failure returns false with a message that starts with the
/// path and names the entry.
bool readArchive(const std::string &path, Archive &archive, std::string &error,
                 uint64_t maxEntryBytes = UINT64_MAX);

/// readArchive on the bytes already in `archive.file` (`archive.path` names
/// them in messages): what the fuzzer calls.
bool parseArchive(Archive &archive, std::string &error,
                  uint64_t maxEntryBytes = UINT64_MAX);

/// A shape as Python prints a tuple: "(4, 256, 512)", "(512,)", "()".
std::string formatShape(const std::vector<int64_t> &shape);

/// Writes a .npz of stored (uncompressed) entries, one array at a time. A
/// regular file (or a new one) is written beside the target
/// ("<target>.part-<pid>-<n>") and renamed over it by finish(); that file
/// is removed when the writer is destroyed before finish() succeeds, and
/// the target keeps what it held. Any other target (a device, a FIFO,
/// /dev/stdout, a symbolic link), or one whose directory takes no new
/// file, is written in place and never removed.
class Writer {
public:
  Writer() = default;
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;
  ~Writer();

  bool open(const std::string &path, std::string &error);
  /// Appends the entry "NAME.npy": an .npy header of `descr` and `shape` in
  /// C order (format 1.0, or 2.0 when the header needs it), then the
  /// elements, the concatenation of `parts`.
  bool add(const std::string &name, const std::string &descr,
           const std::vector<int64_t> &shape,
           const std::vector<std::string_view> &parts, std::string &error);
  /// Writes the central directory; the archive is complete.
  bool finish(std::string &error);

  /// Zip64 records for every entry and the end of the archive, even where
  /// 32 bits suffice (Python's zipfile force_zip64), to test readers; they
  /// are written anyway where sizes or offsets need them (4 GiB and up).
  bool forceZip64 = false;

private:
  struct Entry {
    std::string name;
    uint32_t crc = 0;
    uint64_t size = 0;
    uint64_t offset = 0;
  };
  bool write(std::string_view bytes, std::string &error);

  std::string path;
  /// The file written beside `path`; empty when writing in place.
  std::string temp;
  std::FILE *file = nullptr;
  bool finished = false;
  uint64_t offset = 0;
  std::vector<Entry> entries;
};

/// A run's inputs read from a .npz: the archive and, [rank][argument],
/// pointers into it.
struct Inputs {
  Archive archive;
  run::GivenInputs given;
};

/// The dtypes an argument of `elem` accepts: "<f4" for f32, "<f2" for f16;
/// for bf16 a 2-byte type holding the bit patterns: "<u2", "<i2", "<V2"
/// (what numpy writes for ml_dtypes.bfloat16) or "|V2".
std::vector<std::string> acceptedDescrs(run::Elem elem);

/// Reads the .npz at `path` as the inputs of `sig` on `ranks` ranks: one
/// array per argument, named as in the signature ("arg0", ...), either of
/// shape [ranks, *shape] (rank r gets row r) or of the argument's shape
/// (every rank gets it), of an accepted dtype, in C order. A missing or
/// extra array, another shape or dtype is an error that names the file,
/// the array, what was expected and what was found.
bool readInputs(const std::string &path, const run::Signature &sig, int ranks,
                Inputs &inputs, std::string &error);

/// The most bytes an entry of an .npz of `sig`'s inputs on `ranks` ranks
/// can need: the largest argument on every rank, plus an .npy header (at
/// most 64 KiB in format 1.0, which numpy writes unless a header is
/// longer). readInputs refuses a larger entry before inflating it.
uint64_t maxInputEntryBytes(const run::Signature &sig, int ranks);

/// readInputs' checks of an archive already read into `inputs.archive`
/// (readArchive or parseArchive): sets `inputs.given`.
bool matchInputs(const run::Signature &sig, int ranks, Inputs &inputs,
                 std::string &error);

/// Writes every output of every rank ([rank][output], in run::outputViews'
/// order: results, then arguments) to `path` as stored entries named as in
/// the signature ("result0", ..., "arg0", ...), each of shape
/// [ranks, *shape] and dtype "<f4" (f32), "<f2" (f16) or "<u2" (bf16 bit
/// patterns). On failure returns false with the path and the reason.
bool writeOutputs(const std::string &path, const run::Signature &sig,
                  const std::vector<std::vector<run::OutputView>> &outputs,
                  std::string &error);

} // namespace npz
} // namespace overlap

#endif // OVERLAP_LOADER_NPZ_H
