#!/bin/bash
# Writes /conf/zoo.cfg from the official image's variables and runs the server in the foreground.
#   ZOO_MY_ID      this member's id (an ensemble member); unset: a standalone server
#   ZOO_SERVERS    "server.1=host:peer:election;client server.2=..." (space-separated)
#   ZOO_TICK_TIME (2000), ZOO_4LW_COMMANDS_WHITELIST (srvr), ZOO_ADMINSERVER_ENABLED (false),
#   ZOO_INIT_LIMIT (10), ZOO_SYNC_LIMIT (5), ZOO_CLIENT_PORT (2181, or this member's ";client" part)
#   ZOO_CONTAINER_CHECK_MS (60000: how often empty container nodes are reaped)
#   ZOO_CFG_EXTRA  more "key=value" lines for zoo.cfg, space-separated (clientPortAddress=127.0.0.1)
set -euo pipefail
set -f  # ZOO_SERVERS and ZOO_CFG_EXTRA are split on spaces, never globbed
client_port=${ZOO_CLIENT_PORT:-2181}
if [ -n "${ZOO_MY_ID:-}" ]; then
  echo "$ZOO_MY_ID" >/data/myid
  for entry in ${ZOO_SERVERS:-}; do
    case "$entry" in
      "server.$ZOO_MY_ID="*";"*) client_port=${entry##*;}; client_port=${client_port##*:} ;;
    esac
  done
fi
{
  echo "tickTime=${ZOO_TICK_TIME:-2000}"
  echo "initLimit=${ZOO_INIT_LIMIT:-10}"
  echo "syncLimit=${ZOO_SYNC_LIMIT:-5}"
  echo "dataDir=/data"
  echo "clientPort=$client_port"
  echo "maxClientCnxns=0"
  echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}"
  echo "admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-false}"
  for entry in ${ZOO_SERVERS:-}; do echo "$entry"; done
  for entry in ${ZOO_CFG_EXTRA:-}; do echo "$entry"; done
} >/conf/zoo.cfg
echo "$client_port" >/conf/client_port
main=org.apache.zookeeper.server.ZooKeeperServerMain
[ -n "${ZOO_MY_ID:-}" ] && main=org.apache.zookeeper.server.quorum.QuorumPeerMain
classpath=
for jar in zookeeper zookeeper-jute netty-all slf4j-api slf4j-nop commons-cli commons-io metrics-core snappy-java; do
  path=/usr/share/java/$jar.jar
  [ -e "$path" ] || { echo "dlock-zookeeper: $path is missing (Debian's zookeeper package installs it)" >&2; exit 1; }
  classpath=${classpath:+$classpath:}$path
done
exec java -Xmx256m -XX:+UseSerialGC -Dznode.container.checkIntervalMs="${ZOO_CONTAINER_CHECK_MS:-60000}" \
  -cp "$classpath" "$main" /conf/zoo.cfg
