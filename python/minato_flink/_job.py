"""Which command starts the job on this machine: MINATO_LAUNCHER, else the job packaged in this
package (a wheel made by scripts/wheel), else a checkout's scripts/run. The packaged job runs as
scripts/run runs it: the same JVM options and environment (see scripts/lib.sh)."""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import secrets
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .loader import LoaderError

# What scripts/wheel puts into the package: lib/ (the job's jar and its run classpath), classpath
# (their order), conf/ (flink-conf's files the run reads) and, where it carried one, java/ (a
# runtime). A package used from the checkout has none of it.
PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "job")
_CHECKOUT_LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                  "scripts", "run")
MAIN_CLASS = "io.minato.job.Main"
_LOG = logging.getLogger("minato_flink")


@dataclass(frozen=True)
class Launcher:
    """A command that takes scripts/run's subcommands and options, and what it sets in the
    environment of the process it starts (on top of this process's)."""

    argv: List[str]
    env: Dict[str, str] = field(default_factory=dict)

    def environment(self) -> Dict[str, str]:
        return {**os.environ, **self.env}


def launcher() -> Launcher:
    """MINATO_LAUNCHER (a command line), else the packaged job, else the repository's scripts/run:
    the one beside this package when it is used from the repository (PYTHONPATH=python), else,
    for a package installed without the job, the checkout the script runs in (the working
    directory or one above)."""
    given = os.environ.get("MINATO_LAUNCHER")
    if given:
        return Launcher(shlex.split(given))
    if os.path.isfile(os.path.join(PACKAGED, "classpath")):
        return packaged()
    path = os.path.normpath(_CHECKOUT_LAUNCHER)
    if os.path.exists(path):
        return Launcher([path])
    here = os.getcwd()
    while True:
        candidate = os.path.join(here, "scripts", "run")
        if os.path.exists(candidate) and os.path.isdir(os.path.join(here, "python", "minato_flink")):
            return Launcher([candidate])
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    raise LoaderError(
        f"no launcher: this package carries no job (install the wheel scripts/wheel makes), there"
        f" is no {path}, and no minato-flink checkout at or above {os.getcwd()};"
        " set MINATO_LAUNCHER to a command that takes scripts/run's subcommands")


def packaged(home: str = PACKAGED) -> Launcher:
    """The packaged job's command line: java (the package's own runtime, else JAVA_HOME's, else
    the PATH's) with scripts/run's JVM options over the packaged classpath."""
    try:
        with open(os.path.join(home, "classpath"), encoding="utf-8") as f:
            jars = [line.strip() for line in f if line.strip()]
        with open(os.path.join(home, "conf", "jvm-options"), encoding="utf-8") as f:
            options = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    except OSError as err:
        raise LoaderError(f"the packaged job in {home} is incomplete ({err}); reinstall the"
                          " wheel") from None
    classpath = ":".join(os.path.join(home, "lib", jar) for jar in jars)
    options += ["-Dai.djl.offline=true",
                "-Dlog4j.configurationFile=" + os.path.join(home, "conf", "log4j-console.properties")]
    if _transparent_huge_pages():
        options.append("-XX:+UseTransparentHugePages")
    java = _java(home)
    options += class_archive(java, classpath, options)
    return Launcher([java, *options, "-cp", classpath, MAIN_CLASS], _environment())


def class_archive(java: str, classpath: str, options: List[str]) -> List[str]:
    """The JVM options for a class-data archive of the packaged job (AppCDS), as scripts/run has
    one: before its first batch a job loads some 12,000 classes, and mapping them from an archive
    saves seconds of a start on 2 cores. The archive is this machine's (the JVM checks the java
    and each jar's path, size and time), so the first launch writes it into the user's cache as
    its job ends, and a later launch checks it once and uses it. MINATO_CLASS_ARCHIVE=0 neither
    writes nor uses one; a broken or missing archive costs start-up time, never correctness."""
    if os.environ.get("MINATO_CLASS_ARCHIVE", "1") == "0":
        return []
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "minato-flink")
    key = hashlib.sha1("\0".join([os.path.realpath(java), classpath, *options]).encode())
    for jar in classpath.split(":"):
        try:
            st = os.stat(jar)
        except OSError:
            return []  # the JVM says what is missing
        key.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    archive = os.path.join(cache, key.hexdigest()[:16] + ".jsa")
    quiet = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    if not os.path.isfile(archive):
        for written in glob.glob(archive[:-len(".jsa")] + "-*.jsa.part"):
            # Written at the end of an earlier job, which may have been killed while writing it.
            check = [java, f"-XX:SharedArchiveFile={written}", "-Xshare:on", *quiet,
                     "-XX:-CreateCoredumpOnCrash", "-XX:ErrorFile=/dev/null", "-cp",
                     classpath, "-version"]
            try:
                ok = subprocess.run(check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    timeout=60).returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
            if ok:
                os.replace(written, archive)
                break
            os.unlink(written)
    if os.path.isfile(archive):
        return [f"-XX:SharedArchiveFile={archive}", *quiet]
    try:
        os.makedirs(cache, exist_ok=True)
    except OSError:
        return []
    part = f"{archive[:-len('.jsa')]}-{secrets.token_hex(4)}.jsa.part"
    _LOG.info("the job writes a class-data archive for faster start-ups as it ends (once): %s",
              archive)
    return [f"-XX:ArchiveClassesAtExit={part}", *quiet]


def _java(home: str) -> str:
    candidates = [os.path.join(home, "java", "bin", "java")]
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("java")
    if found is None:
        raise LoaderError("no Java runtime for the packaged job: install Java 17 or later (java on"
                          " the PATH, or JAVA_HOME), or use a wheel that carries one"
                          " (scripts/wheel --java-runtime)")
    return found


def _transparent_huge_pages() -> bool:
    """The kernel offers THP for the heap (mode always or madvise), as scripts/lib.sh checks."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = f.read()
    except OSError:
        return False
    return "[always]" in mode or "[madvise]" in mode


def _environment() -> Dict[str, str]:
    """What scripts/lib.sh sets for every JVM it starts, and why there: libtorch's huge pages
    (THP_MEM_ALLOC_ENABLE), oneDNN's AVX kernels (ONEDNN_MAX_CPU_ISA), a UTF-8 locale so that
    file names of any encoding open. Values already in the environment win."""
    env = {"THP_MEM_ALLOC_ENABLE": os.environ.get("THP_MEM_ALLOC_ENABLE", "1"),
           "ONEDNN_MAX_CPU_ISA": os.environ.get("ONEDNN_MAX_CPU_ISA", "AVX")}
    utf8 = _utf8_locale()
    if utf8 is not None:
        env["LC_ALL"] = utf8
    return env


def _utf8_locale() -> Optional[str]:
    """None where the child's locale is UTF-8 already, else a UTF-8 locale to run it under."""
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = os.environ.get(name)
        if value:
            if value.replace("-", "").lower().endswith("utf8"):
                return None
            break
    try:
        names = subprocess.run(["locale", "-a"], capture_output=True, text=True,
                               timeout=10).stdout.split()
    except (OSError, subprocess.SubprocessError):
        names = []
    for candidate in ("C.UTF-8", "C.utf8", *names):
        if candidate in names and candidate.replace("-", "").lower().endswith("utf8"):
            return candidate
    return "C.UTF-8"  # glibc 2.35 and later have it built in
