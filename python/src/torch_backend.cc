// chorus as a torch.distributed backend: c10d's Backend interface for CPU tensors on a chorus Communicator.
// A call goes to chorus's async variant, so it returns at once with a Work, but for small collectives, which run in
// the caller's thread (see launch); calls between startCoalescing and endCoalescing (batch_isend_irecv,
// _coalescing_manager) run as one chorus group off the caller's thread. split_group, shrink_group and set_timeout
// are chorus's split, shrink and setTimeout; abort and completion hooks run as each call ends (torch_hooks.hpp);
// reconfigure makes the group a new communicator (torch_reconfigure.hpp).
#include <torch/python.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "chorus/communicator.hpp"
#include "torch_allocator.hpp"
#include "torch_reconfigure.hpp"
#include "torch_store.hpp"
#include "torch_work.hpp"

namespace chorus::torch_backend {
namespace {

using c10d::OpType;
using Work = c10::intrusive_ptr<c10d::Work>;

DataType dataTypeOf(const at::Tensor& t, const char* call) {
  switch (t.scalar_type()) {
    case at::kChar:
      return DataType::kInt8;
    case at::kByte:
      return DataType::kUint8;
    case at::kBool:
      return DataType::kUint8;
    case at::kInt:
      return DataType::kInt32;
    case at::kUInt32:
      return DataType::kUint32;
    case at::kLong:
      return DataType::kInt64;
    case at::kUInt64:
      return DataType::kUint64;
    case at::kHalf:
      return DataType::kFloat16;
    case at::kFloat:
      return DataType::kFloat32;
    case at::kDouble:
      return DataType::kFloat64;
    case at::kBFloat16:
      return DataType::kBfloat16;
    default:
      TORCH_CHECK(false, "chorus ", call, ": tensors of ", t.scalar_type(),
                  " are not supported (int8, uint8, bool, int32, uint32, int64, uint64, float16, bfloat16, float32, "
                  "float64 are)");
  }
}

// A tensor chorus reads or writes in place: on the CPU, dense and contiguous.
const at::Tensor& checked(const at::Tensor& t, const char* call) {
  TORCH_CHECK(t.device().is_cpu(), "chorus ", call, ": the tensor is on ", t.device(),
              "; this backend takes CPU tensors (use gloo or nccl for the others)");
  TORCH_CHECK(t.layout() == at::kStrided, "chorus ", call, ": sparse tensors are not supported");
  TORCH_CHECK(t.is_contiguous(), "chorus ", call, ": the tensor is not contiguous (call .contiguous() first)");
  return t;
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* call) {
  TORCH_CHECK(tensors.size() == 1, "chorus ", call, ": takes one tensor per rank, got ", tensors.size());
  return checked(tensors[0], call);
}

void sameType(const at::Tensor& a, const at::Tensor& b, const char* call) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "chorus ", call, ": input is ", a.scalar_type(), ", output is ",
              b.scalar_type());
}

RedOp redOpOf(const c10d::ReduceOp& op, const char* call) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return RedOp::sum();
    case c10d::ReduceOp::AVG:
      return RedOp::avg();
    case c10d::ReduceOp::PRODUCT:
      return RedOp::prod();
    case c10d::ReduceOp::MIN:
      return RedOp::min();
    case c10d::ReduceOp::MAX:
      return RedOp::max();
    case c10d::ReduceOp::PREMUL_SUM: {
      auto* factor = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(factor && !factor->tensor_factor.defined(), "chorus ", call,
                  ": PREMUL_SUM takes a Python number as its factor here, not a tensor");
      return RedOp::preMulSum(factor->double_factor);
    }
    default:
      TORCH_CHECK(false, "chorus ", call, ": the reduction BAND, BOR or BXOR is not supported");
  }
}

std::vector<size_t> countsOf(const std::vector<int64_t>& splits, int64_t rowElements, int nranks, int64_t rows,
                             const char* side) {
  std::vector<size_t> counts(nranks);
  if (splits.empty()) {
    TORCH_CHECK(rows % nranks == 0, "chorus all_to_all_single: the ", side, " tensor's ", rows,
                " rows do not split evenly over ", nranks, " ranks");
    for (auto& c : counts) c = static_cast<size_t>(rows / nranks * rowElements);
    return counts;
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == nranks, "chorus all_to_all_single: ", side, "_split_sizes has ",
              splits.size(), " entries for ", nranks, " ranks");
  TORCH_CHECK(std::accumulate(splits.begin(), splits.end(), int64_t{0}) == rows, "chorus all_to_all_single: ", side,
              "_split_sizes add up to ", std::accumulate(splits.begin(), splits.end(), int64_t{0}), ", the tensor has ",
              rows, " rows");
  for (int i = 0; i < nranks; ++i) counts[i] = static_cast<size_t>(splits[i] * rowElements);
  return counts;
}

std::vector<size_t> displacementsOf(const std::vector<size_t>& counts) {
  std::vector<size_t> displs(counts.size());
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), size_t{0});
  return displs;
}

