//===- PipelineFuzzer.cpp - Fuzz overlap-pipeline on generated IR -*- C++
//-*-===//
//
// Input: bytes that choose a small module the way users write one (docs
// and test/Dialect/Overlap/Transforms): a grid, then one to three
// independent patterns over function arguments (matmul + shard.all_reduce,
// matmul + shard.reduce_scatter, shard.all_gather + matmul, Overlap's
// fused ops with or without a plan, a chain of linalg.matmul,
// overlap.chain_matmul), with shapes from small to past the Planner's
// limits, element types, grid axes and reductions; and the options of
// `overlap-pipeline` (profile, strategy, ranks, fast-memory,
// move-collectives). The module is parsed with the tools' registry, the
// pipeline runs, and with a last choice the later stages of overlap-to-llvm
// (bufferize, schedule, runtime, llvm) follow, as overlap-compile runs
// them. Diagnostics are fine; a crash, a sanitizer report or a pass that
// succeeds and leaves IR that does not verify is a finding (MlirFuzz.h).
//
// The text is made so that it mostly parses: the interesting inputs are
// valid IR that the passes get wrong. fuzz/PipelineTextFuzzer.cpp mutates
// IR text instead.
//
//===----------------------------------------------------------------------===//

#include "MlirFuzz.h"

#include "overlap/Compiler/Options.h"
#include "overlap/Compiler/Stages.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace ::overlap::fuzz;

namespace {

/// Writes one module from the choices in `fdp`.
class ModuleWriter {
public:
  explicit ModuleWriter(FuzzedDataProvider &fdp) : fdp(fdp) {}

  std::string write();

private:
  int64_t dim();
  std::string elementType();
  std::string overlapElementType();
  std::string accumulatorType(llvm::StringRef element);
  static std::string tensor(int64_t rows, int64_t cols, llvm::StringRef type);
  std::string argument(const std::string &type);
  std::string value(const std::string &name);
  std::string zeroFilled(int64_t rows, int64_t cols, llvm::StringRef type);
  std::string output(int64_t rows, int64_t cols, llvm::StringRef type);
  std::string matmul(const std::string &a, const std::string &b,
                     const std::string &c, int64_t m, int64_t n, int64_t k,
                     llvm::StringRef element, llvm::StringRef acc);
  std::string reduction();
  std::string planAttr(int64_t rows, int64_t unit);
  void result(const std::string &name, const std::string &type);

  void matmulThenCollective(bool scatter);
  void gatherThenMatmul();
  void fused();
  void linalgChain();
  void chainOp();

  FuzzedDataProvider &fdp;
  /// The grid's axes, and the chosen grid_axes with their group size
  /// (ShapedType::kDynamic spelled as -1 when an axis is `?`).
  std::vector<int64_t> gridShape;
  std::string gridAxes;
  int64_t group = 1;

  std::vector<std::string> args, body, results, resultTypes;
  unsigned counter = 0;
};

} // namespace

int64_t ModuleWriter::dim() {
  switch (fdp.ConsumeIntegralInRange<int>(0, 11)) {
  case 0:
    return 1;
  case 1:
    return fdp.ConsumeIntegralInRange<int64_t>(2, 16);
  case 2:
    return 64;
  case 3:
    return 128;
  case 4:
    return 512;
  case 5:
    return 1000;
  case 6:
    return 4096;
  case 7:
    return 8192;
  case 8:
    // Past the Planner's size limit (2^31).
    return fdp.ConsumeBool() ? (int64_t(1) << 31) + 1 : int64_t(1) << 40;
  default:
    return fdp.ConsumeIntegralInRange<int64_t>(1, 1 << 16);
  }
}

std::string ModuleWriter::elementType() {
  static const char *types[] = {"f16",  "bf16", "f32", "f16",
                                "bf16", "f32",  "f64", "i32"};
  return types[fdp.ConsumeIntegralInRange<int>(0, 7)];
}

/// What Overlap's ops take (f16, bf16, f32); linalg.matmul takes more,
/// which the passes must leave alone.
std::string ModuleWriter::overlapElementType() {
  static const char *types[] = {"f16", "bf16", "f32"};
  return types[fdp.ConsumeIntegralInRange<int>(0, 2)];
}

std::string ModuleWriter::accumulatorType(llvm::StringRef element) {
  if ((element == "f16" || element == "bf16") && fdp.ConsumeBool())
    return "f32";
  return element.str();
}

