// chorus-train: trains an MLP on Fashion-MNIST with N ranks (threads of this process) under one parallelism of
// the training layer, prints a line per epoch and writes the loss and accuracy of every step to a CSV file.
//   single  one rank, the whole global batch            dp      DataParallel over N ranks
//   zero1..3  ZeRO stage 1, 2 or 3 over N ranks           tp      TP = N: column- then row-parallel hidden layers
//   moe     a mixture-of-experts hidden layer (N x experts-per-rank experts, top-2, dropless), EP = N
//   pp      pipeline parallelism: the MLP's layers cut into N stages, run by --schedule over --micro-batches
//   ps      a parameter server: --servers of the N ranks serve key ranges, the others push and pull (--sync)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <numeric>
#include <thread>

#include "chorus/training/balance/balanced_data_parallel.hpp"
#include "chorus/training/data_parallel.hpp"
#include "chorus/training/grid.hpp"
#include "chorus/training/moe.hpp"
#include "chorus/training/param_server/param_server.hpp"
#include "chorus/training/pipeline/pipeline_parallel.hpp"
#include "chorus/training/shard_keeper.hpp"
#include "chorus/training/tensor_parallel.hpp"
#include "chorus/training/zero.hpp"
#include "tools/fashion_mnist.hpp"
#include "tools/train/cpu_quota.hpp"
#include "tools/train/options.hpp"
#include "tools/version_flag.hpp"

using namespace chorus;
using namespace chorus::training;
using namespace chorus::train_demo;

