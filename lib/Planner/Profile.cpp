//===- Profile.cpp - Parse and validate hardware profiles ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Profile.h"
#include "overlap/Planner/Defaults.h"
#include "overlap/Planner/Limits.h"
#include "overlap/Planner/Ring.h"
#include "overlap/Planner/UserJson.h"
#include "overlap/Support/EnumNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <limits>

/// A function of this library whose address names the binary that holds
/// the Planner (shippedProfilesDir).
static void shippedProfilesDirAnchor() {}

using namespace llvm;
using namespace overlap::planner;
using overlap::EnumName;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

static const EnumName<DType> dtypeNames[] = {
    {DType::F16, "f16"}, {DType::BF16, "bf16"}, {DType::F32, "f32"}};

std::optional<DType> overlap::planner::parseDType(StringRef name) {
  return valueOf(dtypeNames, name);
}

StringRef overlap::planner::toString(DType dtype) {
  return nameOf(dtypeNames, dtype);
}

unsigned overlap::planner::byteWidth(DType dtype) {
  return dtype == DType::F32 ? 4 : 2;
}

static const EnumName<Collective> collectiveNames[] = {
    {Collective::AllReduce, "all-reduce"},
    {Collective::ReduceScatter, "reduce-scatter"},
    {Collective::AllGather, "all-gather"},
    {Collective::AllToAll, "all-to-all"}};

std::optional<Collective> overlap::planner::parseCollective(StringRef name) {
  return valueOf(collectiveNames, name);
}

StringRef overlap::planner::toString(Collective collective) {
  return nameOf(collectiveNames, collective);
}

double overlap::planner::ringFactor(Collective collective, int64_t ranks) {
  return ringShare(collective, ranks).value();
}

//===----------------------------------------------------------------------===//
// Curve
//===----------------------------------------------------------------------===//

Curve Curve::piecewise(std::vector<Piece> pieces) {
  Curve c;
  c.pieces = std::move(pieces);
  return c;
}

Curve Curve::table(std::vector<std::pair<double, double>> points) {
  Curve c;
  c.points = std::move(points);
  return c;
}

static double evalPoly(ArrayRef<double> coeffs, double x) {
  double y = 0;
  for (double c : llvm::reverse(coeffs))
    y = y * x + c;
  return y;
}

double Curve::eval(double x) const {
  double y = 0;
  if (!points.empty()) {
    if (points.size() == 1) {
      y = points[0].second;
    } else {
      // Segment containing x; the end segments extend outward.
      auto it =
          std::upper_bound(points.begin(), points.end(), x,
                           [](double v, const std::pair<double, double> &p) {
                             return v < p.first;
                           });
      size_t hi = std::clamp<size_t>(it - points.begin(), 1, points.size() - 1);
      const auto &p0 = points[hi - 1];
      const auto &p1 = points[hi];
      y = p0.second +
          (p1.second - p0.second) * (x - p0.first) / (p1.first - p0.first);
    }
  } else if (!pieces.empty()) {
    const Piece *piece = &pieces.back();
    for (const Piece &p : pieces) {
      if (x < p.to) {
        piece = &p;
        break;
      }
    }
    y = evalPoly(piece->coeffs, x);
  }
  return std::max(0.0, y);
}

//===----------------------------------------------------------------------===//
// Profile lookups
//===----------------------------------------------------------------------===//

const GemmCurve *Profile::findGemmCurve(int64_t n, int64_t k, DType dtype,
                                        int64_t batch) const {
  for (const GemmCurve &c : gemmCurves)
    if (c.n == n && c.k == k && c.dtype == dtype && c.batch == batch)
      return &c;
  return nullptr;
}

