//===- Signature.cpp - The contract of a compiled program -------*- C++ -*-===//
//
// Signatures, their text form and the checks a loader makes of them.
//
//===----------------------------------------------------------------------===//

#include "overlap/Artifact/Signature.h"
#include "overlap/Support/EnumNames.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <limits>

namespace overlap {
namespace artifact {

//===----------------------------------------------------------------------===//
// Signature
//===----------------------------------------------------------------------===//

namespace {
/// An element type, its name and its size in bytes (a row of an
/// EnumNames.h table).
struct ElemInfo {
  Elem value;
  const char *name;
  size_t size;
};
} // namespace

/// Every element type, in Elem's order.
static const ElemInfo elemInfos[] = {
    {Elem::F32, "f32", 4}, {Elem::F16, "f16", 2}, {Elem::BF16, "bf16", 2},
    {Elem::F64, "f64", 8}, {Elem::I1, "i1", 1},   {Elem::I8, "i8", 1},
    {Elem::I16, "i16", 2}, {Elem::I32, "i32", 4}, {Elem::I64, "i64", 8}};

const char *elemName(Elem elem) { return nameOf(elemInfos, elem); }

size_t elemSize(Elem elem) {
  const ElemInfo *info = rowOf(elemInfos, elem);
  return info ? info->size : 0;
}

static std::optional<Elem> parseElem(std::string_view name) {
  return valueOf(elemInfos, name);
}

bool BufferSpec::isDynamic() const {
  return std::find(shape.begin(), shape.end(), kDynamicExtent) != shape.end();
}

int64_t BufferSpec::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::optional<uint64_t> BufferSpec::checkedBytes() const {
  // The strides of a descriptor are products of the extents after a dim, a
  // zero extent included (0x4294967296x4294967296 has no element but a
  // stride of 2^64): the product of the non-zero extents must fit too.
  uint64_t n = elemBytes();
  bool empty = false;
  for (int64_t d : shape) {
    if (d == kDynamicExtent)
      continue; // checked when a run gives it (run::resolveShapes)
    if (d < 0)
      return std::nullopt;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n))
      return std::nullopt;
  }
  // numElements() and the descriptors' strides are int64_t.
  if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return empty ? 0 : n;
}

/// "2x4": the extents joined by 'x'.
static std::string joinShape(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? "x" : "") + (shape[d] == kDynamicExtent
                               ? std::string("?")
                               : std::to_string(shape[d]));
  return s;
}

std::string BufferSpec::typeString() const {
  std::string dims = joinShape(shape);
  return (dims.empty() ? "" : dims + "x") + elemName(elem);
}

std::optional<int64_t> GridSpec::checkedSize() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d == kDynamicExtent)
      continue;
    if (d <= 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxGridSize)
      return std::nullopt;
  }
  return n;
}

int64_t GridSpec::size() const {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d != kDynamicExtent)
      n *= d;
  return n;
}

bool GridSpec::isDynamic() const {
  return std::find(shape.begin(), shape.end(), kDynamicExtent) != shape.end();
}

bool GridSpec::fits(int64_t ranks) const {
  return isDynamic() ? ranks > 0 && ranks % size() == 0 : ranks == size();
}

std::string cInterfaceSymbol(std::string_view name) {
  return "_mlir_ciface_" + std::string(name);
}

static constexpr const char *kSignatureHeader = "overlap-entry-signature 1";

std::string formatSignature(const Signature &sig) {
  std::string text = std::string(kSignatureHeader) + "\n";
  text += "entry " + sig.name + "\n";
  text += "symbol " + sig.symbol + "\n";
  text += "target " + sig.target + "\n";
  if (!sig.strategy.empty())
    text += "strategy " + sig.strategy + "\n";
  if (!sig.profile.empty())
    text += "profile " + sig.profile + "\n";
  for (const GridSpec &grid : sig.grids) {
    std::string dims = joinShape(grid.shape);
    text += "grid " + grid.name + (dims.empty() ? "" : " " + dims) + "\n";
  }
  for (const BufferSpec &spec : sig.args)
    text += "arg " + spec.name + " " + spec.typeString() +
            (spec.inout ? " inout" : "") + "\n";
  for (const BufferSpec &spec : sig.results)
    text += "result " + spec.name + " " + spec.typeString() + "\n";
  return text;
}

/// Splits `text` at each `sep`.
static std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

/// An extent in decimal: positive for a grid, >= 0 for a buffer.
static bool parseExtent(std::string_view text, int64_t &value,
                        bool allowZero = false) {
  if (text.empty() || text.size() > 18)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  return value > 0 || allowZero;
}

/// "256x512xf32" or "f32".
static bool parseType(std::string_view text, BufferSpec &spec) {
  std::vector<std::string_view> parts = split(text, 'x');
  spec.shape.clear();
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int64_t extent = kDynamicExtent; // "?": the caller's inputs give it
    if (parts[i] != "?" && !parseExtent(parts[i], extent, /*allowZero=*/true))
      return false;
    spec.shape.push_back(extent);
  }
  std::optional<Elem> elem = parseElem(parts.back());
  if (!elem)
    return false;
  spec.elem = *elem;
  return true;
}

