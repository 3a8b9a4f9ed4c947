# Kiln's lit configuration: IR tests (.mlir) run through kiln-opt, import and
# CLI tests (.onnxtxt, .test) through kiln.
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test", "lit")
config.substitutions.append(("%kiln_src", config.kiln_src_root))

llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(
    ["kiln", "kiln-opt"], [os.path.join(config.kiln_obj_root, "bin"), config.llvm_tools_dir])