Profile::ScaledCurve Profile::findNearestGemmCurve(int64_t n, int64_t k,
                                                  DType dtype,
                                                  int64_t batch) const {
  auto distance = [&](const GemmCurve &c) {
    return std::fabs(std::log(double(n) / double(c.n))) +
           std::fabs(std::log(double(k) / double(c.k)));
  };
  auto nearest = [&](bool sameDtype) {
    const GemmCurve *best = nullptr;
    for (const GemmCurve &c : gemmCurves) {
      if (c.batch != batch || (c.dtype == dtype) != sameDtype)
        continue;
      if (!sameDtype &&
          (!device.getPeakFlops(c.dtype) || !device.getPeakFlops(dtype)))
        continue;
      if (!best || distance(c) < distance(*best))
        best = &c;
    }
    return best;
  };
  const GemmCurve *best = nearest(/*sameDtype=*/true);
  if (!best)
    best = nearest(/*sameDtype=*/false);
  if (!best)
    return {};
  double scale = double(n) * double(k) / (double(best->n) * double(best->k));
  if (best->dtype != dtype)
    scale *= *device.getPeakFlops(best->dtype) / *device.getPeakFlops(dtype);
  return {best, scale};
}

const CommCurve *Profile::findCommCurve(Collective collective,
                                        int64_t ranks) const {
  const CommCurve *best = nullptr;
  for (const CommCurve &c : commCurves) {
    if (c.collective != collective)
      continue;
    if (!best) {
      best = &c;
      continue;
    }
    int64_t d = std::llabs(c.ranks - ranks);
    int64_t bestD = std::llabs(best->ranks - ranks);
    if (d < bestD || (d == bestD && c.ranks > best->ranks))
      best = &c;
  }
  return best;
}

double Profile::getPredictionMargin(Collective collective) const {
  return predictionError[static_cast<int>(collective)].value_or(
      kDefaultPredictionMargin);
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

/// Walks the JSON tree keeping the path of the current field, so that every
/// error says which field is wrong.
class ProfileReader {
public:
  explicit ProfileReader(StringRef source) : source(source) {}

  Error fail(const Twine &path, const Twine &expected) const {
    return createStringError(std::errc::invalid_argument, "%s: %s: expected %s",
                             source.c_str(), path.str().c_str(),
                             expected.str().c_str());
  }

  /// Every key must be one of `allowed` (or "note", allowed everywhere).
  Error checkKeys(const json::Object &obj, const std::string &path,
                  ArrayRef<StringRef> allowed) const {
    for (const auto &kv : obj) {
      StringRef key = kv.first;
      if (key == "note" || llvm::is_contained(allowed, key))
        continue;
      std::string list;
      for (StringRef a : allowed)
        list += (list.empty() ? "" : ", ") + a.str();
      return fail(join(path, key),
                  "no such field (known fields: " + list + ", note)");
    }
    return Error::success();
  }

  static std::string join(const std::string &path, StringRef key) {
    return path.empty() ? key.str() : path + "." + key.str();
  }
  static std::string index(const std::string &path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  Expected<const json::Object *> object(const json::Value &v,
                                        const std::string &path) const {
    if (const json::Object *o = v.getAsObject())
      return o;
    return fail(path, "an object");
  }

  /// An object whose keys are all in `allowed` (checkKeys).
  Expected<const json::Object *> object(const json::Value &v,
                                        const std::string &path,
                                        ArrayRef<StringRef> allowed) const {
    Expected<const json::Object *> o = object(v, path);
    if (!o)
      return o.takeError();
    if (Error e = checkKeys(**o, path, allowed))
      return std::move(e);
    return o;
  }

  Expected<const json::Array *> array(const json::Value &v,
                                      const std::string &path,
                                      bool nonEmpty = true) const {
    const json::Array *a = v.getAsArray();
    if (!a || (nonEmpty && a->empty()))
      return fail(path, nonEmpty ? "a non-empty array" : "an array");
    return a;
  }

  Expected<double> number(const json::Value &v, const std::string &path,
                          StringRef what = "a number") const {
    std::optional<double> d = v.getAsNumber();
    if (!d || !std::isfinite(*d))
      return fail(path, what);
    return *d;
  }

  /// A number in [lo, hi] (Limits.h), `what` saying what it is.
  Expected<double> numberIn(const json::Value &v, const std::string &path,
                            double lo, double hi, StringRef what) const {
    std::string expected =
        (what + " in [" + shortNumber(lo) + ", " + shortNumber(hi) + "]").str();
    Expected<double> d = number(v, path, expected);
    if (!d)
      return d.takeError();
    if (*d < lo || *d > hi)
      return fail(path, expected + ", got " + shortNumber(*d));
    return *d;
  }

  Expected<int64_t>
  integer(const json::Value &v, const std::string &path, int64_t min,
          int64_t max = std::numeric_limits<int64_t>::max()) const {
    std::optional<int64_t> i = v.getAsInteger();
    std::string what = "an integer >= " + std::to_string(min);
    if (max != std::numeric_limits<int64_t>::max())
      what += " and <= " + std::to_string(max);
    if (!i)
      return fail(path, what);
    if (*i < min || *i > max)
      return fail(path, what + ", got " + std::to_string(*i));
    return *i;
  }

  /// Latencies and curve values, µs.
  Expected<double> time(const json::Value &v, const std::string &path) const {
    return numberIn(v, path, 0, kMaxProfileUs, "a time (µs)");
  }

  static std::string shortNumber(double d) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", d);
    return buf;
  }

  Expected<std::string> string(const json::Value &v,
                               const std::string &path) const {
    if (std::optional<StringRef> s = v.getAsString())
      return s->str();
    return fail(path, "a string");
  }

  Expected<Curve> curve(const json::Value &v, const std::string &path) const;

  /// The "curve" field of `o`, an object at `path`; `what` says what the
  /// curve plots when it is missing.
  Expected<Curve> curveField(const json::Object &o, const std::string &path,
                             StringRef what) const {
    std::string curvePath = join(path, "curve");
    if (const json::Value *v = o.get("curve"))
      return curve(*v, curvePath);
    return fail(curvePath, what);
  }

  /// The string field `key` of `o`, an object at `path`: one of the names
  /// of `table` (EnumNames.h), read as its value; the error lists them.
  template <typename Table>
  auto named(const json::Object &o, StringRef key, const std::string &path,
             const Table &table) const
      -> Expected<decltype(std::begin(table)->value)> {
    const json::Value *v = o.get(key);
    if (std::optional<StringRef> s = v ? v->getAsString() : std::nullopt)
      if (auto value = valueOf(table, *s))
        return *value;
    return fail(join(path, key), "one of " + joinNames(table, "\""));
  }

private:
  std::string source;
};

} // namespace

