#include "io/safetensors.hpp"
#include "io/safe_write.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <set>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "io/json_read.hpp"
#include "io/read_budget.hpp"
#include "quant/minifloat.hpp"

namespace kvlab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

/// Largest file that can pass the checks: the length, the largest header and the element budget
/// in the widest dtype. Anything larger is refused before a byte of it is read.
constexpr std::uint64_t kMaxFileBytes = 8 + kMaxSafetensorsHeader + 8 * kMaxSafetensorsElements;
/// Largest dimension in a shape: 2^31.
constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 31;

std::string type_of(const json& v) {
  switch (v.type()) {
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::null: return "null";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a non-integer number";
    case json::value_t::number_integer: return "a negative integer";
    default: return "a number";
  }
}

/// Parses the header in linear time: a duplicate key in any object is an error (nlohmann alone
/// keeps the last one), and so is nesting deeper than kMaxJsonDepth (the header needs 3 levels).
json parse_header(std::string_view text, const std::string& label) {
  json j;
  try {
    j = parse_json_bounded(text, {.max_depth = kMaxJsonDepth, .reject_duplicate_keys = true});
  } catch (const JsonReadError& e) {
    switch (e.kind()) {
      case JsonReadError::Kind::syntax:
        throw InputError(fmt::format("{}: header is not valid JSON: {} (header byte {})", label, e.what(), e.byte()));
      case JsonReadError::Kind::unrepresentable:
        throw InputError(fmt::format("{}: header: unreadable JSON: {}", label, e.what()));
      case JsonReadError::Kind::duplicate_key: throw InputError(fmt::format("{}: header: {}", label, e.what()));
      case JsonReadError::Kind::too_deep: throw InputError(fmt::format("{}: header: {}", label, e.what()));
    }
    throw;
  }
  if (!j.is_object())
    throw InputError(fmt::format("{}: header must be a JSON object (got {})", label, type_of(j)));
  return j;
}

