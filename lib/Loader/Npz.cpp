//===- Npz.cpp - NumPy .npz archives of a run's buffers ---------*- C++ -*-===//
//
// The zip container read through its central directory, not the local
// headers: np.savez writes every entry with force_zip64, so a local header
// carries 0xffffffff sizes and the real ones in its zip64 extra field, and
// a writer streaming to a pipe may leave them to a data descriptor. The
// .npy header is a Python dict literal, parsed just far enough for the
// three keys numpy writes.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Npz.h"

#include "overlap/Loader/RegularFile.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

#ifdef OVERLAP_HAVE_ZLIB
#include <zlib.h>
#endif

using namespace overlap;
using namespace overlap::npz;

//===----------------------------------------------------------------------===//
// Bytes
//===----------------------------------------------------------------------===//

static uint64_t le(const char *p, int bytes) {
  uint64_t value = 0;
  for (int i = bytes; i-- > 0;)
    value = value << 8 | static_cast<unsigned char>(p[i]);
  return value;
}
static uint16_t le16(const char *p) { return static_cast<uint16_t>(le(p, 2)); }
static uint32_t le32(const char *p) { return static_cast<uint32_t>(le(p, 4)); }
static uint64_t le64(const char *p) { return le(p, 8); }

static void put(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>(value >> (8 * i) & 0xff);
}

/// The CRC-32 of zip (and zlib's crc32), continued from `crc`.
static uint32_t crc32Update(uint32_t crc, const char *data, size_t size) {
#ifdef OVERLAP_HAVE_ZLIB
  while (size) {
    uInt chunk = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = static_cast<uint32_t>(
        ::crc32(crc, reinterpret_cast<const Bytef *>(data), chunk));
    data += chunk;
    size -= chunk;
  }
  return crc;
#else
  static const std::vector<uint32_t> table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < size; ++i)
    crc =
        table[(crc ^ static_cast<unsigned char>(data[i])) & 0xff] ^ (crc >> 8);
  return ~crc;
#endif
}

bool npz::haveDeflate() {
#ifdef OVERLAP_HAVE_ZLIB
  return true;
#else
  return false;
#endif
}

std::string npz::formatShape(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

static std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text[0])))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

/// Splits the dict literal `{'k': v, ...}` into keys and the raw text of
/// their values (brackets and quotes respected). False if it is not one.
static bool splitDict(std::string_view text,
                      std::vector<std::pair<std::string, std::string>> &items) {
  text = trim(text);
  if (text.size() < 2 || text.front() != '{' || text.back() != '}')
    return false;
  text = text.substr(1, text.size() - 2);
  size_t i = 0;
  while (true) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    if (i == text.size())
      return true;
    char quote = text[i];
    if (quote != '\'' && quote != '"')
      return false;
    size_t close = text.find(quote, i + 1);
    if (close == std::string_view::npos)
      return false;
    std::string key(text.substr(i + 1, close - i - 1));
    i = text.find_first_not_of(" \t\r\n", close + 1);
    if (i == std::string_view::npos || text[i] != ':')
      return false;
    size_t start = ++i;
    int depth = 0;
    char inString = 0;
    for (; i < text.size(); ++i) {
      char c = text[i];
      if (inString) {
        if (c == '\\')
          ++i;
        else if (c == inString)
          inString = 0;
      } else if (c == '\'' || c == '"') {
        inString = c;
      } else if (c == '(' || c == '[' || c == '{') {
        ++depth;
      } else if (c == ')' || c == ']' || c == '}') {
        if (--depth < 0)
          return false;
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    if (inString || depth)
      return false;
    items.emplace_back(key, std::string(trim(text.substr(start, i - start))));
    if (i < text.size())
      ++i; // the comma
  }
}

/// "(4, 256, 512)", "(512,)" or "()".
static bool parseShape(std::string_view text, std::vector<int64_t> &shape) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    return false;
  text = text.substr(1, text.size() - 2);
  while (!trim(text).empty()) {
    size_t comma = text.find(',');
    std::string_view item = trim(text.substr(0, comma));
    if (!item.empty() && (item.back() == 'L' || item.back() == 'l'))
      item.remove_suffix(1); // Python 2's long
    if (item.empty() || item.size() > 18 ||
        item.find_first_not_of("0123456789") != std::string_view::npos)
      return false;
    shape.push_back(std::stoll(std::string(item)));
    if (comma == std::string_view::npos) {
      // One item needs its trailing comma: "(4)" is not a tuple.
      if (shape.size() == 1)
        return false;
      break;
    }
    text.remove_prefix(comma + 1);
  }
  return true;
}

