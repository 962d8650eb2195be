#!/usr/bin/env bash
# Hosted sandboxes under `wrangler dev`: Docker, and the images the sandbox container is built from.
#   bash scripts/sandbox.sh   (scripts/setup.sh runs it; safe to run again: each step is skipped when done)
# 1. Docker: Debian's docker.io and debootstrap installed when missing (as root, with apt), and the daemon
#    started when it is not running (no service manager is assumed), its bridge given an explicit gateway,
#    which workerd reads to place its egress listener.
# 2. agentsky/sandbox-base:bookworm: a Debian root filesystem made by debootstrap from the package mirror
#    (minbase, with git, Node and CA certificates), imported as a local image: no image registry is used.
# 3. agentsky/sandbox-proxy:dev: the network sidecar workerd starts beside each container
#    (sandbox/dev-proxy.mjs, on the base with iptables), in place of the one Cloudflare publishes.
# 4. agentsky/sandbox-agents:<sum>: the base with the agent CLIs the claude-code and codex harnesses run
#    (`claude`, `codex`), copied from this checkout's node_modules (dev dependencies: `npm ci` installs
#    them; nothing is downloaded here), built once per set of their versions (<sum>), not at each server
#    start. Without them in node_modules it holds none, and says hosted claude-code and codex are unavailable.
# 5. build/sandbox/: the sandbox's Dockerfile (naming that image), its entrypoint and the `sky` binary, the
#    build context wrangler.toml's [[containers]] names; wrangler builds that image itself when the server
#    starts.
# Writes build/sandbox/status: `ready`, or one line saying what is missing, which scripts/server.sh hands
# the Worker (hosted placement then answers that error; everything else works).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
mkdir -p build/sandbox
status=build/sandbox/status
unavailable() { log "hosted sandboxes: $1"; echo "$1" > "$status"; exit 0; }

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    log "apt-get install docker.io debootstrap (hosted sandboxes)"
    apt-get install -y --no-install-recommends docker.io debootstrap iptables >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y --no-install-recommends docker.io debootstrap iptables >/dev/null 2>&1; } \
      || unavailable "no container runtime: Docker could not be installed on this machine (apt-get install docker.io)"
  else
    unavailable "no container runtime: Docker is not installed on this machine (Debian: apt-get install docker.io debootstrap)"
  fi
fi
if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || unavailable "no container runtime: the Docker daemon is not running, and starting it needs root"
  if [ ! -f /etc/docker/daemon.json ]; then
    mkdir -p /etc/docker && echo '{"bip": "172.17.0.1/16"}' > /etc/docker/daemon.json
  fi
  log "starting dockerd (its log: /var/log/agentsky-dockerd.log)"
  (setsid dockerd >/var/log/agentsky-dockerd.log 2>&1 &)
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 \
    || unavailable "no container runtime: the Docker daemon did not start here (see /var/log/agentsky-dockerd.log)"
fi
gateway=$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null || true)
[ -n "$gateway" ] || unavailable "Docker's bridge network names no gateway: set \"bip\" in /etc/docker/daemon.json (e.g. 172.17.0.1/16) and restart dockerd"