std::uint64_t read_u64_le(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint32_t read_u32_le(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}

double bits_to_f32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::uint32_t f32_to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// Decodes element i of a tensor of `dtype` starting at p.
double decode(const unsigned char* p, const std::string& dtype, std::size_t i) {
  if (dtype == "F64") {
    const std::uint64_t u = read_u64_le(p + 8 * i);
    double d;
    std::memcpy(&d, &u, sizeof d);
    return d;
  }
  if (dtype == "F32") return bits_to_f32(read_u32_le(p + 4 * i));
  const std::uint16_t h = static_cast<std::uint16_t>(p[2 * i] | p[2 * i + 1] << 8);
  if (dtype == "BF16") return bits_to_f32(std::uint32_t{h} << 16);
  return minifloat_decode(h, MiniFloat::fp16);  // F16
}

/// `x` rounded to bfloat16 (8 significant bits, float32's exponent range), nearest, ties to even;
/// exact: no double rounding through float. Throws InputError naming `what` on overflow.
std::uint16_t encode_bf16(double x, const std::string& what) {
  constexpr double kMax = 3.3895313892515355e38;  // (2 - 2^-7) * 2^127
  double r = 0.0;
  if (x != 0.0) {
    int e;
    std::frexp(std::fabs(x), &e);                   // |x| in [2^(e-1), 2^e)
    const int exp = std::max(e - 1, -126);          // subnormals share 2^-126's quantum
    const double quantum = std::ldexp(1.0, exp - 7);
    r = std::nearbyint(x / quantum) * quantum;      // default rounding mode: ties to even
  }
  if (std::fabs(r) > kMax)
    throw InputError(fmt::format("{}: {} overflows BF16 (max {:g})", what, x, kMax));
  return static_cast<std::uint16_t>(f32_to_bits(static_cast<float>(r)) >> 16);
}

void put_le(std::vector<unsigned char>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

/// Appends `x` encoded as `dtype`; InputError naming `what` when it does not fit.
void encode(std::vector<unsigned char>& out, double x, const std::string& dtype, const std::string& what) {
  if (!std::isfinite(x)) throw InputError(fmt::format("{}: value {} is not finite", what, x));
  if (dtype == "F64") {
    std::uint64_t u;
    std::memcpy(&u, &x, sizeof u);
    put_le(out, u, 8);
  } else if (dtype == "F32") {
    const float f = static_cast<float>(x);  // round to nearest even
    if (!std::isfinite(f)) throw InputError(fmt::format("{}: {} overflows F32", what, x));
    put_le(out, f32_to_bits(f), 4);
  } else if (dtype == "BF16") {
    put_le(out, encode_bf16(x, what), 2);
  } else {  // F16: values that IEEE rounding would send to inf (|x| >= 65520) are an error
    if (std::fabs(x) >= 65520.0) throw InputError(fmt::format("{}: {} overflows F16 (max 65504)", what, x));
    put_le(out, minifloat_encode(x, MiniFloat::fp16), 2);
  }
}

/// One header entry, validated except for its place in the data area.
struct Entry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

std::uint64_t offset_of(const json& v, const std::string& where) {
  if (!v.is_number_unsigned())
    throw InputError(fmt::format("{}: data_offsets must hold non-negative integers (got {})", where, type_of(v)));
  return v.get<std::uint64_t>();
}

Entry parse_entry(const std::string& name, const json& v, const std::string& label) {
  const std::string where = fmt::format("{}: tensor '{}'", label, printable(name));
  if (name.empty()) throw InputError(fmt::format("{}: a tensor has an empty name", label));
  if (!v.is_object()) throw InputError(fmt::format("{}: must be an object (got {})", where, type_of(v)));
  for (const auto& [k, _] : v.items())
    if (k != "dtype" && k != "shape" && k != "data_offsets")
      throw InputError(fmt::format("{}: unknown field '{}' (allowed: dtype, shape, data_offsets)", where,
                                   printable(k, 40)));
  Entry e;
  e.name = name;
  const auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string())
    throw InputError(fmt::format("{}: dtype must be a string (F64, F32, BF16, F16)", where));
  e.dtype = dt->get<std::string>();
  const std::uint64_t elem = static_cast<std::uint64_t>(safetensors_dtype_size(e.dtype));  // throws
  const auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array())
    throw InputError(fmt::format("{}: shape must be an array of integers", where));
  if (sh->size() > 64) throw InputError(fmt::format("{}: shape has {} dimensions (at most 64)", where, sh->size()));
  std::uint64_t numel = 1;
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > kMaxDim)
      throw InputError(fmt::format("{}: shape: every dimension must be an integer in [0, {}] (got {})", where,
                                   kMaxDim, d.is_number() ? printable(d.dump(), 30) : type_of(d)));
    e.shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
    numel = checked_mul(numel, d.get<std::uint64_t>(), where + ": shape");
  }
  const auto off = v.find("data_offsets");
  if (off == v.end() || !off->is_array() || off->size() != 2)
    throw InputError(fmt::format("{}: data_offsets must be an array [BEGIN, END]", where));
  e.begin = offset_of((*off)[0], where);
  e.end = offset_of((*off)[1], where);
  if (e.end < e.begin)
    throw InputError(fmt::format("{}: data_offsets [{}, {}] end before they begin", where, e.begin, e.end));
  const std::uint64_t need = checked_mul(numel, elem, where + ": shape times dtype size");
  if (e.end - e.begin != need)
    throw InputError(fmt::format("{}: data_offsets [{}, {}] span {} bytes, shape {} of {} needs {}", where,
                                 e.begin, e.end, e.end - e.begin, safetensors_shape_text(e.shape), e.dtype, need));
  return e;
}

/// The header length N of a file of `size` bytes whose first 8 bytes say `n`, bounded.
std::uint64_t header_length(std::uint64_t size, std::uint64_t n, const std::string& label) {
  if (size < 8)
    throw InputError(fmt::format("{}: {} bytes, too short for a safetensors file (8-byte header length)", label,
                                 size));
  if (n > kMaxSafetensorsHeader)
    throw InputError(fmt::format("{}: header length {} exceeds the limit of {} bytes (is it a safetensors file?)",
                                 label, n, kMaxSafetensorsHeader));
  if (n > size - 8)
    throw InputError(fmt::format("{}: header length {} runs past the end of the file ({} bytes after the "
                                 "length; truncated?)", label, n, size - 8));
  if (n < 2) throw InputError(fmt::format("{}: header length {} is too short for a JSON object", label, n));
  return n;
}

/// A header, validated against a data area of known size; no tensor data read yet.
struct Layout {
  std::vector<Entry> entries;  ///< in data order
  std::map<std::string, std::string> metadata;
};

