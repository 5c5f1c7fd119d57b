//===- overlap-plan.cpp - Plan overlap without IR --------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Command-line front end of the Planner, for researchers and scripts:
//
//   overlap-plan matmul --collective all-reduce --m 4096 --n 8192 --k 3072
//       --ranks 8 [--dtype f16] [--profile mc2-example] [--strategy mc2]
//       [--json] [--trace out.json]
//   overlap-plan chain --dims 10,30,5,60 --fast-memory 65536 [--json]
//
// Exit status: 0 on success, 2 for a bad flag or value (one line naming the
// flag), 1 when the profile is malformed or cannot price the problem, or
// the --trace file cannot be written.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/ChainPlanner.h"
#include "overlap/Planner/Defaults.h"
#include "overlap/Planner/Json.h"
#include "overlap/Planner/Profile.h"
#include "overlap/Planner/TilePlanner.h"
#include "overlap/Support/Flags.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;
using namespace overlap::planner;

static const char *const kSynopsis = R"(usage:
  overlap-plan matmul --collective C --m M --n N --k K --ranks R [options]
  overlap-plan chain --dims P0,P1,...,Pn --fast-memory Mf [--json]
)";

/// matmul's flags (overlap/Support/Flags.h).
static std::vector<overlap::flags::Flag> matmulFlags() {
  return {
      {"--collective", "all-reduce|reduce-scatter|all-gather|all-to-all",
       "the collective fused with C = A.B (required)"},
      {"--side", "dispatch|combine",
       "all-to-all: dispatch the tokens A before the experts' GEMM (the "
       "default) or combine its output C"},
      {"--experts", "E",
       "all-to-all: experts per rank; M is then the rows all of a rank's "
       "experts compute (default 1)"},
      {"--m", "M", "rows of A and C (required)"},
      {"--n", "N", "columns of C (required)"},
      {"--k", "K", "the contraction (required)"},
      {"--dtype", "f16|bf16|f32", "element type (default f16)"},
      {"--ranks", "R", "ranks of the collective (required)"},
      {"--profile", "FILE|NAME",
       std::string("hardware profile (default ") + kDefaultProfile +
           "); NAME is looked up as <NAME>.json in the shipped profiles "
           "directory ($OVERLAP_PROFILES_DIR, else share/overlap/profiles "
           "of the installation)"},
      {"--strategy", "S",
       std::string(OVERLAP_STRATEGY_LIST) + " (default " + kDefaultStrategy +
           ")"},
      {"--json", "", "the plan as JSON"},
      {"--trace", "FILE", "write the plan's schedule as a Chrome trace"},
  };
}

/// chain's flags.
static std::vector<overlap::flags::Flag> chainFlags() {
  return {{"--dims", "P0,P1,...,Pn", "the chain's dimensions (required)"},
          {"--fast-memory", "Mf",
           "fast memory in elements for TEE-ACM2 fusion (required)"},
          {"--json", "", "the plan as JSON"}};
}

static std::string help() {
  return std::string(kSynopsis) +
         "\nmatmul plans the M-tiling of C = A.B fused with a collective:\n" +
         overlap::flags::formatHelp(matmulFlags()) +
         "\nchain orders a matrix chain (OP_Count) and decides TEE-ACM2 "
         "fusion per\nnode:\n" +
         overlap::flags::formatHelp(chainFlags());
}

namespace {
/// A command's flags, parsed: a usage error is one line, exit status 2.
struct Args : overlap::flags::Args {
  Args(const char *command, std::vector<overlap::flags::Flag> flags)
      : overlap::flags::Args(std::move(flags)), command(command) {}
  std::optional<std::string> parse(ArrayRef<const char *> argv) {
    std::vector<const char *> words(argv.begin(), argv.end());
    if (overlap::flags::Args::parse(int(words.size()), words.data(), 0))
      return std::nullopt;
    return command + ": " + error() + " (overlap-plan --help)";
  }
  std::string command;
};
} // namespace

static int usageError(const Twine &msg) {
  errs() << "overlap-plan: error: " << msg << "\n";
  return 2;
}

static int planError(Error err) {
  int code = 1;
  handleAllErrors(std::move(err), [&](const ErrorInfoBase &info) {
    if (info.convertToErrorCode() ==
        std::make_error_code(std::errc::invalid_argument))
      code = 2;
    errs() << "overlap-plan: error: " << info.message() << "\n";
  });
  return code;
}

