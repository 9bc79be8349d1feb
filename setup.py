"""Build script: compiles the native engine and the search's hot modules where it can.

The native engine (``dcmap_dist/search/native_engine.pyx``, a Cython binding over the C++20
core in ``dcmap_dist/search/native/``, g++ the one system need) runs the search; the
modules in ``dcmap_dist.compiled.COMPILED`` are plain Python, which Cython also compiles to
C extension modules (the Python engine, the native one's reference, runs about 1.3 times
faster so: docs/search.md), reading the compiled layout of a module's classes from the
``.pxd`` beside it. If Cython or a compiler is missing, or a module fails to compile, the
install goes on with what did compile, with a warning: results are identical.
``DCMAP_PURE_PYTHON=1`` compiles nothing (for profiling with py-spy, which sees only
Python frames). ``DCMAP_SANITIZE=1`` builds the native engine with AddressSanitizer and
UndefinedBehaviorSanitizer and bounds-checked containers, ``DCMAP_DEBUG_BUILD=1`` without
optimisation, for gdb (docs/engine.md, "Debugging it").
"""

import json
import os
import runpy
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_compiled = runpy.run_path("dcmap_dist/compiled.py")  # stdlib only: safe to run here
COMPILED, BUILT_SOURCES, source_digest = _compiled["COMPILED"], _compiled["BUILT_SOURCES"], _compiled["source_digest"]
NATIVE, native_sources = _compiled["NATIVE"], _compiled["native_sources"]
NATIVE_FLAGS = ["-std=c++20", "-O3", "-Wall", "-Wextra", "-Wno-unused-function", "-Wno-unused-parameter"]
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined",
                  "-D_GLIBCXX_ASSERTIONS", "-g", "-O1"]
DEBUG_FLAGS = ["-O0", "-g", "-D_GLIBCXX_ASSERTIONS"]


class OptionalBuildExt(build_ext):
    """build_ext that warns and leaves a module in pure Python when it fails to compile."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # no compiler at all
            print(f"dcmap_dist: not compiled ({error}); the search runs in pure Python", file=sys.stderr)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            print(f"dcmap_dist: {ext.name} not compiled ({error}); it runs in pure Python", file=sys.stderr)


def extensions() -> list:
    if os.environ.get("DCMAP_PURE_PYTHON"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("dcmap_dist: Cython is missing; the search runs in pure Python", file=sys.stderr)
        return []
    sources = {name: Path(f"dcmap_dist/{name}.py") for name in COMPILED}
    digests = {name: source_digest(Path("dcmap_dist"), name) for name in (*COMPILED, NATIVE)}
    Path("dcmap_dist", BUILT_SOURCES).write_text(json.dumps(digests, indent=1) + "\n")  # for check_fresh
    sanitize = SANITIZE_FLAGS if os.environ.get("DCMAP_SANITIZE") else []
    debug = DEBUG_FLAGS if os.environ.get("DCMAP_DEBUG_BUILD") else []
    native = Extension(f"dcmap_dist.{NATIVE.replace('/', '.')}", [f"dcmap_dist/{NATIVE}.pyx"], language="c++",
                       include_dirs=["dcmap_dist/search"], extra_compile_args=NATIVE_FLAGS + sanitize + debug,
                       extra_link_args=sanitize,
                       depends=[str(path) for path in native_sources(Path("dcmap_dist"))])
    return cythonize([*(str(path) for path in sources.values()), native],
                     compiler_directives={"language_level": 3}, build_dir="build/cython", quiet=True)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
