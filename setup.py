"""Build script: compiles the search's hot modules with Cython where it can.

The modules in ``dcmap_dist.compiled.COMPILED`` are plain Python; Cython compiles the
same source to C extension modules, which run the search about 1.3 times faster
(docs/search.md), reading the compiled layout of a module's classes from the ``.pxd``
beside it where there is one (``search/branch.pxd``, ``search/problem.pxd``,
``search/bounds.pxd``, ``search/combinations.pxd``, ``search/keys.pxd``,
``search/linking.pxd``, ``model/topology.pxd``). If Cython or a C
compiler is missing, or a module fails to compile, the install goes on in pure Python with
a warning: results are identical.
``DCMAP_PURE_PYTHON=1`` skips the compilation (for profiling with py-spy, which sees
only Python frames).
"""

import json
import os
import runpy
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

_compiled = runpy.run_path("dcmap_dist/compiled.py")  # stdlib only: safe to run here
COMPILED, BUILT_SOURCES, source_digest = _compiled["COMPILED"], _compiled["BUILT_SOURCES"], _compiled["source_digest"]


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
    digests = {name: source_digest(Path("dcmap_dist"), name) for name in COMPILED}
    Path("dcmap_dist", BUILT_SOURCES).write_text(json.dumps(digests, indent=1) + "\n")  # for check_fresh
    return cythonize([str(path) for path in sources.values()],
                     compiler_directives={"language_level": 3}, build_dir="build/cython", quiet=True)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
