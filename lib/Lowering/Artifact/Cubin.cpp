//===- Cubin.cpp - ptxas at compile time, when the CUDA toolkit is here ---===//

#include "Artifact.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {
namespace {

/// Runs `tool` with `args` (its output and errors into a log), then reads
/// the file it was to write, `product`; false with `error` (`failure`
/// followed by the log) when it fails or writes nothing.
bool runTool(llvm::StringRef tool, llvm::ArrayRef<llvm::StringRef> args, llvm::StringRef product,
             const std::string &failure, std::string &out, std::string &error) {
  llvm::SmallString<128> logFile;
  if (llvm::sys::fs::createTemporaryFile("kiln", "log", logFile)) {
    error = "cannot create a temporary file for " + llvm::sys::path::filename(tool).str();
    return false;
  }
  llvm::FileRemover removeLog(logFile);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logFile.str(), logFile.str()};
  std::string message;
  if (llvm::sys::ExecuteAndWait(tool, args, std::nullopt, redirects, 0, 0, &message) != 0) {
    auto log = llvm::MemoryBuffer::getFile(logFile);
    error = failure + (log && !(*log)->getBuffer().empty() ? (*log)->getBuffer().trim().str()
                                                           : message);
    return false;
  }
  auto bin = llvm::MemoryBuffer::getFile(product, /*IsText=*/false);
  if (!bin) {
    error = llvm::sys::path::filename(tool).str() + " wrote no " + product.str();
    return false;
  }
  out = (*bin)->getBuffer().str();
  return true;
}

} // namespace

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
  llvm::SmallString<128> ptxFile, cubinFile;
  if (llvm::sys::fs::createTemporaryFile("kiln", "ptx", ptxFile) ||
      llvm::sys::fs::createTemporaryFile("kiln", "cubin", cubinFile)) {
    error = "cannot create temporary files for ptxas";
    return false;
  }
  llvm::FileRemover removePtx(ptxFile), removeCubin(cubinFile);
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
  return runTool(ptxas, args, cubinFile,
                 "ptxas rejected the generated PTX for " + arch +
                     " (a compiler bug; please report it): ",
                 cubin, error);
}

std::vector<std::string> machineCodeArchs(const std::string &arch) {
  std::vector<std::string> archs{arch};
  // Hopper runs sm_80 PTX only through the driver's JIT, seconds per load
  // for a model; its own cubin rides along (sm_90a code runs on Hopper alone).
  unsigned number = 0;
  if (llvm::StringRef(arch).starts_with("sm_") &&
      !llvm::StringRef(arch).drop_front(3).getAsInteger(10, number) && number < 90)
    archs.push_back("sm_90");
  return archs;
}

bool assembleDeviceCode(const std::string &ptxas, const std::string &ptx,
                        const std::string &arch, std::string &code, std::string &error) {
  std::vector<std::string> archs = machineCodeArchs(arch);
  llvm::SmallString<256> fatbinary(llvm::sys::path::parent_path(ptxas));
  llvm::sys::path::append(fatbinary, "fatbinary");
  if (archs.size() == 1 || !llvm::sys::fs::can_execute(fatbinary))
    return assemblePtx(ptxas, ptx, arch, code, error);
  std::vector<std::string> images;
  std::vector<std::unique_ptr<llvm::FileRemover>> removers;
  for (const std::string &a : archs) {
    std::string cubin;
    if (!assemblePtx(ptxas, ptx, a, cubin, error))
      return false;
    llvm::SmallString<128> file;
    if (llvm::sys::fs::createTemporaryFile("kiln", "cubin", file)) {
      error = "cannot create temporary files for fatbinary";
      return false;
    }
    removers.push_back(std::make_unique<llvm::FileRemover>(file));
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec, llvm::sys::fs::OF_None);
    if (ec) {
      error = "cannot write " + file.str().str() + ": " + ec.message();
      return false;
    }
    os << cubin;
    images.push_back("--image3=kind=elf,sm=" + a.substr(3) + ",file=" + file.str().str());
  }
  llvm::SmallString<128> out;
  if (llvm::sys::fs::createTemporaryFile("kiln", "fatbin", out)) {
    error = "cannot create temporary files for fatbinary";
    return false;
  }
  llvm::FileRemover removeOut(out);
  std::string create = "--create=" + out.str().str();
  std::vector<llvm::StringRef> args{fatbinary, "--64", create};
  for (const std::string &image : images)
    args.push_back(image);
  return runTool(fatbinary, args, out, "fatbinary failed: ", code, error);
}

} // namespace kiln