/// Parses the .npy `data` of the entry named `entry` into `array`.
static bool parseNpy(const char *data, size_t bytes, Array &array,
                     std::string &why) {
  if (bytes < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0) {
    why = "not an .npy array (no \\x93NUMPY magic)";
    return false;
  }
  int major = static_cast<unsigned char>(data[6]);
  int minor = static_cast<unsigned char>(data[7]);
  size_t start = 10, length = 0;
  if (major == 1) {
    length = le16(data + 8);
  } else if ((major == 2 || major == 3) && bytes >= 12) {
    start = 12;
    length = le32(data + 8);
  } else {
    why = ".npy format version " + std::to_string(major) + "." +
          std::to_string(minor) + " (1.0, 2.0 and 3.0 are read)";
    return false;
  }
  if (length > bytes - start) {
    why = "the .npy header runs past the end of the entry";
    return false;
  }
  std::string_view header(data + start, length);
  std::vector<std::pair<std::string, std::string>> items;
  bool haveDescr = false, haveOrder = false, haveShape = false;
  bool ok = splitDict(header, items);
  for (size_t i = 0; ok && i < items.size(); ++i) {
    const auto &[key, value] = items[i];
    if (key == "descr") {
      haveDescr = true;
      bool quoted = value.size() >= 2 &&
                    (value.front() == '\'' || value.front() == '"') &&
                    value.back() == value.front();
      array.descr = quoted ? value.substr(1, value.size() - 2) : value;
    } else if (key == "fortran_order") {
      haveOrder = true;
      ok = value == "True" || value == "False";
      array.fortranOrder = value == "True";
    } else if (key == "shape") {
      haveShape = true;
      ok = parseShape(value, array.shape);
    } else {
      ok = false;
    }
  }
  if (!ok || !haveDescr || !haveOrder || !haveShape) {
    why = "malformed .npy header (expected the keys 'descr', "
          "'fortran_order' and 'shape'): " +
          std::string(trim(header));
    return false;
  }
  array.data = data + start + length;
  array.bytes = bytes - start - length;
  return true;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// The most bytes deflate can produce from `compressed` bytes: its best
/// ratio is 1032:1 (a 258-byte match in one bit and a bit or so of
/// overhead per block), plus room for a tiny stream's fixed cost.
static uint64_t maxInflated(uint64_t compressed) {
  return compressed > (UINT64_MAX - 1024) / 1032 ? UINT64_MAX
                                                  : compressed * 1032 + 1024;
}

/// Inflates raw deflate data (zip's method 8) into `out` of `size` bytes.
/// The buffer grows as the data inflates (doubling, from at most 1 MiB), so
/// a directory that declares more than the data holds costs no more memory
/// than the data.
static bool inflateRaw(const char *data, uint64_t bytes, std::vector<char> &out,
                       uint64_t size, std::string &why) {
#ifdef OVERLAP_HAVE_ZLIB
  out.clear();
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) {
    why = "zlib cannot start inflating";
    return false;
  }
  constexpr uint64_t kChunk = 1u << 30;
  const char *in = data;
  char spill;
  uint64_t inLeft = bytes, produced = 0;
  int status = Z_OK;
  while (status == Z_OK) {
    if (!stream.avail_in && inLeft) {
      stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in));
      stream.avail_in = static_cast<uInt>(std::min(inLeft, kChunk));
      in += stream.avail_in;
      inLeft -= stream.avail_in;
    }
    if (!stream.avail_out) {
      produced = stream.total_out;
      // One byte of room past the end shows data longer than declared.
      if (produced < size) {
        uint64_t grow = std::min<uint64_t>(
            {size - produced, std::max<uint64_t>(produced, 1u << 20), kChunk});
        out.resize(produced + grow);
        stream.next_out = reinterpret_cast<Bytef *>(out.data() + produced);
        stream.avail_out = static_cast<uInt>(grow);
      } else {
        stream.next_out = reinterpret_cast<Bytef *>(&spill);
        stream.avail_out = 1;
      }
    }
    status = inflate(&stream, Z_NO_FLUSH);
  }
  uint64_t total = stream.total_out;
  std::string message = stream.msg ? stream.msg : "the data ends early";
  inflateEnd(&stream);
  if (status != Z_STREAM_END || total != size) {
    why = status == Z_STREAM_END
              ? "inflates to " + std::to_string(total) + " bytes, not the " +
                    std::to_string(size) + " the directory says"
              : "damaged deflate data (zlib: " + message + ")";
    return false;
  }
  return true;
