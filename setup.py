"""Build script: compiles the native engine and the search's hot modules where it can.

The native engine (``dcmap_dist/search/native_engine.pyx``, a Cython binding over the C++20
core in ``dcmap_dist/search/native/``, g++ the one system need) runs the search; the
modules in ``dcmap_dist.compiled.COMPILED`` are plain Python, which Cython also compiles to
C extension modules (the Python engine, the native one's reference, runs about 1.3 times
faster so: docs/search.md), reading the compiled layout of a module's classes from the
``.pxd`` beside it. If Cython or a compiler is missing, or a module fails to compile, the
install goes on with what did compile, with a warning here (which pip shows with -v only)
and at the first use (``dcmap_dist.compiled.warn_build``): results are identical. A Cython
outside the tested range (pyproject.toml's ``[build-system] requires``, which pip installs
for the build unless told ``--no-build-isolation``) compiles nothing: 3.3.0 miscompiles a
module (docs/engine.md, "Build tools and a crash of Cython 3.3.0"), older ones cannot read
the ``.pxd``. ``DCMAP_PURE_PYTHON=1`` compiles nothing (for profiling with py-spy, which
sees only Python frames). ``DCMAP_SANITIZE=1`` builds the native engine with
AddressSanitizer and UndefinedBehaviorSanitizer and bounds-checked containers,
``DCMAP_DEBUG_BUILD=1`` without optimisation, for gdb (docs/engine.md, "Debugging it").

Each build is recorded in ``dcmap_dist/built-sources.json`` (in the wheel; beside the
sources for ``pip install -e``): the Python and Cython that built it, the digests of the
sources of each module compiled, why a module was not; ``import dcmap_dist`` refuses a
compiled module that does not match its record (``dcmap_dist.compiled.check_build``).
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
COMPILED, NATIVE = _compiled["COMPILED"], _compiled["NATIVE"]
native_sources, module_sources = _compiled["native_sources"], _compiled["module_sources"]
new_record, write_record = _compiled["new_record"], _compiled["write_record"]
NATIVE_FLAGS = ["-std=c++20", "-O3", "-Wall", "-Wextra", "-Wno-unused-function", "-Wno-unused-parameter"]
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined",
                  "-D_GLIBCXX_ASSERTIONS", "-g", "-O1"]
DEBUG_FLAGS = ["-O0", "-g", "-D_GLIBCXX_ASSERTIONS"]
PACKAGE = Path("dcmap_dist")
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def module_name(name: str) -> str:
    return f"dcmap_dist.{name.replace('/', '.')}"


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
    """The extension modules to build (native engine first: the longest to compile
    starts first in a parallel build); the reason nothing compiles, if it does not; the
    Cython version (None: none)."""
    try:
        import Cython
    except ImportError:
        Cython = None
    cython = getattr(Cython, "__version__", None)
    if os.environ.get("DCMAP_PURE_PYTHON"):
        return [], "DCMAP_PURE_PYTHON asked for the sources alone", cython
    if Cython is None:
        return [], "Cython is missing", None
    refused = _compiled["cython_refused"](cython)
    if refused:
        return [], refused, cython
    from Cython.Build import cythonize

    sanitize = SANITIZE_FLAGS if os.environ.get("DCMAP_SANITIZE") else []
    debug = DEBUG_FLAGS if os.environ.get("DCMAP_DEBUG_BUILD") else []
    native = Extension(module_name(NATIVE), [f"dcmap_dist/{NATIVE}.pyx"], language="c++",
                       include_dirs=["dcmap_dist/search"], extra_compile_args=NATIVE_FLAGS + sanitize + debug,
                       extra_link_args=sanitize, depends=[str(path) for path in native_sources(PACKAGE)])
    modules = cythonize([native, *(f"dcmap_dist/{name}.py" for name in COMPILED)],
                        compiler_directives={"language_level": 3}, build_dir="build/cython", quiet=True)
    return modules, None, cython


def why_failed(ext, error: Exception) -> str:
    """Why ``ext`` did not compile, in the user's terms where it can tell."""
    native = ext.name == module_name(NATIVE)
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").exists():
        return f"no Python headers: {include / 'Python.h'} is missing"
    compiler = (os.environ.get("CXX") or sysconfig.get_config_var("CXX") or "g++") if native else \
        (os.environ.get("CC") or sysconfig.get_config_var("CC") or "gcc")
    program = compiler.split()[0] if compiler.split() else compiler
    if shutil.which(program) is None:
        return f"no {'C++' if native else 'C'} compiler: {program} is not found"
    return f"{type(error).__name__}: {error}".strip()


SOURCES = {name: module_sources(PACKAGE, name) for name in (*COMPILED, NATIVE)}  # before anything compiles
EXTENSIONS, NOT_COMPILING, CYTHON = plan()
if NOT_COMPILING:
    print(f"dcmap_dist: compiling nothing ({NOT_COMPILING}); the search runs in pure Python", file=sys.stderr)


class RecordingBuildPy(build_py):
    """build_py that records a build that compiles nothing, and removes the extension
    modules an earlier in-place build left beside the sources (Python would import them)."""

    def run(self) -> None:
        super().run()
        if EXTENSIONS:
            return  # build_ext records the build
        package = Path(self.get_package_dir("dcmap_dist")) if self.editable_mode else Path(self.build_lib, "dcmap_dist")
        if self.editable_mode:
            for name in (*COMPILED, NATIVE):
                (package / f"{name}{EXT_SUFFIX}").unlink(missing_ok=True)
        if package.is_dir():
            write_record(package, new_record({}, {name: NOT_COMPILING for name in (*COMPILED, NATIVE)}, CYTHON,
                                             bool(os.environ.get("DCMAP_PURE_PYTHON")), tool_versions()),
                         keep_others=self.editable_mode)


class OptionalBuildExt(build_ext):
    """build_ext that warns and leaves a module in pure Python when it fails to compile,
    builds two modules at a time (the native engine's C++ alongside the rest), and records
    the build."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            self.parallel = 2

    def run(self) -> None:
        self.not_built: dict[str, str] = {}
        try:
            super().run()
        except Exception as error:  # no compiler at all
            for ext in self.extensions:
                self.not_built.setdefault(ext.name, why_failed(ext, error))
            print(f"dcmap_dist: not compiled ({error}); the search runs in pure Python", file=sys.stderr)
        if self.inplace or self.editable_mode:
            package = Path(self.get_finalized_command("build_py").get_package_dir("dcmap_dist"))
        else:
            package = Path(self.build_lib, "dcmap_dist")
        built = {name: SOURCES[name] for name in (NATIVE, *COMPILED) if module_name(name) not in self.not_built}
        not_built = {name: self.not_built[module_name(name)] for name in (NATIVE, *COMPILED)
                     if module_name(name) in self.not_built}
        package.mkdir(parents=True, exist_ok=True)
        write_record(package, new_record(built, not_built, CYTHON, tools=tool_versions()),
                     keep_others=self.inplace or self.editable_mode)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            self.not_built[ext.name] = why_failed(ext, error)
            print(f"dcmap_dist: {ext.name} not compiled ({self.not_built[ext.name]}); it runs in pure Python",
                  file=sys.stderr)

    def copy_extensions_to_source(self) -> None:
        """Copy what compiled beside the sources, and remove there what an earlier build
        left of what did not (Python would import it)."""
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
