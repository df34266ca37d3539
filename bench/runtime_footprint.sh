#!/usr/bin/env bash
# Threads and resident memory of 1, 10 and 100 consumers in one process (each in a group of
# its own), with their background tasks on dedicated threads (the default) and on the
# application's runtime (`BackgroundRuntime::Shared`), against a local `sim serve` cluster.
# Prints one line per cell (consumer/examples/many_consumers.rs); BENCHMARKS.md has the table.
#   bench/runtime_footprint.sh            # debug build
#   PROFILE=release bench/runtime_footprint.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

profile="${PROFILE:-debug}"
port="${PORT:-19392}"
flags=()
[ "$profile" = release ] && flags=(--release)
cargo build -q "${flags[@]}" -p kafka-consumer --example many_consumers
cargo build -q "${flags[@]}" -p sim --bin kafka-sim

"target/$profile/kafka-sim" serve --brokers 1 --port "$port" --topic footprint:12 >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.2
done

for n in 1 10 100; do
  for placement in dedicated shared; do
    "target/$profile/examples/many_consumers" --bootstrap "127.0.0.1:$port" --topic footprint \
      --consumers "$n" --runtime "$placement" --worker-threads 2 --settle-secs 5
  done
done
