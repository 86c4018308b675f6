#include "chorus/training/pipeline/pipeline_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "../agreement.hpp"
#include "../pair_links.hpp"
#include "chorus/training/loss.hpp"
#include "chorus/training/pipeline/partition.hpp"
#include "message_matching.hpp"

namespace chorus::training::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
using Key = std::pair<int, int>;  // micro-batch, stage

}  // namespace

struct PipelineParallel::Impl {
  Communicator& comm;
  // A communicator per ordered pair of ranks that exchange messages, of those two ranks alone: the sender only
  // sends on it and the receiver only receives, each call asynchronous, so its thread works through the pair's
  // queue in order while the sender computes on (the simulator's model: a send never waits).
  PairLinks links;
  struct InFlight {
    Tensor data;
    Request request;
  };
  std::deque<InFlight> sending;
  PipelineConfig config;
  Schedule schedule;
  std::vector<int> starts;        // the first layer of each stage, then the layer count
  std::vector<Sequential> slots;  // one model per micro-batch: layers keep what their backward needs
  std::vector<size_t> widths;     // the width of stage s's input (widths[S]: the model's output)
  std::vector<float> params, grads;
  std::unique_ptr<Optimizer> optimizer;
  std::vector<TracedAction> trace;

  // One step's tensors: a stage's input and output, and their gradients.
  std::map<Key, Tensor> input, output, inputGrad, outputGrad;
  float lossSum = 0;
  int correct = 0;

  explicit Impl(Communicator& c) : comm(c) {}
  int rank() const { return comm.rank(); }
  int stages() const { return schedule.stages(); }
  size_t offset(int stage) const { return slots[0].offset(starts[stage]); }
  size_t count(int stage) const { return slots[0].offset(starts[stage + 1]) - offset(stage); }
  bool local(int stage) const { return stage >= 0 && stage < stages() && schedule.rankOf(stage) == rank(); }

  static void emulate(double seconds) {
    if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }

  Status forward(const Action& a, const Tensor& x, const std::vector<int>& labels, size_t first, size_t rows) {
    Sequential& model = slots[a.microBatch];
    Tensor cur;
    if (a.stage == 0) {
      cur = x.rowsSlice(first, first + rows);
    } else if (local(a.stage - 1)) {
      cur = std::move(output[{a.microBatch, a.stage - 1}]);
      output.erase({a.microBatch, a.stage - 1});
    } else {
      cur = std::move(input[{a.microBatch, a.stage}]);
      input.erase({a.microBatch, a.stage});
    }
    for (int i = starts[a.stage]; i < starts[a.stage + 1]; ++i) {
      Tensor next;
      CHORUS_TRY(model.layer(i).forward(params.data() + model.offset(i), cur, &next));
      cur = std::move(next);
    }
    if (a.stage == stages() - 1) {
      const std::vector<int> rowLabels(labels.begin() + first, labels.begin() + first + rows);
      const LossResult r = softmaxCrossEntropy(cur, rowLabels, &outputGrad[{a.microBatch, a.stage}]);
      lossSum += r.loss;
      correct += r.correct;
    } else {
      output[{a.microBatch, a.stage}] = std::move(cur);
    }
    emulate(config.emulatedForward);
    return Status::ok();
  }

  // B or BI: from the gradient of the stage's output to that of its input.
  Status backward(const Action& a) {
    Sequential& model = slots[a.microBatch];
    Tensor dy;
    if (local(a.stage + 1)) {
      dy = std::move(inputGrad[{a.microBatch, a.stage + 1}]);
      inputGrad.erase({a.microBatch, a.stage + 1});
    } else {
      dy = std::move(outputGrad[{a.microBatch, a.stage}]);
      outputGrad.erase({a.microBatch, a.stage});
    }
    const bool split = a.op == Op::kBackwardInput;
    for (int i = starts[a.stage + 1] - 1; i >= starts[a.stage]; --i) {
      Tensor dx;
      Tensor* want = i > 0 ? &dx : nullptr;  // the model's input needs no gradient
      Layer& layer = model.layer(i);
      const float* p = params.data() + model.offset(i);
      CHORUS_TRY(split ? layer.backwardInput(p, dy, want)
                       : layer.backward(p, dy, grads.data() + model.offset(i), want));
      dy = std::move(dx);
    }
    if (a.stage > 0) inputGrad[{a.microBatch, a.stage}] = std::move(dy);
    emulate(split ? config.emulatedBackwardInput : config.emulatedBackwardInput + config.emulatedBackwardWeight);
    return Status::ok();
  }

