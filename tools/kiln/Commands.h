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

/// `kiln train`: `steps` training steps on the same inputs and label,
/// printing `step=<i> loss=<f>` after each; parameters can be loaded first
/// and parameters / last gradients saved as DIR/<name>.npy; `saveOutputs`
/// runs the model (the inference entry) with the trained parameters; `lr`
/// >= 0 replaces the compiled-in learning rate.
int trainArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                  const std::string &label, int steps, const std::string &saveParams,
                  const std::string &saveGrads, const std::string &loadParams,
                  const std::string &saveOutputs, double lr, int threads);

/// `kiln compare GOT WANT`: two tensor files, or every .npy of the folder
/// WANT against the same name in the folder GOT, within rtol/atol.
int compareFiles(const std::string &got, const std::string &want, double rtol, double atol);

/// `kiln inspect ARTIFACT.so`: prints the signature.
int inspectArtifact(const std::string &artifact);

} // namespace kiln

#endif // KILN_TOOLS_KILN_COMMANDS_H