static std::optional<int64_t> parsePositive(StringRef s) {
  int64_t v = 0;
  if (s.trim().getAsInteger(10, v) || v < 1)
    return std::nullopt;
  return v;
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

static void printPlanTable(const Plan &plan, const MatmulProblem &pb,
                           const Profile &profile, const CostModel &model,
                           raw_ostream &os) {
  os << formatv("problem     {0}  M={1} N={2} K={3} {4}, {5} ranks\n",
                describeCollective(pb), pb.m, pb.n, pb.k, toString(pb.dtype),
                pb.ranks);
  if (pb.experts > 1)
    os << formatv("experts     {0} per rank, each a GEMM of M/{0} rows\n",
                  pb.experts);
  os << formatv("profile     {0} ({1})\n", profile.name, profile.source);
  os << "gemm        " << model.describeGemmSource() << "\n";
  os << "comm        " << model.describeCommSource() << "\n";
  os << "strategy    " << plan.strategy
     << (plan.selectedBy.empty() ? "" : " (chosen by auto)") << "\n";
  if (!plan.note.empty())
    os << "note        " << plan.note << "\n";
  os << "bound       " << toString(plan.bound) << "\n";
  os << "layout      " << toString(plan.layout);
  if (plan.layout == TileOrder::RankMajor) {
    os << " (" << pb.ranks << " blocks, chunks";
    for (int64_t c : plan.chunks)
      os << " " << c;
    os << ")";
  }
  os << "\n";
  os << "tiles      ";
  for (int64_t t : plan.tiles)
    os << " " << t;
  os << formatv("  ({0} tiles)\n", plan.tiles.size());
  std::vector<int64_t> units = taskUnits(plan), rows = taskRows(plan);
  if (plan.layout == TileOrder::RankMajor) {
    // Each group's exchanges are fused into one call (one latency).
    os << "groups     ";
    for (int64_t u : units)
      os << " " << u;
    os << formatv("  ({0} exchange groups)\n", units.size());
  }
  os << formatv("predicted   {0,10:f1} us\n", plan.predictedUs);
  os << formatv("serial      {0,10:f1} us\n", plan.serialUs);
  os << formatv("ideal       {0,10:f1} us\n", plan.idealUs);
  if (plan.tailUs > 0)
    os << formatv("final sum   {0,10:f1} us (exposed, in predicted)\n",
                  plan.tailUs);
  os << formatv("efficiency  {0,10:f1} %\n", plan.efficiency * 100);
  if (plan.mc2) {
    const Mc2Details &d = *plan.mc2;
    os << formatv("mc2         a={0} b={1} c={2} -> m0={3}; balance "
                  "{4:f1} us -> m1={5}; count={6}, m1={7}, m0={8} ({9})\n",
                  d.a, d.b, d.c, d.shortRowsInitial, d.balanceUs,
                  d.longRowsInitial, d.count, d.longRows, d.shortRows,
                  d.shortFirst ? "short head" : "short tail");
  }
  if (plan.waves) {
    const WaveDetails &w = *plan.waves;
    os << formatv("waves       {0} output tiles, {1} per wave, {2} waves of "
                  "{3:f1} us; groups",
                  w.outputTiles, w.tilesPerWave, w.waves, w.waveUs);
    for (int64_t g : w.groups)
      os << " " << g;
    os << formatv("; {0} candidates ({1})\n", w.candidatesEvaluated,
                  w.exhaustive ? "exhaustive" : "pruned");
  }
  if (plan.ficco)
    os << "ficco       " << plan.ficco->schedule << ": " << plan.ficco->reason
       << "\n";
  if (plan.gemmCallsPerTile > 1)
    os << formatv("            {0} GEMM calls per tile\n",
                  plan.gemmCallsPerTile);

  const bool grouped = plan.layout == TileOrder::RankMajor;
  os << formatv("\n{0,4} {1,7} {2,10} {3,10} {4,21} {5,21}{6}\n",
                grouped ? "grp" : "tile", "rows", "gemm_us", "comm_us",
                "gemm start..end", "comm start..end", grouped ? "  units" : "");
  for (size_t i = 0; i < plan.computeUs.size(); ++i) {
    const SimTask &c = plan.timeline.task(Stream::Compute, i);
    const SimTask &m = plan.timeline.task(Stream::Comm, i);
    os << formatv("{0,4} {1,7} {2,10:f1} {3,10:f1} {4,10:f1}..{5,-9:f1} "
                  "{6,10:f1}..{7,-9:f1}",
                  i, rows[i], plan.computeUs[i], plan.commUs[i], c.startUs,
                  c.endUs, m.startUs, m.endUs);
    if (grouped)
      os << formatv("  {0}", units[i]);
    os << "\n";
  }
  if (!plan.candidates.empty()) {
    os << "\ncandidates\n";
    for (const Candidate &c : plan.candidates) {
      if (c.ok)
        os << formatv("  {0,-12} {1,10:f1} us  {2} tiles\n", c.strategy,
                      c.predictedUs, c.numTiles);
      else
        os << formatv("  {0,-12} skipped: {1}\n", c.strategy, c.note);
    }
  }
}

static int runMatmul(ArrayRef<const char *> argv) {
  Args args("matmul", matmulFlags());
  if (std::optional<std::string> e = args.parse(argv))
    return usageError(*e);

  for (const char *req : {"--collective", "--m", "--n", "--k", "--ranks"})
    if (!args.has(req))
      return usageError(formatv("{0}: required for 'matmul'", req));

  MatmulProblem pb;
  std::string coll = *args.value("--collective");
  std::optional<Collective> c = parseCollective(coll);
  if (!c)
    return usageError(formatv("--collective: expected all-reduce, "
                              "reduce-scatter, all-gather or all-to-all, "
                              "got '{0}'",
                              coll));
  pb.collective = *c;
  if (std::optional<std::string> side = args.value("--side")) {
    std::optional<AllToAllSide> s = parseAllToAllSide(*side);
    if (*c != Collective::AllToAll)
      return usageError("--side: only for --collective all-to-all");
    if (!s)
      return usageError(
          formatv("--side: expected dispatch or combine, got '{0}'", *side));
    pb.side = *s;
  }
  if (args.has("--experts") && *c != Collective::AllToAll)
    return usageError("--experts: only for --collective all-to-all");
  if (args.has("--experts")) {
    std::string v = *args.value("--experts");
    std::optional<int64_t> x = parsePositive(v);
    if (!x)
      return usageError(
          formatv("--experts: expected a positive integer, got '{0}'", v));
    pb.experts = *x;
  }
  for (auto [flag, field] : {std::pair<const char *, int64_t *>{"--m", &pb.m},
                             {"--n", &pb.n},
                             {"--k", &pb.k},
                             {"--ranks", &pb.ranks}}) {
    std::string v = *args.value(flag);
    std::optional<int64_t> x = parsePositive(v);
    if (!x)
      return usageError(
          formatv("{0}: expected a positive integer, got '{1}'", flag, v));
    *field = *x;
  }
  std::string dt = args.value("--dtype").value_or("f16");
  std::optional<DType> dtype = parseDType(dt);
  if (!dtype)
    return usageError(
        formatv("--dtype: expected f16, bf16 or f32, got '{0}'", dt));
  pb.dtype = *dtype;

  std::string profileArg = args.value("--profile").value_or(kDefaultProfile);
  std::string path = resolveProfilePath(profileArg, shippedProfilesDir());
  if (path.empty())
    return usageError("--profile: " + unknownProfileMessage(
                                          profileArg, shippedProfilesDir()));
  Expected<Profile> profile = loadProfile(path);
  if (!profile) {
    planError(profile.takeError());
    return 1;
  }
  Expected<CostModel> model = CostModel::create(*profile, pb);
  if (!model)
    return planError(model.takeError());

  std::string strategy = args.value("--strategy").value_or(kDefaultStrategy);
  Expected<Plan> plan = planTiles(*profile, pb, strategy);
  if (!plan)
    return planError(plan.takeError());

  if (std::optional<std::string> trace = args.value("--trace")) {
    std::error_code ec;
    raw_fd_ostream out(*trace, ec, sys::fs::OF_Text);
    if (ec)
      return usageError(
          formatv("--trace: cannot write '{0}': {1}", *trace, ec.message()));
    std::string title =
        formatv("overlap-plan {0} M={1} N={2} K={3} {4} x{5} ({6})",
                describeCollective(pb), pb.m, pb.n, pb.k, toString(pb.dtype),
                pb.ranks, plan->strategy);
    out << toChromeTrace(plan->timeline, taskRows(*plan), title);
    // A write error (a full disk) is an error here, not LLVM's fatal "IO
    // failure on output stream" when the stream is destroyed.
    out.close();
    if (std::error_code wec = out.error()) {
      out.clear_error();
      errs() << formatv("overlap-plan: error: --trace: cannot write '{0}': "
                        "{1}\n",
                        *trace, wec.message());
      return 1;
    }
  }
  if (args.has("--json"))
    writePlanJSON(*plan, pb, *profile, *model, outs());
  else
    printPlanTable(*plan, pb, *profile, *model, outs());
  return 0;
}

//===----------------------------------------------------------------------===//
// chain
//===----------------------------------------------------------------------===//

static int runChain(ArrayRef<const char *> argv) {
  Args args("chain", chainFlags());
  if (std::optional<std::string> e = args.parse(argv))
    return usageError(*e);
  for (const char *req : {"--dims", "--fast-memory"})
    if (!args.has(req))
      return usageError(formatv("{0}: required for 'chain'", req));

  std::vector<int64_t> dims;
  SmallVector<StringRef> parts;
  std::string dimsArg = *args.value("--dims");
  StringRef(dimsArg).split(parts, ',');
  for (StringRef p : parts) {
    std::optional<int64_t> d = parsePositive(p);
    if (!d)
      return usageError(formatv("--dims: expected comma-separated positive "
                                "integers, got '{0}'",
                                p));
    dims.push_back(*d);
  }
  if (dims.size() < 2)
    return usageError("--dims: expected at least two dimensions P0,P1");
  std::string mfArg = *args.value("--fast-memory");
  double mf = 0;
  if (StringRef(mfArg).trim().getAsDouble(mf) || !(mf >= 1) ||
      !std::isfinite(mf))
    return usageError(formatv("--fast-memory: expected a number of elements "
                              ">= 1, got '{0}'",
                              mfArg));

  Expected<ChainPlan> plan = planChain(dims, mf);
  if (!plan)
    return planError(plan.takeError());

  raw_ostream &os = outs();
  if (args.has("--json")) {
    writeChainPlanJSON(*plan, os);
    return 0;
  }
  os << "order           " << plan->order << "\n";
  os << "scalar mults    " << plan->scalarMults << "\n";
  os << "transfers       " << plan->totalTransfers << " (fast memory "
     << format("%g", mf) << " elements)\n\n";
  os << formatv("{0,-9} {1,14} {2,14} {3,14} {4,-9} {5,-10} {6,14}\n", "node",
                "no_fuse", "left_fuse", "right_fuse", "decision", "tile",
                "final");
  for (const ChainNode &n : plan->nodes) {
    auto opt = [](const std::optional<int64_t> &v) {
      return v ? std::to_string(*v) : std::string("-");
    };
    os << formatv("{0,-9} {1,14} {2,14} {3,14} {4,-9} {5,-10} {6,14}\n",
                  formatv("({0},{1})", n.i, n.j).str(), n.noFuse,
                  opt(n.leftFuse), opt(n.rightFuse), toString(n.decision),
                  formatv("{0}x{1}", n.tileX, n.tileY).str(), n.finalTransfers);
  }
  return 0;
}

int main(int argc, char **argv) {
  ArrayRef<const char *> args(const_cast<const char **>(argv), argc);
  if (argc < 2)
    return usageError("expected a command, 'matmul' or 'chain' (see "
                      "overlap-plan --help)");
  StringRef cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    outs() << help();
    return 0;
  }
  for (StringRef a : args.drop_front(2)) {
    if (a == "--help" || a == "-h") {
      outs() << help();
      return 0;
    }
  }
  if (cmd == "matmul")
    return runMatmul(args.drop_front(2));
  if (cmd == "chain")
    return runChain(args.drop_front(2));
  return usageError(formatv("unknown command '{0}': expected 'matmul' or "
                            "'chain'",
                            cmd));
}
