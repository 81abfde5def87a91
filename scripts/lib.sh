# Shared by the scripts: build when sources changed, the run classpath, the JVM options.
# Sourced, not run.

minato_root() { (cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd); }

# File names: the JVM holds them in the locale's encoding (sun.jnu.encoding, which no -D option
# changes on Java 17), so under LC_ALL=C or POSIX, common in containers and CI, a name like
# café.jpg cannot be opened. Every JVM the scripts start (the run, the tests, a cluster's
# JobManager and TaskManagers, Flink's CLI) runs under a UTF-8 locale instead: C.UTF-8 where the
# locale's character set is not UTF-8 already (the rest of the locale stays as it was).
minato_utf8_locale() {
  local charmap candidate
  charmap="$(locale charmap 2>/dev/null || true)"
  [ "$charmap" = UTF-8 ] && return 0
  for candidate in C.UTF-8 C.utf8 $(locale -a 2>/dev/null | grep -iE '\.utf-?8$' || true); do
    if [ "$(LC_ALL="$candidate" locale charmap 2>/dev/null)" = UTF-8 ]; then
      export LC_ALL="$candidate"
      return 0
    fi
  done
  echo "warning: no UTF-8 locale on this machine (locale -a): files with non-ASCII names cannot be read" >&2
}
minato_utf8_locale

# libtorch allocates its large CPU tensors (2 MiB and up) on transparent huge pages when
# THP_MEM_ALLOC_ENABLE=1 (c10's allocator reads it once). A training step allocates and frees
# hundreds of MB of activations; on 4 KiB pages the kernel faulted every page in again each time.
# A step-time run of the 3D-UNet at patch 64 took 47 CPU seconds with it and 105-110 without
# (docs/benchmarks.md). It needs the kernel's THP in "madvise" or "always" mode; any value already
# in the environment wins.
export THP_MEM_ALLOC_ENABLE="${THP_MEM_ALLOC_ENABLE:-1}"

# libtorch's oneDNN (3.5 and 3.7) computed float convolutions and their gradients wrong with its
# AVX2 and AVX-512 kernels on an AMD EPYC (AVX-512), off by up to 92 % and sometimes NaN, whenever
# a convolution's channels were not a multiple of the vector width; its AVX kernels were right.
# Every JVM the scripts start uses those unless the environment says otherwise; a trainer on the
# CPU checks its convolutions first and refuses with this advice (io.minato.trainer.
# ConvolutionCheck). GPUs (cuDNN) are not affected.
export ONEDNN_MAX_CPU_ISA="${ONEDNN_MAX_CPU_ISA:-AVX}"

# Rebuilds (skipping tests) when the job jar is missing or older than any source or pom. The run
# classpath: compile scope includes the Flink jars the job jar leaves to a cluster (provided);
# runtime scope adds what only runs (log4j-core).
minato_build_if_needed() {
  local root jar stale sources
  root="$(minato_root)"
  jar="$root/job/target/minato-job.jar"
  # The poms and the modules' src/ only: the checkout's runs/, data sets and targets hold many
  # more files (12,000 in a hundred runs' checkpoints took the whole tree's walk 0.2-0.7 s).
  sources=("$root/pom.xml")
  for module in $(sed -n 's:.*<module>\(.*\)</module>.*:\1:p' "$root/pom.xml"); do
    sources+=("$root/$module/pom.xml" "$root/$module/src")
  done
  stale=""
  if [ ! -f "$jar" ] || [ ! -f "$root/job/target/run-classpath.txt" ]; then
    stale=yes
  elif [ -n "$(find "${sources[@]}" \( -name '*.java' -o -name pom.xml -o -path '*/src/main/resources/*' \) -newer "$jar" -print -quit 2>/dev/null)" ]; then
    stale=yes
  elif [ -n "$(find "${sources[@]}" -name pom.xml -newer "$root/job/target/run-classpath.txt" -print -quit 2>/dev/null)" ]; then
    # A dependency changed since the classpath was written (the jar may be newer: mvn install).
    stale=yes
  fi
  if [ -n "$stale" ]; then
    echo "building minato-flink (mvn install -DskipTests; log in target/build.log) ..." >&2
    mkdir -p "$root/target"
    # The build's output goes to a log, shown only when the build fails.
    if ! (cd "$root" && mvn -B -ntp install -DskipTests) > "$root/target/build.log" 2>&1 \
      || ! minato_write_classpath >> "$root/target/build.log" 2>&1; then
      tail -n 40 "$root/target/build.log" >&2
      echo "error: the build failed; the whole log is in target/build.log" >&2
      return 1
    fi
  fi
  minato_class_archive
}

