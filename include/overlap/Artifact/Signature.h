//===- Signature.h - The contract of a compiled program ---------*- C++ -*-===//
//
// What the compiler writes into a compiled program and every loader reads
// back: the entry's signature (arguments, results, grids, target) and its
// text form, the NUL-terminated constant `overlap_entry_signature`. Plain
// C++17, no MLIR, no LLVM and no runtime: the compiler (which embeds it)
// and the loader (which parses it) both link this library
// (Overlap::Artifact), and neither needs the other.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_ARTIFACT_SIGNATURE_H
#define OVERLAP_ARTIFACT_SIGNATURE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlap {
namespace artifact {

//===----------------------------------------------------------------------===//
// Signature
//===----------------------------------------------------------------------===//

/// The element types of a buffer a runner fills, reads and compares: the
/// floats, and MLIR's signless integers (i1 stored one per byte, as LLVM
/// stores it).
enum class Elem { F32, F16, BF16, F64, I1, I8, I16, I32, I64 };

/// "f32", "f16", "bf16", "f64", "i1", "i8", "i16", "i32" or "i64".
const char *elemName(Elem elem);
/// Bytes of one element.
size_t elemSize(Elem elem);
/// True for i1 .. i64.
inline bool isInteger(Elem elem) {
  return elem == Elem::I1 || elem == Elem::I8 || elem == Elem::I16 ||
         elem == Elem::I32 || elem == Elem::I64;
}

/// One argument or result of the entry function as the host sees it: a
/// contiguous row-major buffer of a static shape.
struct BufferSpec {
  std::string name;
  Elem elem = Elem::F32;
  std::vector<int64_t> shape;
  /// An argument whose contents after the run are an output: a memref the
  /// entry takes and writes (destination passing). A tensor argument is a
  /// value, an input only: the compiled program may reuse its buffer (for a
  /// result or an accumulator updated in place, as bufferization decides),
  /// so what it holds after the run is not part of what the program
  /// promises and two correct programs may leave it differently.
  bool inout = false;

  /// A size is kDynamicExtent ("?"): a run sets it from its inputs
  /// (arguments) or the returned descriptor (results), run::resolveShapes.
  bool isDynamic() const;
  /// The product of the sizes (of a resolved spec: not isDynamic()).
  int64_t numElements() const;
  size_t elemBytes() const { return elemSize(elem); }
  /// Its size in bytes, or nullopt when that or its element count does not
  /// fit in int64_t (parseSignature refuses such a buffer, so numElements()
  /// of a parsed signature does not overflow).
  std::optional<uint64_t> checkedBytes() const;
  /// "256x512xf32" (a rank-0 buffer: "f32").
  std::string typeString() const;
};

/// A `shard.grid` of the module: the program splits its process groups from
/// the world's ranks by grid coordinates, so it runs on size() ranks.
/// Extents may be dynamic (kDynamicExtent, "?" in the text): the run sets
/// the first one to the number of ranks over size(), and any other to 1
/// (docs/forms.md, "Grids with dynamic extents").
struct GridSpec {
  std::string name;
  std::vector<int64_t> shape;
  /// The product of the extents; with dynamic ones, of the static ones.
  int64_t size() const;
  /// size(), or nullopt above kMaxGridSize or on overflow.
  std::optional<int64_t> checkedSize() const;
  bool isDynamic() const;
  /// Whether `ranks` ranks make this grid (its size, or a multiple of it
  /// when an extent is dynamic).
  bool fits(int64_t ranks) const;
};

/// A grid extent set at run time ("?").
constexpr int64_t kDynamicExtent = -1;

/// The most devices a grid of a signature may have (a rank count is an
/// int).
constexpr int64_t kMaxGridSize = 1 << 20;

/// The entry function of a compiled program and what running it needs.
struct Signature {
  /// The function's name and the symbol of its C interface.
  std::string name;
  std::string symbol;
  /// The runtime backend it was compiled for: "host" or "cuda".
  std::string target = "host";
  /// How it was compiled (informational: not part of the comparison).
  std::string strategy;
  std::string profile;
  std::vector<GridSpec> grids;
  std::vector<BufferSpec> args;
  std::vector<BufferSpec> results;
};

/// "_mlir_ciface_" + name.
std::string cInterfaceSymbol(std::string_view name);

/// The symbol of the NUL-terminated signature text that overlap-compile
/// embeds in objects and shared libraries.
constexpr const char *kSignatureSymbol = "overlap_entry_signature";

/// The text form of `sig`, one item per line:
///   overlap-entry-signature 1
///   entry mlp
///   symbol _mlir_ciface_mlp
///   target host
///   strategy uniform:4
///   profile h100-nvlink-datasheet
///   grid tp 4
///   arg arg0 256x512xf32
///   arg arg1 256x512xf32 inout
///   result result0 256x512xf32
std::string formatSignature(const Signature &sig);

/// Parses formatSignature's text; on failure returns false and says why
/// (with the line) in `error`.
bool parseSignature(std::string_view text, Signature &sig, std::string &error);

/// What differs between two signatures in what a run depends on (target,
/// grid sizes, argument and result types); empty when they agree. The
/// names of the entry, the grids and the compile options may differ, and
/// so may the targets without `compareTargets` (the two run on different
/// backends, each checked against its own).
std::string signatureDifference(const Signature &program,
                                const Signature &reference,
                                bool compareTargets = true);

/// Every grid must fit the number of ranks (GridSpec::fits). On failure
/// returns false with the message in `error`.
bool checkRanks(const Signature &sig, int ranks, std::string &error);


/// The rank count the signature asks for: the size of its first static
/// grid; with dynamic grids only, the first one with its dynamic extent 2
/// (the smallest that communicates); 1 without a grid.
int defaultRanks(const Signature &sig);

} // namespace artifact
} // namespace overlap

#endif // OVERLAP_ARTIFACT_SIGNATURE_H