namespace {

// Everything the ranks share: the data, the CSV and rank 0's report.
struct Shared {
  Options opt;
  tools::Dataset train, test;
  std::mutex mutex;
  std::ofstream csv;
};

Sequential buildModel(const Options& o, RankGrid& grid) {
  Sequential m;
  if (o.mode == "tp") {
    m.add(std::make_unique<ColumnParallelLinear>(784, 256, *grid.tpComm));
    m.add(std::make_unique<Relu>());
    m.add(std::make_unique<RowParallelLinear>(256, 256, *grid.tpComm));
    m.add(std::make_unique<Relu>());
    m.add(std::make_unique<Linear>(256, 10));
  } else if (o.mode == "moe") {
    MoeConfig c;
    c.hidden = 256;
    c.ffn = 256;
    c.experts = 2 * o.ranks;
    c.topK = 2;
    c.capacityFactor = 0;
    m.add(std::make_unique<Linear>(784, 256));
    m.add(std::make_unique<Relu>());
    m.add(std::make_unique<MoeLayer>(c, *grid.epComm));
    m.add(std::make_unique<Linear>(256, 10));
  } else {
    m = makeMlp({784, 256, 256, 10});
  }
  return m;
}

uint64_t bytesMoved(Communicator& world, RankGrid& grid, bool wire) {
  uint64_t total = 0;
  for (Communicator* c : {&world, grid.tpComm.get(), grid.dpComm.get(), grid.epComm.get(), grid.expertDpComm.get()}) {
    if (!c) continue;
    const CallCounters t = c->counters().total();
    total += wire ? t.wireBytes : t.payloadBytes;
  }
  return total;
}

// Test accuracy. Each rank evaluates its share of the test set and the counts are summed; under TP every rank
// evaluates all of it (its layers need all TP ranks on the same rows).
Status evaluate(Communicator& world, Trainer& trainer, Shared& s, bool replicatedBatch, double* accuracy) {
  const size_t ranks = replicatedBatch ? 1 : static_cast<size_t>(world.size());
  const size_t share = s.test.labels.size() / ranks,
               first = replicatedBatch ? 0 : share * static_cast<size_t>(world.rank());
  int64_t correct = 0;
  for (size_t b = first; b < first + share; b += 500) {
    const size_t end = std::min(first + share, b + 500);
    Tensor logits;
    CHORUS_TRY(trainer.predict(s.test.images.rowsSlice(b, end), &logits));
    std::vector<int> labels(s.test.labels.begin() + static_cast<long>(b),
                            s.test.labels.begin() + static_cast<long>(end));
    correct += softmaxCrossEntropy(logits, labels, nullptr).correct;
  }
  if (!replicatedBatch) CHORUS_TRY(world.allReduce(&correct, &correct, 1, DataType::kInt64, RedOp::sum()));
  *accuracy = static_cast<double>(correct) / static_cast<double>(share * ranks);
  return Status::ok();
}

// Test accuracy of one whole copy of the parameters, in this thread.
Status testAccuracy(Sequential& model, const float* params, const Shared& s, double* accuracy) {
  FlatAccess access(model, const_cast<float*>(params), nullptr);
  int64_t correct = 0;
  for (size_t b = 0; b < s.test.labels.size(); b += 500) {
    const size_t end = std::min(s.test.labels.size(), b + 500);
    Tensor logits;
    CHORUS_TRY(model.forward(s.test.images.rowsSlice(b, end), access, &logits));
    const std::vector<int> labels(s.test.labels.begin() + static_cast<long>(b),
                                  s.test.labels.begin() + static_cast<long>(end));
    correct += softmaxCrossEntropy(logits, labels, nullptr).correct;
  }
  *accuracy = static_cast<double>(correct) / static_cast<double>(s.test.labels.size());
  return Status::ok();
}

// The epoch's shuffle, the same on every rank.
void shuffle(const Options& o, int epoch, std::vector<size_t>* order) {
  std::iota(order->begin(), order->end(), 0);
  Rng rng(o.seed * 7919 + static_cast<uint64_t>(epoch));
  for (size_t i = order->size() - 1; i > 0; --i) std::swap((*order)[i], (*order)[rng.below(i + 1)]);
}

// The whole global batch of step `step` (the modes where every rank sees all of it).
void globalBatch(const Shared& s, const std::vector<size_t>& order, size_t step, Tensor* x, std::vector<int>* labels) {
  for (size_t i = 0; i < s.opt.batch; ++i) {
    std::copy_n(s.train.images.row(order[step * s.opt.batch + i]), 784, x->row(i));
    (*labels)[i] = s.train.labels[order[step * s.opt.batch + i]];
  }
}

// Pipeline parallelism: every rank takes the whole global batch (the first stage reads the images, the last the
// labels); the loss is the last stage's, the test accuracy that of the gathered parameters on rank 0.
Status runPipelineRank(Communicator& world, Shared& s) {
  const Options& o = s.opt;
  const std::vector<size_t> widths{784, 256, 256, 10};
  pipeline::PipelineConfig c;
  c.schedule = o.schedule;
  c.microBatches = o.microBatches;
  c.stagesPerRank = o.schedule == "interleaved-1f1b" ? 2 : 1;
  c.optimizer.lr = o.lr;
  c.seed = o.seed;
  std::unique_ptr<pipeline::PipelineParallel> pipe;
  CHORUS_TRY(pipeline::PipelineParallel::create(
      world, [&] { return makeMlp(widths); }, c, &pipe));
  const size_t steps = s.train.labels.size() / o.batch;
  std::vector<size_t> order(s.train.labels.size());
  Tensor x(o.batch, 784);
  std::vector<int> labels(o.batch);
  long globalStep = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    shuffle(o, epoch, &order);
    const auto start = std::chrono::steady_clock::now();
    double epochLoss = 0, bubble = 0;
    uint64_t payload = 0, wire = 0;
    for (size_t step = 0; step < steps; ++step, ++globalStep) {
      globalBatch(s, order, step, &x, &labels);
      const CallCounters before = pipe->traffic();
      pipeline::StepResult r;
      CHORUS_TRY(pipe->trainStep(x, labels, &r));
      const CallCounters after = pipe->traffic();
      payload = after.payloadBytes - before.payloadBytes;
      wire = after.wireBytes - before.wireBytes;
      double busy = 0;
      for (const auto& t : pipe->trace())
        if (pipeline::isCompute(t.action.op)) busy += t.end - t.start;
      double stats[3] = {r.hasLoss ? r.loss : 0.0, r.hasLoss ? static_cast<double>(r.correct) : 0.0,
                         1.0 - busy / r.seconds};
      CHORUS_TRY(world.allReduce(stats, stats, 3, DataType::kFloat64, RedOp::sum()));
      const double loss = stats[0], accuracy = stats[1] / static_cast<double>(o.batch);
      epochLoss += loss;
      bubble += stats[2] / world.size();
      if (world.rank() == 0 && s.csv.is_open())
        s.csv << o.mode << ',' << globalStep << ',' << loss << ',' << accuracy << ',' << payload << ',' << wire << '\n';
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<float> params;
    CHORUS_TRY(pipe->gatherParams(&params));
    if (world.rank() == 0) {
      Sequential model = makeMlp(widths);
      double accuracy = 0;
      CHORUS_TRY(testAccuracy(model, params.data(), s, &accuracy));
      printf("%-6s epoch %d/%d  loss %.4f  test accuracy %.2f%%  %.1f s  %s, %d micro-batches, stages at layers",
             o.mode.c_str(), epoch + 1, o.epochs, epochLoss / static_cast<double>(steps), 100.0 * accuracy, seconds,
             o.schedule.c_str(), o.microBatches);
      for (int start : pipe->stageStarts()) printf(" %d", start);
      printf(";  mean idle share %.2f; per step on rank 0: payload %llu B, wire %llu B\n",
             bubble / static_cast<double>(steps), static_cast<unsigned long long>(payload),
             static_cast<unsigned long long>(wire));
      fflush(stdout);
    }
  }
  return Status::ok();
}

// --slow-rank R:F on rank R's thread: a CPU quota of 1/F of a core where the cpu cgroup controller allows one,
// otherwise a measured busy-wait of F - 1 times each batch's compute. Returns the busy-wait factor left to apply
// (1 under a quota); *quota holds the quota until the rank ends.
double slowThisRank(const Options& o, int rank, Shared& s, std::unique_ptr<ThreadCpuQuota>* quota) {
  if (rank != o.slowRank) return 1;
  std::string why;
  *quota = ThreadCpuQuota::limitCallingThread(1.0 / o.slowFactor, &why);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (*quota) {
    printf("rank %d: slowed to 1/%g of a core by a CPU quota (%s)\n", rank, o.slowFactor, (*quota)->path().c_str());
    return 1;
  }
  printf("rank %d: slowed %gx by a busy-wait after each batch's compute (no CPU quota: %s)\n", rank, o.slowFactor,
         why.c_str());
  return o.slowFactor;
}

// Data parallelism over ranks of different speeds: every rank takes the global batch and trains on its share, the
// split following measured throughput with --balance on, staying equal otherwise.
Status runBalancedRank(Communicator& world, Shared& s) {
  const Options& o = s.opt;
  Sequential model = makeMlp({784, 256, 256, 10});
  balance::BalancedConfig c;
  c.globalBatch = o.batch;
  c.dataParallel.optimizer.lr = o.lr;
  c.balancer.hysteresis = o.balance ? 0.05 : 1.0;  // 1: no split is ever better enough
  std::unique_ptr<ThreadCpuQuota> quota;
  c.slowdown = slowThisRank(o, world.rank(), s, &quota);
  balance::BalancedDataParallel trainer(world, model, c);
  CHORUS_TRY(trainer.init(o.seed));
  const std::string label = o.mode + (o.slowRank >= 0 ? "-slow" : "") + (o.balance ? "-balanced" : "");
  const size_t steps = s.train.labels.size() / o.batch;
  std::vector<size_t> order(s.train.labels.size());
  Tensor x(o.batch, 784);
  std::vector<int> labels(o.batch);
  long globalStep = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    shuffle(o, epoch, &order);
    const auto start = std::chrono::steady_clock::now();
    double epochLoss = 0;
    balance::BalancedStep step;
    for (size_t k = 0; k < steps; ++k, ++globalStep) {
      globalBatch(s, order, k, &x, &labels);
      const CallCounters before = world.counters().total();
      CHORUS_TRY(trainer.trainStep(x, labels, &step));
      const CallCounters after = world.counters().total();
      epochLoss += step.loss;
      if (world.rank() == 0 && s.csv.is_open()) {
        s.csv << label << ',' << globalStep << ',' << step.loss << ','
              << static_cast<double>(step.correct) / static_cast<double>(o.batch) << ','
              << after.payloadBytes - before.payloadBytes << ',' << after.wireBytes - before.wireBytes << '\n';
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double testAccuracy = 0;
    CHORUS_TRY(evaluate(world, trainer.dataParallel(), s, false, &testAccuracy));
    if (world.rank() == 0) {
      printf("%-6s epoch %d/%d  loss %.4f  test accuracy %.2f%%  %.1f s  %.0f samples/s, last split", label.c_str(),
             epoch + 1, o.epochs, epochLoss / static_cast<double>(steps), 100 * testAccuracy, seconds,
             static_cast<double>(steps * o.batch) / seconds);
      for (size_t n : step.split) printf(" %zu", n);
      printf("\n");
      fflush(stdout);
    }
  }
  return Status::ok();
}

// A parameter server: the servers serve until the workers are done; each worker trains on its share of every global
// batch at its own pace (under asp and ssp the workers drift apart). Worker 0 reports its own batches' loss and the
// test accuracy of the parameters it pulled last; its step times give loss against wall time.
Status runParamServerRank(Communicator& world, Shared& s) {
  const Options& o = s.opt;
  Sequential model = makeMlp({784, 256, 256, 10});
  param_server::ParamServerConfig c;
  c.servers = o.servers;
  CHORUS_TRY(param_server::parseSync(o.sync, &c.sync));
  c.staleness = o.staleness;
  c.replicate = o.replicate;
  c.optimizer.lr = o.lr;
  c.seed = o.seed;
  std::unique_ptr<param_server::Server> server;
  std::unique_ptr<param_server::Worker> worker;
  CHORUS_TRY(param_server::join(world, model, c, &server, &worker));
  if (server) {
    const auto start = std::chrono::steady_clock::now();
    CHORUS_TRY(server->serve());
    const param_server::ServerStats st = server->stats();
    std::lock_guard<std::mutex> lock(s.mutex);
    printf("ps     server %d: %ld chunk updates of its range, %ld of its replica, %ld forwarded, %.1f s\n",
           world.rank() - (o.ranks - o.servers), st.pushesApplied, st.replicated, st.forwarded,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return Status::ok();
  }
  const std::string label =
      "ps-" + o.sync + (o.sync == "ssp" ? std::to_string(o.staleness) : "") + (o.slowRank >= 0 ? "-slow" : "");
  std::unique_ptr<ThreadCpuQuota> quota;
  const double spinFactor = slowThisRank(o, worker->index(), s, &quota);
  const size_t workers = static_cast<size_t>(worker->workers()), local = o.batch / workers;
  const size_t offset = local * static_cast<size_t>(worker->index());
  const size_t steps = s.train.labels.size() / o.batch;
  std::vector<size_t> order(s.train.labels.size());
  Tensor x(local, 784);
  std::vector<int> labels(local);
  const auto start = std::chrono::steady_clock::now();
  long globalStep = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    shuffle(o, epoch, &order);
    const auto epochStart = std::chrono::steady_clock::now();
    double epochLoss = 0;
    for (size_t step = 0; step < steps; ++step, ++globalStep) {
      for (size_t i = 0; i < local; ++i) {
        const size_t sample = order[step * o.batch + offset + i];
        std::copy_n(s.train.images.row(sample), 784, x.row(i));
        labels[i] = s.train.labels[sample];
      }
      LossResult r;
      const auto computeStart = std::chrono::steady_clock::now();
      CHORUS_TRY(worker->forwardBackward(x, labels, &r));
      if (spinFactor > 1) {  // a measured busy-wait: F - 1 times the compute it just did
        const auto spinUntil =
            std::chrono::steady_clock::now() + (spinFactor - 1) * (std::chrono::steady_clock::now() - computeStart);
        while (std::chrono::steady_clock::now() < spinUntil) {
        }
      }
      CHORUS_TRY(worker->step());
      epochLoss += r.loss;
      if (worker->index() == 0 && s.csv.is_open()) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::lock_guard<std::mutex> lock(s.mutex);
        s.csv << label << ',' << globalStep << ',' << r.loss << ','
              << static_cast<double>(r.correct) / static_cast<double>(local) << ",,," << seconds << '\n';
      }
    }
    if (worker->index() != 0) continue;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - epochStart).count();
    double accuracy = 0;
    CHORUS_TRY(testAccuracy(model, worker->params().data(), s, &accuracy));
    const param_server::WorkerStats st = worker->stats();
    std::lock_guard<std::mutex> lock(s.mutex);
    long steps0 = 0, sum = 0;
    for (size_t d = 0; d < st.staleness.size(); ++d)
      steps0 += st.staleness[d], sum += static_cast<long>(d) * st.staleness[d];
    printf(
        "%-6s epoch %d/%d  worker 0: loss %.4f  test accuracy %.2f%%  %.1f s for its steps; staleness mean %.2f, "
        "largest %zu",
        label.c_str(), epoch + 1, o.epochs, epochLoss / static_cast<double>(steps), 100.0 * accuracy, seconds,
        steps0 ? static_cast<double>(sum) / static_cast<double>(steps0) : 0.0,
        st.staleness.empty() ? size_t{0} : st.staleness.size() - 1);
    printf("\n");
    fflush(stdout);
  }
  return worker->finish();
}