/// Parses the header `text` and checks it against a data area of `data_size` bytes: every entry,
/// the element budget, then the tiling of the data area.
Layout parse_layout(std::string_view text, std::uint64_t data_size, const std::string& label) {
  const json header = parse_header(text, label);
  Layout out;
  for (const auto& [key, v] : header.items()) {
    if (key == "__metadata__") {
      if (!v.is_object())
        throw InputError(fmt::format("{}: __metadata__ must be an object of strings (got {})", label, type_of(v)));
      for (const auto& [mk, mv] : v.items()) {
        if (!mv.is_string())
          throw InputError(fmt::format("{}: __metadata__ '{}': values must be strings (got {})", label,
                                       printable(mk, 60), type_of(mv)));
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    try {
      out.entries.push_back(parse_entry(key, v, label));
    } catch (const InputError& e) {
      const std::string msg = e.what();
      // safetensors_dtype_size does not know the file.
      throw InputError(msg.rfind("dtype '", 0) == 0
                           ? fmt::format("{}: tensor '{}': {}", label, printable(key), msg)
                           : msg);
    }
  }

  // The budget, before the data area is looked at (read_safetensors has not read it yet).
  std::uint64_t elements = 0;
  for (const auto& e : out.entries) {
    const std::uint64_t numel = (e.end - e.begin) / static_cast<std::uint64_t>(safetensors_dtype_size(e.dtype));
    if (numel > kMaxSafetensorsElements - elements)
      throw InputError(fmt::format("{}: the tensors hold more than {} elements, the budget of kvlab's CPU checks "
                                   "(2^26, 512 MiB as float64; tensor '{}' alone has {})",
                                   label, kMaxSafetensorsElements, printable(e.name, 60), numel));
    elements += numel;
  }

  // The tensors, in data order, must tile the data area: no overlap, no gap, nothing after.
  std::stable_sort(out.entries.begin(), out.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t at = 0;
  const Entry* prev = nullptr;
  for (const auto& e : out.entries) {
    if (e.begin < at)
      throw InputError(fmt::format("{}: tensor '{}' at [{}, {}] overlaps '{}' ending at {}", label,
                                   printable(e.name), e.begin, e.end, printable(prev->name), at));
    if (e.begin > at)
      throw InputError(fmt::format("{}: gap of {} bytes in the data area before tensor '{}' at [{}, {}]", label,
                                   e.begin - at, printable(e.name), e.begin, e.end));
    if (e.end > data_size)
      throw InputError(fmt::format("{}: tensor '{}' at [{}, {}] runs past the data area of {} bytes "
                                   "(truncated?)", label, printable(e.name), e.begin, e.end, data_size));
    at = e.end;
    prev = &e;
  }
  if (at != data_size)
    throw InputError(fmt::format("{}: {} trailing bytes after the last tensor (data area {} bytes, tensors "
                                 "cover {})", label, data_size - at, data_size, at));
  return out;
}

/// The tensors of `layout`, decoded from the data area at `data`; InputError for a non-finite
/// element.
SafeTensorsFile decode_tensors(const Layout& layout, const unsigned char* data, const std::string& label) {
  SafeTensorsFile out;
  out.metadata = layout.metadata;
  out.tensors.reserve(layout.entries.size());
  for (const auto& e : layout.entries) {
    SafeTensor t{e.name, e.dtype, e.shape, {}};
    const std::size_t count = static_cast<std::size_t>((e.end - e.begin) / safetensors_dtype_size(e.dtype));
    t.values.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      const double x = decode(data + e.begin, e.dtype, i);
      if (!std::isfinite(x))
        throw InputError(fmt::format("{}: tensor '{}': element {} is {} (kvlab accepts finite weights only)",
                                     label, printable(e.name), i, x));
      t.values[i] = x;
    }
    out.tensors.push_back(std::move(t));
  }
  return out;
}

/// Refuses anything but a regular file, naming what it is.
void require_regular(const struct stat& st, const std::string& label) {
  if (S_ISREG(st.st_mode)) return;
  const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  throw InputError(fmt::format("{}: is {}, not a safetensors file (kvlab reads regular files only)", label, what));
}

/// Reads exactly `n` bytes from `fd` into `p`; InputError when the file ends first or a read fails.
void read_exact(int fd, unsigned char* p, std::uint64_t n, const std::string& label) {
  std::uint64_t done = 0;
  while (done < n) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, std::uint64_t{1} << 30));
    const ssize_t got = ::read(fd, p + done, chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(fmt::format("{}: read error: {}", label, std::strerror(errno)));
    if (got == 0)
      throw InputError(fmt::format("{}: the file ended before its declared size (did it change while being read?)",
                                   label));
    done += static_cast<std::uint64_t>(got);
  }
}

}  // namespace