#else
  (void)data, (void)bytes, (void)out, (void)size, (void)why;
  return false;
#endif
}

namespace {
/// What the central directory says about one entry.
struct DirEntry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, size = 0, offset = 0;
};
} // namespace

/// Reads the central directory of `file`; on failure returns false with
/// the reason in `why`.
static bool readDirectory(const std::vector<char> &file,
                          std::vector<DirEntry> &entries, std::string &why) {
  const char *p = file.data();
  uint64_t size = file.size();
  // The end of central directory record: 22 bytes and a comment of up to
  // 65535, so the last signature within that reach.
  uint64_t eocd = UINT64_MAX;
  for (uint64_t at = size >= 22 ? size - 22 : UINT64_MAX;
       at != UINT64_MAX && size - 22 - at <= 0xffff; --at)
    if (le32(p + at) == 0x06054b50) {
      eocd = at;
      break;
    }
  if (eocd == UINT64_MAX) {
    why = "not a zip archive (.npz): no end of central directory record";
    return false;
  }
  uint64_t count = le16(p + eocd + 10);
  uint64_t dirSize = le32(p + eocd + 12);
  uint64_t dirOffset = le32(p + eocd + 16);
  uint64_t dirLimit = eocd;
  if (le16(p + eocd + 4) || le16(p + eocd + 6)) {
    why = "a multi-part zip archive is not supported";
    return false;
  }
  if (eocd >= 20 && le32(p + eocd - 20) == 0x07064b50) {
    uint64_t record = le64(p + eocd - 20 + 8);
    if (record > eocd - 20 || eocd - 20 - record < 56 ||
        le32(p + record) != 0x06064b50) {
      why = "malformed zip64 end of central directory record";
      return false;
    }
    count = le64(p + record + 32);
    dirSize = le64(p + record + 40);
    dirOffset = le64(p + record + 48);
    dirLimit = record;
  } else if (count == 0xffff || dirSize == 0xffffffff ||
             dirOffset == 0xffffffff) {
    why = "the zip64 end of central directory locator is missing";
    return false;
  }
  if (dirOffset > dirLimit || dirSize > dirLimit - dirOffset) {
    why = "the central directory lies outside the file (truncated?)";
    return false;
  }
  uint64_t at = dirOffset, end = dirOffset + dirSize;
  for (uint64_t i = 0; i < count; ++i) {
    auto bad = [&](const std::string &what) {
      why = "malformed central directory at entry " + std::to_string(i) + ": " +
            what;
      return false;
    };
    if (end - at < 46 || le32(p + at) != 0x02014b50)
      return bad("no entry header");
    const char *h = p + at;
    DirEntry e;
    e.flags = le16(h + 8);
    e.method = le16(h + 10);
    e.crc = le32(h + 16);
    e.compressed = le32(h + 20);
    e.size = le32(h + 24);
    uint64_t nameLength = le16(h + 28), extraLength = le16(h + 30),
             commentLength = le16(h + 32);
    e.offset = le32(h + 42);
    if (nameLength + extraLength + commentLength > end - at - 46)
      return bad("the entry runs past the directory");
    e.name.assign(h + 46, nameLength);
    // Zip64 extended information: the 64-bit values of the fields that
    // are all ones, in this order.
    const char *x = h + 46 + nameLength, *xEnd = x + extraLength;
    bool zip64 = false;
    while (xEnd - x >= 4) {
      uint16_t id = le16(x), length = le16(x + 2);
      if (length > xEnd - x - 4)
        return bad(e.name + ": an extra field runs past its header");
      if (id == 0x0001) {
        zip64 = true;
        const char *f = x + 4, *fEnd = f + length;
        for (uint64_t *field : {&e.size, &e.compressed, &e.offset}) {
          if (*field != 0xffffffff)
            continue;
          if (fEnd - f < 8)
            return bad(e.name + ": a zip64 extra field without the " +
                       "values its header leaves out");
          *field = le64(f);
          f += 8;
        }
      }
      x += 4 + length;
    }
    if (!zip64 && (e.size == 0xffffffff || e.compressed == 0xffffffff ||
                   e.offset == 0xffffffff))
      return bad(e.name + ": 32-bit sizes all ones without a zip64 field");
    entries.push_back(std::move(e));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return true;
}

bool npz::readArchive(const std::string &path, Archive &archive,
                      std::string &error, uint64_t maxEntryBytes) {
  archive = Archive();
  archive.path = path;
  std::string why;
  if (!exec::readRegularFile(path, archive.file, "an .npz archive", why)) {
    error = "cannot read " + path + ": " + why;
    return false;
  }
  return parseArchive(archive, error, maxEntryBytes);
}

bool npz::parseArchive(Archive &archive, std::string &error,
                       uint64_t maxEntryBytes) {
  const std::string &path = archive.path;
  archive.arrays.clear();
  archive.inflated.clear();
  auto fail = [&](const std::string &why) {
    error = path + ": " + why;
    return false;
  };
  std::vector<DirEntry> entries;
  std::string why;
  if (!readDirectory(archive.file, entries, why))
    return fail(why);
  const char *p = archive.file.data();
  uint64_t size = archive.file.size();
  for (const DirEntry &e : entries) {
    auto bad = [&](const std::string &what) {
      return fail("entry '" + e.name + "': " + what);
    };
    if (e.flags & 0x41)
      return bad("encrypted entries are not supported");
    if (e.offset > size || size - e.offset < 30 ||
        le32(p + e.offset) != 0x04034b50)
      return bad("no local header at offset " + std::to_string(e.offset));
    uint64_t dataAt =
        e.offset + 30 + le16(p + e.offset + 26) + le16(p + e.offset + 28);
    if (dataAt > size || e.compressed > size - dataAt)
      return bad("its data runs past the end of the file (truncated?)");
    const char *data = p + dataAt;
    uint64_t bytes = e.size;
    if (e.size > maxEntryBytes)
      return bad(std::to_string(e.size) + " bytes by the directory, more than "
                 "the " + std::to_string(maxEntryBytes) +
                 " that any array read from it can use");
    if (e.method == 8 && e.size > maxInflated(e.compressed))
      return bad(std::to_string(e.size) + " bytes by the directory from " +
                 std::to_string(e.compressed) +
                 " compressed: more than deflate can produce (a damaged "
                 "directory)");
    if (e.method == 8) {
      if (!haveDeflate())
        return bad("compressed (deflate, as np.savez_compressed writes it), "
                   "but this build has no zlib to inflate it: save the "
                   "arrays with np.savez, or build with zlib");
      archive.inflated.emplace_back();
      if (!inflateRaw(data, e.compressed, archive.inflated.back(), e.size, why))
        return bad(why);
      data = archive.inflated.back().data();
    } else if (e.method != 0) {
      return bad("compression method " + std::to_string(e.method) +
                 " (stored, as np.savez writes, and deflate, as "
                 "np.savez_compressed writes, are read)");
    } else if (e.compressed != e.size) {
      return bad("stored, but " + std::to_string(e.compressed) +
                 " bytes in the file for " + std::to_string(e.size));
    }
    if (crc32Update(0, data, bytes) != e.crc)
      return bad("CRC-32 mismatch (a damaged file)");
    std::string_view name = e.name;
    if (name.size() < 4 || name.substr(name.size() - 4) != ".npy")
      return bad("not an .npy array (np.savez names them KEY.npy)");
    Array array;
    array.name = std::string(name.substr(0, name.size() - 4));
    for (const Array &other : archive.arrays)
      if (other.name == array.name)
        return bad("a second array '" + array.name + "'");
    if (!parseNpy(data, bytes, array, why))
      return bad(why);
    archive.arrays.push_back(std::move(array));
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// The .npy header of a C-order array: format 1.0 unless the header needs
/// 2.0's 32-bit length, padded with spaces to a multiple of 64 bytes.
static std::string npyHeader(const std::string &descr,
                             const std::vector<int64_t> &shape) {
  std::string dict =
      "{'descr': '" + descr +
      "', 'fortran_order': False, 'shape': " + formatShape(shape) + ", }";
  auto padded = [&](size_t prefix) {
    return (prefix + dict.size() + 1 + 63) / 64 * 64;
  };
  size_t prefix = 10, total = padded(prefix);
  if (total - prefix > 0xffff)
    total = padded(prefix = 12);
  std::string out = "\x93"
                    "NUMPY";
  out += static_cast<char>(prefix == 10 ? 1 : 2);
  out += '\0';
  put(out, total - prefix, prefix == 10 ? 2 : 4);
  out += dict;
  out.append(total - out.size() - 1, ' ');
  out += '\n';
  return out;
}

Writer::~Writer() {
  if (file)
    std::fclose(file);
  // Only the file this writer made: never the target, which may be what a
  // caller had there before, or a device (as root, removing /dev/full
  // after a failed write deleted the device node).
  if (!temp.empty() && !finished)
    ::unlink(temp.c_str());
}

bool Writer::open(const std::string &target, std::string &error) {
  path = target;
  auto failed = [&] {
    error = "cannot write " + target + ": " + std::strerror(errno);
    return false;
  };
  // A regular file, or none: written beside it and renamed over it by
  // finish(), so that a failed write leaves what was there. Anything else
  // (a device, a FIFO, /dev/stdout, a symbolic link) is written in place.
  struct stat info;
  bool exists = ::lstat(target.c_str(), &info) == 0;
  if (!exists && errno != ENOENT)
    return failed();
  if (!exists || S_ISREG(info.st_mode)) {
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0; attempt < 100 && !file; ++attempt) {
      std::string name = target + ".part-" + std::to_string(::getpid()) + "-" +
                         std::to_string(counter++);
      int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                      0666);
      if (fd < 0 && errno == EEXIST)
        continue;
      if (fd < 0)
        break; // the directory takes no new file: write in place
      file = ::fdopen(fd, "wb");
      if (!file) {
        ::close(fd);
        ::unlink(name.c_str());
        return failed();
      }
      temp = name;
    }
    if (file)
      return true;
  }
  file = std::fopen(target.c_str(), "wb");
  if (!file)
    return failed();
  return true;
}

bool Writer::write(std::string_view bytes, std::string &error) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  offset += bytes.size();
  return true;
}

