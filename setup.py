"""Build script: builds the native engine where it can.

The native engine (``dcmap_dist/search/native_engine.pyx``, a Cython binding over the C++20
core in ``dcmap_dist/search/native/``, g++ the one system need) runs the search; the rest
of the package, its reference the Python engine included, is plain Python. If Cython or
a compiler is missing, or the engine fails to compile, the install goes on without it,
with a warning here (which pip shows with -v only) and at the first use
(``dcmap_dist.compiled.warn_build``): the Python engine runs, and results are identical.
A Cython outside the tested range (pyproject.toml's ``[build-system] requires``, which pip
installs for the build unless told ``--no-build-isolation``) builds nothing (3.3.0 is known
to miscompile: docs/engine.md, "Build tools and a crash of Cython 3.3.0").
``DCMAP_PURE_PYTHON=1`` builds no native engine (no compiler needed, no warning at use).
``DCMAP_SANITIZE=1`` builds it with AddressSanitizer and UndefinedBehaviorSanitizer and
bounds-checked containers, ``DCMAP_DEBUG_BUILD=1`` without optimisation, for gdb
(docs/engine.md, "Debugging it").

Each build is recorded in ``dcmap_dist/built-sources.json`` (in the wheel; beside the
sources for ``pip install -e``): the Python and Cython that built it, the digests of the
native engine's sources, why it was not built; ``import dcmap_dist`` refuses an
extension module that does not match its record (``dcmap_dist.compiled.check_build``).
An in-place build removes the extension modules of the Python engine's modules that an
older dcmap_dist compiled (``NO_LONGER_COMPILED``): Python would import them first.
"""

import os
import runpy
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

_compiled = runpy.run_path("dcmap_dist/compiled.py")  # stdlib only: safe to run here
NATIVE, NO_LONGER_COMPILED = _compiled["NATIVE"], _compiled["NO_LONGER_COMPILED"]
native_sources, source_digests = _compiled["native_sources"], _compiled["source_digests"]
new_record, write_record = _compiled["new_record"], _compiled["write_record"]
NATIVE_FLAGS = ["-std=c++20", "-O3", "-Wall", "-Wextra", "-Wno-unused-function", "-Wno-unused-parameter"]
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined",
                  "-D_GLIBCXX_ASSERTIONS", "-g", "-O1"]
DEBUG_FLAGS = ["-O0", "-g", "-D_GLIBCXX_ASSERTIONS"]
PACKAGE = Path("dcmap_dist")
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
NATIVE_MODULE = f"dcmap_dist.{NATIVE.replace('/', '.')}"


def tool_versions() -> dict:
    """The build tools' versions, for the record."""
    import setuptools

    versions = {"setuptools": setuptools.__version__}
    try:
        import Cython

        versions["cython"] = Cython.__version__
    except ImportError:
        pass
    return versions


def plan():
    """The extension modules to build (the native engine, or none); the reason it is not
    built, if it is not; the Cython version (None: none)."""
    try:
        import Cython
    except ImportError:
        Cython = None
    cython = getattr(Cython, "__version__", None)
    if os.environ.get("DCMAP_PURE_PYTHON"):
        return [], "DCMAP_PURE_PYTHON asked for no native engine", cython
    if Cython is None:
        return [], "Cython is missing", None
    refused = _compiled["cython_refused"](cython)
    if refused:
        return [], refused, cython
    from Cython.Build import cythonize

    sanitize = SANITIZE_FLAGS if os.environ.get("DCMAP_SANITIZE") else []
    debug = DEBUG_FLAGS if os.environ.get("DCMAP_DEBUG_BUILD") else []
    native = Extension(NATIVE_MODULE, [f"dcmap_dist/{NATIVE}.pyx"], language="c++",
                       include_dirs=["dcmap_dist/search"], extra_compile_args=NATIVE_FLAGS + sanitize + debug,
                       extra_link_args=sanitize, depends=[str(path) for path in native_sources(PACKAGE)])
    modules = cythonize([native], compiler_directives={"language_level": 3}, build_dir="build/cython", quiet=True)
    return modules, None, cython


