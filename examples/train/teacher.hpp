// The examples' synthetic task: a fixed random linear "teacher" labels
// Gaussian inputs with the class of its largest output; the model learns to
// imitate it from fresh batches (chance: a loss of ln 10 = 2.3).
#ifndef KILN_EXAMPLES_TRAIN_TEACHER_HPP
#define KILN_EXAMPLES_TRAIN_TEACHER_HPP

#include "kiln/runtime.h"

#include <cstdint>
#include <random>
#include <vector>

struct Teacher {
  int64_t features, classes;
  std::vector<float> weights; // [classes, features]

  Teacher(int64_t features, int64_t classes, unsigned seed)
      : features(features), classes(classes), weights(classes * features) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    for (float &w : weights)
      w = normal(rng);
  }

  /// The class of `x` (one row of `features`).
  int64_t label(const float *x) const {
    int64_t best = 0;
    float bestScore = -1e30f;
    for (int64_t c = 0; c < classes; ++c) {
      float score = 0;
      for (int64_t f = 0; f < features; ++f)
        score += weights[c * features + f] * x[f];
      if (score > bestScore)
        bestScore = score, best = c;
    }
    return best;
  }
};

/// A step's inputs over `x` and `label`, shaped as the trainer's `inputs`
/// ([batch, features] f32, [batch] i64).
inline std::vector<kiln_tensor_t> stepViews(const std::vector<kiln_tensor_desc_t> &inputs,
                                            std::vector<float> &x, std::vector<int64_t> &label) {
  return {{inputs[0].name, KILN_DTYPE_F32, 2, inputs[0].shape, x.data(), x.size() * sizeof(float)},
          {inputs[1].name, KILN_DTYPE_I64, 1, inputs[1].shape, label.data(),
           label.size() * sizeof(int64_t)}};
}

#endif // KILN_EXAMPLES_TRAIN_TEACHER_HPP
