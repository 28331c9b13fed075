# lit configuration for uopc: pass behaviour and error messages, checked with FileCheck.
import os
import lit.formats

config.name = "uopc"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".json", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.uopc_obj_root, "test", "lit")

config.environment["PATH"] = os.pathsep.join([config.uopc_tools_dir, config.llvm_tools_dir,
                                              config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%uopc-run", os.path.join(config.uopc_tools_dir, "uopc-run")))
config.substitutions.append(("%uopc", os.path.join(config.uopc_tools_dir, "uopc")))
config.substitutions.append(("%corpus", config.uopc_corpus))
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
if os.path.isdir(config.uopc_corpus):
    config.available_features.add("corpus")