static bool isNondecreasingPoly(ArrayRef<double> coeffs, double from, double to,
                                double &badX) {
  // Sample the range; an open-ended piece is sampled far beyond its start
  // and must not bend down at the far end (leading coefficient >= 0).
  double hi = std::isinf(to) ? std::max(1.0, std::fabs(from)) * 1.0e4 : to;
  constexpr int kSamples = 256;
  double prev = evalPoly(coeffs, from);
  for (int s = 1; s <= kSamples; ++s) {
    double x = from + (hi - from) * s / kSamples;
    if (std::isinf(to) && s == kSamples)
      break;
    double y = evalPoly(coeffs, x);
    if (y < prev - 1e-9 * std::max(1.0, std::fabs(prev))) {
      badX = x;
      return false;
    }
    prev = y;
  }
  size_t deg = coeffs.size();
  while (deg > 1 && coeffs[deg - 1] == 0)
    --deg;
  if (std::isinf(to) && deg > 1 && coeffs[deg - 1] < 0) {
    badX = hi;
    return false;
  }
  return true;
}

Expected<Curve> ProfileReader::curve(const json::Value &v,
                                     const std::string &path) const {
  Expected<const json::Object *> objOr = object(v, path, {"pieces", "table"});
  if (!objOr)
    return objOr.takeError();
  const json::Object &obj = **objOr;
  const json::Value *piecesV = obj.get("pieces");
  const json::Value *tableV = obj.get("table");
  if ((piecesV != nullptr) == (tableV != nullptr))
    return fail(path, "exactly one of \"pieces\" (piecewise polynomials) or "
                      "\"table\" (points [x, y])");

  if (tableV) {
    std::string tpath = join(path, "table");
    Expected<const json::Array *> arr = array(*tableV, tpath);
    if (!arr)
      return arr.takeError();
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < (*arr)->size(); ++i) {
      std::string ppath = index(tpath, i);
      const json::Array *pt = (**arr)[i].getAsArray();
      if (!pt || pt->size() != 2)
        return fail(ppath, "a point [x, y]");
      Expected<double> x = number((*pt)[0], ppath + "[0]");
      if (!x)
        return x.takeError();
      Expected<double> y = time((*pt)[1], ppath + "[1]");
      if (!y)
        return y.takeError();
      if (!points.empty() && *x <= points.back().first)
        return fail(ppath + "[0]", "x strictly greater than the previous "
                                   "point's (" +
                                       formatv("{0}", points.back().first) +
                                       ")");
      if (!points.empty() && *y < points.back().second)
        return fail(ppath + "[1]", "a monotone table: y >= the previous "
                                   "point's (" +
                                       formatv("{0}", points.back().second) +
                                       ")");
      points.emplace_back(*x, *y);
    }
    return Curve::table(std::move(points));
  }

  std::string ppath = join(path, "pieces");
  Expected<const json::Array *> arr = array(*piecesV, ppath);
  if (!arr)
    return arr.takeError();
  std::vector<Curve::Piece> pieces;
  for (size_t i = 0; i < (*arr)->size(); ++i) {
    std::string piecePath = index(ppath, i);
    Expected<const json::Object *> po =
        object((**arr)[i], piecePath, {"from", "to", "coeffs"});
    if (!po)
      return po.takeError();
    Curve::Piece piece;
    const json::Value *fromV = (*po)->get("from");
    if (!fromV)
      return fail(join(piecePath, "from"), "a number (start of the range)");
    Expected<double> from = number(*fromV, join(piecePath, "from"));
    if (!from)
      return from.takeError();
    piece.from = *from;
    const json::Value *toV = (*po)->get("to");
    bool last = i + 1 == (*arr)->size();
    if (!toV || toV->kind() == json::Value::Null) {
      if (!last)
        return fail(join(piecePath, "to"),
                    "a number (only the last piece may be open-ended)");
      piece.to = std::numeric_limits<double>::infinity();
    } else {
      Expected<double> to = number(*toV, join(piecePath, "to"));
      if (!to)
        return to.takeError();
      if (*to <= piece.from)
        return fail(join(piecePath, "to"), "a number greater than \"from\" (" +
                                               formatv("{0}", piece.from) +
                                               ")");
      piece.to = *to;
    }
    if (!pieces.empty() && piece.from != pieces.back().to)
      return fail(join(piecePath, "from"),
                  "the previous piece's \"to\" (" +
                      formatv("{0}", pieces.back().to) +
                      "): pieces must be contiguous and ascending");
    std::string cpath = join(piecePath, "coeffs");
    const json::Value *coeffsV = (*po)->get("coeffs");
    if (!coeffsV)
      return fail(cpath, "a non-empty array of numbers (ascending powers)");
    Expected<const json::Array *> ca = array(*coeffsV, cpath);
    if (!ca)
      return fail(cpath, "a non-empty array of numbers (ascending powers)");
    for (size_t c = 0; c < (*ca)->size(); ++c) {
      Expected<double> coeff = number((**ca)[c], index(cpath, c));
      if (!coeff)
        return coeff.takeError();
      piece.coeffs.push_back(*coeff);
    }
    double badX = 0;
    if (!isNondecreasingPoly(piece.coeffs, piece.from, piece.to, badX))
      return fail(piecePath, "a nondecreasing polynomial on its range "
                             "(it decreases near x = " +
                                 formatv("{0}", badX) + ")");
    if (!pieces.empty()) {
      const Curve::Piece &prev = pieces.back();
      double left = evalPoly(prev.coeffs, piece.from);
      double right = evalPoly(piece.coeffs, piece.from);
      if (right < left - 1e-6 * std::max(1.0, std::fabs(left)))
        return fail(piecePath, "a curve that does not drop at x = " +
                                   formatv("{0}", piece.from) + " (" +
                                   formatv("{0}", left) + " -> " +
                                   formatv("{0}", right) + ")");
    }
    pieces.push_back(std::move(piece));
  }
  return Curve::piecewise(std::move(pieces));
}

