# Kiln's lit configuration: IR tests (.mlir) run through kiln-opt, import and
# CLI tests (.onnxtxt, .test) through kiln.
import os
import sys
import lit.formats
from lit.llvm import llvm_config

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test", "lit")
config.substitutions.append(("%kiln_src", config.kiln_src_root))
# Python's standard library only (tests may not need PyPI packages).
config.substitutions.append(("%python", sys.executable))
# Built with AddressSanitizer: tests that limit address space can't run.
if config.kiln_sanitize.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")

llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(["not", "count"], [config.llvm_tools_dir])
# kiln and kiln-opt come from PATH rather than substitutions, which would also
# rewrite the word in flags such as --emit=kiln.
llvm_config.with_environment("PATH", os.path.join(config.kiln_obj_root, "bin"),
                             append_path=True)
# ptxas (CUDA toolkit) checks that emitted PTX assembles; tests that need it
# say `REQUIRES: ptxas`.
import shutil
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.access("/usr/local/cuda/bin/ptxas", os.X_OK) else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
# CUDA's libdevice (math functions in kernels): tests of models with math
# compiled for CUDA say `REQUIRES: cuda-toolkit`.
for root in [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]:
    if root and os.path.isfile(os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc")):
        config.available_features.add("cuda-toolkit")
        break
# The PTX emulator (test/emu): CUDA artifacts run on the CPU through the
# runtime's CUDA backend; tests that execute kernels say `REQUIRES: ptx-emu`.
emu = os.path.join(config.kiln_obj_root, "lib", "libkiln_ptx_emu.so")
if os.path.isfile(emu):
    config.available_features.add("ptx-emu")
    config.substitutions.append(("%ptx_emu", emu))
# AVX512-VNNI on this machine: tests that run 8-bit products' vpdpbusd
# tiles say `REQUIRES: avx512vnni` (compiling for it works anywhere).
# AVX2 likewise for the vpmaddwd tiles (`REQUIRES: avx2`).
try:
    with open("/proc/cpuinfo") as f:
        flags = f.read().split()
        if "avx512_vnni" in flags:
            config.available_features.add("avx512vnni")
        if "avx2" in flags:
            config.available_features.add("avx2")
except OSError:
    pass
