//===- SessionAgreement.h - Ranks as processes agree first -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Under mpirun every process runs overlap-exec with its own options. When
// they disagree (--iters 3 on two ranks and 1 on two, --ref on some only,
// other --inputs) the job used to hang in a collective one side never
// reaches, or to write mixed rows with exit status 0. Before anything
// collective, each process describes its session as "key<TAB>value" lines
// (SessionFacts); rank 0 gathers them and compares (describeDisagreement).
// Pure: no runtime, no MPI.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_SESSIONAGREEMENT_H
#define OVERLAP_LOADER_SESSIONAGREEMENT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace overlap {
namespace exec {

/// One process's session, in a fixed order of keys (the options' names).
class SessionFacts {
public:
  void add(const std::string &key, const std::string &value);
  /// A long value (a signature, the inputs' bytes) by its FNV-1a hash.
  void addHashed(const std::string &key, const void *data, size_t bytes);
  /// "fnv1a <16 hex digits>" of `bytes` bytes at `data`.
  static std::string hashText(const void *data, size_t bytes);
  const std::string &text() const { return text_; }

private:
  std::string text_;
};

/// FNV-1a (64 bits) of `bytes` bytes at `data`, continuing from `hash`.
uint64_t fnv1a(const void *data, size_t bytes,
               uint64_t hash = 0xcbf29ce484222325ULL);

/// "rank 3" or "ranks 0, 1, 2": how the errors of processes name them.
std::string rankList(const std::vector<int> &ranks);

/// Rank r's facts are `facts[r]` (SessionFacts::text; empty: the rank
/// failed before it could say, and is not compared). "" when every rank
/// that said anything agrees; else one line per key that differs, e.g.
/// "--iters: 3 on ranks 0, 1; 1 on ranks 2, 3".
std::string describeDisagreement(const std::vector<std::string> &facts);

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_SESSIONAGREEMENT_H