// The data-parallel or ZeRO trainer of `comm` for --mode dp and zero1..3.
std::unique_ptr<Trainer> makeTrainer(const Options& o, Communicator& comm, Sequential& model) {
  OptimizerConfig optimizer;
  optimizer.lr = o.lr;
  if (o.mode.rfind("zero", 0) == 0) {
    ZeroConfig c;
    c.stage = o.mode[4] - '0';
    c.optimizer = optimizer;
    return std::make_unique<Zero>(comm, model, c);
  }
  DataParallelConfig c;
  c.optimizer = optimizer;
  return std::make_unique<DataParallel>(comm, model, c);
}

// --kill-rank r[,r...] --at-step s. Ranks are threads of this process, so a rank's death is staged as a crash
// looks to its peers: at step s it aborts its communicator (its connections close) and takes part in nothing more.
// Every step commits only if every rank agrees it succeeded (Communicator::agree); otherwise no rank applies it.
// A ShardKeeper holds the committed state: each rank's shard and a copy of the previous rank's, exchanged within the
// step before its vote (and on disk every --disk-every steps). After a failure the survivors agree on who is left,
// shrink, assemble the committed state from their shards and copies (from disk where a shard died with its copy),
// rebuild their trainer on the smaller communicator and go on from the step that failed.
Status runResilientRank(Communicator& world, Shared& s) {
  const Options& o = s.opt;
  Communicator* comm = &world;
  std::unique_ptr<Communicator> shrunk;
  Sequential model = makeMlp({784, 256, 256, 10});
  std::unique_ptr<Trainer> trainer = makeTrainer(o, *comm, model);
  CHORUS_TRY(trainer->init(o.seed));
  ShardKeeper keeper({o.diskEvery, o.diskDir});
  CHORUS_TRY(keeper.start(*comm, *trainer));
  const size_t steps = s.train.labels.size() / o.batch;
  const long total = static_cast<long>(steps) * o.epochs;
  std::vector<size_t> order(s.train.labels.size());
  int shuffled = -1;
  double epochLoss = 0;
  auto epochStart = std::chrono::steady_clock::now();
  std::vector<int> labels;
  for (long globalStep = 0; globalStep < total;) {
    const int epoch = static_cast<int>(globalStep / static_cast<long>(steps));
    const size_t step = static_cast<size_t>(globalStep % static_cast<long>(steps));
    if (epoch != shuffled) shuffle(o, shuffled = epoch, &order);
    if (globalStep == o.atStep && std::count(o.killRanks.begin(), o.killRanks.end(), world.rank())) {
      printf("rank %d: stops at step %ld (its communicator aborted, as a crashed rank's connections close)\n",
             world.rank(), globalStep);
      world.abort();
      return Status::ok();
    }
    const size_t local = o.batch / static_cast<size_t>(comm->size());  // equal shares; a remainder goes unused
    Tensor x(local, 784);
    labels.resize(local);
    for (size_t i = 0; i < local; ++i) {
      const size_t sample = order[step * o.batch + local * static_cast<size_t>(comm->rank()) + i];
      std::copy_n(s.train.images.row(sample), 784, x.row(i));
      labels[i] = s.train.labels[sample];
    }
    LossResult r;
    Status st = trainer->forwardBackward(x, labels, &r);
    if (st.isOk()) st = trainer->step();
    if (st.isOk()) st = keeper.prepare(*comm, *trainer);
    double loss = r.loss;
    if (st.isOk()) st = comm->allReduce(&loss, &loss, 1, DataType::kFloat64, RedOp::sum());
    uint32_t succeeded = st.isOk() ? 1 : 0;
    std::vector<int> members;
    CHORUS_TRY(comm->agree(&succeeded, &members, 2.0));
    if (succeeded && static_cast<int>(members.size()) == comm->size()) {
      CHORUS_TRY(keeper.commit(comm->rank(), comm->size()));
      epochLoss += loss / comm->size();
      ++globalStep;
      if (globalStep % static_cast<long>(steps) == 0) {
        double accuracy = 0;
        CHORUS_TRY(evaluate(*comm, *trainer, s, false, &accuracy));
        if (comm->rank() == 0)
          printf("%-6s epoch %d/%d  loss %.4f  test accuracy %.2f%%  %.1f s  on %d ranks\n", o.mode.c_str(), epoch + 1,
                 o.epochs, epochLoss / static_cast<double>(steps), 100 * accuracy,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - epochStart).count(), comm->size());
        epochLoss = 0;
        epochStart = std::chrono::steady_clock::now();
      }
      continue;
    }
    // Not every rank succeeded, or not every rank voted: nobody keeps this step. The ranks left out are excluded.
    std::vector<int> excluded;
    for (int q = 0; q < comm->size(); ++q)
      if (std::find(members.begin(), members.end(), q) == members.end()) excluded.push_back(q);
    const auto failed = std::chrono::steady_clock::now();
    std::unique_ptr<Communicator> next;
    CHORUS_TRY(comm->shrink(excluded, &next));
    shrunk = std::move(next);
    comm = shrunk.get();
    model = makeMlp({784, 256, 256, 10});
    trainer = makeTrainer(o, *comm, model);
    CHORUS_TRY(trainer->init(o.seed));
    Checkpoint committed;
    CHORUS_TRY(keeper.recover(*comm, members, &committed));
    CHORUS_TRY(trainer->importCheckpoint(committed));
    const long failedStep = globalStep;
    globalStep = committed.step;
    if (comm->rank() == 0) {
      const size_t used = o.batch / static_cast<size_t>(comm->size()) * static_cast<size_t>(comm->size());
      printf(
          "step %ld failed (%s); %zu rank(s) left out, going on with %d ranks from step %ld (state from %s, %ld "
          "committed step(s) lost) after %.3f s%s\n",
          failedStep, st.isOk() ? "a rank did not vote" : st.message().c_str(), excluded.size(), comm->size(),
          globalStep, keeper.recoveredFrom().c_str(), failedStep - globalStep,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - failed).count(),
          used == o.batch ? ""
                          : ("; each step now uses " + std::to_string(used) + " of the batch's " +
                             std::to_string(o.batch) + " samples (equal shares)")
                                .c_str());
    }
  }
  return Status::ok();
}