if ! docker image inspect agentsky/sandbox-base:bookworm >/dev/null 2>&1; then
  rootfs=$(mktemp -d /var/tmp/agentsky-rootfs.XXXXXX)
  mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  log "debootstrap bookworm into $rootfs (from ${mirror:-the default mirror})"
  debootstrap --variant=minbase --include=git,ca-certificates,nodejs,iptables bookworm "$rootfs" ${mirror:+"$mirror"} \
    >build/sandbox/debootstrap.log 2>&1 || { rm -rf "$rootfs"; unavailable "debootstrap failed (build/sandbox/debootstrap.log)"; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - agentsky/sandbox-base:bookworm >/dev/null
  rm -rf "$rootfs"
fi

proxy_sum=$(cat sandbox/dev-proxy.mjs | sha256sum | cut -c1-12)
if [ "$(docker image inspect agentsky/sandbox-proxy:dev --format '{{index .Config.Labels "sum"}}' 2>/dev/null)" != "$proxy_sum" ]; then
  ctx=$(mktemp -d)
  cp sandbox/dev-proxy.mjs "$ctx/"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout /dev/null -out "$ctx/ca.pem" -days 3650 \
    -subj "/CN=agentsky local sandbox" >/dev/null 2>&1
  printf 'FROM agentsky/sandbox-base:bookworm\nLABEL sum=%s\nCOPY dev-proxy.mjs ca.pem /sidecar/\nENTRYPOINT ["node", "/sidecar/dev-proxy.mjs"]\n' \
    "$proxy_sum" > "$ctx/Dockerfile"
  log "docker build agentsky/sandbox-proxy:dev"
  DOCKER_BUILDKIT=0 docker build -q -t agentsky/sandbox-proxy:dev "$ctx" >/dev/null 2>&1 \
    || { rm -rf "$ctx"; unavailable "the sandbox's network sidecar image did not build"; }
  rm -rf "$ctx"
fi

# Each CLI: the harness that runs it, its name on PATH, its package and what else it runs from (codex: its
# native linux x64 build). Its link in /usr/local/bin is the one npm made in node_modules/.bin. Left out, as
# of no use on a headless server: codex's voice host (GStreamer libraries, ~50 MB).
agent_clis=("claude-code claude @anthropic-ai/claude-code" "codex codex @openai/codex @openai/codex-linux-x64")
prune=(--exclude='node_modules/@openai/codex-linux-x64/vendor/*/codex-resources/voice')
pkgs=() versions="" links=""
for entry in "${agent_clis[@]}"; do
  read -r harness cli needs <<<"$entry"
  bin=$(readlink "node_modules/.bin/$cli" 2>/dev/null || true)
  missing=""
  for pkg in $needs; do [ -f "node_modules/$pkg/package.json" ] || missing+=" $pkg"; done
  if [ -z "$bin" ] || [ ! -e "node_modules/.bin/$bin" ] || [ -n "$missing" ]; then
    log "hosted sandboxes: no \`$cli\` in the image, so hosted $harness agents are unavailable (node_modules lacks${missing:- .bin/$cli}: run npm ci)"
    continue
  fi
  for pkg in $needs; do
    pkgs+=("node_modules/$pkg")
    versions+=" $pkg@$(grep -m1 -o '"version": *"[^"]*"' "node_modules/$pkg/package.json" | cut -d'"' -f4)"
  done
  links+="${links:+ && }ln -s ../lib/node_modules/${bin#../} /usr/local/bin/$cli"
done
agents_sum=$(echo "${prune[*]}$versions $links" | sha256sum | cut -c1-12)
agents_image=agentsky/sandbox-agents:$agents_sum
if ! docker image inspect "$agents_image" >/dev/null 2>&1; then
  ctx=$(mktemp -d)
  {
    printf 'FROM agentsky/sandbox-base:bookworm\nLABEL sum=%s\n' "$agents_sum"
    [ -z "$links" ] || printf 'COPY node_modules /usr/local/lib/node_modules/\nRUN %s\n' "$links"
  } > "$ctx/Dockerfile"
  log "docker build $agents_image (the agent CLIs:${versions:- none}), once per set of versions"
  t0=$(now)
  # The context streamed as one tar: the Dockerfile, then the packages, read in place.
  ( set -o pipefail
    tar -c "${prune[@]}" -C "$ctx" Dockerfile ${pkgs[0]:+-C "$ROOT" "${pkgs[@]}"} \
      | DOCKER_BUILDKIT=0 docker build -q -t "$agents_image" - >/dev/null 2>"$ctx/err" ) \
    || { cat "$ctx/err" >&2; rm -rf "$ctx"; unavailable "the sandbox's agent CLI image did not build"; }
  rm -rf "$ctx"
  log "built $agents_image in $(( $(now) - t0 ))s ($(docker image inspect "$agents_image" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}'))"
  # Older sets of versions: their tags go (the layers stay while an image built on them remains).
  docker images agentsky/sandbox-agents --format '{{.Tag}}' | grep -vx "$agents_sum" \
    | sed 's|^|agentsky/sandbox-agents:|' | xargs -r docker rmi >/dev/null 2>&1 || true
fi

if [ ! -x target/release/sky ] || [ -n "$(find cli wire -newer target/release/sky -name '*.rs' -print -quit)" ]; then
  log "cargo build -p sky --release (the sandbox's runner)"
  cargo build -p sky --release --quiet
fi
sed "s|^FROM agentsky/sandbox-agents:SUM\$|FROM $agents_image|" sandbox/Dockerfile > build/sandbox/Dockerfile
cp target/release/sky build/sandbox/sky
cp sandbox/entrypoint.sh build/sandbox/entrypoint.sh
echo ready > "$status"
log "hosted sandboxes: ready (Docker $(docker version --format '{{.Server.Version}}'))"
