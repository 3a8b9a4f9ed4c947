//===- DataSets.h - an ONNX backend test's data sets, run and compared -*- C++ -*-===//
//
// Shared by kiln-conformance (compiles, then runs) and kiln-gpu-check (runs
// artifacts compiled elsewhere, on a machine with a GPU and no MLIR): only
// the runtime and the tensor readers.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_CONFORMANCE_DATASETS_H
#define KILN_TEST_CONFORMANCE_DATASETS_H

#include "kiln/runtime.hpp"
#include "kiln/tensor_io.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace kiln::conformance {

struct Tolerance {
  double rtol = 1e-3, atol = 1e-7;
};

inline std::vector<std::string> listDir(const std::string &dir, const std::string &prefix) {
  std::vector<std::string> out;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
        out.push_back(e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

/// Lines of a list file without comments (`#...`) and blanks.
inline std::vector<std::string> readList(const std::string &path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    line.erase(0, line.find_first_not_of(" \t"));
    if (!line.empty())
      out.push_back(line);
  }
  return out;
}

enum class DataSetResult { Ok, Wrong, RunFailed };

/// Runs one data set; Wrong or RunFailed with a message on stderr.
/// Inputs listed in `frozen` were compiled in and are not passed.
inline DataSetResult runDataSet(kiln::Session &session, const kiln::Model &model, const std::string &dir,
                const Tolerance &tol, const std::set<size_t> &frozen) {
  auto inDescs = model.inputs(), outDescs = model.outputs();
  std::vector<kiln::HostTensor> ins, want(outDescs.size()), got(outDescs.size());
  std::string error;
  for (size_t i = 0; exists(dir + "/input_" + std::to_string(i) + ".pb"); ++i) {
    if (frozen.count(i))
      continue;
    ins.emplace_back();
    if (!kiln::readTensorFile(dir + "/input_" + std::to_string(i) + ".pb", ins.back(), error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return DataSetResult::Wrong;
    }
  }
  for (size_t i = 0; i < want.size(); ++i)
    if (!kiln::readTensorFile(dir + "/output_" + std::to_string(i) + ".pb", want[i], error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return DataSetResult::Wrong;
    }
  // ONNX's older test data stores bfloat16 tensors as UINT16 bits.
  for (size_t i = 0; i < ins.size() && i < inDescs.size(); ++i)
    if (ins[i].dtype == KILN_DTYPE_U16 && inDescs[i].dtype == KILN_DTYPE_BF16)
      ins[i].dtype = KILN_DTYPE_BF16;
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i].dtype == KILN_DTYPE_U16 && outDescs[i].dtype == KILN_DTYPE_BF16)
      want[i].dtype = KILN_DTYPE_BF16;
  std::vector<kiln_tensor_t> inViews, outViews;
  for (auto &t : ins)
    inViews.push_back(t.view());
  for (size_t i = 0; i < got.size(); ++i) {
    got[i].dtype = outDescs[i].dtype;
    // Dynamic outputs (sizes read from the inputs' values) get the shape
    // the model computes for these inputs.
    kiln::Status shaped = model.outputShape(inViews, i, got[i].shape);
    if (!shaped.ok()) {
      std::fprintf(stderr, "output shape: %s\n", shaped.message().c_str());
      return DataSetResult::RunFailed;
    }
    size_t count = 1;
    for (int64_t d : got[i].shape)
      count *= (size_t)d;
    got[i].data.resize(count * kiln_dtype_size(got[i].dtype));
    outViews.push_back(got[i].view());
  }
  kiln::Status s = session.run(inViews, outViews);
  if (!s.ok()) {
    std::fprintf(stderr, "run: %s\n", s.message().c_str());
    return DataSetResult::RunFailed;
  }
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].shape != want[o].shape) {
      std::fprintf(stderr, "output %zu has the wrong shape\n", o);
      return DataSetResult::Wrong;
    }
    for (size_t i = 0; i < got[o].numElements(); ++i) {
      double g = kiln::elementAsDouble(got[o], i), w = kiln::elementAsDouble(want[o], i);
      bool ok = g == w || (std::isnan(g) && std::isnan(w)) ||
                std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
      if (!ok) {
        std::fprintf(stderr, "output %zu element %zu: got %.8g, want %.8g\n", o, i, g, w);
        return DataSetResult::Wrong;
      }
    }
  }
  return DataSetResult::Ok;
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}


} // namespace kiln::conformance

#endif // KILN_TEST_CONFORMANCE_DATASETS_H