# Writes job/target/run-classpath.txt, the classpath scripts/run starts the job with, from the
# modules installed by `mvn install` (scripts/test calls it after its own build).
minato_write_classpath() {
  local root
  root="$(minato_root)"
  (cd "$root" && mvn -B -ntp -pl job dependency:build-classpath -DincludeScope=compile \
      -Dmdep.outputFile=target/cp-compile.txt \
    && mvn -B -ntp -pl job dependency:build-classpath -DincludeScope=runtime \
      -Dmdep.outputFile=target/cp-runtime.txt) || return 1
  { cat "$root/job/target/cp-compile.txt"; echo -n ":"; cat "$root/job/target/cp-runtime.txt"; } \
    > "$root/job/target/run-classpath.txt"
}

# Class-data sharing (AppCDS, for start-up): before its first sample a run loads, parses and
# verifies some 14,000 classes (Flink's MiniCluster, Pekko, RocksDB, DJL, the loader), which on 2
# cores took 2 of its 6 seconds. A dynamic archive of those classes, written once per build by a
# short training run on a tiny generated data set, lets every later run map them instead. The JVM
# checks that the archive was made by the same JVM from the same jars (path, size, modification
# time) and silently ignores one that was not; it is rewritten whenever the jar is rebuilt or
# another java is on the PATH. MINATO_CLASS_ARCHIVE=0 neither writes nor uses it. A failure to write it costs
# start-up time, never correctness, and says so in one line.
#
# The same run lists the classes it loaded, and a static archive of those found on the cluster's
# classpath (Flink's TaskExecutor, its network stack, RocksDB, DJL) serves the JobManager and the
# TaskManagers of scripts/cluster: a TaskManager started in place of a killed one registers sooner
# (on one core, 2.7 s instead of 3.4-4.4). The job's own classes come from its jar through Flink's
# class loader and are not in it.
minato_class_archive_file() { echo "$(minato_root)/job/target/minato.jsa"; }
minato_cluster_archive_file() { echo "$(minato_root)/job/target/minato-cluster.jsa"; }

minato_java_id() { readlink -f "$(command -v java)"; }

minato_class_archive() {
  local root archive tmp log
  root="$(minato_root)"
  archive="$(minato_class_archive_file)"
  [ "${MINATO_CLASS_ARCHIVE:-1}" = 0 ] && return 0
  if [ -f "$archive" ] && [ "$archive" -nt "$root/job/target/minato-job.jar" ] \
    && [ "$(cat "$archive.jvm" 2>/dev/null)" = "$(minato_java_id)" ]; then
    return 0
  fi
  log="$root/target/class-archive.log"
  echo "writing the class-data archive for fast start-ups (once per build; log in target/class-archive.log) ..." >&2
  rm -f "$archive" "$archive.jvm" "$(minato_cluster_archive_file)"
  mkdir -p "$root/target"
  tmp="$(mktemp -d "$root/target/class-archive.XXXXXX")"
  # The web UI on a free port, DJL training and the evaluation: the classes of a default run.
  if java $(minato_jvm_options) -cp "$(minato_classpath)" io.minato.job.Main generate \
      --out "$tmp/data" --cases 3 --scale 0.15 --threads 1 > "$log" 2>&1 \
    && java $(minato_jvm_options) -XX:ArchiveClassesAtExit="$tmp/minato.jsa" -Xlog:cds=off \
      -Xlog:cds+dynamic=off -XX:DumpLoadedClassList="$tmp/classes.lst" \
      -cp "$(minato_classpath)" io.minato.job.Main train --data "$tmp/data" \
      --patch 32 --batch 1 --epochs 1 --eval-cases 1 --rest-port 0 --run-dir "$tmp/run" \
      --cache-dir "$tmp/cache" --progress-interval 0 >> "$log" 2>&1 \
    && [ -s "$tmp/minato.jsa" ]; then
    mv "$tmp/minato.jsa" "$archive"
    minato_java_id > "$archive.jvm"
    # Classes of the job's jar are not on the cluster's classpath: the dump leaves them out.
    if java $(minato_jvm_options) -Xshare:dump -XX:SharedClassListFile="$tmp/classes.lst" \
        -XX:SharedArchiveFile="$tmp/cluster.jsa" -Xlog:cds=off -cp "$(minato_cluster_classpath)" \
        >> "$log" 2>&1 && [ -s "$tmp/cluster.jsa" ]; then
      mv "$tmp/cluster.jsa" "$(minato_cluster_archive_file)"
    else
      echo "warning: no class-data archive for scripts/cluster (see target/class-archive.log)" >&2
    fi
  else
    echo "warning: no class-data archive (see target/class-archive.log): runs start about 2 s slower" >&2
  fi
  rm -rf "$tmp"
}