/// A negative `rows` is a dynamic size (`?`): the rows a collective gathers
/// or scatters over a grid axis of unknown size.
std::string ModuleWriter::tensor(int64_t rows, int64_t cols,
                                 llvm::StringRef type) {
  if (rows < 0)
    return llvm::formatv("tensor<?x{0}x{1}>", cols, type).str();
  return llvm::formatv("tensor<{0}x{1}x{2}>", rows, cols, type).str();
}

std::string ModuleWriter::argument(const std::string &type) {
  std::string name = "%arg" + std::to_string(args.size());
  args.push_back(name + ": " + type);
  return name;
}

std::string ModuleWriter::value(const std::string &name) {
  return "%" + name + std::to_string(counter++);
}

std::string ModuleWriter::zeroFilled(int64_t rows, int64_t cols,
                                     llvm::StringRef type) {
  std::string t = tensor(rows, cols, type);
  std::string zero = value("zero"), empty = value("empty"),
              fill = value("fill");
  bool isInt = type.starts_with("i");
  body.push_back(llvm::formatv("  {0} = arith.constant {1} : {2}", zero,
                               isInt ? "0" : "0.0", type));
  body.push_back(llvm::formatv("  {0} = tensor.empty() : {1}", empty, t));
  body.push_back(llvm::formatv("  {0} = linalg.fill ins({1} : {2}) outs({3} "
                               ": {4}) -> {4}",
                               fill, zero, type, empty, t));
  return fill;
}

std::string ModuleWriter::output(int64_t rows, int64_t cols,
                                 llvm::StringRef type) {
  if (fdp.ConsumeBool())
    return zeroFilled(rows, cols, type);
  return argument(tensor(rows, cols, type));
}

std::string ModuleWriter::matmul(const std::string &a, const std::string &b,
                                 const std::string &c, int64_t m, int64_t n,
                                 int64_t k, llvm::StringRef element,
                                 llvm::StringRef acc) {
  std::string p = value("p");
  body.push_back(llvm::formatv(
      "  {0} = linalg.matmul ins({1}, {2} : {3}, {4}) outs({5} : {6}) -> {6}",
      p, a, b, tensor(m, k, element), tensor(k, n, element), c,
      tensor(m, n, acc)));
  return p;
}

std::string ModuleWriter::reduction() {
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
  case 0:
    return " reduction = max";
  case 1:
    return " reduction = min";
  default:
    return "";
  }
}

/// A plan for `rows` rows in multiples of `unit` (the group size, for the
/// collectives whose tiles take an equal share of every rank's block):
/// mostly tiles that sum to `rows`, sometimes not.
std::string ModuleWriter::planAttr(int64_t rows, int64_t unit) {
  if (unit < 1 || rows % unit != 0)
    unit = 1;
  llvm::SmallVector<int64_t> tiles;
  int64_t left = rows / unit;
  unsigned count = fdp.ConsumeIntegralInRange<unsigned>(1, 8);
  for (unsigned i = 0; i + 1 < count && left > 1; ++i) {
    int64_t t = fdp.ConsumeIntegralInRange<int64_t>(1, left - 1);
    tiles.push_back(t * unit);
    left -= t;
  }
  tiles.push_back(left * unit);
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0)
    tiles.back() += fdp.ConsumeIntegralInRange<int64_t>(-2, 2);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << " {overlap.plan = #overlap.plan<tiles = [";
  llvm::interleaveComma(tiles, os);
  os << "], strategy = \"fuzz\", bound = "
     << (fdp.ConsumeBool() ? "comm" : "compute")
     << ", predicted_us = 1.5, serial_us = 2.0>}";
  return text;
}

void ModuleWriter::result(const std::string &name, const std::string &type) {
  results.push_back(name);
  resultTypes.push_back(type);
}

void ModuleWriter::matmulThenCollective(bool scatter) {
  int64_t m = dim(), n = dim(), k = dim();
  if (scatter && group > 0 && fdp.ConsumeIntegralInRange<int>(0, 7) != 0)
    m = m * group;
  std::string element = elementType(), acc = accumulatorType(element);
  std::string a = argument(tensor(m, k, element));
  std::string b = argument(tensor(k, n, element));
  std::string p = matmul(a, b, output(m, n, acc), m, n, k, element, acc);
  std::string r = value("r");
  if (!scatter) {
    body.push_back(llvm::formatv(
        "  {0} = shard.all_reduce {1} on @grid grid_axes = {2}{3} : {4} -> {4}",
        r, p, gridAxes, reduction(), tensor(m, n, acc)));
    return result(r, tensor(m, n, acc));
  }
  int64_t rows = group < 0 ? -1 : m % group == 0 ? m / group : m;
  body.push_back(llvm::formatv("  {0} = shard.reduce_scatter {1} on @grid "
                               "grid_axes = {2}{3} scatter_axis = 0 : {4} -> "
                               "{5}",
                               r, p, gridAxes, reduction(), tensor(m, n, acc),
                               tensor(rows, n, acc)));
  result(r, tensor(rows, n, acc));
}