// The communicator of `size` processes that meet in `store` under `prefix`, this one as `rank` (the GIL released
// while they do, where the caller holds it); its calls wait `timeout`.
std::unique_ptr<Communicator> meet(const c10::intrusive_ptr<c10d::Store>& store, const std::string& prefix, int rank,
                                   int size, std::chrono::milliseconds timeout, const char* what) {
  CommConfig config;
  config.timeoutSeconds = static_cast<double>(timeout.count()) / 1000.0;
  std::unique_ptr<Communicator> comm;
  Status st;
  {
    std::optional<pybind11::gil_scoped_release> release;
    if (PyGILState_Check()) release.emplace();
    st = Communicator::create(std::make_shared<TorchStore>(store), prefix, size, rank, &comm, config);
  }
  TORCH_CHECK(st.isOk(), "chorus ", what, ": creating the communicator of rank ", rank, " of ", size,
              " failed: ", st.message());
  return comm;
}

class ChorusBackend : public c10d::Backend {
 public:
  // `options`: the group's (its timeout is the communicator's).
  ChorusBackend(std::unique_ptr<Communicator> comm, size_t inlineBytes, c10::intrusive_ptr<Options> options)
      : c10d::Backend(comm->rank(), comm->size()),
        comm_(std::move(comm)),
        inlineBytes_(inlineBytes),
        options_(std::move(options)) {}
  // A group made with enable_reconfigure=True: no communicator until reconfigure(), whose processes meet in `store`
  // under `prefix`.
  ChorusBackend(c10::intrusive_ptr<c10d::Store> store, std::string prefix, int rank, int size, size_t inlineBytes,
                c10::intrusive_ptr<Options> options)
      : c10d::Backend(rank, size),
        inlineBytes_(inlineBytes),
        options_(std::move(options)),
        store_(std::move(store)),
        prefix_(std::move(prefix)) {}
  ~ChorusBackend() override {
    // A group left open by an exception inside a coalescing block must not leak into the next one.
    if (coalescing_) (void)groupEndAsync();
  }

  const std::string getBackendName() const override { return "chorus"; }
  c10::intrusive_ptr<Options> getBackendOptions() override { return options_; }
  bool supportsCoalescing() const override { return true; }

  void startCoalescing() override {
    TORCH_CHECK(!coalescing_, "chorus: startCoalescing inside a coalescing block");
    (void)groupStart();
    coalescing_ = true;
  }

  Work endCoalescing() override {
    TORCH_CHECK(coalescing_, "chorus: endCoalescing without startCoalescing");
    coalescing_ = false;
    auto block = ChorusWork::start(hooks_, groupEndAsync(), OpType::COALESCED, "coalesced block", {});
    for (auto& call : coalesced_) block->follow(call);
    coalesced_.clear();
    return block;
  }

  Work broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override {
    const at::Tensor& t = single(tensors, "broadcast");
    return launch(
        OpType::BROADCAST, "broadcast", {t}, {},
        [&](Communicator& c) {
          return c.broadcast(t.data_ptr(), t.data_ptr(), t.numel(), dataTypeOf(t, "broadcast"), opts.rootRank);
        },
        [&](Communicator& c) {
          return c.broadcastAsync(t.data_ptr(), t.data_ptr(), t.numel(), dataTypeOf(t, "broadcast"), opts.rootRank);
        });
  }

  Work allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override {
    if (tensors.size() == 1 && tensors[0].is_sparse()) return allreduceSparse(tensors[0], opts);
    const at::Tensor& t = single(tensors, "all_reduce");
    const RedOp op = redOpOf(opts.reduceOp, "all_reduce");
    const DataType type = dataTypeOf(t, "all_reduce");
    return launch(
        OpType::ALLREDUCE, "all_reduce", {t}, {},
        [&](Communicator& c) { return c.allReduce(t.data_ptr(), t.data_ptr(), t.numel(), type, op); },
        [&](Communicator& c) { return c.allReduceAsync(t.data_ptr(), t.data_ptr(), t.numel(), type, op); });
  }

