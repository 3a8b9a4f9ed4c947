//===- Cubin.cpp - ptxas at compile time, when the CUDA toolkit is here ---===//

#include "Artifact.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {

std::string findPtxas(const std::string &toolkit) {
  if (!toolkit.empty()) {
    llvm::SmallString<256> path(toolkit);
    llvm::sys::path::append(path, "bin", "ptxas");
    if (llvm::sys::fs::can_execute(path))
      return path.str().str();
  }
  auto onPath = llvm::sys::findProgramByName("ptxas");
  return onPath ? *onPath : "";
}

bool assemblePtx(const std::string &ptxas, const std::string &ptx, const std::string &arch,
                 std::string &cubin, std::string &error) {
  llvm::SmallString<128> ptxFile, cubinFile, logFile;
  if (llvm::sys::fs::createTemporaryFile("kiln", "ptx", ptxFile) ||
      llvm::sys::fs::createTemporaryFile("kiln", "cubin", cubinFile) ||
      llvm::sys::fs::createTemporaryFile("kiln", "log", logFile)) {
    error = "cannot create temporary files for ptxas";
    return false;
  }
  llvm::FileRemover removePtx(ptxFile), removeCubin(cubinFile), removeLog(logFile);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxFile, ec);
    if (ec) {
      error = "cannot write " + ptxFile.str().str() + ": " + ec.message();
      return false;
    }
    os << ptx;
  }
  std::string archFlag = "-arch=" + arch;
  llvm::StringRef args[] = {ptxas, archFlag, ptxFile, "-o", cubinFile};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logFile.str(), logFile.str()};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &message);
  if (rc != 0) {
    auto log = llvm::MemoryBuffer::getFile(logFile);
    error = "ptxas rejected the generated PTX for " + arch + " (a compiler bug; please report "
            "it): " + (log && !(*log)->getBuffer().empty() ? (*log)->getBuffer().trim().str()
                                                            : message);
    return false;
  }
  auto bin = llvm::MemoryBuffer::getFile(cubinFile, /*IsText=*/false);
  if (!bin) {
    error = "ptxas wrote no " + cubinFile.str().str();
    return false;
  }
  cubin = (*bin)->getBuffer().str();
  return true;
}

} // namespace kiln