void ModuleWriter::gatherThenMatmul() {
  int64_t local = dim(), n = dim(), k = dim();
  int64_t m = group > 0 ? local * group : -1;
  std::string element = elementType(), acc = accumulatorType(element);
  std::string x = argument(tensor(local, k, element));
  std::string g = value("g");
  body.push_back(llvm::formatv("  {0} = shard.all_gather {1} on @grid "
                               "grid_axes = {2} gather_axis = 0 : {3} -> {4}",
                               g, x, gridAxes, tensor(local, k, element),
                               tensor(m, k, element)));
  std::string b = argument(tensor(k, n, element));
  // A dynamic output cannot be made with tensor.empty() without its size.
  std::string c = m < 0 ? argument(tensor(m, n, acc)) : output(m, n, acc);
  result(matmul(g, b, c, m, n, k, element, acc), tensor(m, n, acc));
}

void ModuleWriter::fused() {
  int kind = fdp.ConsumeIntegralInRange<int>(0, 2);
  int64_t m = dim(), n = dim(), k = dim();
  if (kind != 0 && group > 0)
    m = m * group;
  std::string element = overlapElementType(), acc = accumulatorType(element);
  int64_t g = group > 0 ? group : 1;
  int64_t aRows = kind == 2 ? m / g : m;
  int64_t outRows = kind == 1 ? m / g : m;
  std::string a = argument(tensor(aRows, k, element));
  std::string b = argument(tensor(k, n, element));
  std::string c = argument(tensor(m, n, acc));
  std::string plan = fdp.ConsumeBool() ? planAttr(m, kind == 0 ? 1 : g) : "";
  static const char *names[] = {"matmul_all_reduce", "matmul_reduce_scatter",
                                "all_gather_matmul"};
  std::string r = value("f");
  body.push_back(llvm::formatv(
      "  {0} = overlap.{1} {2}, {3}, {4} on @grid grid_axes = {5}{6} : {7}, "
      "{8}, {9} -> {10}",
      r, names[kind], a, b, c, gridAxes, plan, tensor(aRows, k, element),
      tensor(k, n, element), tensor(m, n, acc), tensor(outRows, n, acc)));
  result(r, tensor(outRows, n, acc));
}

void ModuleWriter::linalgChain() {
  unsigned count = fdp.ConsumeIntegralInRange<unsigned>(2, 5);
  std::vector<int64_t> dims;
  for (unsigned i = 0; i <= count; ++i)
    dims.push_back(dim());
  std::string element = fdp.ConsumeBool() ? "f32" : elementType();
  std::string acc = element;
  std::string current = argument(tensor(dims[0], dims[1], element));
  for (unsigned i = 1; i < count; ++i) {
    std::string next = argument(tensor(dims[i], dims[i + 1], element));
    current = matmul(current, next, zeroFilled(dims[0], dims[i + 1], acc),
                     dims[0], dims[i + 1], dims[i], element, acc);
  }
  if (fdp.ConsumeBool()) {
    // A sum all-reduce that move-collectives may move into the chain.
    std::string r = value("r");
    body.push_back(llvm::formatv(
        "  {0} = shard.all_reduce {1} on @grid grid_axes = {2} : {3} -> {3}", r,
        current, gridAxes, tensor(dims[0], dims[count], acc)));
    current = r;
  }
  result(current, tensor(dims[0], dims[count], acc));
}

void ModuleWriter::chainOp() {
  unsigned count = fdp.ConsumeIntegralInRange<unsigned>(2, 6);
  std::vector<int64_t> dims;
  for (unsigned i = 0; i <= count; ++i)
    dims.push_back(dim());
  std::string element = overlapElementType();
  std::vector<std::string> operands, types;
  for (unsigned i = 0; i < count; ++i) {
    types.push_back(tensor(dims[i], dims[i + 1], element));
    operands.push_back(argument(types.back()));
  }
  std::string r = value("chain");
  std::string resultType = tensor(dims[0], dims[count], element);
  body.push_back(llvm::formatv("  {0} = overlap.chain_matmul {1} : {2} -> {3}",
                               r, llvm::join(operands, ", "),
                               llvm::join(types, ", "), resultType));
  result(r, resultType);
}

