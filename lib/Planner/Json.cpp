//===- Json.cpp - Plans as JSON documents -----------------------*- C++ -*-===//

#include "overlap/Planner/Json.h"

#include "overlap/Planner/Defaults.h"
#include "overlap/Planner/UserJson.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <system_error>

using namespace llvm;
using namespace overlap::planner;

/// Rounded for output: µs to the nanosecond.
static double r3(double v) { return std::round(v * 1000.0) / 1000.0; }

/// The plan document into `j`, in the order a reader expects (strategy and
/// tiles first, details last).
static void writePlan(json::OStream &j, const Plan &plan,
                      const MatmulProblem &pb, const Profile &profile,
                      const CostModel &model) {
  j.object([&] {
    j.attribute("strategy", plan.strategy);
    if (!plan.selectedBy.empty())
      j.attribute("selected_by", plan.selectedBy);
    if (!plan.note.empty())
      j.attribute("note", plan.note);
    j.attribute("layout", toString(plan.layout));
    j.attributeArray("tiles", [&] {
      for (int64_t t : plan.tiles)
        j.value(t);
    });
    if (plan.layout == TileOrder::RankMajor) {
      j.attributeArray("chunks", [&] {
        for (int64_t c : plan.chunks)
          j.value(c);
      });
      // The exchange groups (one fused exchange each), even all ones.
      j.attributeArray("groups", [&] {
        for (int64_t g : taskUnits(plan))
          j.value(g);
      });
      if (pb.collective == Collective::ReduceScatter)
        j.attribute("tail_us", r3(plan.tailUs));
    }
    j.attribute("bound", toString(plan.bound));
    j.attribute("predicted_us", r3(plan.predictedUs));
    j.attribute("serial_us", r3(plan.serialUs));
    j.attribute("ideal_us", r3(plan.idealUs));
    j.attribute("efficiency", std::round(plan.efficiency * 1e6) / 1e6);
    j.attribute("lower_bound_us", r3(plan.lowerBoundUs));
    j.attributeObject("problem", [&] {
      j.attribute("collective", toString(pb.collective));
      if (pb.collective == Collective::AllToAll) {
        j.attribute("side", toString(pb.side));
        j.attribute("experts", pb.experts);
      }
      j.attribute("m", pb.m);
      j.attribute("n", pb.n);
      j.attribute("k", pb.k);
      j.attribute("dtype", toString(pb.dtype));
      j.attribute("ranks", pb.ranks);
      if (pb.rowGroup > 1)
        j.attribute("row_group", pb.rowGroup);
      if (pb.computeCopyBytesPerRow > 0)
        j.attribute("compute_copy_bytes_per_row", pb.computeCopyBytesPerRow);
      if (pb.commCopyBytesPerRow > 0)
        j.attribute("comm_copy_bytes_per_row", pb.commCopyBytesPerRow);
    });
    j.attribute("profile", profile.name);
    j.attribute("gemm_source", model.describeGemmSource());
    j.attribute("tile_gemm_pricing", toString(model.getTileGemmPricing()));
    j.attribute("comm_source", model.describeCommSource());
    j.attribute("gemm_calls_per_tile", plan.gemmCallsPerTile);
    j.attribute("single_gemm_kernel", plan.singleGemmKernel);
    // One task per tile; for a rank-major plan one per exchange group, its
    // rows summed, with the first unit's step and chunk.
    std::vector<int64_t> units = taskUnits(plan), rows = taskRows(plan);
    j.attributeArray("tasks", [&] {
      int64_t firstUnit = 0;
      for (size_t i = 0; i < plan.computeUs.size(); ++i) {
        const SimTask &c = plan.timeline.task(Stream::Compute, i);
        const SimTask &m = plan.timeline.task(Stream::Comm, i);
        j.object([&] {
          j.attribute("tile", static_cast<int64_t>(i));
          j.attribute("rows", rows[i]);
          if (plan.layout == TileOrder::RankMajor && !plan.chunks.empty()) {
            // Steps in execution order (RankMajor.h).
            int64_t k = static_cast<int64_t>(plan.chunks.size());
            int64_t u = firstUnit, g = pb.ranks;
            int64_t step = pb.collective == Collective::ReduceScatter
                               ? (u / k + 1) % g
                               : u / k;
            j.attribute("step", step);
            j.attribute("chunk", u % k);
            j.attribute("first_unit", u);
            j.attribute("units", units[i]);
          }
          firstUnit += units[i];
          j.attribute("compute_us", r3(plan.computeUs[i]));
          j.attribute("comm_us", r3(plan.commUs[i]));
          j.attribute("compute_start_us", r3(c.startUs));
          j.attribute("compute_end_us", r3(c.endUs));
          j.attribute("comm_start_us", r3(m.startUs));
          j.attribute("comm_end_us", r3(m.endUs));
        });
      }
    });
    if (plan.mc2) {
      const Mc2Details &d = *plan.mc2;
      j.attributeObject("mc2", [&] {
        j.attribute("a", d.a);
        j.attribute("b", d.b);
        j.attribute("c", d.c);
        j.attribute("short_rows_initial", d.shortRowsInitial);
        j.attribute("balance_us", r3(d.balanceUs));
        j.attribute("long_rows_initial", d.longRowsInitial);
        j.attribute("count", d.count);
        j.attribute("long_rows", d.longRows);
        j.attribute("short_rows", d.shortRows);
        j.attribute("short_first", d.shortFirst);
      });
    }
    if (plan.waves) {
      const WaveDetails &w = *plan.waves;
      j.attributeObject("waves", [&] {
        j.attribute("output_tiles", w.outputTiles);
        j.attribute("tiles_per_wave", w.tilesPerWave);
        j.attribute("waves", w.waves);
        j.attribute("wave_us", r3(w.waveUs));
        j.attributeArray("groups", [&] {
          for (int64_t g : w.groups)
            j.value(g);
        });
        j.attribute("candidates_evaluated",
                    static_cast<int64_t>(w.candidatesEvaluated));
        j.attribute("search", w.exhaustive ? "exhaustive" : "pruned");
      });
    }
    if (plan.ficco) {
      const FiccoDetails &f = *plan.ficco;
      j.attributeObject("ficco", [&] {
        j.attribute("schedule", f.schedule);
        j.attribute("reason", f.reason);
        j.attribute("op_to_byte", r3(f.opToByte));
        j.attribute("memory_traffic_bytes", f.memoryTrafficBytes);
        j.attribute("score", std::round(f.score * 1e6) / 1e6);
      });
    }
    if (!plan.candidates.empty()) {
      j.attributeArray("candidates", [&] {
        for (const Candidate &c : plan.candidates) {
          j.object([&] {
            j.attribute("strategy", c.strategy);
            if (c.ok) {
              j.attribute("predicted_us", r3(c.predictedUs));
              j.attribute("tiles", static_cast<int64_t>(c.numTiles));
            } else {
              j.attribute("predicted_us", nullptr);
              j.attribute("skipped", c.note);
            }
          });
        }
      });
    }
  });
}