/// A curve's x_unit and its bytes.
static const EnumName<double> unitNames[] = {{1.0, "B"},
                                             {1024.0, "KiB"},
                                             {1024.0 * 1024.0, "MiB"},
                                             {1024.0 * 1024.0 * 1024.0, "GiB"}};

namespace {
/// Reads an optional field: absent leaves `out` untouched.
template <typename T, typename Fn>
Error optionalField(const json::Object &obj, StringRef key, T &out, Fn read) {
  if (const json::Value *v = obj.get(key)) {
    auto r = read(*v);
    if (!r)
      return r.takeError();
    out = *r;
  }
  return Error::success();
}
} // namespace

static Error parseDevice(const ProfileReader &rd, const json::Value &v,
                         DeviceInfo &dev) {
  const std::string path = "device";
  auto objOr =
      rd.object(v, path,
                {"name", "sm_count", "comm_sms", "gemm_tile", "peak_tflops",
                 "memory_bandwidth_gbps", "zero_sm_all_gather"});
  if (!objOr)
    return objOr.takeError();
  const json::Object &obj = **objOr;
  auto str = [&](StringRef key) {
    return [&rd, key, &path](const json::Value &x) {
      return rd.string(x, ProfileReader::join(path, key));
    };
  };
  if (Error e = optionalField(obj, "name", dev.name, str("name")))
    return e;
  if (const json::Value *sv = obj.get("sm_count")) {
    auto sms = rd.integer(*sv, "device.sm_count", 1, kMaxProfileCount);
    if (!sms)
      return sms.takeError();
    dev.smCount = *sms;
  }
  if (const json::Value *cv = obj.get("comm_sms")) {
    auto cs = rd.integer(*cv, "device.comm_sms", 0, kMaxProfileCount);
    if (!cs)
      return cs.takeError();
    if (dev.smCount && *cs >= *dev.smCount)
      return rd.fail("device.comm_sms", "fewer SMs than device.sm_count (" +
                                            std::to_string(*dev.smCount) + ")");
    dev.commSms = *cs;
  }
  if (const json::Value *zv = obj.get("zero_sm_all_gather")) {
    std::optional<bool> b = zv->getAsBoolean();
    if (!b)
      return rd.fail("device.zero_sm_all_gather", "true or false");
    dev.zeroSmAllGather = *b;
  }
  if (const json::Value *tv = obj.get("gemm_tile")) {
    const json::Array *a = tv->getAsArray();
    if (!a || a->size() != 2)
      return rd.fail("device.gemm_tile", "[rows, cols] of the GEMM output "
                                         "tile");
    auto r = rd.integer((*a)[0], "device.gemm_tile[0]", 1, kMaxProfileCount);
    if (!r)
      return r.takeError();
    auto c = rd.integer((*a)[1], "device.gemm_tile[1]", 1, kMaxProfileCount);
    if (!c)
      return c.takeError();
    dev.gemmTile = {*r, *c};
  }
  if (const json::Value *pv = obj.get("peak_tflops")) {
    auto po = rd.object(*pv, "device.peak_tflops");
    if (!po)
      return po.takeError();
    for (const auto &kv : **po) {
      std::string fpath = "device.peak_tflops." + kv.first.str();
      if (kv.first == "note")
        continue;
      std::optional<DType> dt = parseDType(kv.first);
      if (!dt)
        return rd.fail(fpath, "a dtype key (" + joinNames(dtypeNames) + ")");
      auto tf = rd.numberIn(kv.second, fpath, kMinProfileRate, kMaxProfileRate,
                            "TFLOP/s");
      if (!tf)
        return tf.takeError();
      dev.peakFlops[static_cast<int>(*dt)] = *tf * 1e12;
    }
  }
  if (const json::Value *bv = obj.get("memory_bandwidth_gbps")) {
    auto bw = rd.numberIn(*bv, "device.memory_bandwidth_gbps", kMinProfileRate,
                          kMaxProfileRate, "a bandwidth (GB/s)");
    if (!bw)
      return bw.takeError();
    dev.memoryBandwidth = *bw * 1e9;
  }
  return Error::success();
}

