#include "tools/fashion_mnist.hpp"

#include <zlib.h>

#include <memory>

namespace chorus::tools {
namespace {

using GzFile = std::unique_ptr<gzFile_s, int (*)(gzFile)>;

// The IDX header: a big-endian magic (0x0803 images, 0x0801 labels) and one big-endian size per dimension.
Status readHeader(gzFile f, const std::string& path, uint32_t magic, int dims, std::vector<uint32_t>* sizes) {
  unsigned char b[4];
  auto next = [&](uint32_t* v) {
    if (gzread(f, b, 4) != 4) return false;
    *v = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    return true;
  };
  uint32_t m = 0;
  if (!next(&m) || m != magic) return invalidArgument(path + ": not an IDX file of the expected kind");
  sizes->resize(dims);
  for (uint32_t& s : *sizes)
    if (!next(&s)) return invalidArgument(path + ": truncated header");
  return Status::ok();
}

}  // namespace

Status loadFashionMnist(const std::string& dir, const std::string& prefix, size_t limit, Dataset* out) {
  const std::string imagesPath = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labelsPath = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  GzFile images(gzopen(imagesPath.c_str(), "rb"), gzclose), labels(gzopen(labelsPath.c_str(), "rb"), gzclose);
  if (!images || !labels) {
    return invalidArgument("cannot open " + (images ? labelsPath : imagesPath) +
                           " (Debian package dataset-fashion-mnist; scripts/install_deps.sh installs it)");
  }
  std::vector<uint32_t> imageDims, labelDims;
  CHORUS_TRY(readHeader(images.get(), imagesPath, 0x803, 3, &imageDims));
  CHORUS_TRY(readHeader(labels.get(), labelsPath, 0x801, 1, &labelDims));
  if (imageDims[0] != labelDims[0]) return invalidArgument(prefix + ": image and label counts differ");
  const size_t n = limit ? std::min<size_t>(limit, imageDims[0]) : imageDims[0];
  const size_t pixels = size_t{imageDims[1]} * imageDims[2];
  std::vector<unsigned char> raw(n * pixels), rawLabels(n);
  if (gzread(images.get(), raw.data(), static_cast<unsigned>(raw.size())) != static_cast<int>(raw.size()) ||
      gzread(labels.get(), rawLabels.data(), static_cast<unsigned>(n)) != static_cast<int>(n)) {
    return invalidArgument(prefix + ": truncated data");
  }
  out->images.resize(n, pixels);
  for (size_t i = 0; i < raw.size(); ++i) out->images.data()[i] = static_cast<float>(raw[i]) / 255.0f;
  out->labels.assign(rawLabels.begin(), rawLabels.end());
  return Status::ok();
}

}  // namespace chorus::tools
