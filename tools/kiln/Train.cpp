//===- Train.cpp - `kiln train` -------------------------------------------===//
//
// Built only on the runtime's public API (and kiln/mpi.h for --distributed),
// as an application's training loop would be.
//
//===----------------------------------------------------------------------===//

#include "CommandSupport.h"
#include "Commands.h"

#include "kiln/runtime.hpp"
#include "kiln/tensor_io.hpp"
#ifdef KILN_HAVE_MPI
#include "kiln/mpi.h"
#include "kiln/nccl.h"
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <unistd.h>

namespace kiln {
using cli::allocateLike;
using cli::makeDirs;
using cli::shapeStr;

namespace {

HostTensor copyOut(const kiln_tensor_desc_t &d, const void *data, const std::string &name) {
  HostTensor t = allocateLike(d);
  t.name = name;
  std::memcpy(t.data.data(), data, d.size_bytes);
  return t;
}

/// The run's place among the ranks: a failure on one rank ends them all
/// (the others would wait in the step's collectives).
struct Ranks {
  kiln_communicator_t *comm = nullptr;
  kiln_communicator_t *nccl = nullptr; // a CUDA step's, over `comm`
  int rank = 0, size = 1;

  int fail(const std::string &msg) const {
    // The runtime's messages of collectives name the rank already.
    bool named = msg.find("rank " + std::to_string(rank) + " of ") != std::string::npos;
    std::string where = size > 1 && !named ? "rank " + std::to_string(rank) + ": " : "";
    cli::fail(where + msg);
    std::fflush(stderr);
    if (comm && size > 1 && comm->abort)
      comm->abort(comm->impl, 1);
    return 1;
  }
  ~Ranks() {
#ifdef KILN_HAVE_MPI
    kiln_nccl_release(nccl);
    kiln_mpi_release(comm);
#endif
  }
};

/// This rank's contiguous share of dim 0 of `t` (the global batch).
bool shard(HostTensor &t, const Ranks &r, std::string &error) {
  if (r.size == 1)
    return true;
  if (t.shape.empty() || t.shape[0] % r.size != 0) {
    error = "'" + t.name + "' has a batch of " +
            (t.shape.empty() ? std::string("none (a scalar)") : std::to_string(t.shape[0])) +
            ", which " + std::to_string(r.size) + " ranks cannot share equally (the global "
            "batch must be divisible by the number of ranks)";
    return false;
  }
  size_t rowBytes = t.data.size() / (size_t)t.shape[0];
  int64_t rows = t.shape[0] / r.size;
  std::vector<uint8_t> mine(t.data.begin() + rowBytes * rows * r.rank,
                            t.data.begin() + rowBytes * rows * (r.rank + 1));
  t.data = std::move(mine);
  t.shape[0] = rows;
  return true;
}

/// Where a checkpoint keeps the optimizer state: beside the parameters, not
/// among them (`kiln compile --params DIR` reads every .npy of DIR).
std::string stateFile(const std::string &dir, const char *name) {
  return dir + "/optimizer/" + tensorFileStem(name) + ".npy";
}

/// Every parameter as DIR/<name>.npy, every optimizer state tensor as
/// DIR/optimizer/<name>.npy.
bool saveCheckpoint(const Trainer &trainer, const std::string &dir, std::string &error) {
  makeDirs(dir);
  if (trainer.numStates())
    makeDirs(dir + "/optimizer");
  for (size_t i = 0; i < trainer.numParams() + trainer.numStates(); ++i) {
    kiln_tensor_desc_t d;
    const void *data;
    bool param = i < trainer.numParams();
    Status s = param ? trainer.param(i, d, data) : trainer.state(i - trainer.numParams(), d, data);
    if (!s.ok()) {
      error = s.message();
      return false;
    }
    std::string file =
        param ? dir + "/" + tensorFileStem(d.name) + ".npy" : stateFile(dir, d.name);
    if (!writeNpyFile(file, copyOut(d, data, d.name), error))
      return false;
  }
  return true;
}

/// Parameters from DIR/<name>.npy; optimizer state too when the folder has
/// it (a checkpoint of --save-params), all of it or none.
bool loadCheckpoint(Trainer &trainer, const std::string &dir, std::string &error) {
  size_t states = trainer.numStates(), found = 0;
  std::string missing;
  for (size_t i = 0; i < trainer.numParams() + states; ++i) {
    kiln_tensor_desc_t d;
    const void *data;
    bool param = i < trainer.numParams();
    if (!param) {
      trainer.state(i - trainer.numParams(), d, data);
    } else {
      trainer.param(i, d, data);
    }
    std::string file = param ? dir + "/" + tensorFileStem(d.name) + ".npy" : stateFile(dir, d.name);
    HostTensor t;
    if (!param && ::access(file.c_str(), F_OK) != 0) {
      missing = d.name;
      continue;
    }
    if (!readTensorFile(file, t, error))
      return false;
    t.name = d.name;
    Status s = param ? trainer.setParam(t.view(true)) : trainer.setState(t.view(true));
    if (!s.ok()) {
      error = file + ": " + s.message();
      return false;
    }
    found += !param;
  }
  if (found && found != states) {
    error = dir + ": has part of the optimizer state but not '" + missing +
            "' (a checkpoint from another artifact?)";
    return false;
  }
  return true;
}

/// The model's outputs with the trained parameters (the inference entry)
/// on `bound`, as DIR/<output>.npy.
int saveOutputs(Trainer &trainer, std::vector<HostTensor> &bound, const std::string &dir,
                const std::string &artifact, const Ranks &ranks) {
  if (!trainer.canInfer())
    return ranks.fail(artifact + ": no inference entry to compute outputs with");
  std::vector<kiln_tensor_t> in;
  for (const auto &d : trainer.inferInputs()) {
    auto it = std::find_if(bound.begin(), bound.end(),
                           [&](const HostTensor &t) { return t.name == d.name; });
    if (it == bound.end())
      return ranks.fail(artifact + ": inference needs input '" + std::string(d.name) + "'");
    in.push_back(it->view(true));
  }
  std::vector<HostTensor> outs;
  auto outDescs = trainer.inferOutputs();
  for (size_t i = 0; i < outDescs.size(); ++i) {
    std::vector<int64_t> shape; // a dynamic batch: from the inputs
    if (Status s = trainer.inferOutputShape(in, i, shape); !s.ok())
      return ranks.fail(artifact + ": " + s.message());
    outs.push_back(allocateLike(outDescs[i], shape));
  }
  std::vector<kiln_tensor_t> outViews;
  for (auto &t : outs)
    outViews.push_back(t.view());
  if (Status s = trainer.infer(in, outViews); !s.ok())
    return ranks.fail(artifact + ": " + s.message());
  makeDirs(dir);
  for (const auto &t : outs) {
    std::string error;
    if (!writeNpyFile(dir + "/" + tensorFileStem(t.name) + ".npy", t, error))
      return ranks.fail(error);
  }
  return 0;
}

} // namespace

int trainArtifact(const TrainFlags &f) {
  Ranks ranks;
  if (f.distributed) {
#ifdef KILN_HAVE_MPI
    if (Status s(kiln_mpi_init(nullptr, nullptr, &ranks.comm)); !s.ok())
      return cli::fail("--distributed: " + s.message());
    ranks.rank = ranks.comm->rank;
    ranks.size = ranks.comm->size;
#else
    return cli::fail("--distributed: this kiln was built without MPI (install libopenmpi-dev "
                     "and rebuild)");
#endif
  }
  const std::string &artifact = f.artifact;
  Model model;
  if (Status s = Model::load(artifact, model); !s.ok())
    return ranks.fail(s.message());
  Trainer trainer;
  if (Status s = Trainer::create(model, trainer, f.threads); !s.ok())
    return ranks.fail(s.message());
  // Inputs by name; the label is the last input of a step.
  std::map<std::string, HostTensor> given;
  for (const auto &spec : f.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return ranks.fail("--input expects NAME=FILE, got '" + spec + "'");
    HostTensor t;
    std::string error;
    if (!readTensorFile(spec.substr(eq + 1), t, error))
      return ranks.fail(error);
    t.name = spec.substr(0, eq);
    if (!given.emplace(t.name, std::move(t)).second)
      return ranks.fail("input '" + spec.substr(0, eq) + "' is given twice");
  }
  auto descs = trainer.inputs();
  std::vector<HostTensor> bound;
  for (size_t i = 0; i < descs.size(); ++i) {
    const auto &d = descs[i];
    bool isLabel = i + 1 == descs.size() && !f.label.empty();
    HostTensor t;
    std::string error;
    if (isLabel) {
      if (!readTensorFile(f.label, t, error))
        return ranks.fail(error);
    } else {
      auto it = given.find(d.name);
      if (it == given.end())
        return ranks.fail(artifact + ": missing input '" + std::string(d.name) + "' (" +
                          kiln_dtype_name(d.dtype) + " " + shapeStr(d.shape, d.rank) +
                          "); pass --input " + d.name + "=FILE" +
                          (i + 1 == descs.size() ? " or --label FILE" : ""));
      t = std::move(it->second);
      given.erase(it);
    }
    t.name = d.name;
    int64_t global = t.shape.empty() ? 0 : t.shape[0];
    if (!shard(t, ranks, error))
      return ranks.fail(error);
    // A static artifact is compiled for one rank's share.
    if (ranks.size > 1 && d.rank > 0 && d.shape[0] >= 0 && t.shape[0] != d.shape[0])
      return ranks.fail(artifact + ": " + std::to_string(ranks.size) + " ranks give each " +
                        std::to_string(t.shape[0]) + " rows of '" + d.name +
                        "' (a global batch of " + std::to_string(global) +
                        "), but the artifact takes a batch of " + std::to_string(d.shape[0]) +
                        " (compile it for " + std::to_string(t.shape[0]) +
                        " or with a dynamic batch, or run " +
                        std::to_string(global / std::max<int64_t>(d.shape[0], 1)) + " ranks)");
    bound.push_back(std::move(t));
  }
  if (!given.empty())
    return ranks.fail(artifact + ": the training step has no input named '" +
                      given.begin()->first + "'");
  if (!f.loadParams.empty()) {
    std::string error;
    if (!loadCheckpoint(trainer, f.loadParams, error))
      return ranks.fail(error);
  }
  if (f.lr >= 0)
    if (Status s = trainer.setLearningRate(f.lr); !s.ok())
      return ranks.fail(artifact + ": " + s.message());
  if (ranks.comm) {
    // A CUDA step reduces GPU memory: NCCL, its id sent over MPI.
    const kiln_communicator_t *comm = ranks.comm;
#ifdef KILN_HAVE_MPI
    if (std::string(kiln_model_target(model.get())) == "cuda") {
      if (Status s(kiln_nccl_communicator(ranks.comm, &ranks.nccl)); !s.ok())
        return ranks.fail(s.message());
      comm = ranks.nccl;
    }
#endif
    if (Status s = trainer.setCommunicator(comm); !s.ok())
      return ranks.fail(s.message());
  }
  std::vector<kiln_tensor_t> views;
  for (auto &t : bound)
    views.push_back(t.view(true));
  for (int i = 0; i < f.steps; ++i) {
    double loss = 0;
    if (Status s = trainer.step(views, loss); !s.ok())
      return ranks.fail(artifact + ": " + s.message());
    if (ranks.rank == 0) { // the loss is the mean over ranks already
      std::printf("step=%d loss=%.9g\n", i + 1, loss);
      std::fflush(stdout);
    }
  }
  if (ranks.rank != 0)
    return 0;
  if (!f.saveOutputs.empty())
    if (int rc = saveOutputs(trainer, bound, f.saveOutputs, artifact, ranks))
      return rc;
  std::string error;
  if (!f.saveParams.empty() && !saveCheckpoint(trainer, f.saveParams, error))
    return ranks.fail(error);
  if (!f.saveGrads.empty()) {
    makeDirs(f.saveGrads);
    for (size_t i = 0; i < trainer.numParams(); ++i) {
      kiln_tensor_desc_t pd, d;
      const void *data;
      trainer.param(i, pd, data);
      Status s = trainer.grad(i, d, data);
      if (s.code() == KILN_NOT_FOUND)
        continue; // a buffer (batch-norm running statistics): no gradient
      if (!s.ok())
        return ranks.fail(s.message());
      if (!writeNpyFile(f.saveGrads + "/" + tensorFileStem(pd.name) + ".npy",
                        copyOut(d, data, pd.name), error))
        return ranks.fail(error);
    }
  }
  return 0;
}

} // namespace kiln
