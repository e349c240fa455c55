#!/usr/bin/env bash
# Builds the Dockerfile's image with podman and runs it against a throwaway PostgreSQL 15
# (scripts/with-postgres.sh): health, a sign-up and a sign-in, /metrics with its token, the
# operator CLI inside the container, JSON logs, the non-root user. Not part of `npm test`: it
# builds an image (README: Containers).
#
#   scripts/container-base.sh                                     # once, where no registry is reachable
#   NODE_IMAGE=localhost/sideport-node-base:20 scripts/container-test.sh
#
# NODE_IMAGE defaults to the Dockerfile's own (node:20). PG_PORT and CONTAINER_TEST_PORT choose ports.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${TEST_DATABASE_URL:-}" ]; then exec scripts/with-postgres.sh "$0" "$@"; fi

NODE_IMAGE=${NODE_IMAGE:-node:20}
IMAGE=${IMAGE:-localhost/sideport:test}
PORT=${CONTAINER_TEST_PORT:-18480}
PODMAN=(podman --runtime /usr/sbin/runc)
TOKEN=container-test-metrics-token
name=sideport-container-test-$$
step() { printf '\n== %s\n' "$*"; }
fail() { echo "FAILED: $*" >&2; "${PODMAN[@]}" logs "$name" >&2 2>&1 || true; exit 1; }

step "compose.yaml parses, with the services of the scaled topology"
python3 - <<'PY'
import yaml
compose = yaml.safe_load(open('compose.yaml'))
services = compose['services']
want = {'api-1', 'api-2', 'proxy', 'worker', 'postgres', 'minio', 'minio-bucket', 'agent'}
assert want <= set(services), f'missing services: {want - set(services)}'
assert services['postgres']['image'] == 'postgres:15'
for s in ('api-1', 'api-2', 'worker'):
    env = services[s]['environment']
    assert env['DATABASE_URL'].startswith('postgres://') and env['STORAGE_URL'].startswith('s3://'), s
assert services['worker']['environment']['METRICS_PORT'] == '9464'
assert 'worker' in services['worker']['command']
print('compose.yaml: ' + ', '.join(sorted(services)))
PY

step "build $IMAGE from $NODE_IMAGE"
started=$(date +%s)
"${PODMAN[@]}" build --network=host --format docker --build-arg "NODE_IMAGE=$NODE_IMAGE" -t "$IMAGE" . >/tmp/sideport-container-build.log 2>&1 ||
  { tail -40 /tmp/sideport-container-build.log >&2; fail "the image did not build (log: /tmp/sideport-container-build.log)"; }
echo "built in $(($(date +%s) - started)) s; $("${PODMAN[@]}" image inspect "$IMAGE" --format '{{.Size}}' | awk '{printf "%.0f MB", $1 / 1e6}')"

step "run it against PostgreSQL ($TEST_DATABASE_URL) on 127.0.0.1:$PORT"
trap '"${PODMAN[@]}" rm -f "$name" >/dev/null 2>&1 || true' EXIT
"${PODMAN[@]}" run -d --name "$name" --network=host \
  -e HOST=127.0.0.1 -e "PORT=$PORT" -e "DATABASE_URL=$TEST_DATABASE_URL" \
  -e SECRET_KEY=container-test-secret-key-0123456789abcdef -e BILLING_DEV_ALLOWED=true \
  -e "METRICS_TOKEN=$TOKEN" "$IMAGE" >/dev/null
base="http://127.0.0.1:$PORT"
for _ in $(seq 1 180); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  [ "$("${PODMAN[@]}" inspect -f '{{.State.Running}}' "$name")" = true ] || fail "the container stopped"
  sleep 1
done
health=$(curl -fsS "$base/healthz") || fail "no answer on /healthz"
echo "GET /healthz: $health"
[ "$health" = '{"status":"ok","database":"postgres"}' ] || fail "unexpected health answer"

step "sign up and sign in"
id="container_$$"
pw=$(printf 'a container password' | md5sum | cut -d' ' -f1)
signup=$(curl -fsS -X POST "$base/api/sign-up" -H 'content-type: application/json' -d "{\"id\":\"$id\",\"pw\":\"$pw\"}") || fail "sign-up refused"
echo "POST /api/sign-up: $signup"
[ "$signup" = '{"grade":0}' ] || fail "unexpected sign-up answer"
signin=$(curl -fsS -X POST "$base/api/sign-in" -H 'content-type: application/json' -d "{\"id\":\"$id\",\"pw\":\"$pw\"}") || fail "sign-in refused"
echo "POST /api/sign-in: $signin"

step "GET /metrics needs the token"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/metrics")" = 401 ] || fail "/metrics answered without the token"
curl -fsS -H "authorization: Bearer $TOKEN" "$base/metrics" >/tmp/sideport-container-metrics.txt || fail "/metrics refused the token"
echo "$(grep -c '^sideport_' /tmp/sideport-container-metrics.txt) sideport_ samples"
if command -v promtool >/dev/null; then
  promtool check metrics </tmp/sideport-container-metrics.txt || fail "promtool check metrics"
  echo "promtool check metrics: ok"
fi

step "the operator CLI inside the container, as the node user"
echo "uid: $("${PODMAN[@]}" exec "$name" id -u)"
[ "$("${PODMAN[@]}" exec "$name" id -u)" = 1000 ] || fail "the container runs as root"
"${PODMAN[@]}" exec "$name" npx sideport user:grade "$id" 0 || fail "npx sideport user:grade"

step "every log line is JSON; the start-up line names the database and storage"
"${PODMAN[@]}" logs "$name" >/tmp/sideport-container-logs.txt 2>&1
node -e '
  const lines = require("fs").readFileSync("/tmp/sideport-container-logs.txt", "utf8").split("\n").filter(Boolean);
  for (const line of lines) JSON.parse(line);
  const start = lines.map((l) => JSON.parse(l)).find((l) => String(l.msg).startsWith("Sideport listening"));
  console.log(`${lines.length} lines, all JSON; ${start.msg}`);
  if (!start.database.startsWith("PostgreSQL") || start.storage !== "local disk /data/files") process.exit(1);
' || fail "the log"

step "done: the image builds, runs as node, serves and signs up against PostgreSQL"