  Status backwardWeight(const Action& a) {
    Sequential& model = slots[a.microBatch];
    for (int i = starts[a.stage + 1] - 1; i >= starts[a.stage]; --i)
      CHORUS_TRY(model.layer(i).backwardWeight(grads.data() + model.offset(i)));
    emulate(config.emulatedBackwardWeight);
    return Status::ok();
  }

  // Opens the links of every pair of ranks that exchange messages. Collective: every rank derives the same pairs
  // from the same schedule.
  Status openLinks() {
    std::set<std::pair<int, int>> pairs;
    for (int r = 0; r < schedule.ranks; ++r)
      for (const Action& a : schedule.actions[r])
        if (isCommunication(a.op)) pairs.insert({r, a.peer});
    return openPairLinks(comm, pairs, "pipeline links", &links);
  }

  int linkRank(int peer) const { return training::linkRank(rank(), peer); }

  // The communication actions [begin, end): sends queued, receives posted and awaited.
  Status exchange(const std::vector<Action>& actions, size_t begin, size_t end, const std::vector<size_t>& rows) {
    std::vector<std::pair<size_t, Request>> receives;
    for (size_t i = begin; i < end; ++i) {
      const Action& a = actions[i];
      const Key key{a.microBatch, a.stage};
      if (a.op == Op::kSendActivation || a.op == Op::kSendGradient) {
        auto& from = a.op == Op::kSendActivation ? output : inputGrad;
        sending.push_back({std::move(from[key]), Request()});
        from.erase(key);
        Tensor& t = sending.back().data;
        sending.back().request =
            links[{rank(), a.peer}]->sendAsync(t.data(), t.size(), DataType::kFloat32, linkRank(a.peer));
        continue;
      }
      const bool activation = a.op == Op::kRecvActivation;
      Tensor& t = activation ? input[key] : outputGrad[key];
      t.resize(rows[a.microBatch], widths[activation ? a.stage : a.stage + 1]);
      receives.emplace_back(
          i, links[{a.peer, rank()}]->recvAsync(t.data(), t.size(), DataType::kFloat32, linkRank(a.peer)));
    }
    Status first = Status::ok();
    for (auto& [i, request] : receives) {
      Status st = request.wait();
      if (!st.isOk() && first.isOk()) first = st.withContext(describe(actions[i]));
    }
    return first;
  }

  // Waits for the queued sends (each has the communicator's deadline); the first error.
  Status drainSends() {
    Status first = Status::ok();
    for (InFlight& f : sending) {
      Status st = f.request.wait();
      if (!st.isOk() && first.isOk()) first = st.withContext("a pipeline send");
    }
    sending.clear();
    return first;
  }

  Status optimizerStep() {
    optimizer->beginStep();
    size_t state = 0;
    for (int s = rank(); s < stages(); s += schedule.ranks) {
      optimizer->update(params.data() + offset(s), grads.data() + offset(s), state, count(s));
      state += count(s);
    }
    return Status::ok();
  }
};

PipelineParallel::PipelineParallel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PipelineParallel::~PipelineParallel() { (void)impl_->drainSends(); }

