# Shared by the scripts: build when sources changed, the run classpath, the JVM options.
# Sourced, not run.

minato_root() { (cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd); }

# Rebuilds (skipping tests) when the job jar is missing or older than any source or pom.
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
    echo "building minato-flink (mvn install -DskipTests) ..." >&2
    (cd "$root" && mvn -B -q -ntp install -DskipTests) >&2
    # The run classpath: compile scope includes the Flink jars the job jar leaves to the cluster
    # (provided); runtime scope adds what only runs (log4j-core).
    (cd "$root" && mvn -B -q -ntp -pl job dependency:build-classpath -Dmdep.includeScope=compile \
        -Dmdep.outputFile=target/cp-compile.txt \
      && mvn -B -q -ntp -pl job dependency:build-classpath -Dmdep.includeScope=runtime \
        -Dmdep.outputFile=target/cp-runtime.txt) >&2
    { cat "$root/job/target/cp-compile.txt"; echo -n ":"; cat "$root/job/target/cp-runtime.txt"; } \
      > "$root/job/target/run-classpath.txt"
  fi
}

minato_classpath() {
  local root
  root="$(minato_root)"
  echo "$root/job/target/minato-job.jar:$root/flink-conf:$(cat "$root/job/target/run-classpath.txt")"
}

# JVM flags: the module openings Flink needs on Java 17+, offline DJL, logging config.
minato_jvm_options() {
  local root
  root="$(minato_root)"
  grep -v '^#' "$root/flink-conf/jvm-options" | tr '\n' ' '
  echo -n " -Dai.djl.offline=true -Dlog4j.configurationFile=$root/flink-conf/log4j-console.properties"
}
