//===- Commands.h - `kiln run` and `kiln inspect ARTIFACT` ------*- C++ -*-===//

#ifndef KILN_TOOLS_KILN_COMMANDS_H
#define KILN_TOOLS_KILN_COMMANDS_H

#include <string>
#include <vector>

namespace kiln {

/// `kiln run`: inputs as NAME=FILE (.npy or .pb); writes DIR/<output>.npy.
/// `device` ("" = the artifact's own) must match how the artifact was compiled.
int runArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                const std::string &outputDir, int threads, const std::string &device);

/// `kiln verify`: runs like `kiln run`, then compares every output with
/// NAME=FILE references: |got - want| <= atol + rtol * |want|, NaN == NaN.
int verifyArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                   const std::vector<std::string> &expected, double rtol, double atol,
                   int threads);

/// `kiln bench`: runs the artifact `warmup` times, then times `runs` runs
/// (inputs not given get random data); the last line printed is
/// `median_ms=<f> p10_ms=<f> p90_ms=<f> runs=<n>`; `perKernel` first prints
/// each kernel's share of the time.
int benchArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                  int warmup, int runs, int threads, const std::string &device,
                  bool perKernel, const std::vector<std::string> &shapes);

/// `kiln train`'s settings.
struct TrainFlags {
  std::string artifact, label, saveParams, saveGrads, loadParams, saveOutputs;
  std::vector<std::string> inputs; // NAME=FILE
  int steps = 1, threads = 0;
  double lr = -1;           // >= 0 replaces the compiled-in learning rate
  bool distributed = false; // one rank of an MPI job (mpirun), sharding dim 0
};

/// `kiln train`: `steps` training steps on the same inputs and label,
/// printing `step=<i> loss=<f>` after each; parameters and optimizer state
/// can be loaded first and saved as DIR/<name>.npy (a checkpoint that
/// resumes exactly), the last gradients saved; `saveOutputs` runs the model
/// (the inference entry) with the trained parameters. Distributed, every
/// rank reads the same files and trains on its contiguous shard of dim 0;
/// rank 0 prints and saves.
int trainArtifact(const TrainFlags &flags);

/// `kiln compare GOT WANT`: two tensor files, or every .npy of the folder
/// WANT against the same name in the folder GOT, within rtol/atol.
int compareFiles(const std::string &got, const std::string &want, double rtol, double atol);

/// `kiln inspect ARTIFACT.so`: prints the signature.
int inspectArtifact(const std::string &artifact);

} // namespace kiln

#endif // KILN_TOOLS_KILN_COMMANDS_H