  // A sparse COO tensor summed over the ranks, as Gloo sums it: each rank's coalesced indices and values, padded to
  // the largest count, are gathered to all and coalesced into one tensor, which replaces the input's contents. In the
  // calling thread; the counts, indices and values go as three AllGathers.
  Work allreduceSparse(at::Tensor t, const c10d::AllreduceOptions& opts) {
    TORCH_CHECK(opts.reduceOp == c10d::ReduceOp::SUM, "chorus all_reduce: sparse tensors are summed only (SUM)");
    TORCH_CHECK(t.device().is_cpu(), "chorus all_reduce: the tensor is on ", t.device(),
                "; this backend takes CPU tensors");
    TORCH_CHECK(!coalescing_, "chorus all_reduce: a sparse tensor cannot be part of a coalesced block");
    ++sequence_;
    const at::Tensor input = t.coalesce();
    const at::Tensor values = input._values().contiguous();
    const DataType type = dataTypeOf(values, "all_reduce");
    auto run = [&]() -> Status {
      const int64_t mine = input._nnz();
      at::Tensor counts = at::empty({size_}, at::kLong);
      CHORUS_TRY(comm().allGather(&mine, counts.data_ptr(), 1, DataType::kInt64));
      const int64_t most = counts.max().item<int64_t>();
      const int64_t sparseDims = input.sparse_dim();
      at::Tensor indices = at::zeros({sparseDims, most}, at::kLong);
      indices.narrow(1, 0, mine).copy_(input._indices());
      std::vector<int64_t> valueShape = values.sizes().vec();
      valueShape[0] = most;
      at::Tensor padded = at::zeros(valueShape, values.options());
      padded.narrow(0, 0, mine).copy_(values);
      at::Tensor allIndices = at::empty({size_, sparseDims, most}, at::kLong);
      CHORUS_TRY(comm().allGather(indices.data_ptr(), allIndices.data_ptr(), indices.numel(), DataType::kInt64));
      valueShape.insert(valueShape.begin(), size_);
      at::Tensor allValues = at::empty(valueShape, values.options());
      CHORUS_TRY(comm().allGather(padded.data_ptr(), allValues.data_ptr(), padded.numel(), type));
      std::vector<at::Tensor> indexParts, valueParts;
      for (int r = 0; r < size_; ++r) {
        const int64_t n = counts[r].item<int64_t>();
        indexParts.push_back(allIndices[r].narrow(1, 0, n));
        valueParts.push_back(allValues[r].narrow(0, 0, n));
      }
      at::Tensor sum = at::sparse_coo_tensor(at::cat(indexParts, 1), at::cat(valueParts, 0), t.sizes()).coalesce();
      t.copy_(sum);
      return Status::ok();
    };
    return ChorusWork::runNow(hooks_, run, OpType::ALLREDUCE, "all_reduce", {t}, {});
  }

  Work allreduce_coalesced(std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    return inOneGroup([&] {
      for (auto& t : tensors) {
        std::vector<at::Tensor> one{t};
        allreduce(one, opts);
      }
    });
  }