std::string ModuleWriter::write() {
  // The grid: one or two axes, `?` sometimes; grid_axes a non-empty subset.
  unsigned rank = fdp.ConsumeIntegralInRange<unsigned>(1, 2);
  static const int64_t sizes[] = {1, 2, 3, 4, 8, 16, -1};
  for (unsigned i = 0; i < rank; ++i)
    gridShape.push_back(sizes[fdp.ConsumeIntegralInRange<int>(0, 6)]);
  static const char *axesChoices[] = {"[0]", "[1]", "[0, 1]", "[1, 0]"};
  int axesChoice = rank == 1 ? 0 : fdp.ConsumeIntegralInRange<int>(0, 3);
  gridAxes = axesChoices[axesChoice];
  group = 1;
  for (int axis : {0, 1}) {
    bool used = axesChoice == 2 || axesChoice == 3 || axesChoice == axis;
    if (used && size_t(axis) < gridShape.size())
      group = gridShape[axis] < 0 || group < 0 ? -1 : group * gridShape[axis];
  }

  unsigned patterns = fdp.ConsumeIntegralInRange<unsigned>(1, 3);
  for (unsigned i = 0; i < patterns; ++i) {
    switch (fdp.ConsumeIntegralInRange<int>(0, 6)) {
    case 0:
      matmulThenCollective(/*scatter=*/false);
      break;
    case 1:
      matmulThenCollective(/*scatter=*/true);
      break;
    case 2:
      gatherThenMatmul();
      break;
    case 3:
    case 4:
      fused();
      break;
    case 5:
      linalgChain();
      break;
    default:
      chainOp();
      break;
    }
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "shard.grid @grid(shape = ";
  llvm::interleave(
      gridShape, os,
      [&](int64_t s) {
        if (s < 0)
          os << "?";
        else
          os << s;
      },
      "x");
  os << ")\nfunc.func @f(" << llvm::join(args, ", ") << ") -> ("
     << llvm::join(resultTypes, ", ") << ") {\n";
  for (const std::string &line : body)
    os << line << "\n";
  os << "  return " << llvm::join(results, ", ") << " : "
     << llvm::join(resultTypes, ", ") << "\n}\n";
  return text;
}

static std::string pipelineOptions(FuzzedDataProvider &fdp) {
  const std::vector<std::string> &profiles = shippedProfileNames();
  std::string profile =
      profiles[fdp.ConsumeIntegralInRange<size_t>(0, profiles.size() - 1)];
  std::string strategy;
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
  case 0:
    strategy = "none";
    break;
  case 1:
    strategy = "uniform:" + std::to_string(fdp.ConsumeIntegralInRange<int>(
                                1, fdp.ConsumeBool() ? 8 : 5000));
    break;
  case 2:
    strategy = "mc2";
    break;
  case 3:
    strategy = "optimal";
    break;
  case 4:
    strategy = "waves";
    break;
  case 5:
    strategy = "ficco";
    break;
  default:
    strategy = "auto";
    break;
  }
  std::string text = "profile=" + profile + " strategy=" + strategy;
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0)
    text += " ranks=" + std::to_string(fdp.ConsumeIntegralInRange<int>(1, 64));
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    static const char *memories[] = {"1", "64", "4096", "49152", "1e9"};
    text += std::string(" fast-memory=") +
            memories[fdp.ConsumeIntegralInRange<int>(0, 4)];
  }
  if (fdp.ConsumeBool())
    text += " move-collectives=true";
  return text;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  std::string options = pipelineOptions(fdp);
  // How far to go: the tensor stage alone (overlap-pipeline), or on to the
  // bufferize, schedule, runtime or llvm stage of overlap-to-llvm.
  unsigned lastStage = fdp.ConsumeIntegralInRange<unsigned>(0, 4);
  std::string text = ModuleWriter(fdp).write();

  FuzzContext fc;
  mlir::OwningOpRef<mlir::ModuleOp> module = fc.parse(text);
  if (!module)
    return 0;
  std::string pipeline = "builtin.module(overlap-pipeline{" + options + "}";
  std::vector<mlir::overlap::compiler::Stage> stages =
      mlir::overlap::compiler::buildStages({});
  for (unsigned i = 1; i <= lastStage && i < stages.size(); ++i)
    pipeline += ", " + stages[i].text();
  pipeline += ")";
  (void)fc.run(*module, pipeline);
  return 0;
}