Status runRank(Communicator& world, Shared& s) {
  const Options& o = s.opt;
  if (!o.killRanks.empty()) return runResilientRank(world, s);
  if (o.mode == "pp") return runPipelineRank(world, s);
  if (o.mode == "ps") return runParamServerRank(world, s);
  if (o.slowRank >= 0 || o.balance) return runBalancedRank(world, s);
  const bool tp = o.mode == "tp", moe = o.mode == "moe";
  RankGrid grid;
  CHORUS_TRY(RankGrid::create(world, tp ? o.ranks : 1, moe ? o.ranks : 1, &grid));
  Sequential model = buildModel(o, grid);
  OptimizerConfig optimizer;
  optimizer.lr = o.lr;
  std::unique_ptr<Trainer> trainer;
  if (o.mode.rfind("zero", 0) == 0) {
    ZeroConfig c;
    c.stage = o.mode[4] - '0';
    c.optimizer = optimizer;
    c.codec = o.codec;
    trainer = std::make_unique<Zero>(world, model, c);
  } else {
    DataParallelConfig c;
    c.optimizer = optimizer;
    c.codec = o.codec;
    if (o.mode == "bf16") c.computeType = "bf16";  // bf16 compute copies, fp32 master weights
    // TP: the data-parallel group is this rank alone; MoE: experts are reduced over the expert-DP group only.
    trainer = std::make_unique<DataParallel>(tp ? *grid.dpComm : world, model, c, grid.expertDpComm.get());
  }
  CHORUS_TRY(trainer->init(o.seed));
  const std::string label = o.codec.empty() ? o.mode : o.mode + ":" + o.codec;
  const size_t steps = s.train.labels.size() / o.batch;
  const size_t local = tp ? o.batch : o.batch / static_cast<size_t>(o.ranks);
  const size_t offset = tp ? 0 : local * static_cast<size_t>(world.rank());
  std::vector<size_t> order(s.train.labels.size());
  Tensor x(local, 784);
  std::vector<int> labels(local);
  long globalStep = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    shuffle(o, epoch, &order);
    const auto start = std::chrono::steady_clock::now();
    double epochLoss = 0;
    uint64_t payload = 0, wire = 0;
    for (size_t step = 0; step < steps; ++step, ++globalStep) {
      for (size_t i = 0; i < local; ++i) {
        const size_t sample = order[step * o.batch + offset + i];
        std::copy_n(s.train.images.row(sample), 784, x.row(i));
        labels[i] = s.train.labels[sample];
      }
      const uint64_t payloadBefore = bytesMoved(world, grid, false), wireBefore = bytesMoved(world, grid, true);
      LossResult r;
      CHORUS_TRY(trainer->forwardBackward(x, labels, &r));
      CHORUS_TRY(trainer->step());
      payload = bytesMoved(world, grid, false) - payloadBefore;
      wire = bytesMoved(world, grid, true) - wireBefore;
      double stats[2] = {r.loss, static_cast<double>(r.correct)};  // mean loss and accuracy over the global batch
      CHORUS_TRY(world.allReduce(stats, stats, 2, DataType::kFloat64, RedOp::sum()));
      const double loss = stats[0] / world.size(), accuracy = stats[1] / (tp ? o.batch * world.size() : o.batch);
      epochLoss += loss;
      if (world.rank() == 0 && s.csv.is_open())
        s.csv << label << ',' << globalStep << ',' << loss << ',' << accuracy << ',' << payload << ',' << wire << '\n';
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double testAccuracy = 0;
    CHORUS_TRY(evaluate(world, *trainer, s, tp, &testAccuracy));
    if (world.rank() == 0) {
      const MemoryReport m = trainer->memory();
      printf(
          "%-6s epoch %d/%d  loss %.4f  test accuracy %.2f%%  %.1f s  per step on rank 0: payload %llu B, "
          "wire %llu B; rank 0 keeps params %zu B, grads %zu B, optimizer %zu B\n",
          label.c_str(), epoch + 1, o.epochs, epochLoss / static_cast<double>(steps), 100 * testAccuracy, seconds,
          static_cast<unsigned long long>(payload), static_cast<unsigned long long>(wire), m.paramBytes, m.gradBytes,
          m.optimizerBytes);
      fflush(stdout);
    }
  }
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (chorus::tools::printVersionIfAsked(argc, argv, "chorus-train")) return 0;
  Shared s;
  if (const std::string why = parse(argc, argv, &s.opt); !why.empty()) {
    if (why == "help") {
      usage();
      return 0;
    }
    fprintf(stderr, "chorus-train: %s\n", why.c_str());
    usage();
    return 2;
  }
  Status st = tools::loadFashionMnist(s.opt.data, "train", s.opt.trainSamples, &s.train);
  if (st.isOk()) st = tools::loadFashionMnist(s.opt.data, "t10k", 0, &s.test);
  if (!st.isOk()) {
    fprintf(stderr, "chorus-train: %s\n", st.message().c_str());
    return 1;
  }
  if (!s.opt.csv.empty()) {
    s.csv.open(s.opt.csv, std::ios::app);
    if (!s.csv) {
      fprintf(stderr, "chorus-train: cannot write %s\n", s.opt.csv.c_str());
      return 1;
    }
  }
  printf("chorus-train: %s on %d rank(s), %zu training images, global batch %zu, Adam lr %g, %d epoch(s)\n",
         s.opt.mode.c_str(), s.opt.ranks, s.train.labels.size(), s.opt.batch, s.opt.lr, s.opt.epochs);
  std::vector<std::unique_ptr<Communicator>> comms;
  st = Communicator::createLocal(s.opt.ranks, &comms);
  if (!st.isOk()) {
    fprintf(stderr, "chorus-train: %s\n", st.message().c_str());
    return 1;
  }
  std::vector<Status> results(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) threads.emplace_back([&, r] { results[r] = runRank(*comms[r], s); });
  for (auto& t : threads) t.join();
  for (size_t r = 0; r < results.size(); ++r) {
    if (!results[r].isOk()) {
      fprintf(stderr, "chorus-train: rank %zu: %s\n", r, results[r].message().c_str());
      return 1;
    }
  }
  return 0;
}