# The JVM options that use archive $1, where it is there and made by this java (both archives are
# written together and minato.jsa.jvm records the java); minato.jsa only for a JVM on
# minato_classpath, minato-cluster.jsa for one on minato_cluster_classpath (to which more entries
# may be appended). The archive records that classpath.
minato_archive_options() {
  if [ "${MINATO_CLASS_ARCHIVE:-1}" != 0 ] && [ -f "$1" ] \
    && [ "$(cat "$(minato_class_archive_file).jvm" 2>/dev/null)" = "$(minato_java_id)" ]; then
    echo -n "-XX:SharedArchiveFile=$1 -Xlog:cds=off -Xlog:cds+dynamic=off"
  fi
}
minato_class_archive_options() { minato_archive_options "$(minato_class_archive_file)"; }
minato_cluster_archive_options() { minato_archive_options "$(minato_cluster_archive_file)"; }

# Jars only: the JVM writes no class-data archive for a classpath with a non-empty folder on it
# (the configuration in flink-conf/ is read by path, not as resources).
# A python3 that imports torch and numpy (Debian's python3-torch installs for /usr/bin/python3,
# and another python3 on the PATH may lack it).
minato_torch_python() {
  local p
  for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch, numpy' >/dev/null 2>&1; then
      echo "$p"
      return 0
    fi
  done
  echo "error: no python3 with torch and numpy (apt-get install python3-torch)" >&2
  return 1
}

minato_classpath() {
  local root
  root="$(minato_root)"
  echo "$root/job/target/minato-job.jar:$(cat "$root/job/target/run-classpath.txt")"
}

# JVM flags: the module openings Flink needs on Java 17+, offline DJL, logging config, and
# transparent huge pages for the heap where the kernel offers them (mode always or madvise): the
# samples' multi-MiB arrays then fault in 2 MiB at a time instead of 4 KiB (measured: half the
# minor faults of a CPU-bound run).
minato_jvm_options() {
  local root
  root="$(minato_root)"
  grep -v '^#' "$root/flink-conf/jvm-options" | tr '\n' ' '
  echo -n " -Dai.djl.offline=true -Dlog4j.configurationFile=$root/flink-conf/log4j-console.properties"
  if grep -qE '\[(always|madvise)\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
    echo -n " -XX:+UseTransparentHugePages"
  fi
}

# The classpath of a cluster started by scripts/cluster, as a Flink distribution's lib/ would
# hold it: Flink's jars, plus DJL and JavaCPP (and what they need); the build's compile-scope
# classpath without the job and picocli, which come with job/target/minato-job.jar. Native
# libraries load once per JVM, so DJL and JavaCPP must come from the cluster's classpath,
# parent-first (see flink-conf/config.yaml), not from each job's class loader.
minato_cluster_classpath() {
  local root
  root="$(minato_root)"
  tr ':' '\n' < "$root/job/target/cp-compile.txt" \
    | grep -v -e '^$' -e '/io/minato/' -e '/info/picocli/' -e '/operators/target/' \
      -e '/sink-trainer/target/' | paste -sd: -
}

# The resource ids (tm-K), one a line, of the TaskManagers of scripts/cluster that run a subtask
# of the one running job's vertex whose name contains $1 (TrainerSink: the trainers;
# AugmentOperator: the fast workers); nothing while there is none.
minato_taskmanagers_running() {
  python3 - "$1" <<'PY'
import json, sys, urllib.request
def get(p):
    return json.load(urllib.request.urlopen("http://localhost:8081" + p, timeout=5))
try:
    for j in get("/jobs")["jobs"]:
        if j["status"] != "RUNNING":
            continue
        for v in get("/jobs/" + j["id"])["vertices"]:
            if sys.argv[1] in v["name"] and v["status"] == "RUNNING":
                tms = get("/jobs/%s/vertices/%s/taskmanagers" % (j["id"], v["id"]))["taskmanagers"]
                for tm in tms:
                    if tm["status"] == "RUNNING":
                        print(tm["taskmanager-id"])
except Exception:
    pass
PY
}

# The resource id (tm-K) of the TaskManager that runs the trainer; empty while none runs.
minato_trainer_taskmanager() { minato_taskmanagers_running TrainerSink | head -n 1; }
