#!/usr/bin/env bash
# A local ZooKeeper server for trying dlock out (the README's quick start): Debian's `zookeeper`
# package run as a standalone server on 127.0.0.1 only, its data in /tmp, stopped by PID.
#
#   bash scripts/zookeeper.sh start [--port N]    start it (default port 2181), wait until it serves
#   bash scripts/zookeeper.sh status [--port N]   exit 0 if it runs, 1 if not
#   bash scripts/zookeeper.sh stop [--port N]     stop it and remove its data
#
# Not for production: one server, no replication, no authentication. Needs `apt-get install
# zookeeper` (it brings Java); nothing of the package is started as a service.
set -euo pipefail

usage() { sed -n 5,7p "$0" | sed 's/^# *//' >&2; exit 2; }
[ $# -ge 1 ] || usage
command=$1
shift
port=2181
while [ $# -gt 0 ]; do
  case $1 in
    --port) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
    *) usage ;;
  esac
done
if ! [[ $port =~ ^[0-9]{1,5}$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
  echo "zookeeper.sh: bad port \"$port\" (1 to 65535)" >&2
  exit 2
fi
dir=/tmp/dlock-zookeeper-$port
pid_file=$dir/zookeeper.pid

# A four-letter word's answer (ruok, srvr, mntr), through bash's /dev/tcp; empty if none.
four_letter_word() {
  timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf '%s' '$1' >&3 && cat <&3" 2>/dev/null || true
}
running_pid() {
  [ -f "$pid_file" ] || return 1
  local pid
  pid=$(cat "$pid_file")
  # Alive, and still the server (not a process that was given the PID since).
  kill -0 "$pid" 2>/dev/null && grep -qa ZooKeeperServerMain "/proc/$pid/cmdline" && echo "$pid"
}

case $command in
  start)
    if pid=$(running_pid); then
      echo "ZooKeeper already runs on 127.0.0.1:$port (pid $pid)"
      exit 0
    fi
    if [ "$(four_letter_word ruok)" = imok ]; then
      echo "zookeeper.sh: another ZooKeeper already answers on 127.0.0.1:$port (not started by this script)" >&2
      exit 1
    fi
    if ! command -v java >/dev/null || [ ! -f /usr/share/java/zookeeper.jar ]; then
      echo "zookeeper.sh: no ZooKeeper server here; install it with: sudo apt-get install zookeeper" >&2
      exit 1
    fi
    rm -rf "$dir"
    mkdir -p "$dir/data"
    cat >"$dir/zoo.cfg" <<EOF
tickTime=2000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr
EOF
    # The jars Debian's zookeeper package installs and depends on (testing/server.cpp uses the same).
    classpath=
    for jar in zookeeper zookeeper-jute netty-handler netty-common netty-buffer netty-transport netty-codec \
               netty-resolver netty-transport-native-epoll netty-transport-native-unix-common slf4j-api slf4j-nop \
               commons-cli commons-io metrics-core snappy-java; do
      classpath="$classpath${classpath:+:}/usr/share/java/$jar.jar"
    done
    # setsid: the server outlives this terminal; stop it with `stop`.
    setsid java -Xmx256m -cp "$classpath" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
      >"$dir/server.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$pid_file"
    # `ruok` answers as soon as the port is open; `srvr` names a Mode once sessions are served.
    for i in $(seq 1 300); do
      if [ "$(four_letter_word ruok)" = imok ] && four_letter_word srvr | grep -q "Mode: "; then
        echo "ZooKeeper serving on 127.0.0.1:$port (pid $pid; data and log in $dir)"
        echo "stop it with: bash scripts/zookeeper.sh stop$([ "$port" = 2181 ] || echo " --port $port")"
        exit 0
      fi
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "zookeeper.sh: ZooKeeper exited during start-up; its log, $dir/server.log:" >&2
        tail -n 20 "$dir/server.log" >&2
        rm -f "$pid_file"
        exit 1
      fi
      [ "$i" = 300 ] || sleep 0.1
    done
    echo "zookeeper.sh: ZooKeeper did not serve within 30 s (pid $pid); see $dir/server.log" >&2
    exit 1
    ;;
  status)
    if pid=$(running_pid); then
      echo "ZooKeeper runs on 127.0.0.1:$port (pid $pid): $(four_letter_word srvr | grep 'Mode: ' || echo 'not serving')"
      exit 0
    fi
    echo "ZooKeeper is not running on 127.0.0.1:$port (not started by this script)"
    exit 1
    ;;
  stop)
    if ! pid=$(running_pid); then
      echo "ZooKeeper is not running on 127.0.0.1:$port (not started by this script)"
      rm -rf "$dir"
      exit 0
    fi
    kill "$pid"
    for i in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      if [ "$i" = 100 ]; then kill -9 "$pid" 2>/dev/null || true; fi
      sleep 0.1
    done
    rm -rf "$dir"
    echo "ZooKeeper stopped (pid $pid)"
    ;;
  *)
    usage
    ;;
esac
