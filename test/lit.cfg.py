# lit configuration for llmc: dialect, importer, pass, tool and error tests.
import os

import lit.formats

config.name = "llmc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.llmc_build_dir, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "runtime", "e2e", "tools", "CMakeLists.txt"]

config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
for var in ("HOME", "PYTHONPATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

tools = os.path.join(config.llmc_build_dir, "tools")
config.substitutions.append(("%fusion-check", "%s %s --llmc %s --llmc-run %s" % (
    config.python, os.path.join(config.llmc_source_dir, "test", "tools", "fusion_check.py"),
    os.path.join(tools, "llmc", "llmc"), os.path.join(tools, "llmc-run", "llmc-run"))))
config.substitutions.append(("%llmc-opt", os.path.join(tools, "llmc-opt", "llmc-opt")))
config.substitutions.append(("%llmc-run", os.path.join(tools, "llmc-run", "llmc-run")))
config.substitutions.append(("%llmc", os.path.join(tools, "llmc", "llmc")))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%models", os.path.join(config.llmc_source_dir, "models")))
config.substitutions.append(("%testtools", os.path.join(config.llmc_source_dir, "test", "tools")))

# Tests that write multi-gigabyte files run only when asked (LLMC_LARGE_TESTS=1, set by the
# ctest 'large-models' test).
if os.environ.get("LLMC_LARGE_TESTS") == "1":
    config.available_features.add("large-models")

# A usable CUDA device changes what running a CUDA plan does (tests that expect the no-GPU error
# say UNSUPPORTED: cuda-device).
import shutil
import subprocess
if shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0:
    config.available_features.add("cuda-device")
