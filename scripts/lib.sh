# Shared by the scripts: build when sources changed, the run classpath, the JVM options.
# Sourced, not run.

minato_root() { (cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd); }

# Rebuilds (skipping tests) when the job jar is missing or older than any source or pom. The run
# classpath: compile scope includes the Flink jars the job jar leaves to a cluster (provided);
# runtime scope adds what only runs (log4j-core).
minato_build_if_needed() {
  local root jar stale
  root="$(minato_root)"
  jar="$root/job/target/minato-job.jar"
  stale=""
  if [ ! -f "$jar" ] || [ ! -f "$root/job/target/run-classpath.txt" ]; then
    stale=yes
  elif [ -n "$(find "$root" -path "$root/.git" -prune -o \( -name '*.java' -o -name pom.xml -o -path '*/src/main/resources/*' \) -newer "$jar" -print -quit)" ]; then
    stale=yes
  fi
  if [ -n "$stale" ]; then
    echo "building minato-flink (mvn install -DskipTests; log in target/build.log) ..." >&2
    mkdir -p "$root/target"
    # The build's output goes to a log, shown only when the build fails.
    if ! (cd "$root" && mvn -B -ntp install -DskipTests \
      && mvn -B -ntp -pl job dependency:build-classpath -DincludeScope=compile \
        -Dmdep.outputFile=target/cp-compile.txt \
      && mvn -B -ntp -pl job dependency:build-classpath -DincludeScope=runtime \
        -Dmdep.outputFile=target/cp-runtime.txt) > "$root/target/build.log" 2>&1; then
      tail -n 40 "$root/target/build.log" >&2
      echo "error: the build failed; the whole log is in target/build.log" >&2
      return 1
    fi
    { cat "$root/job/target/cp-compile.txt"; echo -n ":"; cat "$root/job/target/cp-runtime.txt"; } \
      > "$root/job/target/run-classpath.txt"
  fi
}

minato_classpath() {
  local root
  root="$(minato_root)"
  echo "$root/job/target/minato-job.jar:$root/flink-conf:$(cat "$root/job/target/run-classpath.txt")"
}

# JVM flags: the module openings Flink needs on Java 17+, offline DJL, logging config, and
# transparent huge pages for the heap where the kernel offers them (mode always or madvise): the
# samples' multi-MiB arrays then fault in 2 MiB at a time instead of 4 KiB (issue 16: half the
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
