//===- Commands.h - `kiln run` and `kiln inspect ARTIFACT` ------*- C++ -*-===//

#ifndef KILN_TOOLS_KILN_COMMANDS_H
#define KILN_TOOLS_KILN_COMMANDS_H

#include <string>
#include <vector>

namespace kiln {

/// `kiln run`: inputs as NAME=FILE (.npy or .pb); writes DIR/<output>.npy.
int runArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                const std::string &outputDir, int threads);

/// `kiln verify`: runs like `kiln run`, then compares every output with
/// NAME=FILE references: |got - want| <= atol + rtol * |want|, NaN == NaN.
int verifyArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                   const std::vector<std::string> &expected, double rtol, double atol,
                   int threads);

/// `kiln bench`: runs the artifact `warmup` times, then times `iterations`
/// runs and prints the median, min and max in milliseconds.
int benchArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                  int warmup, int iterations, int threads);

/// `kiln inspect ARTIFACT.so`: prints the signature.
int inspectArtifact(const std::string &artifact);

} // namespace kiln

#endif // KILN_TOOLS_KILN_COMMANDS_H