static Error parseGemm(const ProfileReader &rd, const json::Value &v,
                       Profile &p) {
  auto objOr = rd.object(v, "gemm", {"latency_us", "curves", "roofline"});
  if (!objOr)
    return objOr.takeError();
  const json::Object &obj = **objOr;
  if (const json::Value *lv = obj.get("latency_us")) {
    auto lat = rd.time(*lv, "gemm.latency_us");
    if (!lat)
      return lat.takeError();
    p.gemmLatencyUs = *lat;
  }
  if (const json::Value *cv = obj.get("curves")) {
    auto arr = rd.array(*cv, "gemm.curves", /*nonEmpty=*/false);
    if (!arr)
      return arr.takeError();
    for (size_t i = 0; i < (*arr)->size(); ++i) {
      std::string path = ProfileReader::index("gemm.curves", i);
      auto co =
          rd.object((**arr)[i], path, {"n", "k", "dtype", "batch", "curve"});
      if (!co)
        return co.takeError();
      GemmCurve gc;
      for (StringRef key : {"n", "k"}) {
        const json::Value *kv = (*co)->get(key);
        std::string kpath = ProfileReader::join(path, key);
        if (!kv)
          return rd.fail(kpath, "an integer >= 1");
        auto val = rd.integer(*kv, kpath, 1, kMaxDim);
        if (!val)
          return val.takeError();
        (key == "n" ? gc.n : gc.k) = *val;
      }
      Expected<DType> dt = rd.named(**co, "dtype", path, dtypeNames);
      if (!dt)
        return dt.takeError();
      gc.dtype = *dt;
      if (const json::Value *bv = (*co)->get("batch")) {
        auto batch =
            rd.integer(*bv, ProfileReader::join(path, "batch"), 1, kMaxRanks);
        if (!batch)
          return batch.takeError();
        gc.batch = *batch;
      }
      auto curve =
          rd.curveField(**co, path, "a curve object (time in µs vs rows m)");
      if (!curve)
        return curve.takeError();
      gc.curve = std::move(*curve);
      if (p.findGemmCurve(gc.n, gc.k, gc.dtype, gc.batch))
        return rd.fail(path, "one curve per (n, k, dtype, batch); this one "
                             "repeats an earlier entry");
      p.gemmCurves.push_back(std::move(gc));
    }
  }
  if (const json::Value *rv = obj.get("roofline")) {
    auto ro = rd.object(*rv, "gemm.roofline", {"efficiency"});
    if (!ro)
      return ro.takeError();
    double eff = 1.0;
    if (const json::Value *ev = (*ro)->get("efficiency")) {
      auto e = rd.numberIn(*ev, "gemm.roofline.efficiency", kMinProfileFraction,
                           1, "a fraction");
      if (!e)
        return e.takeError();
      eff = *e;
    }
    p.rooflineEfficiency = eff;
  }
  return Error::success();
}

