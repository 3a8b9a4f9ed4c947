// Data-parallel training from C++: every MPI rank runs the same compiled
// step (`kiln compile --train --distributed`) on its share of each global
// batch; the step averages the gradients over the ranks (libkiln_mpi), so
// the ranks' parameters stay identical, which the program checks at the end.
//
// The task is main.cpp's: a random linear "teacher" labels Gaussian inputs.
// Every rank draws the same global batch (same seeds) and keeps its rows.
// Fails (exit 1) unless the mean loss of the last 300 steps is below the
// threshold and every rank ends with the same parameters.
//
//   mpirun -np 2 train_distributed mlp_train_dp.so [threshold]
#include "kiln/mpi.h"
#include "kiln/runtime.hpp"
#include "teacher.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

int fail(kiln_communicator_t *comm, const std::string &message) {
  std::fprintf(stderr, "error: rank %d: %s\n", comm ? comm->rank : 0, message.c_str());
  if (comm && comm->size > 1)
    comm->abort(comm->impl, 1); // the others would wait in the step's reductions
  return 1;
}

/// Whether every rank holds the same parameters: their hash's largest and
/// smallest value over the ranks agree.
bool sameOnEveryRank(const kiln::Trainer &trainer, kiln_communicator_t *comm) {
  uint64_t h = KILN_FNV1A64_INIT;
  for (size_t i = 0; i < trainer.numParams(); ++i) {
    kiln_tensor_desc_t d;
    const void *data;
    trainer.param(i, d, data);
    h = kiln_fnv1a64(h, data, d.size_bytes);
  }
  int64_t hi[2] = {int64_t(h >> 32), int64_t(h & 0xffffffff)}, lo[2] = {hi[0], hi[1]};
  return comm->all_reduce(comm->impl, hi, 2, KILN_DTYPE_I64, KILN_REDUCE_MAX) == 0 &&
         comm->all_reduce(comm->impl, lo, 2, KILN_DTYPE_I64, KILN_REDUCE_MIN) == 0 &&
         hi[0] == lo[0] && hi[1] == lo[1];
}

} // namespace

int main(int argc, char **argv) {
  kiln_communicator_t *comm = nullptr;
  if (kiln::Status s(kiln_mpi_init(&argc, &argv, &comm)); !s.ok())
    return fail(nullptr, s.message());
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpirun -np N %s TRAIN_ARTIFACT.so [threshold]\n", argv[0]);
    return 2;
  }
  double threshold = argc > 2 ? std::atof(argv[2]) : 0.5;
  kiln::Model model;
  kiln::Trainer trainer;
  if (auto s = kiln::Model::load(argv[1], model); !s.ok())
    return fail(comm, s.message());
  if (auto s = kiln::Trainer::create(model, trainer, 1); !s.ok())
    return fail(comm, s.message());
  if (auto s = trainer.setCommunicator(comm); !s.ok()) // rank 0's parameters everywhere
    return fail(comm, s.message());
  auto inputs = trainer.inputs();
  if (inputs.size() != 2 || inputs[0].rank != 2 || inputs[1].dtype != KILN_DTYPE_I64)
    return fail(comm, "expected a [batch, features] input and class labels");
  // The artifact's batch is one rank's share.
  int64_t batch = inputs[0].shape[0], features = inputs[0].shape[1];
  Teacher teacher(features, /*classes=*/10, /*seed=*/7);
  std::normal_distribution<float> normal;
  std::vector<float> x(batch * features);
  std::vector<int64_t> label(batch);
  std::vector<kiln_tensor_t> views = stepViews(inputs, x, label);
  const int steps = 4000, window = 300;
  double recent = 0;
  std::vector<float> row(features);
  for (int step = 1; step <= steps; ++step) {
    std::mt19937 rng(1000 + step); // the global batch, the same on every rank
    for (int64_t b = 0; b < batch * comm->size; ++b) {
      for (float &v : row)
        v = normal(rng);
      if (b / batch != comm->rank)
        continue; // another rank's row
      int64_t mine = b % batch;
      std::memcpy(&x[mine * features], row.data(), features * sizeof(float));
      label[mine] = teacher.label(row.data());
    }
    double loss; // the mean over the global batch
    if (auto s = trainer.step(views, loss); !s.ok())
      return fail(comm, s.message());
    if (step > steps - window)
      recent += loss / window;
    if (comm->rank == 0 && (step % 500 == 0 || step == 1))
      std::printf("step=%d loss=%.4f\n", step, loss);
  }
  bool same = sameOnEveryRank(trainer, comm);
  if (comm->rank == 0)
    std::printf("%d ranks, global batch %lld: mean loss of the last %d steps %.4f (threshold "
                "%.4f); parameters %s on every rank\n",
                comm->size, (long long)(batch * comm->size), window, recent, threshold,
                same ? "identical" : "DIFFERENT");
  kiln_mpi_release(comm);
  return recent < threshold && same ? 0 : 1;
}