/// DOS date 1980-01-01, time 00:00: the same bytes for the same outputs.
static constexpr uint16_t kDosDate = 0x21;

bool Writer::add(const std::string &name, const std::string &descr,
                 const std::vector<int64_t> &shape,
                 const std::vector<std::string_view> &parts,
                 std::string &error) {
  Entry e;
  e.name = name + ".npy";
  e.offset = offset;
  std::string header = npyHeader(descr, shape);
  e.size = header.size();
  e.crc = crc32Update(0, header.data(), header.size());
  for (std::string_view part : parts) {
    e.size += part.size();
    e.crc = crc32Update(e.crc, part.data(), part.size());
  }
  bool zip64 = forceZip64 || e.size >= 0xffffffff;
  std::string local;
  put(local, 0x04034b50, 4);
  put(local, zip64 ? 45 : 20, 2); // version needed
  put(local, 0, 2);               // flags
  put(local, 0, 2);               // stored
  put(local, 0, 2);               // time
  put(local, kDosDate, 2);
  put(local, e.crc, 4);
  put(local, zip64 ? 0xffffffff : e.size, 4); // compressed
  put(local, zip64 ? 0xffffffff : e.size, 4); // uncompressed
  put(local, e.name.size(), 2);
  put(local, zip64 ? 20 : 0, 2);
  local += e.name;
  if (zip64) {
    put(local, 0x0001, 2);
    put(local, 16, 2);
    put(local, e.size, 8);
    put(local, e.size, 8);
  }
  if (!write(local, error) || !write(header, error))
    return false;
  for (std::string_view part : parts)
    if (!write(part, error))
      return false;
  entries.push_back(std::move(e));
  return true;
}

