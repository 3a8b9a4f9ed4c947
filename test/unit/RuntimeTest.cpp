//===- RuntimeTest.cpp - the runtime C API and its argument checks --------===//

#include "kiln/runtime.hpp"
#include "kiln/tensor_io.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <thread>

TEST_CASE("statuses: NULL is OK", "[runtime]") {
  CHECK(kiln_status_code(nullptr) == KILN_OK);
  CHECK(std::string(kiln_status_message(nullptr)).empty());
  kiln_status_free(nullptr);
  CHECK(kiln_dtype_size(KILN_DTYPE_BF16) == 2);
  CHECK(std::string(kiln_dtype_name(KILN_DTYPE_BOOL)) == "bool");
}

TEST_CASE("loading something that is not an artifact fails cleanly", "[runtime]") {
  kiln_model_t *model = nullptr;
  kiln::Status missing(kiln_model_load("/nonexistent/model.so", &model));
  CHECK(missing.code() == KILN_NOT_FOUND);
  CHECK(model == nullptr);
  std::string path = std::string(KILN_TEST_ARTIFACT_DIR) + "/not-an-artifact.so";
  std::ofstream(path) << "garbage";
  kiln::Status garbage(kiln_model_load(path.c_str(), &model));
  CHECK(garbage.code() == KILN_NOT_FOUND);
  CHECK(garbage.message().find("cannot load artifact") != std::string::npos);
  kiln::Status null(kiln_model_load(nullptr, &model));
  CHECK(null.code() == KILN_INVALID_ARGUMENT);
}

#ifdef KILN_TEST_HAVE_ARTIFACT
namespace {
std::string artifact() { return std::string(KILN_TEST_ARTIFACT_DIR) + "/mlp.so"; }
} // namespace

TEST_CASE("a compiled artifact describes itself", "[runtime]") {
  kiln::Model model;
  REQUIRE(kiln::Model::load(artifact(), model).ok());
  auto ins = model.inputs(), outs = model.outputs();
  REQUIRE(ins.size() == 1);
  REQUIRE(outs.size() == 1);
  CHECK(std::string(ins[0].name) == "input");
  CHECK(ins[0].dtype == KILN_DTYPE_F32);
  CHECK(ins[0].rank == 2);
  CHECK(ins[0].shape[0] == 4);
  CHECK(ins[0].shape[1] == 64);
  CHECK(outs[0].size_bytes == 4 * 10 * 4);
  kiln_tensor_desc_t d;
  kiln::Status bad(kiln_model_input(model.get(), 5, &d));
  CHECK(bad.code() == KILN_INVALID_ARGUMENT);
}

TEST_CASE("an artifact knows its arena and weight bytes", "[runtime]") {
  kiln::Model model;
  REQUIRE(kiln::Model::load(artifact(), model).ok());
  // The MLP (64 -> 128 -> 64 -> 10): weights and biases of three layers.
  CHECK(model.weightBytes() == (128 * 64 + 128 + 64 * 128 + 64 + 10 * 64 + 10) * 4);
  // The whole MLP is one kernel, row by row: each row's hidden layers are
  // stack temporaries of its iteration, so nothing is left for the arena.
  CHECK(model.arenaBytes() == 0);
}

TEST_CASE("session options are checked, and thread counts agree", "[runtime]") {
  kiln::Model model;
  REQUIRE(kiln::Model::load(artifact(), model).ok());
  kiln_session_t *raw = nullptr;
  kiln_session_options_t bad{};
  bad.num_threads = -3;
  kiln::Status s(kiln_session_create(model.get(), &bad, &raw));
  CHECK(s.code() == KILN_INVALID_ARGUMENT);
  CHECK(raw == nullptr);

  kiln::HostTensor x;
  std::string error;
  REQUIRE(kiln::readTensorFile(std::string(KILN_EXAMPLES_DIR) + "/mlp/input.npy", x, error));
  std::vector<std::vector<float>> results;
  for (int threads : {1, 4}) {
    kiln::Session session;
    REQUIRE(kiln::Session::create(model, session, threads).ok());
    std::vector<float> out(40);
    int64_t outShape[] = {4, 10};
    std::vector<kiln_tensor_t> ins{x.view(false)};
    std::vector<kiln_tensor_t> outs{{nullptr, KILN_DTYPE_F32, 2, outShape, out.data(), 160}};
    REQUIRE(session.run(ins, outs).ok());
    results.push_back(out);
  }
  CHECK(results[0] == results[1]);
}

