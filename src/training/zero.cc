#include "chorus/training/zero.hpp"

#include <algorithm>

namespace chorus::training {

// Lends each layer its parameters and gradients as the stage keeps them, and starts the stage's collectives.
class Zero::Access : public ParamAccess {
 public:
  Access(Zero& z, bool training) : z_(z), training_(training) {}

  Status acquire(int layer, bool backward, const float** params, float** grads) override {
    const int u = z_.unitOfLayer_[layer];
    *params = nullptr;
    if (grads) *grads = nullptr;
    if (u < 0) return Status::ok();
    const Unit& unit = z_.units_[u];
    if (z_.config_.stage < 3) {
      *params = z_.fullParams_.data() + unit.padded;
    } else {
      CHORUS_TRY(z_.gather(u, false));
      // Prefetch: the next unit in this pass's order starts gathering while this one computes.
      const int next = backward ? u - 1 : u + 1;
      if (z_.config_.prefetch && next >= 0 && next < static_cast<int>(z_.units_.size()))
        CHORUS_TRY(z_.gather(next, false));
      CHORUS_TRY(z_.waitGathered(u));
      *params = z_.gathered_[u].params.data();
    }
    if (backward && grads) {
      if (z_.config_.stage == 1) {
        *grads = z_.fullGrads_.data() + unit.padded;
      } else {
        auto& g = z_.unitGrads_[u];
        g.assign(unit.shard * static_cast<size_t>(z_.comm_.size()), 0.0f);
        *grads = g.data();
      }
    }
    return Status::ok();
  }

  Status release(int layer, bool backward) override {
    const int u = z_.unitOfLayer_[layer];
    if (u < 0) return Status::ok();
    if (z_.config_.stage == 3) z_.releaseGathered(u);
    if (!backward || !training_ || z_.config_.stage == 1) return Status::ok();
    // Stages 2 and 3: this unit's gradients are final for the micro-batch: reduce-scatter them now.
    const Unit& unit = z_.units_[u];
    auto pending = std::make_unique<PendingReduce>();
    pending->buffer = std::move(z_.unitGrads_[u]);
    z_.unitGrads_.erase(u);
    const float scale = 1.0f / static_cast<float>(z_.comm_.size());
    for (float& g : pending->buffer) g *= scale;
    pending->unit = u;
    pending->addIncoming = z_.microBatches_ > 0;
    float* dest = (pending->addIncoming ? z_.incoming_.data() : z_.shardGrads_.data()) + unit.shardBase;
    pending->dest = dest;
    pending->request = z_.codec_ ? z_.codec_->startShard(z_.comm_, u, pending->buffer.data(), pending->buffer.size())
                                 : z_.comm_.reduceScatterAsync(pending->buffer.data(), dest, unit.shard,
                                                               DataType::kFloat32, RedOp::sum());
    z_.reductions_.push_back(std::move(pending));
    return Status::ok();
  }