bool Writer::finish(std::string &error) {
  uint64_t dirOffset = offset;
  for (const Entry &e : entries) {
    bool bigSize = forceZip64 || e.size >= 0xffffffff;
    bool bigOffset = forceZip64 || e.offset >= 0xffffffff;
    std::string extra;
    if (bigSize) {
      put(extra, e.size, 8);
      put(extra, e.size, 8);
    }
    if (bigOffset)
      put(extra, e.offset, 8);
    std::string h;
    put(h, 0x02014b50, 4);
    put(h, 3 << 8 | 45, 2);                    // made by: Unix
    put(h, bigSize || bigOffset ? 45 : 20, 2); // version needed
    put(h, 0, 2);                              // flags
    put(h, 0, 2);                              // stored
    put(h, 0, 2);                              // time
    put(h, kDosDate, 2);
    put(h, e.crc, 4);
    put(h, bigSize ? 0xffffffff : e.size, 4);
    put(h, bigSize ? 0xffffffff : e.size, 4);
    put(h, e.name.size(), 2);
    put(h, extra.empty() ? 0 : 4 + extra.size(), 2);
    put(h, 0, 2);                       // comment
    put(h, 0, 2);                       // disk
    put(h, 0, 2);                       // internal attributes
    put(h, uint64_t(0100644) << 16, 4); // a regular file, 644
    put(h, bigOffset ? 0xffffffff : e.offset, 4);
    h += e.name;
    if (!extra.empty()) {
      put(h, 0x0001, 2);
      put(h, extra.size(), 2);
      h += extra;
    }
    if (!write(h, error))
      return false;
  }
  uint64_t dirSize = offset - dirOffset, count = entries.size();
  bool zip64 = forceZip64 || count >= 0xffff || dirSize >= 0xffffffff ||
               dirOffset >= 0xffffffff;
  std::string end;
  if (zip64) {
    uint64_t record = offset;
    put(end, 0x06064b50, 4);
    put(end, 44, 8); // the size of the rest of the record
    put(end, 3 << 8 | 45, 2);
    put(end, 45, 2);
    put(end, 0, 4);
    put(end, 0, 4);
    put(end, count, 8);
    put(end, count, 8);
    put(end, dirSize, 8);
    put(end, dirOffset, 8);
    put(end, 0x07064b50, 4); // the locator
    put(end, 0, 4);
    put(end, record, 8);
    put(end, 1, 4);
  }
  put(end, 0x06054b50, 4);
  put(end, 0, 2);
  put(end, 0, 2);
  put(end, zip64 ? 0xffff : count, 2);
  put(end, zip64 ? 0xffff : count, 2);
  put(end, zip64 ? 0xffffffff : dirSize, 4);
  put(end, zip64 ? 0xffffffff : dirOffset, 4);
  put(end, 0, 2);
  if (!write(end, error))
    return false;
  std::FILE *f = file;
  file = nullptr;
  if (std::fclose(f) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!temp.empty() && std::rename(temp.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  finished = true;
  return true;
}

//===----------------------------------------------------------------------===//
// A run's inputs and outputs
//===----------------------------------------------------------------------===//

std::vector<std::string> npz::acceptedDescrs(run::Elem elem) {
  switch (elem) {
  case run::Elem::F32:
    return {"<f4"};
  case run::Elem::F16:
    return {"<f2"};
  case run::Elem::BF16:
    return {"<u2", "<i2", "<V2", "|V2"};
  case run::Elem::F64:
    return {"<f8"};
  case run::Elem::I1:
    return {"|b1", "|u1", "|i1"};
  case run::Elem::I8:
    return {"|i1", "|u1"};
  case run::Elem::I16:
    return {"<i2", "<u2"};
  case run::Elem::I32:
    return {"<i4", "<u4"};
  case run::Elem::I64:
    return {"<i8", "<u8"};
  }
  return {};
}

/// "'<f4'", "'<u2', '<i2', '<V2' or '|V2'".
static std::string listDescrs(const std::vector<std::string> &descrs) {
  std::string text;
  for (size_t i = 0; i < descrs.size(); ++i)
    text += (i == 0                   ? ""
             : i + 1 == descrs.size() ? " or "
                                      : ", ") +
            ("'" + descrs[i] + "'");
  return text;
}

uint64_t npz::maxInputEntryBytes(const run::Signature &sig, int ranks) {
  constexpr uint64_t kHeader = 1u << 16;
  const uint64_t rows = ranks > 0 ? uint64_t(ranks) : 1;
  uint64_t largest = 0;
  for (const run::BufferSpec &spec : sig.args) {
    std::optional<uint64_t> bytes = spec.checkedBytes();
    if (!bytes || *bytes > (UINT64_MAX - kHeader) / rows)
      return UINT64_MAX;
    largest = std::max(largest, *bytes * rows);
  }
  return largest + kHeader;
}

bool npz::readInputs(const std::string &path, const run::Signature &sig,
                     int ranks, Inputs &inputs, std::string &error) {
  inputs.given.clear();
  if (!readArchive(path, inputs.archive, error, maxInputEntryBytes(sig, ranks)))
    return false;
  return matchInputs(sig, ranks, inputs, error);
}

bool npz::matchInputs(const run::Signature &sig, int ranks, Inputs &inputs,
                      std::string &error) {
  const std::string &path = inputs.archive.path;
  inputs.given.clear();
  auto fail = [&](const std::string &why) {
    error = path + ": " + why;
    return false;
  };
  const std::vector<Array> &arrays = inputs.archive.arrays;
  std::string names, argNames;
  for (const Array &array : arrays)
    names += (names.empty() ? "" : ", ") + array.name;
  for (const run::BufferSpec &spec : sig.args)
    argNames += (argNames.empty() ? "" : ", ") + spec.name;
  inputs.given.assign(ranks, std::vector<const void *>(sig.args.size()));
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const run::BufferSpec &spec = sig.args[i];
    std::vector<std::string> descrs = acceptedDescrs(spec.elem);
    std::vector<int64_t> perRank = spec.shape;
    perRank.insert(perRank.begin(), ranks);
    std::string shapes = formatShape(perRank) + " (row r for rank r) or " +
                         formatShape(spec.shape) + " (every rank)";
    auto it = std::find_if(arrays.begin(), arrays.end(),
                           [&](const Array &a) { return a.name == spec.name; });
    if (it == arrays.end())
      return fail("no array '" + spec.name + "' for argument " + spec.name +
                  " of @" + sig.name + " (" + spec.typeString() + ": " +
                  listDescrs(descrs) + " of shape " + shapes +
                  "); the file has " +
                  (names.empty() ? std::string("no arrays") : names));
    const Array &array = *it;
    auto wrong = [&](const std::string &what) {
      return fail("array '" + array.name + "' (" + spec.typeString() + " on " +
                  std::to_string(ranks) + " ranks): " + what);
    };
    if (std::find(descrs.begin(), descrs.end(), array.descr) == descrs.end())
      return wrong(
          "expected dtype " + listDescrs(descrs) +
          (spec.elem == run::Elem::BF16
               ? " (bf16 bit patterns; numpy writes ml_dtypes.bfloat16 as "
                 "'<V2')"
               : "") +
          ", found '" + array.descr + "'");
    if (array.fortranOrder)
      return wrong("a Fortran-order array (fortran_order: True); save it "
                   "in C order (np.ascontiguousarray)");
    bool rowPerRank = array.shape == perRank;
    if (!rowPerRank && array.shape != spec.shape)
      return wrong("expected shape " + shapes + ", found " +
                   formatShape(array.shape));
    size_t rowBytes =
        static_cast<size_t>(spec.numElements()) * spec.elemBytes();
    size_t want = rowBytes * (rowPerRank ? ranks : 1);
    if (array.bytes != want)
      return wrong(std::to_string(array.bytes) + " bytes of data, expected " +
                   std::to_string(want) + " for shape " +
                   formatShape(array.shape) + " (a damaged entry)");
    for (int r = 0; r < ranks; ++r)
      inputs.given[r][i] = array.data + (rowPerRank ? r * rowBytes : 0);
  }
  for (const Array &array : arrays)
    if (std::none_of(sig.args.begin(), sig.args.end(),
                     [&](const run::BufferSpec &spec) {
                       return spec.name == array.name;
                     }))
      return fail("array '" + array.name + "' is not an argument of @" +
                  sig.name + " (its arguments: " +
                  (argNames.empty() ? std::string("none") : argNames) + ")");
  return true;
}

bool npz::writeOutputs(const std::string &path, const run::Signature &sig,
                       const std::vector<std::vector<run::OutputView>> &outputs,
                       std::string &error) {
  std::vector<const run::BufferSpec *> specs = run::outputSpecs(sig);
  Writer writer;
  if (!writer.open(path, error))
    return false;
  std::vector<std::vector<char>> rows(outputs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const run::BufferSpec &spec = *specs[i];
    std::vector<std::string_view> parts;
    for (size_t r = 0; r < outputs.size(); ++r) {
      run::copyContiguous(spec, outputs[r][i], rows[r]);
      parts.emplace_back(rows[r].data(), rows[r].size());
    }
    std::vector<int64_t> shape = spec.shape;
    shape.insert(shape.begin(), static_cast<int64_t>(outputs.size()));
    // The first accepted dtype of each type: what numpy reads back as it.
    const std::string descr = npz::acceptedDescrs(spec.elem).front();
    if (!writer.add(spec.name, descr, shape, parts, error))
      return false;
  }
  return writer.finish(error);
}