Status PipelineParallel::create(Communicator& comm, const std::function<Sequential()>& makeModel,
                                const PipelineConfig& config, std::unique_ptr<PipelineParallel>* out) {
  auto impl = std::make_unique<Impl>(comm);
  impl->config = config;
  const int p = comm.size();
  CHORUS_TRY(makeSchedule(config.schedule, p, config.microBatches, config.stagesPerRank, &impl->schedule));
  const int stages = impl->schedule.stages();
  for (int k = 0; k < config.microBatches; ++k) impl->slots.push_back(makeModel());
  Sequential& model = impl->slots[0];
  for (const Sequential& slot : impl->slots) {
    if (slot.layers() != model.layers() || slot.paramCount() != model.paramCount())
      return invalidArgument("the model factory made models of different shapes");
  }
  // The stages.
  std::vector<int>& starts = impl->starts;
  if (!config.stageStarts.empty()) {
    starts = config.stageStarts;
    bool ok = static_cast<int>(starts.size()) == stages && starts[0] == 0;
    for (int s = 1; ok && s < stages; ++s) ok = starts[s] > starts[s - 1] && starts[s] < model.layers();
    if (!ok) {
      return invalidArgument("stage starts must be " + std::to_string(stages) +
                             " increasing layer indices from 0, below the layer count " +
                             std::to_string(model.layers()));
    }
  } else {
    std::vector<double> costs = config.layerCosts;
    if (costs.empty()) {
      for (int i = 0; i < model.layers(); ++i) costs.push_back(1.0 + static_cast<double>(model.layer(i).paramCount()));
    } else if (static_cast<int>(costs.size()) != model.layers()) {
      return invalidArgument(std::to_string(costs.size()) + " layer costs for " + std::to_string(model.layers()) +
                             " layers");
    }
    CHORUS_TRY(
        partitionLayers(costs, stages, &starts).withContext("pipeline of " + std::to_string(stages) + " stages"));
  }
  starts.push_back(model.layers());
  // Every rank must run the same pipeline.
  Fingerprint mine;
  mine.mix(config.schedule).mix(config.microBatches).mix(config.stagesPerRank);
  for (int s : starts) mine.mix(s);
  CHORUS_TRY(
      checkSameOnEveryRank(comm, mine.value(), "pipeline (schedule, micro-batches, stages per rank or stage starts)"));
  CHORUS_TRY(impl->openLinks());
  // Parameters, and the widths between stages from one row through the model (which also finds a layer that
  // cannot split its backward before a zero-bubble step needs it).
  impl->params.resize(model.paramCount());
  impl->grads.assign(model.paramCount(), 0.0f);
  model.initParams(impl->params.data(), config.seed);
  size_t width = 0;
  for (int i = 0; i < model.layers() && !width; ++i)
    if (auto* linear = dynamic_cast<Linear*>(&model.layer(i))) width = linear->in();
  if (!width) return invalidArgument("a pipeline needs a model whose input goes to a Linear layer");
  Tensor cur(1, width);
  for (int s = 0; s < stages; ++s) {
    impl->widths.push_back(cur.cols());
    for (int i = starts[s]; i < starts[s + 1]; ++i) {
      Tensor next;
      CHORUS_TRY(model.layer(i).forward(impl->params.data() + model.offset(i), cur, &next));
      cur = std::move(next);
    }
  }
  impl->widths.push_back(cur.cols());
  if (impl->schedule.splitBackward) {
    for (int i = model.layers() - 1; i >= 0; --i) {
      Tensor dx;
      CHORUS_TRY(model.layer(i)
                     .backwardInput(impl->params.data() + model.offset(i), cur, &dx)
                     .withContext("schedule " + config.schedule + " splits the backward"));
      cur = std::move(dx);
    }
  }
  size_t mineCount = 0;
  for (int s = comm.rank(); s < stages; s += p) mineCount += impl->count(s);
  impl->optimizer = makeOptimizer(config.optimizer, mineCount);
  out->reset(new PipelineParallel(std::move(impl)));
  return Status::ok();
}

