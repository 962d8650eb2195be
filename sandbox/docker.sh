#!/usr/bin/env bash
# The `docker` wrangler runs (WRANGLER_DOCKER_BIN) on machines with Debian's docker.io and no buildx:
# - `build` with the flags of buildx (`--load`, `--provenance`, `--platform`) runs the classic builder;
# - `pull` of an image already here succeeds without the registry (the sandbox's network sidecar is built
#   locally, scripts/sandbox.sh); any other pull fails saying so.
# Everything else goes to docker as is.
set -euo pipefail
docker=${AGENTSKY_DOCKER:-docker}
case "${1:-}" in
  build)
    shift
    kept=()
    while [ $# -gt 0 ]; do
      case "$1" in
        --load | --provenance=* ) ;;
        --platform | --provenance) shift ;;
        --platform=*) ;;
        *) kept+=("$1") ;;
      esac
      shift
    done
    DOCKER_BUILDKIT=0 exec "$docker" build "${kept[@]}"
    ;;
  pull)
    image=${*: -1}
    if "$docker" image inspect "$image" >/dev/null 2>&1; then exit 0; fi
    echo "docker pull $image: not on this machine, and this machine pulls no images (build it with scripts/sandbox.sh)" >&2
    exit 1
    ;;
  *) exec "$docker" "$@" ;;
esac