def why_failed(error: Exception) -> str:
    """Why the native engine did not compile, in the user's terms where it can tell."""
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").exists():
        return f"no Python headers: {include / 'Python.h'} is missing"
    compiler = os.environ.get("CXX") or sysconfig.get_config_var("CXX") or "g++"
    program = compiler.split()[0] if compiler.split() else compiler
    if shutil.which(program) is None:
        return f"no C++ compiler: {program} is not found"
    return f"{type(error).__name__}: {error}".strip()


SOURCES = source_digests(PACKAGE)  # before anything compiles
EXTENSIONS, NOT_COMPILING, CYTHON = plan()
if NOT_COMPILING:
    print(f"dcmap_dist: no native engine ({NOT_COMPILING}); the search runs on the Python engine", file=sys.stderr)


def remove_left(package: Path, native: bool) -> None:
    """Remove the extension modules an earlier in-place build left beside the sources
    that this build does not make (Python would import them): those of the modules an
    older dcmap_dist compiled, and the native engine's if ``native``."""
    for name in (*NO_LONGER_COMPILED, *([NATIVE] if native else [])):
        (package / f"{name}{EXT_SUFFIX}").unlink(missing_ok=True)


class RecordingBuildPy(build_py):
    """build_py that records a build that compiles nothing, and removes the extension
    modules an earlier in-place build left beside the sources."""

    def run(self) -> None:
        super().run()
        package = Path(self.get_package_dir("dcmap_dist")) if self.editable_mode else Path(self.build_lib, "dcmap_dist")
        if self.editable_mode:
            remove_left(package, native=not EXTENSIONS)
        if EXTENSIONS:
            return  # build_ext records the build
        if package.is_dir():
            write_record(package, new_record({}, {NATIVE: NOT_COMPILING}, CYTHON,
                                             bool(os.environ.get("DCMAP_PURE_PYTHON")), tool_versions()),
                         keep_others=self.editable_mode)


class OptionalBuildExt(build_ext):
    """build_ext that warns and goes on without the native engine when it fails to
    compile, and records the build."""

    def run(self) -> None:
        self.not_built: dict[str, str] = {}
        try:
            super().run()
        except Exception as error:  # no compiler at all
            self.not_built.setdefault(NATIVE_MODULE, why_failed(error))
            print(f"dcmap_dist: native engine not built ({error}); the search runs on the Python engine",
                  file=sys.stderr)
        if self.inplace or self.editable_mode:
            package = Path(self.get_finalized_command("build_py").get_package_dir("dcmap_dist"))
            remove_left(package, native=False)
        else:
            package = Path(self.build_lib, "dcmap_dist")
        failed = self.not_built.get(NATIVE_MODULE)
        package.mkdir(parents=True, exist_ok=True)
        write_record(package, new_record({} if failed else {NATIVE: SOURCES}, {NATIVE: failed} if failed else {},
                                         CYTHON, tools=tool_versions()),
                     keep_others=self.inplace or self.editable_mode)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            self.not_built[ext.name] = why_failed(error)
            print(f"dcmap_dist: {ext.name} not built ({self.not_built[ext.name]}); the search runs on the Python "
                  "engine", file=sys.stderr)

    def copy_extensions_to_source(self) -> None:
        """Copy the native engine beside the sources if it compiled, and remove there what
        an earlier build left if it did not (Python would import it)."""
        build_py = self.get_finalized_command("build_py")
        every = self.extensions
        self.extensions = [ext for ext in every if ext.name not in self.not_built]
        try:
            super().copy_extensions_to_source()
        finally:
            self.extensions = every
        for ext in every:
            if ext.name in self.not_built:
                Path(self._get_inplace_equivalent(build_py, ext)[0]).unlink(missing_ok=True)


setup(ext_modules=EXTENSIONS, cmdclass={"build_ext": OptionalBuildExt, "build_py": RecordingBuildPy})