Status PipelineParallel::trainStep(const Tensor& x, const std::vector<int>& labels, StepResult* result) {
  Impl& d = *impl_;
  const int m = d.schedule.microBatches;
  if (x.rows() < static_cast<size_t>(m) || labels.size() != x.rows() || x.cols() != d.widths[0]) {
    return invalidArgument("a pipeline step of " + std::to_string(m) + " micro-batches needs at least as many rows, " +
                           "one label each and " + std::to_string(d.widths[0]) + " columns (got " +
                           std::to_string(x.rows()) + " x " + std::to_string(x.cols()) + ", " +
                           std::to_string(labels.size()) + " labels)");
  }
  std::vector<size_t> rows(m), first(m);
  for (int k = 0; k < m; ++k) {
    rows[k] = x.rows() / m + (static_cast<size_t>(k) < x.rows() % m ? 1 : 0);
    first[k] = k ? first[k - 1] + rows[k - 1] : 0;
  }
  for (int s = d.rank(); s < d.stages(); s += d.schedule.ranks)
    std::fill(d.grads.begin() + d.offset(s), d.grads.begin() + d.offset(s) + d.count(s), 0.0f);
  CHORUS_TRY(d.drainSends().withContext("the previous pipeline step"));
  d.input.clear(), d.output.clear(), d.inputGrad.clear(), d.outputGrad.clear();
  d.lossSum = 0, d.correct = 0;
  d.trace.clear();
  const auto& actions = d.schedule.actions[d.rank()];
  const auto start = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  for (size_t i = 0; i < actions.size();) {
    const Action& a = actions[i];
    const double t0 = since();
    size_t next = i + 1;
    Status st = Status::ok();
    switch (a.op) {
      case Op::kForward:
        st = d.forward(a, x, labels, first[a.microBatch], rows[a.microBatch]);
        break;
      case Op::kBackward:
      case Op::kBackwardInput:
        st = d.backward(a);
        break;
      case Op::kBackwardWeight:
        st = d.backwardWeight(a);
        break;
      case Op::kOptimizerStep:
        st = d.optimizerStep();
        break;
      default:
        while (next < actions.size() && isCommunication(actions[next].op)) ++next;
        st = d.exchange(actions, i, next, rows);
    }
    CHORUS_TRY(st.withContext("pipeline rank " + std::to_string(d.rank()) + ", " + opName(a.op) + " of micro-batch " +
                              std::to_string(a.microBatch) + " at stage " + std::to_string(a.stage)));
    const double t1 = since();
    for (size_t j = i; j < next; ++j) d.trace.push_back({actions[j], t0, t1});
    i = next;
  }
  CHORUS_TRY(d.drainSends());
  *result = StepResult{};
  result->seconds = since();
  result->hasLoss = d.local(d.stages() - 1);
  if (result->hasLoss) {
    result->loss = d.lossSum / static_cast<float>(m);
    result->correct = d.correct;
  }
  return Status::ok();
}

Status PipelineParallel::gatherParams(std::vector<float>* params) {
  Impl& d = *impl_;
  for (int s = 0; s < d.stages(); ++s) {
    if (d.count(s) == 0) continue;
    CHORUS_TRY(d.comm.broadcast(d.params.data() + d.offset(s), d.params.data() + d.offset(s), d.count(s),
                                DataType::kFloat32, d.schedule.rankOf(s)));
  }
  *params = d.params;
  return Status::ok();
}

const Schedule& PipelineParallel::schedule() const { return impl_->schedule; }
std::vector<int> PipelineParallel::stageStarts() const { return {impl_->starts.begin(), impl_->starts.end() - 1}; }
const std::vector<TracedAction>& PipelineParallel::trace() const { return impl_->trace; }

CallCounters PipelineParallel::traffic() const {
  CallCounters total;
  for (const auto& [pair, link] : impl_->links) total += link->counters().total();
  return total;
}

}  // namespace chorus::training::pipeline