bool parseSignature(std::string_view text, Signature &sig, std::string &error) {
  sig = Signature();
  sig.target.clear();
  size_t lineNo = 0;
  auto fail = [&](const std::string &why) {
    error = "line " + std::to_string(lineNo) + ": " + why;
    return false;
  };
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++lineNo;
    if (lineNo == 1) {
      if (line != kSignatureHeader)
        return fail("expected '" + std::string(kSignatureHeader) +
                    "', found '" + std::string(line) + "'");
      continue;
    }
    std::vector<std::string_view> item = split(line, ' ');
    std::string_view key = item[0];
    std::string rest(line.substr(std::min(line.size(), key.size() + 1)));
    auto one = [&](std::string &field) {
      if (item.size() < 2 || rest.empty())
        return fail("'" + std::string(key) + "' needs a value");
      if (!field.empty())
        return fail("'" + std::string(key) + "' appears twice");
      field = rest;
      return true;
    };
    if (key == "entry" || key == "symbol" || key == "target") {
      if (item.size() != 2)
        return fail("'" + std::string(key) + "' takes one word");
      if (!one(key == "entry"    ? sig.name
               : key == "symbol" ? sig.symbol
                                 : sig.target))
        return false;
    } else if (key == "strategy" || key == "profile") {
      if (!one(key == "strategy" ? sig.strategy : sig.profile))
        return false;
    } else if (key == "grid") {
      if (item.size() != 2 && item.size() != 3)
        return fail("expected 'grid NAME SHAPE'");
      GridSpec grid;
      grid.name = std::string(item[1]);
      if (item.size() == 3) {
        for (std::string_view extent : split(item[2], 'x')) {
          int64_t value = kDynamicExtent;
          if (extent != "?" && !parseExtent(extent, value))
            return fail("bad grid shape '" + std::string(item[2]) + "'");
          grid.shape.push_back(value);
        }
      }
      if (!grid.checkedSize())
        return fail("grid '" + grid.name + "' has more than " +
                    std::to_string(kMaxGridSize) + " devices");
      sig.grids.push_back(std::move(grid));
    } else if (key == "arg" || key == "result") {
      BufferSpec spec;
      spec.inout = key == "arg" && item.size() == 4 && item[3] == "inout";
      if (item.size() != size_t(3 + spec.inout) || !parseType(item[2], spec))
        return fail("expected '" + std::string(key) + " NAME TYPE" +
                    (key == "arg" ? " [inout]" : "") +
                    "' with a shape (? for a dynamic size) and an element type "
                    "of " +
                    joinNames(elemInfos, "", " or ") + ", found '" +
                    std::string(line) + "'");
      spec.name = std::string(item[1]);
      // Caught here, the sizes of a parsed signature are safe to multiply.
      if (!spec.checkedBytes())
        return fail(std::string(key) + " " + spec.name + " (" +
                    spec.typeString() +
                    ") has more than 2^63 bytes: its size overflows");
      (key == "arg" ? sig.args : sig.results).push_back(std::move(spec));
    } else if (!line.empty()) {
      return fail("unknown item '" + std::string(key) + "'");
    }
  }
  if (lineNo == 0)
    return fail("empty signature");
  if (sig.name.empty() || sig.symbol.empty() || sig.target.empty())
    return fail("'entry', 'symbol' and 'target' are required");
  if (sig.target != "host" && sig.target != "cuda")
    return fail("target '" + sig.target + "' is not host or cuda");
  return true;
}

std::string signatureDifference(const Signature &program,
                                const Signature &reference,
                                bool compareTargets) {
  std::string diff;
  auto add = [&](const std::string &what, const std::string &inProgram,
                 const std::string &inReference) {
    diff += (diff.empty() ? "" : "; ") + what + " " + inProgram +
            " in the program, " + inReference + " in the reference";
  };
  if (compareTargets && program.target != reference.target)
    add("target", program.target, reference.target);
  // The distinct sizes: what the ranks must number (a program lists only
  // the grids its entry uses, which may be fewer than its module has).
  auto sizes = [](const Signature &sig) {
    std::vector<std::string> out;
    for (const GridSpec &grid : sig.grids)
      out.push_back(grid.isDynamic()
                        ? "a multiple of " + std::to_string(grid.size())
                        : std::to_string(grid.size()));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    std::string s;
    for (const std::string &size : out)
      s += (s.empty() ? "" : ", ") + size;
    return s.empty() ? std::string("none") : s;
  };
  // An entry that names no grid runs on any number of ranks.
  if (!program.grids.empty() && !reference.grids.empty() &&
      sizes(program) != sizes(reference))
    add("grid sizes", sizes(program), sizes(reference));
  auto buffers = [&](const char *what, const std::vector<BufferSpec> &got,
                     const std::vector<BufferSpec> &want) {
    if (got.size() != want.size()) {
      add(std::string(what) + ":", std::to_string(got.size()),
          std::to_string(want.size()));
      return;
    }
    auto text = [](const BufferSpec &spec) {
      return spec.typeString() + (spec.inout ? " inout" : "");
    };
    for (size_t i = 0; i < got.size(); ++i)
      if (text(got[i]) != text(want[i]))
        add(got[i].name + ":", text(got[i]), text(want[i]));
  };
  buffers("arguments", program.args, reference.args);
  buffers("results", program.results, reference.results);
  return diff;
}

bool checkRanks(const Signature &sig, int ranks, std::string &error) {
  for (const GridSpec &grid : sig.grids) {
    if (grid.fits(ranks))
      continue;
    if (grid.isDynamic())
      error = "--ranks " + std::to_string(ranks) + " but grid @" + grid.name +
              " (" + joinShape(grid.shape) + ") has its static extents on " +
              std::to_string(grid.size()) +
              " devices; the number of ranks must be a multiple of that";
    else
      error = "--ranks " + std::to_string(ranks) + " but grid @" + grid.name +
              " has " + std::to_string(grid.size()) +
              " devices; the number of ranks must equal the grid's size";
    return false;
  }
  return true;
}

int defaultRanks(const Signature &sig) {
  for (const GridSpec &grid : sig.grids)
    if (!grid.isDynamic())
      return static_cast<int>(grid.size());
  return sig.grids.empty() ? 1 : static_cast<int>(2 * sig.grids.front().size());
}

} // namespace artifact
} // namespace overlap
