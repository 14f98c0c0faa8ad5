#!/bin/bash
# `zkServer.sh status`, as the official image's health check calls it: exit 0 once the server
# serves (its `srvr` names a Mode: leader, follower or standalone).
[ "${1:-}" = status ] || { echo "usage: zkServer.sh status" >&2; exit 2; }
port=$(cat /conf/client_port 2>/dev/null || echo 2181)
reply=$(timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf srvr >&3 && cat <&3" 2>/dev/null || true)
mode=$(printf '%s\n' "$reply" | sed -n 's/^Mode: //p')
[ -n "$mode" ] || { echo "not serving" >&2; exit 1; }
echo "Mode: $mode"