std::int64_t SafeTensor::numel() const {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

const SafeTensor* SafeTensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

int safetensors_dtype_size(const std::string& dtype) {
  if (dtype == "F64") return 8;
  if (dtype == "F32") return 4;
  if (dtype == "BF16" || dtype == "F16") return 2;
  throw InputError(fmt::format("dtype '{}': not one kvlab reads (F64, F32, BF16, F16)", printable(dtype, 40)));
}

SafeTensorsFile parse_safetensors(std::span<const unsigned char> bytes, const std::string& label_in) {
  const std::string label = printable(label_in, 200);
  const std::uint64_t n = header_length(bytes.size(), bytes.size() >= 8 ? read_u64_le(bytes.data()) : 0, label);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), n);
  const Layout layout = parse_layout(text, bytes.size() - 8 - n, label);
  return decode_tensors(layout, bytes.data() + 8 + n, label);
}

SafeTensorsFile read_safetensors(const std::string& path) {
  const std::string label = printable(path, 200);
  if (path.empty()) throw InputError("empty path: give the path of a .safetensors file");
  // The type first, without opening: opening a FIFO blocks until a writer comes, and a device
  // (/dev/zero) never ends. Then open without blocking and check again what was opened.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(fmt::format("{}: cannot open: {}", label, std::strerror(errno)));
  require_regular(st, label);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open: {}", label, std::strerror(errno)));
  const struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) throw InputError(fmt::format("{}: cannot read: {}", label, std::strerror(errno)));
  require_regular(st, label);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > kMaxFileBytes)
    throw InputError(fmt::format("{}: {} bytes, more than a safetensors file within kvlab's budgets can hold "
                                 "({} bytes: an 8-byte length, a {}-byte header and {} elements of F64)",
                                 label, size, kMaxFileBytes, kMaxSafetensorsHeader, kMaxSafetensorsElements));
  // The 8-byte length, bounded before anything else is read.
  unsigned char length[8] = {};
  if (size >= 8) read_exact(fd, length, 8, label);
  const std::uint64_t n = header_length(size, read_u64_le(length), label);
  std::string text(n, '\0');
  read_exact(fd, reinterpret_cast<unsigned char*>(text.data()), n, label);
  const Layout layout = parse_layout(text, size - 8 - n, label);  // the element budget, before the data
  std::vector<unsigned char> data(size - 8 - n);
  read_exact(fd, data.data(), data.size(), label);
  return decode_tensors(layout, data.data(), label);
}

std::vector<unsigned char> encode_safetensors(const std::vector<SafeTensor>& tensors,
                                              const std::map<std::string, std::string>& metadata) {
  // The reference's order: larger element sizes first (alignment), then by name.
  std::vector<const SafeTensor*> order;
  std::set<std::string> names;
  for (const auto& t : tensors) {
    if (t.name.empty()) throw InputError("write safetensors: a tensor has an empty name");
    if (!names.insert(t.name).second)
      throw InputError(fmt::format("write safetensors: tensor '{}' given twice", printable(t.name)));
    safetensors_dtype_size(t.dtype);
    std::uint64_t numel = 1;
    for (auto d : t.shape) {
      if (d < 0) throw InputError(fmt::format("write safetensors: tensor '{}': negative dimension", t.name));
      numel = checked_mul(numel, static_cast<std::uint64_t>(d), "write safetensors: " + t.name);
    }
    if (numel != t.values.size())
      throw InputError(fmt::format("write safetensors: tensor '{}': shape {} holds {} elements, {} values given",
                                   printable(t.name), safetensors_shape_text(t.shape), numel, t.values.size()));
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const SafeTensor* a, const SafeTensor* b) {
    const int sa = safetensors_dtype_size(a->dtype), sb = safetensors_dtype_size(b->dtype);
    return sa != sb ? sa > sb : a->name < b->name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  std::vector<unsigned char> data;
  for (const SafeTensor* t : order) {
    const std::uint64_t begin = data.size();
    for (std::size_t i = 0; i < t->values.size(); ++i)
      encode(data, t->values[i], t->dtype, fmt::format("write safetensors: tensor '{}' element {}", t->name, i));
    header[t->name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    throw InputError("write safetensors: a name or metadata string is not valid UTF-8");
  }
  while (text.size() % 8 != 0) text += ' ';  // the reference pads the header to 8 bytes
  std::vector<unsigned char> out;
  out.reserve(8 + text.size() + data.size());
  put_le(out, text.size(), 8);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const auto bytes = encode_safetensors(tensors, metadata);
  safe_write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "");
}

std::string safetensors_shape_text(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace kvlab