static Error parseCollectives(const ProfileReader &rd, const json::Value &v,
                              Profile &p) {
  auto objOr = rd.object(v, "collectives");
  if (!objOr)
    return objOr.takeError();
  for (const auto &kv : **objOr) {
    if (kv.first == "note")
      continue;
    std::string cpath = "collectives." + kv.first.str();
    std::optional<Collective> coll = parseCollective(kv.first);
    if (!coll)
      return rd.fail(cpath, "a collective name (all-reduce, reduce-scatter, "
                            "all-gather, all-to-all)");
    auto arr = rd.array(kv.second, cpath);
    if (!arr)
      return arr.takeError();
    for (size_t i = 0; i < (*arr)->size(); ++i) {
      std::string path = ProfileReader::index(cpath, i);
      auto eo = rd.object((**arr)[i], path,
                          {"ranks", "x_unit", "latency_us", "curve"});
      if (!eo)
        return eo.takeError();
      CommCurve cc;
      cc.collective = *coll;
      const json::Value *rv = (*eo)->get("ranks");
      if (!rv)
        return rd.fail(ProfileReader::join(path, "ranks"),
                       "an integer >= 2 (the group size measured)");
      auto ranks =
          rd.integer(*rv, ProfileReader::join(path, "ranks"), 2, kMaxRanks);
      if (!ranks)
        return ranks.takeError();
      cc.ranks = *ranks;
      Expected<double> unit = rd.named(**eo, "x_unit", path, unitNames);
      if (!unit)
        return unit.takeError();
      cc.bytesPerUnit = *unit;
      if (const json::Value *lv = (*eo)->get("latency_us")) {
        auto lat = rd.time(*lv, ProfileReader::join(path, "latency_us"));
        if (!lat)
          return lat.takeError();
        cc.latencyUs = *lat;
      }
      auto curve = rd.curveField(**eo, path,
                                 "a curve object (time in µs vs buffer size)");
      if (!curve)
        return curve.takeError();
      cc.curve = std::move(*curve);
      for (const CommCurve &other : p.commCurves)
        if (other.collective == cc.collective && other.ranks == cc.ranks)
          return rd.fail(path, "one curve per group size; ranks " +
                                   std::to_string(cc.ranks) + " repeats");
      p.commCurves.push_back(std::move(cc));
    }
  }
  return Error::success();
}