void overlap::planner::writePlanJSON(const Plan &plan, const MatmulProblem &pb,
                                     const Profile &profile,
                                     const CostModel &model, raw_ostream &os) {
  json::OStream j(os, 2);
  writePlan(j, plan, pb, profile, model);
  os << "\n";
}

json::Object overlap::planner::planToJSON(const Plan &plan,
                                          const MatmulProblem &pb,
                                          const Profile &profile,
                                          const CostModel &model) {
  // Written by the one writer and read back, rather than built a second
  // time: a json::Object forgets the document's field order, which the
  // printed document keeps. The text is ours, so it parses.
  std::string text;
  raw_string_ostream os(text);
  json::OStream j(os);
  writePlan(j, plan, pb, profile, model);
  json::Value value = cantFail(json::parse(text));
  return std::move(*value.getAsObject());
}

void overlap::planner::writeChainPlanJSON(const ChainPlan &chain,
                                          raw_ostream &os) {
  const ChainPlan *plan = &chain;
  json::OStream j(os, 2);
  j.object([&] {
    j.attribute("order", plan->order);
    j.attribute("scalar_mults", plan->scalarMults);
    j.attribute("total_transfers", plan->totalTransfers);
    j.attributeArray("nodes", [&] {
      for (const ChainNode &n : plan->nodes) {
        j.object([&] {
          j.attribute("i", n.i);
          j.attribute("j", n.j);
          j.attribute("k", n.k);
          j.attribute("no_fuse", n.noFuse);
          if (n.leftFuse)
            j.attribute("left_fuse", *n.leftFuse);
          else
            j.attribute("left_fuse", nullptr);
          if (n.rightFuse)
            j.attribute("right_fuse", *n.rightFuse);
          else
            j.attribute("right_fuse", nullptr);
          j.attribute("decision", toString(n.decision));
          j.attributeArray("tile", [&] {
            j.value(n.tileX);
            j.value(n.tileY);
          });
          j.attribute("final", n.finalTransfers);
        });
      }
    });
  });
  os << "\n";
}

static Error requestError(const Twine &message) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           "request: " + message);
}

/// The fields of each kind of request.
static constexpr StringLiteral kMatmulFields[] = {"kind",
                                                  "collective",
                                                  "side",
                                                  "experts",
                                                  "m",
                                                  "n",
                                                  "k",
                                                  "ranks",
                                                  "dtype",
                                                  "profile",
                                                  "strategy",
                                                  "row_group",
                                                  "compute_copy_bytes_per_row",
                                                  "comm_copy_bytes_per_row"};