TEST_CASE("running checks every tensor before touching it", "[runtime]") {
  kiln::Model model;
  REQUIRE(kiln::Model::load(artifact(), model).ok());
  kiln::Session session;
  REQUIRE(kiln::Session::create(model, session).ok());
  std::vector<float> in(4 * 64, 0.5f), out(40);
  int64_t inShape[] = {4, 64}, outShape[] = {4, 10}, wrongShape[] = {64, 4};
  kiln_tensor_t input{"input", KILN_DTYPE_F32, 2, inShape, in.data(), in.size() * 4};
  kiln_tensor_t output{nullptr, KILN_DTYPE_F32, 2, outShape, out.data(), out.size() * 4};
  std::vector<kiln_tensor_t> ins{input}, outs{output};

  SECTION("wrong shape") {
    ins[0].shape = wrongShape;
    kiln::Status s = session.run(ins, outs);
    CHECK(s.code() == KILN_INVALID_ARGUMENT);
    CHECK(s.message() == "input 'input' has shape [64x4], expected [4x64]");
  }
  SECTION("wrong dtype") {
    ins[0].dtype = KILN_DTYPE_F64;
    CHECK(session.run(ins, outs).message() == "input 'input' has dtype f64, expected f32");
  }
  SECTION("wrong name") {
    ins[0].name = "x";
    CHECK(session.run(ins, outs).message() == "the model has no input named 'x'");
  }
  SECTION("wrong count") {
    std::vector<kiln_tensor_t> none;
    CHECK(session.run(none, outs).message() == "model takes 1 inputs, got 0");
  }
  SECTION("short buffer") {
    ins[0].size_bytes -= 4;
    CHECK(session.run(ins, outs).code() == KILN_INVALID_ARGUMENT);
  }
  SECTION("wrong output buffer") {
    outs[0].shape = inShape;
    CHECK(session.run(ins, outs).code() == KILN_INVALID_ARGUMENT);
  }
  SECTION("an output overlapping an input") {
    outs[0].data = in.data() + 8;
    kiln::Status s = session.run(ins, outs);
    CHECK(s.code() == KILN_INVALID_ARGUMENT);
    CHECK(s.message() == "output 'output' overlaps an input's memory; outputs need buffers of "
                         "their own");
  }
  SECTION("a good run matches the example's expected output") {
    kiln::HostTensor x, want;
    std::string error;
    REQUIRE(kiln::readTensorFile(std::string(KILN_EXAMPLES_DIR) + "/mlp/input.npy", x, error));
    REQUIRE(kiln::readTensorFile(std::string(KILN_EXAMPLES_DIR) + "/mlp/expected_output.npy",
                                 want, error));
    ins[0].data = x.data.data();
    REQUIRE(session.run(ins, outs).ok());
    for (size_t i = 0; i < out.size(); ++i)
      CHECK(std::fabs(out[i] - kiln::elementAsDouble(want, i)) <=
            1e-5 + 1e-4 * std::fabs(kiln::elementAsDouble(want, i)));
  }
}
#endif

#ifdef KILN_TEST_HAVE_ARTIFACT
TEST_CASE("sessions of one model run concurrently from several threads", "[runtime][concurrency]") {
  // One model shared by four threads, each with its own session (arena and
  // pool of two threads), all running at once; scripts/test-tsan.sh runs
  // this under ThreadSanitizer.
  kiln::Model model;
  REQUIRE(kiln::Model::load(artifact(), model).ok());
  std::vector<float> in(4 * 64);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = std::sin(0.1f * i);
  int64_t inShape[] = {4, 64}, outShape[] = {4, 10};
  auto runOnce = [&](kiln::Session &session, std::vector<float> &out) {
    kiln_tensor_t input{"input", KILN_DTYPE_F32, 2, inShape, in.data(), in.size() * 4};
    kiln_tensor_t output{"output", KILN_DTYPE_F32, 2, outShape, out.data(), out.size() * 4};
    return session.run(&input, 1, &output, 1).ok();
  };
  std::vector<float> reference(40);
  {
    kiln::Session session;
    REQUIRE(kiln::Session::create(model, session, 1).ok());
    REQUIRE(runOnce(session, reference));
  }
  constexpr int kThreads = 4, kRuns = 25;
  std::vector<int> good(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      kiln::Session session; // created on this thread, used only here
      if (!kiln::Session::create(model, session, 2).ok())
        return;
      std::vector<float> out(40);
      for (int r = 0; r < kRuns; ++r)
        good[t] += runOnce(session, out) && out == reference;
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t)
    CHECK(good[t] == kRuns);
}
#endif