Expected<Profile> overlap::planner::parseProfile(StringRef text,
                                                 StringRef nameForErrors) {
  ProfileReader rd(nameForErrors.str());
  Expected<json::Value> root = parseUserJson(text, nameForErrors);
  if (!root)
    return root.takeError();
  const json::Object *obj = root->getAsObject();
  if (!obj)
    return rd.fail("(top level)", "an object");
  if (Error e =
          rd.checkKeys(*obj, "",
                       {"name", "description", "provenance", "device", "gemm",
                        "collectives", "contention", "alignment", "ficco",
                        "prediction_error"}))
    return std::move(e);

  Profile p;
  p.source = nameForErrors.str();
  for (StringRef key : {"name", "description", "provenance"}) {
    if (const json::Value *v = obj->get(key)) {
      auto s = rd.string(*v, key.str());
      if (!s)
        return s.takeError();
      (key == "name"          ? p.name
       : key == "description" ? p.description
                              : p.provenance) = *s;
    }
  }
  if (p.name.empty())
    p.name = sys::path::stem(nameForErrors).str();

  if (const json::Value *v = obj->get("device"))
    if (Error e = parseDevice(rd, *v, p.device))
      return std::move(e);

  const json::Value *gemmV = obj->get("gemm");
  if (!gemmV)
    return rd.fail("gemm", "an object with \"curves\" and/or \"roofline\"");
  if (Error e = parseGemm(rd, *gemmV, p))
    return std::move(e);
  if (p.gemmCurves.empty() && !p.rooflineEfficiency)
    return rd.fail("gemm", "at least one entry in \"curves\" or a "
                           "\"roofline\"");
  if (p.rooflineEfficiency) {
    if (!p.device.memoryBandwidth)
      return rd.fail("device.memory_bandwidth_gbps",
                     "a bandwidth (GB/s): gemm.roofline needs it");
    bool anyPeak = false;
    for (auto &pk : p.device.peakFlops)
      anyPeak |= pk.has_value();
    if (!anyPeak)
      return rd.fail("device.peak_tflops",
                     "peak TFLOP/s for at least one dtype: gemm.roofline "
                     "needs it");
  }

  const json::Value *collV = obj->get("collectives");
  if (!collV)
    return rd.fail("collectives", "an object mapping collective names to "
                                  "curves");
  if (Error e = parseCollectives(rd, *collV, p))
    return std::move(e);

  if (const json::Value *cv = obj->get("contention")) {
    if (const json::Object *co = cv->getAsObject()) {
      if (Error e = rd.checkKeys(*co, "contention", {"compute", "comm"}))
        return std::move(e);
      for (StringRef key : {"compute", "comm"}) {
        const json::Value *fv = co->get(key);
        std::string path = "contention." + key.str();
        if (!fv)
          return rd.fail(path, "a slowdown factor >= 1");
        auto f = rd.numberIn(*fv, path, 1, kMaxContention, "a slowdown factor");
        if (!f)
          return f.takeError();
        (key == "compute" ? p.computeContention : p.commContention) = *f;
      }
    } else {
      auto f = rd.numberIn(*cv, "contention", 1, kMaxContention,
                           "a slowdown factor");
      if (!f)
        return f.takeError();
      p.computeContention = p.commContention = *f;
    }
  }
  if (const json::Value *av = obj->get("alignment")) {
    auto a = rd.integer(*av, "alignment", 1, kMaxProfileCount);
    if (!a)
      return a.takeError();
    p.alignment = *a;
  }
  if (const json::Value *ev = obj->get("prediction_error")) {
    auto eo = rd.object(*ev, "prediction_error",
                        {"all-reduce", "reduce-scatter", "all-gather",
                         "all-to-all"});
    if (!eo)
      return eo.takeError();
    for (const auto &kv : **eo) {
      if (kv.first == "note")
        continue;
      std::string path = "prediction_error." + kv.first.str();
      auto f = rd.numberIn(kv.second, path, 0, 1,
                           "a mean |prediction error| as a fraction");
      if (!f)
        return f.takeError();
      p.predictionError[static_cast<int>(*parseCollective(kv.first))] = *f;
    }
  }
  if (const json::Value *fv = obj->get("ficco")) {
    auto fo = rd.object(*fv, "ficco", {"reference_us", "low", "high"});
    if (!fo)
      return fo.takeError();
    for (StringRef key : {"reference_us", "low", "high"}) {
      if (const json::Value *x = (*fo)->get(key)) {
        auto val = rd.numberIn(*x, "ficco." + key.str(), kMinProfileFraction,
                               kMaxFiccoValue, "a number");
        if (!val)
          return val.takeError();
        (key == "reference_us" ? p.ficco.referenceUs
         : key == "low"        ? p.ficco.low
                               : p.ficco.high) = *val;
      }
    }
    if (p.ficco.high < p.ficco.low)
      return rd.fail("ficco.high", "a threshold >= ficco.low");
  }
  return std::move(p);
}