static constexpr StringLiteral kChainFields[] = {"kind", "dims", "fast_memory"};

/// The field of `known` closest to the unknown `field`, or empty when none
/// is close enough to be a misspelling of it (at most half of its
/// characters edited: "dtpye" is "dtype", "x" is no "k").
static StringRef closestField(StringRef field, ArrayRef<StringLiteral> known) {
  if (field.size() > 64) // no misspelling of a short name
    return {};
  StringRef best;
  unsigned bestDistance = ~0u;
  for (StringRef candidate : known) {
    unsigned d = field.edit_distance(candidate, /*AllowReplacements=*/true);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return 2 * bestDistance <= field.size() ? best : StringRef();
}

/// `value` as an error message shows it: its JSON, cut short.
static std::string shown(const json::Value &value) {
  std::string text = formatv("{0}", value).str();
  return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

/// A request names only fields of its kind: a misspelt field would
/// otherwise be ignored and its default planned ("dtpye": "f32" plans f16).
static Error checkFields(const json::Object &object, StringRef kind,
                         ArrayRef<StringLiteral> known) {
  std::vector<StringRef> unknown;
  for (const auto &field : object)
    if (!is_contained(known, StringRef(field.first)))
      unknown.push_back(field.first);
  if (unknown.empty())
    return Error::success();
  llvm::sort(unknown); // the object's order is its hash table's
  // A user's text: a few fields, each quoted and cut short.
  constexpr size_t kNamed = 5;
  std::string message;
  raw_string_ostream os(message);
  for (StringRef field : ArrayRef(unknown).take_front(kNamed)) {
    os << (message.empty() ? "" : "; ") << shown(json::Value(field))
       << ": no such field";
    if (StringRef near = closestField(field, known); !near.empty())
      os << " (did you mean \"" << near << "\"?)";
  }
  if (unknown.size() > kNamed)
    os << "; and " << unknown.size() - kNamed << " more";
  os << "; a " << kind << " request has ";
  interleave(
      known, os, [&](StringRef k) { os << "\"" << k << "\""; }, ", ");
  return requestError(message);
}

/// The Planner's errors name overlap-plan's flags ("--strategy: ...");
/// a JSON caller (Python's overlap.plan) wrote fields: "strategy": ...
/// The error code (a bad request, or a planning failure) is kept.
static Error inRequestWords(Error err) {
  static const std::pair<StringRef, StringRef> kFlags[] = {
      {"--strategy:", "\"strategy\":"},
      {"--m:", "\"m\":"},
      {"--n:", "\"n\":"},
      {"--k:", "\"k\":"},
      {"--ranks:", "\"ranks\":"},
      {"--dtype:", "\"dtype\":"},
      {"--profile:", "\"profile\":"},
      {"--experts:", "\"experts\":"},
      {"--side:", "\"side\":"},
      {"--collective:", "\"collective\":"},
      {"--dims:", "\"dims\":"},
      {"--fast-memory:", "\"fast_memory\":"}};
  std::error_code code;
  std::string message;
  handleAllErrors(std::move(err), [&](const ErrorInfoBase &e) {
    code = e.convertToErrorCode();
    message += (message.empty() ? "" : "\n") + e.message();
  });
  for (const auto &[flag, field] : kFlags) {
    size_t at = 0;
    while ((at = message.find(flag.str(), at)) != std::string::npos) {
      message.replace(at, flag.size(), field.str());
      at += field.size();
    }
  }
  return createStringError(code, message);
}

Expected<std::string> overlap::planner::planFromJSON(StringRef request) {
  // A request is JSON from a user: its nesting is bounded before it is
  // parsed (UserJson.h).
  Expected<json::Value> parsed = parseUserJson(request, "request");
  if (!parsed)
    return requestError(toString(parsed.takeError()));
  const json::Object *object = parsed->getAsObject();
  if (!object)
    return requestError("expected an object");
  // A string field: `fallback` when it is absent, an error when it is not
  // a string (a null or a number is no way to ask for the default).
  auto string = [&](StringRef key,
                    StringRef fallback) -> Expected<std::string> {
    const json::Value *v = object->get(key);
    if (!v)
      return fallback.str();
    if (std::optional<StringRef> s = v->getAsString())
      return s->str();
    return requestError(
        formatv("\"{0}\": expected a string, got {1}", key, shown(*v)));
  };
  std::string text;
  raw_string_ostream os(text);
  Expected<std::string> kind = string("kind", "matmul");
  if (!kind)
    return kind.takeError();
  if (*kind == "chain") {
    if (Error err = checkFields(*object, "chain", kChainFields))
      return std::move(err);
    const json::Array *dimsArray = object->getArray("dims");
    if (!dimsArray)
      return requestError("\"dims\": expected an array of positive "
                          "integers");
    std::vector<int64_t> dims;
    for (const json::Value &d : *dimsArray) {
      std::optional<int64_t> v = d.getAsInteger();
      if (!v || *v < 1)
        return requestError("\"dims\": expected positive integers");
      dims.push_back(*v);
    }
    std::optional<double> mf = object->getNumber("fast_memory");
    if (!mf || !(*mf >= 1) || !std::isfinite(*mf))
      return requestError("\"fast_memory\": expected a number >= 1");
    Expected<ChainPlan> plan = planChain(dims, *mf);
    if (!plan)
      return inRequestWords(plan.takeError());
    writeChainPlanJSON(*plan, os);
    return text;
  }
  if (*kind != "matmul")
    return requestError("\"kind\": '" + *kind + "' is not matmul or chain");
  if (Error err = checkFields(*object, "matmul", kMatmulFields))
    return std::move(err);
  MatmulProblem problem;
  Expected<std::string> collective = string("collective", "");
  if (!collective)
    return collective.takeError();
  std::optional<Collective> c = parseCollective(*collective);
  if (!c)
    return requestError("\"collective\": expected all-reduce, "
                        "reduce-scatter, all-gather or all-to-all, got '" +
                        *collective + "'");
  problem.collective = *c;
  if (object->get("side")) {
    Expected<std::string> side = string("side", "");
    if (!side)
      return side.takeError();
    std::optional<AllToAllSide> s = parseAllToAllSide(*side);
    if (*c != Collective::AllToAll || !s)
      return requestError("\"side\": expected dispatch or combine with "
                          "\"collective\": \"all-to-all\", got '" +
                          *side + "'");
    problem.side = *s;
  }
  if (object->get("experts")) {
    std::optional<int64_t> e = object->getInteger("experts");
    if (*c != Collective::AllToAll || !e || *e < 1)
      return requestError("\"experts\": expected a positive integer with "
                          "\"collective\": \"all-to-all\"");
    problem.experts = *e;
  }
  if (object->get("row_group")) {
    std::optional<int64_t> g = object->getInteger("row_group");
    if (!g || *g < 1)
      return requestError("\"row_group\": expected a positive integer (rows "
                          "a tile never splits)");
    problem.rowGroup = *g;
  }
  for (auto [key, field] :
       {std::pair<StringRef, double *>{"compute_copy_bytes_per_row",
                                       &problem.computeCopyBytesPerRow},
        {"comm_copy_bytes_per_row", &problem.commCopyBytesPerRow}}) {
    if (!object->get(key))
      continue;
    std::optional<double> v = object->getNumber(key);
    if (!v || !(*v >= 0) || !std::isfinite(*v))
      return requestError(
          formatv("\"{0}\": expected a finite number >= 0", key));
    *field = *v;
  }
  for (auto [key, field] : {std::pair<StringRef, int64_t *>{"m", &problem.m},
                            {"n", &problem.n},
                            {"k", &problem.k},
                            {"ranks", &problem.ranks}}) {
    std::optional<int64_t> v = object->getInteger(key);
    if (!v || *v < 1)
      return requestError(
          formatv("\"{0}\": expected a positive integer{1}", key,
                  object->get(key) ? ", got " + shown(*object->get(key))
                                   : std::string()));
    *field = *v;
  }
  Expected<std::string> dtype = string("dtype", "f16");
  if (!dtype)
    return dtype.takeError();
  std::optional<DType> d = parseDType(*dtype);
  if (!d)
    return requestError("\"dtype\": expected f16, bf16 or f32, got '" + *dtype +
                        "'");
  problem.dtype = *d;
  Expected<std::string> profileArg = string("profile", kDefaultProfile);
  if (!profileArg)
    return profileArg.takeError();
  std::string path = resolveProfilePath(*profileArg, shippedProfilesDir());
  if (path.empty())
    return requestError("\"profile\": " +
                        unknownProfileMessage(*profileArg,
                                              shippedProfilesDir()));
  Expected<std::string> strategy = string("strategy", kDefaultStrategy);
  if (!strategy)
    return strategy.takeError();
  // A malformed profile is a planning failure (status 1), as in
  // overlap-plan, not a bad request.
  Expected<Profile> profile = loadProfile(path);
  if (!profile)
    return createStringError(inconvertibleErrorCode(),
                             toString(profile.takeError()));
  Expected<CostModel> model = CostModel::create(*profile, problem);
  if (!model)
    return inRequestWords(model.takeError());
  Expected<Plan> plan = planTiles(*profile, problem, *strategy);
  if (!plan)
    return inRequestWords(plan.takeError());
  writePlanJSON(*plan, problem, *profile, *model, os);
  return text;
}
