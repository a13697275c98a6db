// The safetensors weights format (Hugging Face, https://github.com/huggingface/safetensors):
//
//   [8 bytes]  N, unsigned little-endian: the length of the header
//   [N bytes]  JSON header, UTF-8: {"NAME": {"dtype": "F32", "shape": [2, 3],
//              "data_offsets": [BEGIN, END]}, ..., "__metadata__": {"key": "value", ...}}
//   [rest]     the data area: each tensor's bytes, row-major, little-endian, at
//              [BEGIN, END) relative to the start of the data area
//
// kvlab reads F64, F32, BF16 and F16 (F16 through lib/quant/minifloat's IEEE binary16 codec) and
// decodes every element to double. The reader validates the whole file before it returns:
//   - read_safetensors opens regular files only (a FIFO, a directory or a device is refused before
//     it is opened, so nothing blocks or reads forever), reads the 8-byte length first and reads
//     nothing more before it is bounded, and reads the data area only once the header has passed;
//   - the file is at least 8 bytes; N <= kMaxSafetensorsHeader (100 MB, as the reference
//     implementation) and 8 + N <= file size;
//   - the header is one well-formed JSON object, at most kMaxJsonDepth levels deep, parsed in time
//     linear in its length (lib/io/json_read.hpp); every entry other than "__metadata__" is an
//     object with exactly dtype (a known string), shape (array of integers in [0, 2^31]) and
//     data_offsets (two integers BEGIN <= END); names are unique (a duplicate key is an error,
//     not "the last one wins") and non-empty;
//   - "__metadata__", when present, maps strings to strings only;
//   - END - BEGIN == product(shape) * size(dtype), computed with overflow checks;
//   - all tensors together hold at most kMaxSafetensorsElements elements (the work budget,
//     io/read_budget.hpp);
//   - the tensors, sorted by BEGIN, tile the data area exactly: the first begins at 0, each
//     begins where the previous ends (no overlap, no gap) and the last ends at the end of the file
//     (no trailing bytes);
//   - every element is finite: a NaN or ±inf weight is an InputError naming the tensor and the
//     element index (kvlab's checks compare finite numbers; a non-finite weight would only show up
//     later as NaN logits, far from its cause). Documented in docs/weights.md.
// Every failure is an InputError whose one-line message names the file and the problem, e.g.
//   "model.safetensors: tensor 'lm_head.weight': data_offsets [0, 12] span 12 bytes, shape [2, 3]
//    of F32 needs 24".
//
// The writer emits the layout the reference implementation (safetensors 0.4, Rust) emits: the
// tensors ordered by element size (largest first, for alignment), then by name, packed from
// offset 0 with no gaps; "__metadata__" first in the header; the header padded with spaces to a
// multiple of 8 bytes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace kvlab {

/// Largest header kvlab reads: 100,000,000 bytes (the reference implementation's limit).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

/// One tensor of a safetensors file.
struct SafeTensor {
  std::string name;                  ///< e.g. "transformer.h.0.attn.q_proj.weight"
  std::string dtype;                 ///< "F64" | "F32" | "BF16" | "F16" (storage type in the file)
  std::vector<std::int64_t> shape;   ///< dimensions, outermost first; {} is a scalar
  std::vector<double> values;        ///< product(shape) elements, row-major, decoded to double

  /// product(shape) (1 for a scalar).
  std::int64_t numel() const;
};

/// A whole file: its tensors (in the order of their data offsets) and its metadata.
struct SafeTensorsFile {
  std::vector<SafeTensor> tensors;
  std::map<std::string, std::string> metadata;  ///< "__metadata__" (empty when absent)

  /// The tensor called `name`, or nullptr.
  const SafeTensor* find(const std::string& name) const;
};

/// A tensor shape as messages print it: "[2, 3]" ("[]" for a scalar).
std::string safetensors_shape_text(const std::vector<std::int64_t>& shape);

/// Size in bytes of one element of `dtype` ("F64" 8, "F32" 4, "BF16" 2, "F16" 2); throws
/// InputError naming the dtype and the known ones otherwise.
int safetensors_dtype_size(const std::string& dtype);

/// Parses and validates the bytes of a safetensors file (see the top of this header for every
/// rule). `label` names the file in messages. Throws InputError on any violation.
SafeTensorsFile parse_safetensors(std::span<const unsigned char> bytes, const std::string& label);

/// Reads and validates the file at `path` (the rules of parse_safetensors), without reading more
/// than it has bounded: InputError also for an empty path, a path that is not a regular file (a
/// directory, a FIFO, a device, a socket: refused before it is opened), a file that cannot be
/// opened or read, one larger than the largest file within the budgets (8 + 100 MB + 8 * 2^26
/// bytes), and one that shrinks while it is read.
SafeTensorsFile read_safetensors(const std::string& path);

/// The bytes of a safetensors file holding `tensors` (each encoded in its own dtype: values are
/// rounded to nearest even for F32/BF16/F16) and `metadata`. Throws InputError when a name is
/// empty or repeated, a dtype is unknown, values.size() != product(shape), or a value is not
/// finite (or, for F16/BF16/F32, overflows the format).
std::vector<unsigned char> encode_safetensors(const std::vector<SafeTensor>& tensors,
                                              const std::map<std::string, std::string>& metadata);

/// Writes encode_safetensors(tensors, metadata) to `path` through safe_write_file (io/safe_write.hpp:
/// a temporary renamed into place, so a reader never sees half a file and an error leaves the old
/// file). InputError "cannot write '<path>': <reason>" when the file cannot be written; callers
/// put their option's name in front.
void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace kvlab