Expected<Profile> overlap::planner::loadProfile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
  if (!buf)
    return createStringError(buf.getError(), "%s: cannot read profile: %s",
                             path.str().c_str(),
                             buf.getError().message().c_str());
  return parseProfile((*buf)->getBuffer(), path);
}

std::string overlap::planner::shippedProfilesDir() {
  if (const char *env = std::getenv("OVERLAP_PROFILES_DIR"))
    if (*env)
      return env;
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&shippedProfilesDirAnchor), &info) ||
      !info.dli_fname)
    return "";
  SmallString<256> real;
  if (sys::fs::real_path(info.dli_fname, real))
    return "";
  SmallString<256> dir = sys::path::parent_path(sys::path::parent_path(real));
  sys::path::append(dir, "share", "overlap", "profiles");
  return std::string(dir);
}

std::string overlap::planner::resolveProfilePath(StringRef nameOrPath,
                                                 StringRef profilesDir) {
  if (sys::fs::is_regular_file(nameOrPath))
    return nameOrPath.str();
  // A bare name (no directory, no extension) refers to the shipped ones.
  if (!profilesDir.empty() && !nameOrPath.contains('/')) {
    SmallString<256> p(profilesDir);
    sys::path::append(p, nameOrPath);
    if (!sys::path::has_extension(nameOrPath))
      p += ".json";
    if (sys::fs::is_regular_file(p))
      return std::string(p);
  }
  return "";
}
