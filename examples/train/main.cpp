// Trains a compiled classifier on synthetic data through kiln::Trainer.
//
// The task: a fixed random "teacher" (a linear map) labels Gaussian inputs
// with the class of its largest output; the model learns to imitate it from
// fresh batches. Prints the loss every 500 steps and fails (exit 1) unless the
// mean loss of the last 500 steps is below the threshold given (chance: ln 10 = 2.3).
//
//   train mlp_train.so [threshold]
#include "kiln/runtime.hpp"
#include "teacher.hpp"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRAIN_ARTIFACT.so [threshold]\n", argv[0]);
    return 2;
  }
  double threshold = argc > 2 ? std::atof(argv[2]) : 0.5;
  kiln::Model model;
  kiln::Trainer trainer;
  if (auto s = kiln::Model::load(argv[1], model); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  if (auto s = kiln::Trainer::create(model, trainer, 1); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  // The step's inputs: the features [batch, in] (f32), the label [batch] (i64).
  auto inputs = trainer.inputs();
  if (inputs.size() != 2 || inputs[0].rank != 2 || inputs[1].dtype != KILN_DTYPE_I64) {
    std::fprintf(stderr, "error: expected a [batch, features] input and class labels\n");
    return 1;
  }
  int64_t batch = inputs[0].shape[0], features = inputs[0].shape[1];
  Teacher teacher(features, /*classes=*/10, /*seed=*/7);
  std::mt19937 rng(8); // the inputs (the teacher draws its own)
  std::normal_distribution<float> normal;
  std::vector<float> x(batch * features);
  std::vector<int64_t> label(batch);
  std::vector<kiln_tensor_t> views = stepViews(inputs, x, label);
  const int steps = 8000, window = 500;
  double recent = 0;
  for (int step = 1; step <= steps; ++step) {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < features; ++f)
        x[b * features + f] = normal(rng);
      label[b] = teacher.label(&x[b * features]);
    }
    // A step schedule: the learning rate halves at 50% and 75% of training.
    if (step == steps / 2 || step == steps * 3 / 4)
      trainer.setLearningRate(trainer.learningRate() / 2);
    double loss;
    if (auto s = trainer.step(views, loss); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    if (step > steps - window)
      recent += loss / window;
    if (step % 500 == 0 || step == 1)
      std::printf("step=%d loss=%.4f\n", step, loss);
  }
  std::printf("mean loss of the last %d steps: %.4f (threshold %.4f)\n", window, recent, threshold);
  return recent < threshold ? 0 : 1;
}