 private:
  Zero& z_;
  bool training_;
};

Zero::Zero(Communicator& comm, Sequential& model, const ZeroConfig& config)
    : comm_(comm), model_(model), config_(config) {
  if (!config.codec.empty()) codecStatus_ = compress::makeCodec(config.codec, &codec_);
  const size_t n = static_cast<size_t>(comm.size()), r = static_cast<size_t>(comm.rank());
  unitOfLayer_.assign(model.layers(), -1);
  for (int l = 0; l < model.layers(); ++l) {
    const size_t count = model.layer(l).paramCount();
    if (count == 0) continue;
    Unit u;
    u.layer = l;
    u.count = count;
    u.shard = (count + n - 1) / n;
    u.padded = paddedTotal_;
    u.shardBase = shardTotal_;
    u.first = r * u.shard;
    u.owned = u.first < count ? std::min(u.shard, count - u.first) : 0;
    unitOfLayer_[l] = static_cast<int>(units_.size());
    units_.push_back(u);
    paddedTotal_ += u.shard * n;
    shardTotal_ += u.shard;
  }
  if (config.stage < 3) fullParams_.assign(paddedTotal_, 0.0f);
  if (config.stage == 1) fullGrads_.assign(paddedTotal_, 0.0f);
  if (config.stage == 3) shardParams_.assign(shardTotal_, 0.0f);
  shardGrads_.assign(shardTotal_, 0.0f);
  optimizer_ = makeOptimizer(config.optimizer, shardTotal_);
}

Zero::~Zero() {
  (void)finishReductions();
  for (auto& [u, g] : gathered_) (void)g.request.wait();
}

Status Zero::gather(int u, bool wait) {
  auto it = gathered_.find(u);
  if (it == gathered_.end()) {
    const Unit& unit = units_[u];
    Gathered& g = gathered_[u];
    g.params.assign(unit.shard * static_cast<size_t>(comm_.size()), 0.0f);
    liveGatheredBytes_ += g.params.size() * sizeof(float);
    peakGatheredBytes_ = std::max(peakGatheredBytes_, liveGatheredBytes_);
    g.request =
        comm_.allGatherAsync(shardParams_.data() + unit.shardBase, g.params.data(), unit.shard, DataType::kFloat32);
  }
  return wait ? waitGathered(u) : Status::ok();
}

Status Zero::waitGathered(int u) { return gathered_[u].request.wait(); }

void Zero::releaseGathered(int u) {
  auto it = gathered_.find(u);
  if (it == gathered_.end()) return;
  liveGatheredBytes_ -= it->second.params.size() * sizeof(float);
  gathered_.erase(it);
}

Status Zero::finishReductions() {
  Status first;
  for (auto& p : reductions_) {
    Status st = p->request.wait();
    if (st.isOk() && codec_)
      st = codec_->finishShard(p->unit, p->buffer.data(), p->buffer.size(), comm_.rank(), comm_.size(), p->dest);
    if (first.isOk() && !st.isOk()) first = st;
    if (!p->addIncoming) continue;
    const Unit& unit = units_[p->unit];
    for (size_t i = 0; i < unit.shard; ++i) shardGrads_[unit.shardBase + i] += incoming_[unit.shardBase + i];
  }
  reductions_.clear();
  return first;
}

Status Zero::init(uint64_t seed) {
  CHORUS_TRY(codecStatus_);
  Checkpoint start;
  start.params.assign(model_.paramCount(), 0.0f);
  if (comm_.rank() == 0) model_.initParams(start.params.data(), seed);
  CHORUS_TRY(comm_.broadcast(start.params.data(), start.params.data(), start.params.size(), DataType::kFloat32, 0));
  start.state.assign(optimizer_->stateVectors().size(), std::vector<float>(start.params.size(), 0.0f));
  return importCheckpoint(start);
}

Status Zero::forwardBackward(const Tensor& x, const std::vector<int>& labels, LossResult* result) {
  // The previous micro-batch's reductions land in `incoming_`, which this one reuses.
  CHORUS_TRY(finishReductions());
  if (microBatches_ > 0 && config_.stage > 1 && incoming_.empty()) incoming_.assign(shardTotal_, 0.0f);
  Access access(*this, true);
  Tensor logits, dlogits;
  CHORUS_TRY(model_.forward(x, access, &logits));
  *result = softmaxCrossEntropy(logits, labels, &dlogits);
  CHORUS_TRY(model_.backward(dlogits, access));
  ++microBatches_;
  return Status::ok();
}

Status Zero::step() {
  CHORUS_TRY(finishReductions());
  const float scale = 1.0f / static_cast<float>(comm_.size());
  optimizer_->beginStep();
  for (const Unit& unit : units_) {
    if (config_.stage == 1) {
      float* g = fullGrads_.data() + unit.padded;
      for (size_t i = 0; i < unit.shard * static_cast<size_t>(comm_.size()); ++i) g[i] *= scale;
      float* shard = shardGrads_.data() + unit.shardBase;
      if (codec_) {
        const int u = static_cast<int>(&unit - units_.data());
        const size_t n = unit.shard * static_cast<size_t>(comm_.size());
        CHORUS_TRY(codec_->startShard(comm_, u, g, n).wait());
        CHORUS_TRY(codec_->finishShard(u, g, n, comm_.rank(), comm_.size(), shard));
      } else {
        CHORUS_TRY(comm_.reduceScatter(g, shard, unit.shard, DataType::kFloat32, RedOp::sum()));
      }
    }
    float* params =
        config_.stage < 3 ? fullParams_.data() + unit.padded + unit.first : shardParams_.data() + unit.shardBase;
    optimizer_->update(params, shardGrads_.data() + unit.shardBase, unit.shardBase, unit.owned);
    if (config_.stage < 3) {
      CHORUS_TRY(comm_.allGather(params, fullParams_.data() + unit.padded, unit.shard, DataType::kFloat32));
    }
  }
  if (config_.stage == 1) std::fill(fullGrads_.begin(), fullGrads_.end(), 0.0f);
  microBatches_ = 0;
  return Status::ok();
}

Status Zero::predict(const Tensor& x, Tensor* logits) {
  Access access(*this, false);
  return model_.forward(x, access, logits);
}

Status Zero::gatherUnitVector(const std::vector<float>& shardVector, std::vector<float>* full) {
  full->assign(model_.paramCount(), 0.0f);
  std::vector<float> unitBuffer;
  for (const Unit& unit : units_) {
    unitBuffer.assign(unit.shard * static_cast<size_t>(comm_.size()), 0.0f);
    CHORUS_TRY(comm_.allGather(shardVector.data() + unit.shardBase, unitBuffer.data(), unit.shard, DataType::kFloat32));
    std::copy_n(unitBuffer.begin(), unit.count, full->begin() + static_cast<long>(model_.offset(unit.layer)));
  }
  return Status::ok();
}

Status Zero::exportCheckpoint(Checkpoint* out) {
  CHORUS_TRY(finishReductions());
  if (config_.stage < 3) {
    out->params.assign(model_.paramCount(), 0.0f);
    for (const Unit& unit : units_) {
      std::copy_n(fullParams_.begin() + static_cast<long>(unit.padded), unit.count,
                  out->params.begin() + static_cast<long>(model_.offset(unit.layer)));
    }
  } else {
    CHORUS_TRY(gatherUnitVector(shardParams_, &out->params));
  }
  out->state.clear();
  for (auto* v : optimizer_->stateVectors()) CHORUS_TRY(gatherUnitVector(*v, &out->state.emplace_back()));
  out->step = optimizer_->stepCount();
  return Status::ok();
}

Status Zero::exportShard(CheckpointShard* out) {
  CHORUS_TRY(finishReductions());
  auto state = optimizer_->stateVectors();
  *out = CheckpointShard{};
  out->state.resize(state.size());
  for (const Unit& unit : units_) {
    if (unit.owned == 0) continue;
    out->ranges.emplace_back(model_.offset(unit.layer) + unit.first, unit.owned);
    const auto params = config_.stage < 3 ? fullParams_.begin() + static_cast<long>(unit.padded + unit.first)
                                          : shardParams_.begin() + static_cast<long>(unit.shardBase);
    out->params.insert(out->params.end(), params, params + static_cast<long>(unit.owned));
    for (size_t k = 0; k < state.size(); ++k) {
      const auto v = state[k]->begin() + static_cast<long>(unit.shardBase);
      out->state[k].insert(out->state[k].end(), v, v + static_cast<long>(unit.owned));
    }
  }
  out->step = optimizer_->stepCount();
  return Status::ok();
}

Status Zero::importCheckpoint(const Checkpoint& in) {
  auto state = optimizer_->stateVectors();
  CHORUS_TRY(checkCheckpointShape(in, model_.paramCount(), state.size()));
  for (const Unit& unit : units_) {
    const auto source = in.params.begin() + static_cast<long>(model_.offset(unit.layer));
    if (config_.stage < 3) {
      std::copy_n(source, unit.count, fullParams_.begin() + static_cast<long>(unit.padded));
    } else {
      std::copy_n(source + static_cast<long>(unit.first), unit.owned,
                  shardParams_.begin() + static_cast<long>(unit.shardBase));
    }
    for (size_t k = 0; k < state.size(); ++k) {
      std::copy_n(in.state[k].begin() + static_cast<long>(model_.offset(unit.layer) + unit.first), unit.owned,
                  state[k]->begin() + static_cast<long>(unit.shardBase));
    }
  }
  optimizer_->stepCount() = in.step;
  return Status::ok();
}

MemoryReport Zero::memory() const {
  MemoryReport m;
  m.paramBytes = (config_.stage < 3 ? fullParams_.size() : shardParams_.size()) * sizeof(float);
  m.gradBytes = (config_.stage == 1 ? fullGrads_.size() : shardGrads_.size()) * sizeof(float);
  m.optimizerBytes = optimizer_->stateBytes();
  m.peakGatheredBytes = peakGatheredBytes_;
  return m;
}

}  // namespace chorus::training
