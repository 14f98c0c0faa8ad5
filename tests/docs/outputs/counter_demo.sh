# docs/GETTING-STARTED.md: the light demo's own lines (examples/counter_demo, default sizes). It
# starts and stops a ZooKeeper server of its own.
source "$(dirname "$0")/lib.sh"
shown build/examples/counter_demo/counter_demo
"$build/examples/counter_demo/counter_demo" 2>&1
