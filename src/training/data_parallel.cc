#include "chorus/training/data_parallel.hpp"

#include <algorithm>
#include <cmath>

namespace chorus::training {

// Lends the replica's buffers and starts buckets as backward releases layers.
class DataParallel::Access : public FlatAccess {
 public:
  explicit Access(DataParallel& dp)
      : FlatAccess(dp.model_, dp.config_.computeType.empty() ? dp.params_.data() : dp.computeParams_.data(),
                   dp.grads_.data()),
        dp_(dp) {}
  Status release(int layer, bool backward) override {
    return backward && dp_.reducing_ ? dp_.launchReadyBuckets(layer) : Status::ok();
  }

 private:
  DataParallel& dp_;
};

DataParallel::DataParallel(Communicator& comm, Sequential& model, const DataParallelConfig& config,
                           Communicator* expertComm)
    : comm_(comm), expertComm_(expertComm), model_(model), config_(config) {
  params_.assign(model.paramCount(), 0.0f);
  grads_.assign(model.paramCount(), 0.0f);
  optimizer_ = makeOptimizer(config.optimizer, model.paramCount());
  gradientScale_ = 1.0f / static_cast<float>(comm.size());
  std::string codec = config.codec;
  if (config.computeType == "fp16" && codec.empty()) codec = "fp16";  // overflow shows where fp16 would overflow
  if (!config.computeType.empty() && config.computeType != "bf16" && config.computeType != "fp16")
    codecStatus_ = invalidArgument("compute type '" + config.computeType + "' is not bf16 or fp16");
  else if (!codec.empty())
    codecStatus_ = compress::makeCodec(codec, &codec_);
  if (config.computeType == "fp16") lossScale_ = config.initialLossScale;
  planBuckets();
}

DataParallel::~DataParallel() { (void)waitBuckets(); }

void DataParallel::planBuckets() {
  struct Tensor_ {
    size_t begin, end;
    int layer;
    bool expert;
  };
  std::vector<Tensor_> order;
  for (int l = 0; l < model_.layers(); ++l) {
    const Layer& layer = model_.layer(l);
    const ParamRange expert = layer.expertParams();
    if (expert.count) expertRanges_.push_back({model_.offset(l) + expert.offset, expert.count});
    for (const ParamRange& t : layer.tensors()) {
      const bool isExpert = expert.count && t.offset >= expert.offset && t.offset < expert.offset + expert.count;
      order.push_back({model_.offset(l) + t.offset, model_.offset(l) + t.offset + t.count, l, isExpert});
    }
  }
  std::reverse(order.begin(), order.end());
  const size_t capElements = std::max<size_t>(1, config_.bucketCapBytes / sizeof(float));
  Bucket open;
  bool hasOpen = false;
  auto close = [&] {
    if (hasOpen) buckets_.push_back(open);
    hasOpen = false;
  };
  for (const Tensor_& t : order) {
    if (t.expert) {  // not reduced over this group: it also ends the contiguous range
      close();
      continue;
    }
    if (!hasOpen) {
      open = {t.begin, t.end, t.layer};
      hasOpen = true;
    } else {
      open.begin = t.begin;
      open.lowestLayer = t.layer;
    }
    if (open.end - open.begin >= capElements) close();
  }
  close();
}

Status DataParallel::init(uint64_t seed) {
  CHORUS_TRY(codecStatus_);
  if (comm_.rank() == 0) model_.initParams(params_.data(), seed);
  return comm_.broadcast(params_.data(), params_.data(), params_.size(), DataType::kFloat32, 0);
}

Status DataParallel::launchReadyBuckets(int releasedLayer) {
  const float scale = gradientScale_;
  while (nextBucket_ < buckets_.size() && buckets_[nextBucket_].lowestLayer >= releasedLayer) {
    Bucket& b = buckets_[nextBucket_++];
    b.launchedAfterLayer = releasedLayer;
    float* g = grads_.data() + b.begin;
    for (size_t i = 0; i < b.end - b.begin; ++i) g[i] *= scale;
    const int index = static_cast<int>(nextBucket_ - 1);
    pending_.push_back(codec_ ? codec_->start(comm_, index, g, b.end - b.begin)
                              : comm_.allReduceAsync(g, g, b.end - b.begin, DataType::kFloat32, RedOp::sum()));
    pendingBuckets_.push_back(nextBucket_ - 1);
  }
  return Status::ok();
}

Status DataParallel::waitBuckets() {
  Status first;
  for (size_t i = 0; i < pending_.size(); ++i) {
    Status st = pending_[i].wait();
    if (st.isOk() && codec_) {
      const Bucket& b = buckets_[pendingBuckets_[i]];
      st = codec_->finish(static_cast<int>(pendingBuckets_[i]), grads_.data() + b.begin, b.end - b.begin);
    }
    if (first.isOk() && !st.isOk()) first = st;
  }
  pending_.clear();
  pendingBuckets_.clear();
  return first;
}

Status DataParallel::forwardBackward(const Tensor& x, const std::vector<int>& labels, LossResult* result) {
  if (!config_.computeType.empty() && computeStale_) {
    computeParams_.resize(params_.size());
    for (size_t i = 0; i < params_.size(); ++i)
      computeParams_[i] =
          config_.computeType == "bf16" ? compress::roundToBf16(params_[i]) : compress::roundToFp16(params_[i]);
    computeStale_ = false;
  }
  Access access(*this);
  Tensor logits, dlogits;
  CHORUS_TRY(model_.forward(x, access, &logits));
  *result = softmaxCrossEntropy(logits, labels, &dlogits);
  if (lossScale_ != 1.0f)
    for (size_t i = 0; i < dlogits.size(); ++i) dlogits.data()[i] *= lossScale_;
  reducing_ = sync_;
  nextBucket_ = 0;
  Status st = model_.backward(dlogits, access);
  reducing_ = false;
  return st;
}

Status DataParallel::reduceWithoutBatch() {
  nextBucket_ = 0;
  return launchReadyBuckets(0);
}

Status DataParallel::step() {
  CHORUS_TRY(waitBuckets());
  if (expertComm_ && expertComm_->size() > 1) {
    const float scale = 1.0f / static_cast<float>(expertComm_->size());
    for (const ParamRange& r : expertRanges_) {
      float* g = grads_.data() + r.offset;
      for (size_t i = 0; i < r.count; ++i) g[i] *= scale;
      CHORUS_TRY(expertComm_->allReduce(g, g, r.count, DataType::kFloat32, RedOp::sum()));
    }
  }
  skipped_ = false;
  if (lossScale_ != 1.0f) {
    // The sum carries any rank's overflow to every rank, so all of them decide alike.
    skipped_ = std::any_of(grads_.begin(), grads_.end(), [](float g) { return !std::isfinite(g); });
    if (skipped_) {
      lossScale_ = std::max(1.0f, lossScale_ * 0.5f);
      goodSteps_ = 0;
    } else {
      const float unscale = 1.0f / lossScale_;  // a power of two: exact
      for (float& g : grads_) g *= unscale;
      if (++goodSteps_ >= config_.scaleGrowthInterval) lossScale_ *= 2.0f, goodSteps_ = 0;
    }
  }
  if (!skipped_) {
    optimizer_->beginStep();
    optimizer_->update(params_.data(), grads_.data(), 0, params_.size());
    computeStale_ = true;
  }
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  return Status::ok();
}

Status DataParallel::predict(const Tensor& x, Tensor* logits) {
  FlatAccess access(model_, params_.data(), nullptr);
  return model_.forward(x, access, logits);
}

Status DataParallel::exportCheckpoint(Checkpoint* out) {
  out->params = params_;
  out->state.clear();
  for (auto* v : optimizer_->stateVectors()) out->state.push_back(*v);
  out->step = optimizer_->stepCount();
  return Status::ok();
}

Status DataParallel::exportShard(CheckpointShard* out) {
  const size_t n = static_cast<size_t>(comm_.size()), r = static_cast<size_t>(comm_.rank());
  const size_t begin = params_.size() * r / n, end = params_.size() * (r + 1) / n;
  *out = CheckpointShard{};
  if (end > begin) out->ranges.emplace_back(begin, end - begin);
  out->params.assign(params_.begin() + static_cast<long>(begin), params_.begin() + static_cast<long>(end));
  for (auto* v : optimizer_->stateVectors())
    out->state.emplace_back(v->begin() + static_cast<long>(begin), v->begin() + static_cast<long>(end));
  out->step = optimizer_->stepCount();
  return Status::ok();
}

Status DataParallel::importCheckpoint(const Checkpoint& in) {
  auto state = optimizer_->stateVectors();
  CHORUS_TRY(checkCheckpointShape(in, params_.size(), state.size()));
  params_ = in.params;
  for (size_t k = 0; k < state.size(); ++k) *state[k] = in.state[k];
  optimizer_->stepCount() = in.step;
  return Status::ok();
}

MemoryReport DataParallel::memory() const {
  MemoryReport m;
  m.paramBytes = params_.size() * sizeof(float);
  m.gradBytes = grads_.size() * sizeof(float);
  m.optimizerBytes = optimizer_->stateBytes();
  return m;
}

}  // namespace chorus::training