  Work reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    const at::Tensor& t = single(tensors, "reduce");
    const RedOp op = redOpOf(opts.reduceOp, "reduce");
    const DataType type = dataTypeOf(t, "reduce");
    const int root = static_cast<int>(opts.rootRank);
    return launch(
        OpType::REDUCE, "reduce", {t}, {},
        [&](Communicator& c) { return c.reduce(t.data_ptr(), t.data_ptr(), t.numel(), type, op, root); },
        [&](Communicator& c) { return c.reduceAsync(t.data_ptr(), t.data_ptr(), t.numel(), type, op, root); });
  }

  // The list form gathers into one flat tensor, then copies out to the caller's tensors once it finished.
  Work allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                 const c10d::AllgatherOptions& opts) override {
    const at::Tensor& in = single(inputs, "allgather");
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_, "chorus allgather: expects ",
                size_, " output tensors");
    for (auto& o : outputs[0]) {
      TORCH_CHECK(o.numel() == in.numel(), "chorus allgather: output tensors must match the input's size");
      sameType(in, o, "allgather");
    }
    at::Tensor flat = at::empty({static_cast<int64_t>(size_) * in.numel()}, in.options());
    Work work = _allgather_base(flat, const_cast<at::Tensor&>(in), opts);
    return copiedOut(work, flat, outputs[0], OpType::ALLGATHER);
  }

  Work _allgather_base(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions&) override {
    checked(input, "all_gather_into_tensor");
    checked(output, "all_gather_into_tensor");
    sameType(input, output, "all_gather_into_tensor");
    TORCH_CHECK(output.numel() == input.numel() * size_, "chorus all_gather_into_tensor: the output has ",
                output.numel(), " elements, expected ", input.numel() * size_);
    const DataType type = dataTypeOf(input, "all_gather_into_tensor");
    return launch(
        OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {output}, {input},
        [&](Communicator& c) { return c.allGather(input.data_ptr(), output.data_ptr(), input.numel(), type); },
        [&](Communicator& c) { return c.allGatherAsync(input.data_ptr(), output.data_ptr(), input.numel(), type); });
  }

  // outputs[r][j] receives rank r's inputs[j]: the inputs packed into one tensor, gathered once, copied out; rank
  // r's block of the gathered tensor holds its inputs in order, so the outputs read it in the same order.
  Work allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                           const c10d::AllgatherOptions& opts) override {
    TORCH_CHECK(!inputs.empty(), "chorus allgather_coalesced: no input tensors");
    TORCH_CHECK(static_cast<int>(outputs.size()) == size_, "chorus allgather_coalesced: expects ", size_,
                " output lists, got ", outputs.size());
    std::vector<at::Tensor> flatInputs, flatOutputs;
    for (auto& in : inputs) {
      sameType(inputs[0], in, "allgather_coalesced");
      flatInputs.push_back(in.reshape(-1));
    }
    for (auto& list : outputs) {
      TORCH_CHECK(list.size() == inputs.size(), "chorus allgather_coalesced: each output list needs ", inputs.size(),
                  " tensors, one per input");
      for (size_t j = 0; j < list.size(); ++j) {
        TORCH_CHECK(list[j].numel() == inputs[j].numel(), "chorus allgather_coalesced: output ", j,
                    " does not match input ", j, "'s size");
        sameType(inputs[j], list[j], "allgather_coalesced");
        flatOutputs.push_back(list[j]);
      }
    }
    at::Tensor packed = at::cat(flatInputs);
    at::Tensor gathered = at::empty({static_cast<int64_t>(size_) * packed.numel()}, packed.options());
    Work work = _allgather_base(gathered, packed, opts);
    return copiedOut(work, gathered, flatOutputs, OpType::ALLGATHER_COALESCED);
  }

  Work allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                       const c10d::AllgatherOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(), "chorus allgather_into_tensor_coalesced: ", outputs.size(),
                " outputs for ", inputs.size(), " inputs");
    return inOneGroup([&] {
      for (size_t i = 0; i < inputs.size(); ++i) _allgather_base(outputs[i], inputs[i], opts);
    });
  }

  Work _reduce_scatter_base(at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    checked(input, "reduce_scatter_tensor");
    checked(output, "reduce_scatter_tensor");
    sameType(input, output, "reduce_scatter_tensor");
    TORCH_CHECK(input.numel() == output.numel() * size_, "chorus reduce_scatter_tensor: the input has ", input.numel(),
                " elements, expected ", output.numel() * size_);
    const RedOp op = redOpOf(opts.reduceOp, "reduce_scatter");
    const DataType type = dataTypeOf(input, "reduce_scatter_tensor");
    return launch(
        OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {output}, {input},
        [&](Communicator& c) { return c.reduceScatter(input.data_ptr(), output.data_ptr(), output.numel(), type, op); },
        [&](Communicator& c) {
          return c.reduceScatterAsync(input.data_ptr(), output.data_ptr(), output.numel(), type, op);
        });
  }

  // The list form packs the inputs into one flat tensor first.
  Work reduce_scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                      const c10d::ReduceScatterOptions& opts) override {
    at::Tensor& out = const_cast<at::Tensor&>(single(outputs, "reduce_scatter"));
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_, "chorus reduce_scatter: expects ",
                size_, " input tensors");
    for (auto& i : inputs[0])
      TORCH_CHECK(i.numel() == out.numel(), "chorus reduce_scatter: input tensors must match the output's size");
    at::Tensor flat = at::cat(inputs[0]).reshape({-1});
    return _reduce_scatter_base(out, flat, opts);
  }

  Work reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                       const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(), "chorus reduce_scatter_tensor_coalesced: ", outputs.size(),
                " outputs for ", inputs.size(), " inputs");
    return inOneGroup([&] {
      for (size_t i = 0; i < inputs.size(); ++i) _reduce_scatter_base(outputs[i], inputs[i], opts);
    });
  }

  Work alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplits,
                     std::vector<int64_t>& inputSplits, const c10d::AllToAllOptions&) override {
    checked(input, "all_to_all_single");
    checked(output, "all_to_all_single");
    sameType(input, output, "all_to_all_single");
    const int64_t inRow = input.dim() ? input.numel() / std::max<int64_t>(input.size(0), 1) : 1;
    const int64_t outRow = output.dim() ? output.numel() / std::max<int64_t>(output.size(0), 1) : 1;
    auto sendCounts = std::make_shared<std::vector<size_t>>(
        countsOf(inputSplits, inRow, size_, input.dim() ? input.size(0) : 1, "input"));
    auto recvCounts = std::make_shared<std::vector<size_t>>(
        countsOf(outputSplits, outRow, size_, output.dim() ? output.size(0) : 1, "output"));
    const std::vector<size_t> sendDispls = displacementsOf(*sendCounts), recvDispls = displacementsOf(*recvCounts);
    const DataType type = dataTypeOf(input, "all_to_all_single");
    return launch(
        OpType::ALLTOALL_BASE, "all_to_all_single", {output}, {input},
        [&](Communicator& c) {
          return c.alltoAllv(input.data_ptr(), sendCounts->data(), sendDispls.data(), output.data_ptr(),
                             recvCounts->data(), recvDispls.data(), type);
        },
        [&](Communicator& c) {
          return c.alltoAllvAsync(input.data_ptr(), sendCounts->data(), sendDispls.data(), output.data_ptr(),
                                  recvCounts->data(), recvDispls.data(), type);
        });
  }

  // The list form: tensor j goes to rank j, of any sizes; packed into one all_to_all_single and unpacked after.
  Work alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                const c10d::AllToAllOptions& opts) override {
    TORCH_CHECK(static_cast<int>(outputs.size()) == size_ && static_cast<int>(inputs.size()) == size_,
                "chorus all_to_all: expects ", size_, " input and output tensors");
    std::vector<int64_t> inSplits, outSplits;
    for (auto& t : inputs) inSplits.push_back(t.numel());
    for (auto& t : outputs) outSplits.push_back(t.numel());
    std::vector<at::Tensor> flatInputs;
    for (auto& t : inputs) flatInputs.push_back(t.reshape({-1}));
    at::Tensor in = at::cat(flatInputs);
    at::Tensor out = at::empty({std::accumulate(outSplits.begin(), outSplits.end(), int64_t{0})}, in.options());
    Work work = alltoall_base(out, in, outSplits, inSplits, opts);
    return copiedOut(work, out, outputs, OpType::ALLTOALL);
  }

  // The list form gathers into one flat tensor on the root, then copies out to the caller's tensors.
  Work gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
              const c10d::GatherOptions& opts) override {
    const at::Tensor& in = single(inputs, "gather");
    at::Tensor flat;
    if (rank_ == opts.rootRank) {
      TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                  "chorus gather: the root expects ", size_, " output tensors");
      for (auto& o : outputs[0]) sameType(in, o, "gather");
      flat = at::empty({static_cast<int64_t>(size_) * in.numel()}, in.options());
    }
    Work work = gatherFlat(flat, in, opts, "gather");
    if (rank_ != opts.rootRank) return work;
    return copiedOut(work, flat, outputs[0], OpType::GATHER);
  }

  Work gather_single(at::Tensor& output, at::Tensor& input, const c10d::GatherOptions& opts) override {
    return gatherFlat(output, input, opts, "gather_single");
  }

  Work scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
               const c10d::ScatterOptions& opts) override {
    const at::Tensor& out = single(outputs, "scatter");
    const int root = static_cast<int>(opts.rootRank);
    const DataType type = dataTypeOf(out, "scatter");
    at::Tensor flat;
    if (rank_ == root) {
      TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                  "chorus scatter: the root "
                  "expects ",
                  size_, " input tensors");
      for (auto& i : inputs[0]) {
        TORCH_CHECK(i.numel() == out.numel(), "chorus scatter: input tensors must match the output's size");
        sameType(i, out, "scatter");
      }
      std::vector<at::Tensor> flatInputs;
      for (auto& t : inputs[0]) flatInputs.push_back(t.reshape({-1}));
      flat = at::cat(flatInputs);
    }
    const void* send = flat.defined() ? flat.data_ptr() : nullptr;
    return launch(
        OpType::SCATTER, "scatter", {out}, {flat},
        [&](Communicator& c) { return c.scatter(send, out.data_ptr(), out.numel(), type, root); },
        [&](Communicator& c) { return c.scatterAsync(send, out.data_ptr(), out.numel(), type, root); });
  }

  // Tags are not matched: a pair of ranks' messages arrive in the order they were sent, as with NCCL.
  Work send(std::vector<at::Tensor>& tensors, int dstRank, int) override {
    const at::Tensor& t = single(tensors, "send");
    const DataType type = dataTypeOf(t, "send");
    return launch(
        OpType::SEND, "send", {}, {t}, [&](Communicator& c) { return c.send(t.data_ptr(), t.numel(), type, dstRank); },
        [&](Communicator& c) { return c.sendAsync(t.data_ptr(), t.numel(), type, dstRank); });
  }

  // torch's hook for memory a backend's collectives move best (FSDP2's
  // set_allocate_memory_from_process_group_for_comm): shareable memory, which the peers on the host read in place.
  bool supportsTensorAlloc(c10::DeviceIndex /*deviceIdx*/) override { return true; }

  at::Tensor allocateTensor(long size, at::TensorOptions options) override {
    TORCH_CHECK(options.device().is_cpu(), "chorus allocate_tensor: CPU tensors only, not ", options.device());
    TORCH_CHECK(size >= 0, "chorus allocate_tensor: a size of ", size, " elements");
    const size_t bytes = static_cast<size_t>(size) * options.dtype().itemsize();
    c10::Storage storage(c10::Storage::use_byte_size_t(), bytes, allocateShareableData(bytes), nullptr, false);
    return at::empty({0}, options).set_(std::move(storage), 0, {size}, {1});
  }

  // Without a source, c10d asks for this; torch's own message would name no alternative.
  Work recvAnysource(std::vector<at::Tensor>& /*tensors*/, int /*tag*/) override {
    TORCH_CHECK(false, "chorus recv: a source rank is required (chorus, as NCCL, has no receive from any source)");
  }

  Work recv(std::vector<at::Tensor>& tensors, int srcRank, int) override {
    const at::Tensor& t = single(tensors, "recv");
    const DataType type = dataTypeOf(t, "recv");
    return launch(
        OpType::RECV, "recv", {t}, {}, [&](Communicator& c) { return c.recv(t.data_ptr(), t.numel(), type, srcRank); },
        [&](Communicator& c) { return c.recvAsync(t.data_ptr(), t.numel(), type, srcRank); });
  }

  Work barrier(const c10d::BarrierOptions&) override {
    return launch(
        OpType::BARRIER, "barrier", {}, {}, [](Communicator& c) { return c.barrier(); },
        [](Communicator& c) { return c.barrierAsync(); });
  }

  // Gloo's monitored barrier: the ranks that do not arrive within the timeout are named. It is chorus's agreement
  // (through the store, not the connections), whose grace period is the timeout: every rank that arrived learns the
  // same list of those that did, and a rank that comes later fails.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override {
    // A timeout of 0 is one (rank 0 names the others at once); only c10d's unset value means the group's.
    const double seconds = (opts.timeout != c10d::kUnsetTimeout ? opts.timeout : options_->timeout).count() / 1000.0;
    if (seconds <= 0) {  // no time for anyone to arrive: Gloo's words for a rank whose own wait ran out
      C10_THROW_ERROR(DistBackendError, "[Rank " + std::to_string(rank_) + "]: Rank " + std::to_string(rank_) +
                                            " timed out in monitoredBarrier after 0 ms");
    }
    uint32_t value = 1;
    std::vector<int> members;
    const Status st = comm().agree(&value, &members, seconds);  // torch calls it without the GIL
    if (!st.isOk()) {
      C10_THROW_ERROR(DistBackendError,
                      "chorus monitored_barrier on rank " + std::to_string(rank_) + ": " + st.message());
    }
    std::string missing;
    for (int r = 0, m = 0; r < size_; ++r) {
      if (m < static_cast<int>(members.size()) && members[m] == r) {
        ++m;
        continue;
      }
      if (!missing.empty()) missing += ", ";
      missing += std::to_string(r);
      if (!waitAllRanks) break;  // Gloo names the first rank missing unless asked for all
    }
    if (!missing.empty()) {
      // Gloo's words: "Rank 2 failed ..." for the first missing rank, "Ranks 1, 2 failed ..." when asked for all.
      C10_THROW_ERROR(DistBackendError, "[Rank " + std::to_string(rank_) + "]: " + (waitAllRanks ? "Ranks " : "Rank ") +
                                            missing + " failed to pass monitoredBarrier in " +
                                            std::to_string(static_cast<int64_t>(seconds * 1000)) + " ms");
    }
  }

  void abort() override {
    if (comm_) comm_->abort();
  }
  void shutdown() override { abort(); }

  // torch.distributed.shrink_group: chorus's shrink (NCCL's ncclCommShrink), which also works after an abort, so the
  // survivors of a failure go on without the dead ranks.
  bool supportsShrinking() const override { return true; }

  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t>& ranksToExclude, int shrinkFlags,
                                           const c10::intrusive_ptr<Options>& /*optsOverride*/) override {
    constexpr int kShrinkAbort = 0x01;  // torch.distributed.SHRINK_ABORT: end this group's pending calls first
    if (shrinkFlags & kShrinkAbort) comm().abort();
    std::vector<int> excluded(ranksToExclude.begin(), ranksToExclude.end());
    std::unique_ptr<Communicator> shrunk;
    Status st;
    {
      std::optional<pybind11::gil_scoped_release> release;  // torch's binding may have released the GIL already
      if (PyGILState_Check()) release.emplace();
      st = comm().shrink(excluded, &shrunk);
    }
    TORCH_CHECK(st.isOk(), "chorus shrink: ", st.message());
    return c10::make_intrusive<ChorusBackend>(std::move(shrunk), inlineBytes_, options_->clone());
  }

  // torch.distributed.split_group: every rank of this group calls it, with the ranks of the group it joins, in the
  // new group's order (a rank in none gets `ranks` of another group and no backend). Groups do not overlap, so the
  // smallest rank of a group is a color no other group has.
  bool supportsSplitting() const override { return true; }

  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& /*store*/,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override {
    const auto mine = std::find(ranks.begin(), ranks.end(), rank_);
    const bool member = mine != ranks.end();
    const int color = member ? *std::min_element(ranks.begin(), ranks.end()) : Communicator::kNoColor;
    std::unique_ptr<Communicator> child;
    Status st;
    {
      std::optional<pybind11::gil_scoped_release> release;
      if (PyGILState_Check()) release.emplace();
      st = comm().split(color, member ? static_cast<int>(mine - ranks.begin()) : 0, &child);
    }
    TORCH_CHECK(st.isOk(), "chorus split: ", st.message());
    if (!child) return nullptr;
    auto options = opts ? opts->clone() : options_->clone();
    setCommunicatorTimeout(*child, options->timeout);
    return c10::make_intrusive<ChorusBackend>(std::move(child), inlineBytes_, std::move(options));
  }

  // torch.distributed.set_timeout: the calls that start afterwards wait as long (split_group passes its own).
  void setTimeout(std::chrono::milliseconds timeout) override {
    if (comm_) setCommunicatorTimeout(*comm_, timeout);
    options_->timeout = timeout;
  }

  bool supportsAbortHooks() const override { return true; }
  void registerAbortHook(int64_t id, c10d::AbortHook hook) override { hooks_->addAbortHook(id, std::move(hook)); }
  void unregisterAbortHook(int64_t id) override { hooks_->removeAbortHook(id); }
  bool supportsCompletionHooks() const override { return true; }
  void registerCompletionHook(int64_t id, c10d::CompletionHook hook) override {
    hooks_->addCompletionHook(id, std::move(hook));
  }
  void unregisterCompletionHook(int64_t id) override { hooks_->removeCompletionHook(id); }
  // Every call is timed (Work::getDuration), so there is nothing to switch on.
  void enableCollectivesTiming() override {}
  // The calls issued on this group so far, as Gloo counts them: torch's debug wrapper compares them across ranks.
  uint64_t getSequenceNumberForGroup() override { return sequence_; }

  // ProcessGroup.merge_remote_group: the processes of several groups meet in `store` (the caller's, its keys of
  // this merge only) as one group of `size`, this one as `rank` (the caller counts them).
  c10::intrusive_ptr<c10d::Backend> merge(const c10::intrusive_ptr<c10d::Store>& store,
                                          const c10::intrusive_ptr<Options>& opts, const int& rank,
                                          const int& size) override {
    auto options = opts ? opts->clone() : options_->clone();
    auto merged = meet(store, "chorus/merge", rank, size, options->timeout, "merge");
    return c10::make_intrusive<ChorusBackend>(std::move(merged), inlineBytes_, std::move(options));
  }

  // torch.distributed._reconfigure: every process named by opts.handles calls it with the same uuid and handles; they
  // meet in the group's store and become a new communicator, ranked as the handles say. The old communicator, if
  // any, is aborted (its pending calls end with an error) once the new one exists; a failed reconfigure leaves it.
  bool supportsReconfigure() const override { return store_ != nullptr; }
  c10d::ReconfigureHandle get_reconfigure_handle() const override {
    TORCH_CHECK(store_, "chorus: reconfigure needs a group made with enable_reconfigure=True");
    return handle_;
  }

  Work reconfigure(const c10d::ReconfigureOptions& opts) override {
    TORCH_CHECK(store_, "chorus: reconfigure needs a group made with enable_reconfigure=True");
    TORCH_CHECK(!coalescing_, "chorus reconfigure: inside a coalescing block");
    TORCH_CHECK(usedUuids_.insert(opts.uuid).second, "chorus reconfigure: uuid ", opts.uuid,
                " was used before on this group; every reconfigure takes a fresh one");
    const Membership place = membershipOf(opts, handle_);
    auto fresh = meet(store_, prefix_ + "/reconfigure/" + std::to_string(opts.uuid), place.rank, place.size,
                      opts.timeout.value_or(options_->timeout), "reconfigure");
    setCommunicatorTimeout(*fresh, options_->timeout);
    if (comm_) comm_->abort();
    comm_ = std::move(fresh);
    rank_ = place.rank;
    size_ = place.size;
    hooks_->rearm();
    return ChorusWork::start(hooks_, Request(), OpType::UNKNOWN, "reconfigure", {});
  }

 private:
  // Inside a coalescing block the blocking call joins the block's chorus group (it runs at endCoalescing).
  // A collective of at most inlineBytes_ runs now, in this thread, and returns a finished Work: handing it to the
  // communicator's thread and waking the caller again costs more than the call itself (perf/RESULTS.md, the torch
  // section). The blocking call first waits for the async calls before it, so the order of calls stays as
  // issued. Send and recv always go async: a rank's blocking send could wait for a recv that its peer posts only
  // after its own send.
  template <typename Blocking, typename Async>
  Work launch(OpType type, const char* what, std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs,
              Blocking blocking, Async async) {
    ++sequence_;
    if (coalescing_) {
      Status st = blocking(comm());
      TORCH_CHECK(st.isOk(), "chorus ", what, ": ", st.message());
      auto work = ChorusWork::pending(hooks_, type, what, std::move(outputs), std::move(inputs));
      coalesced_.push_back(work);
      return work;
    }
    if (type != OpType::SEND && type != OpType::RECV && largestTensorBytes(outputs, inputs) <= inlineBytes_)
      return ChorusWork::runNow(
          hooks_, [&] { return blocking(comm()); }, type, what, std::move(outputs), std::move(inputs));
    return ChorusWork::start(hooks_, async(comm()), type, what, std::move(outputs), std::move(inputs));
  }

  // gather of `input` into one flat tensor `output` on the root (unused elsewhere).
  Work gatherFlat(const at::Tensor& output, const at::Tensor& input, const c10d::GatherOptions& opts,
                  const char* what) {
    checked(input, what);
    const int root = static_cast<int>(opts.rootRank);
    if (rank_ == root) {
      checked(output, what);
      sameType(input, output, what);
      TORCH_CHECK(output.numel() == input.numel() * size_, "chorus ", what, ": the output has ", output.numel(),
                  " elements, expected ", input.numel() * size_);
    }
    void* recv = rank_ == root ? output.data_ptr() : nullptr;
    const DataType type = dataTypeOf(input, what);
    return launch(
        OpType::GATHER, what, rank_ == root ? std::vector<at::Tensor>{output} : std::vector<at::Tensor>{}, {input},
        [&](Communicator& c) { return c.gather(input.data_ptr(), recv, input.numel(), type, root); },
        [&](Communicator& c) { return c.gatherAsync(input.data_ptr(), recv, input.numel(), type, root); });
  }

  static size_t largestTensorBytes(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs) {
    size_t bytes = 0;
    for (const auto* list : {&outputs, &inputs})
      for (const auto& t : *list)
        if (t.defined()) bytes = std::max(bytes, t.nbytes());
    return bytes;
  }

  // Runs `calls` (calls of this backend) as one chorus group, unless a coalescing block already holds them.
  template <typename Calls>
  Work inOneGroup(Calls calls) {
    if (coalescing_) {
      calls();
      return coalesced_.empty() ? ChorusWork::start(hooks_, Request(), OpType::COALESCED, "coalesced", {})
                                : coalesced_.back();
    }
    startCoalescing();
    try {
      calls();
    } catch (...) {
      coalescing_ = false;
      coalesced_.clear();
      (void)groupEndAsync().wait();  // nothing of the group runs when one of its calls was refused
      throw;
    }
    return endCoalescing();
  }

  // A Work that copies `flat`, once filled, into `outputs` (the list forms of allgather, all_to_all and gather).
  Work copiedOut(const Work& work, at::Tensor flat, std::vector<at::Tensor> outputs, OpType type) {
    auto future = work->getFuture()->then(
        [flat, outputs](c10::ivalue::Future& call) {
          // then() runs this after a failed call too: its error passes on, and no output is written from it.
          if (call.hasError()) std::rethrow_exception(call.exception_ptr());
          int64_t offset = 0;
          for (const auto& o : outputs) {
            o.copy_(flat.narrow(0, offset, o.numel()).view(o.sizes()));
            offset += o.numel();
          }
          return c10::IValue(outputs);
        },
        c10::ListType::create(c10::TensorType::get()));
    return c10::make_intrusive<FutureWork>(future, type, outputs);
  }

  // A Work that is a future: finished when it completes.
  class FutureWork : public c10d::Work {
   public:
    FutureWork(c10::intrusive_ptr<c10::ivalue::Future> future, OpType type, std::vector<at::Tensor> outputs)
        : c10d::Work(-1, type), future_(std::move(future)), outputs_(std::move(outputs)) {}
    bool isCompleted() override { return future_->completed(); }
    bool isSuccess() const override { return future_->completed() && !future_->hasError(); }
    bool wait(std::chrono::milliseconds) override {
      future_->waitAndThrow();
      return true;
    }
    std::exception_ptr exception() const override { return future_->completed() ? future_->exception_ptr() : nullptr; }
    std::vector<at::Tensor> result() override { return outputs_; }
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

   private:
    c10::intrusive_ptr<c10::ivalue::Future> future_;
    std::vector<at::Tensor> outputs_;
  };

  Communicator& comm() {
    TORCH_CHECK(comm_, "chorus: the group has no communicator before reconfigure() (enable_reconfigure=True)");
    return *comm_;
  }

  static void setCommunicatorTimeout(Communicator& comm, std::chrono::milliseconds timeout) {
    const Status st = comm.setTimeout(static_cast<double>(timeout.count()) / 1000.0);
    TORCH_CHECK(st.isOk(), "chorus set_timeout: ", st.message());
  }

  std::unique_ptr<Communicator> comm_;
  const size_t inlineBytes_;  // collectives up to this size run in the caller's thread (CHORUS_TORCH_INLINE_BYTES)
  c10::intrusive_ptr<Options> options_;  // its timeout is the communicator's
  const std::shared_ptr<BackendHooks> hooks_ = std::make_shared<BackendHooks>();
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<ChorusWork>> coalesced_;
  uint64_t sequence_ = 0;
  // The reconfigure regime's: the group's store and name, this process's handle, and the uuids it has used.
  c10::intrusive_ptr<c10d::Store> store_;
  std::string prefix_;
  const std::string handle_ = newReconfigureHandle();
  std::set<int64_t> usedUuids_;
};

