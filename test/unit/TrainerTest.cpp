//===- TrainerTest.cpp - the training C API (kiln_trainer_*) --------------===//

#include "kiln/runtime.hpp"
#include "kiln/tensor_io.hpp"

#include <catch2/catch.hpp>

#include <cstring>

#ifdef KILN_TEST_HAVE_TRAIN_ARTIFACT
namespace {
std::string dir() { return KILN_TEST_ARTIFACT_DIR; }

kiln::HostTensor readExample(const std::string &file) {
  kiln::HostTensor t;
  std::string error;
  REQUIRE(kiln::readTensorFile(std::string(KILN_EXAMPLES_DIR) + "/" + file, t, error));
  return t;
}
} // namespace

TEST_CASE("a trainer refuses an inference artifact", "[trainer]") {
  kiln::Model model;
  REQUIRE(kiln::Model::load(dir() + "/mlp.so", model).ok());
  CHECK_FALSE(kiln_model_is_training(model.get()));
  kiln::Trainer trainer;
  kiln::Status s = kiln::Trainer::create(model, trainer, 1);
  CHECK(s.code() == KILN_INVALID_ARGUMENT);
  CHECK(s.message().find("not a training artifact") != std::string::npos);
}

TEST_CASE("training steps lower the loss; parameters, gradients and inference", "[trainer]") {
  kiln::Model model;
  REQUIRE(kiln::Model::load(dir() + "/mlp_train.so", model).ok());
  REQUIRE(kiln_model_is_training(model.get()));
  kiln::Trainer trainer;
  REQUIRE(kiln::Trainer::create(model, trainer, 1).ok());
  auto inputs = trainer.inputs();
  REQUIRE(inputs.size() == 2); // the data, then the label
  CHECK(std::string(inputs[0].name) == "input");
  CHECK(std::string(inputs[1].name) == "label");
  REQUIRE(trainer.numParams() == 6);

  kiln::HostTensor x = readExample("mlp/input.npy");
  x.name = "input";
  std::vector<int64_t> label{1, 2, 3, 4};
  std::vector<kiln_tensor_t> views{
      x.view(true), {"label", KILN_DTYPE_I64, 1, inputs[1].shape, label.data(), 32}};

  // Wrong count and a wrong label dtype are refused before anything runs.
  double loss = 0;
  CHECK(trainer.step({views[0]}, loss).code() == KILN_INVALID_ARGUMENT);
  auto badLabel = views;
  badLabel[1].dtype = KILN_DTYPE_I32;
  CHECK(trainer.step(badLabel, loss).code() == KILN_INVALID_ARGUMENT);
  CHECK(trainer.steps() == 0);

  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    REQUIRE(trainer.step(views, loss).ok());
    (i == 0 ? first : last) = loss;
  }
  CHECK(trainer.steps() == 5);
  CHECK(last < first);

  // The last gradient and the parameters are readable; SGD moved fc3.bias.
  kiln_tensor_desc_t desc;
  const void *data = nullptr;
  REQUIRE(trainer.grad(5, desc, data).ok());
  CHECK(std::string(desc.name) == "grad:fc3.bias");
  REQUIRE(trainer.param(5, desc, data).ok());
  CHECK(std::string(desc.name) == "fc3.bias");
  CHECK(trainer.grad(6, desc, data).code() == KILN_INVALID_ARGUMENT);

  // set_param checks the name, dtype and shape.
  std::vector<float> zeros(10, 0.f);
  int64_t ten = 10, nine = 9;
  CHECK(trainer.setParam({"fc3.bias", KILN_DTYPE_F32, 1, &ten, zeros.data(), 40}).ok());
  CHECK(trainer.setParam({"fc3.bias", KILN_DTYPE_F32, 1, &nine, zeros.data(), 36}).code() ==
        KILN_INVALID_ARGUMENT);
  CHECK(trainer.setParam({"nope", KILN_DTYPE_F32, 1, &ten, zeros.data(), 40}).code() ==
        KILN_NOT_FOUND);
  REQUIRE(trainer.param(5, desc, data).ok());
  CHECK(std::memcmp(data, zeros.data(), 40) == 0);

  // The learning rate is the compiled-in --lr until set; at 0 a step
  // leaves the parameters alone.
  CHECK(trainer.learningRate() == Approx(0.1));
  REQUIRE(trainer.setLearningRate(0).ok());
  CHECK(trainer.setLearningRate(-1).code() == KILN_INVALID_ARGUMENT);
  std::vector<float> before(10);
  REQUIRE(trainer.param(5, desc, data).ok());
  std::memcpy(before.data(), data, 40);
  REQUIRE(trainer.step(views, loss).ok());
  REQUIRE(trainer.param(5, desc, data).ok());
  CHECK(std::memcmp(before.data(), data, 40) == 0);

  // Inference with the current parameters: the data input only.
  REQUIRE(trainer.canInfer());
  REQUIRE(trainer.inferInputs().size() == 1);
  auto outs = trainer.inferOutputs();
  REQUIRE(outs.size() == 1);
  std::vector<float> y(40);
  std::vector<kiln_tensor_t> outViews{
      {outs[0].name, KILN_DTYPE_F32, outs[0].rank, outs[0].shape, y.data(), 160}};
  REQUIRE(trainer.infer({views[0]}, outViews).ok());
  CHECK(trainer.infer(views, outViews).code() == KILN_INVALID_ARGUMENT);
}
#endif
