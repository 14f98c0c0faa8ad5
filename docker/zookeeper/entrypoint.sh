#!/bin/bash
# Writes /conf/zoo.cfg from the official image's variables and runs the server in the foreground.
#   ZOO_MY_ID      this member's id (an ensemble member); unset: a standalone server
#   ZOO_SERVERS    "server.1=host:peer:election;client server.2=..." (space-separated)
#   ZOO_TICK_TIME (2000), ZOO_4LW_COMMANDS_WHITELIST (srvr), ZOO_ADMINSERVER_ENABLED (false),
#   ZOO_INIT_LIMIT (10), ZOO_SYNC_LIMIT (5), ZOO_CLIENT_PORT (2181, or this member's ";client" part)
#   ZOO_CONTAINER_CHECK_MS (60000: how often empty container nodes are reaped)
#   ZOO_CFG_EXTRA  more "key=value" lines for zoo.cfg, space-separated (clientPortAddress=127.0.0.1)
set -euo pipefail
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
classpath=$(ls /usr/share/java/zookeeper.jar /usr/share/java/zookeeper-jute.jar /usr/share/java/netty-*.jar \
  /usr/share/java/slf4j-api.jar /usr/share/java/slf4j-nop.jar /usr/share/java/commons-cli.jar \
  /usr/share/java/commons-io.jar /usr/share/java/metrics-core.jar /usr/share/java/snappy-java.jar 2>/dev/null | paste -sd:)
exec java -Xmx256m -XX:+UseSerialGC -Dznode.container.checkIntervalMs="${ZOO_CONTAINER_CHECK_MS:-60000}" \
  -cp "$classpath" "$main" /conf/zoo.cfg