// The creator torch.distributed calls for each process group (Backend.register_backend, through chorus/torch.py):
// `prefix` names the group, the same on each of its ranks.
c10::intrusive_ptr<c10d::Backend> createBackend(const c10::intrusive_ptr<c10d::Store>& store, const std::string& prefix,
                                                int rank, int size, double timeoutSeconds, size_t inlineBytes,
                                                bool enableReconfigure) {
  auto options = c10::make_intrusive<c10d::Backend::Options>(
      "chorus", std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000)));
  if (enableReconfigure) return c10::make_intrusive<ChorusBackend>(store, prefix, rank, size, inlineBytes, options);
  return c10::make_intrusive<ChorusBackend>(meet(store, prefix, rank, size, options->timeout, "init"), inlineBytes,
                                            std::move(options));
}

}  // namespace
}  // namespace chorus::torch_backend

PYBIND11_MODULE(_torch_backend, m) {
  m.doc() = "chorus's torch.distributed backend (import chorus.torch to register it as 'chorus')";
  m.def("create_backend", &chorus::torch_backend::createBackend, pybind11::arg("store"), pybind11::arg("prefix"),
        pybind11::arg("rank"), pybind11::arg("size"), pybind11::arg("timeout_seconds"), pybind11::arg("inline_bytes"),
        pybind11::arg("enable_reconfigure") = false);
  m.def("use_shareable_memory", &chorus::torch_backend::useShareableMemory, pybind11::arg("min_bytes"),
        pybind11::arg("cache_bytes"));
  m.def("use_default_memory", &chorus::torch_backend::useDefaultMemory);
  m.def("shareable_memory_stats", [] {
    const auto s = chorus::torch_backend::shareableMemoryStats();
    pybind11::dict d;
    d["live_bytes"] = s.liveBytes;
    d["cached_bytes"] = s.cachedBytes;
    d["allocations"] = s.allocations;
    d["created"] = s.created;
    return d;
  });
  m.def("is_shareable", [](const at::Tensor& t) {
    return t.device().is_cpu() && chorus::torch_backend::isShareable(t.storage().data());
  });
}
