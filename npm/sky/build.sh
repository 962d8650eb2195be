#!/usr/bin/env bash
# Builds the sky binary and stages the npm packages of `npx @agentsky/sky`, then packs them:
#   npm/sky/dist/agentsky-sky-<version>.tgz                      @agentsky/sky: the launcher, with an
#                                                                optional dependency per platform
#   npm/sky/dist/platforms/agentsky-sky-<os>-<cpu>-<version>.tgz  one per built platform: the binary
#   npm/sky/dist/bundled/agentsky-sky-<version>.tgz              @agentsky/sky with this machine's
#                                                                platform package inside (host builds
#                                                                only): one file that installs offline
# The first two are what would be published; npm installs the launcher and the one platform package
# that matches the machine. The version is cli/Cargo.toml's. By default it builds for this machine;
# pass --target TRIPLE (once per platform, each toolchain installed) to build others, e.g. in a release
# job. Nothing is published.
#
# Try them offline from a scratch folder with its own package.json (npx resolves ./paths against the
# nearest folder with a package.json or node_modules):
#   npx --offline --yes ./agentsky-sky-0.1.0.tgz setup --dry-run        (a copy of the bundled one)
#   npx --offline --yes --package ./agentsky-sky-linux-x64-0.1.0.tgz --package ./agentsky-sky-0.1.0.tgz \
#       -- sky setup --dry-run                                           (the published pair)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/dist"
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --target) targets+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf '\033[1;31merror:\033[0m %s\n' "$*" >&2; exit 1; }
command -v node >/dev/null || die "node is needed to stage the packages"
command -v npm >/dev/null || die "npm is needed to pack the packages"

version=$(awk -F'"' '/^version = /{print $2; exit}' "$root/cli/Cargo.toml")
[ -n "$version" ] || die "no version in cli/Cargo.toml"

# Rust target triple -> npm's os and cpu (process.platform, process.arch).
npm_platform() {
  case $1 in
    x86_64-unknown-linux-*) echo "linux x64" ;;
    aarch64-unknown-linux-*) echo "linux arm64" ;;
    x86_64-apple-darwin) echo "darwin x64" ;;
    aarch64-apple-darwin) echo "darwin arm64" ;;
    x86_64-pc-windows-*) echo "win32 x64" ;;
    *) die "no npm platform for target $1" ;;
  esac
}

rm -rf "$out"
mkdir -p "$out/stage" "$out/platforms"

if [ ${#targets[@]} -eq 0 ]; then
  targets=("$(rustc -vV | awk '/^host:/{print $2}')")
  host_build=1
else
  host_build=0
fi

for triple in "${targets[@]}"; do
  read -r os cpu <<<"$(npm_platform "$triple")"
  exe=sky; [ "$os" = win32 ] && exe=sky.exe
  log "cargo build -p sky --release ($triple)"
  if [ "$host_build" = 1 ]; then
    (cd "$root" && cargo build -p sky --release)
    bin="$root/target/release/$exe"
  else
    (cd "$root" && cargo build -p sky --release --target "$triple")
    bin="$root/target/$triple/release/$exe"
  fi
  [ -x "$bin" ] || die "no binary at $bin"
  pkg="$out/stage/sky-$os-$cpu"
  mkdir -p "$pkg/bin"
  cp "$bin" "$pkg/bin/$exe"
  chmod 755 "$pkg/bin/$exe"
  node - "$pkg/package.json" "$version" "$os" "$cpu" <<'JS'
const [file, version, os, cpu] = process.argv.slice(2);
const pkg = {
  name: `@agentsky/sky-${os}-${cpu}`,
  version,
  description: `The sky binary for ${os}-${cpu}, used by @agentsky/sky.`,
  license: 'Apache-2.0',
  os: [os],
  cpu: [cpu],
  files: ['bin/'],
  preferUnplugged: true,
};
require('node:fs').writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n');
JS
  printf 'The `sky` binary for %s-%s. Install `@agentsky/sky` instead; it picks this package for you.\n' "$os" "$cpu" >"$pkg/README.md"
  (cd "$out/platforms" && npm pack --silent "$pkg" >/dev/null)
done

log "staging @agentsky/sky $version"
main="$out/stage/sky"
mkdir -p "$main/bin"
cp "$here/bin/sky.js" "$main/bin/sky.js"
chmod 755 "$main/bin/sky.js"
cp "$here/README.md" "$main/README.md"
node - "$here/package.json" "$main/package.json" "$version" <<'JS'
const fs = require('node:fs');
const [src, dst, version] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync(src, 'utf8'));
pkg.version = version;
for (const name of Object.keys(pkg.optionalDependencies ?? {})) pkg.optionalDependencies[name] = version;
fs.writeFileSync(dst, JSON.stringify(pkg, null, 2) + '\n');
JS
(cd "$out" && npm pack --silent "$main" >/dev/null)

if [ "$host_build" = 1 ]; then
  # The same launcher with this machine's platform package inside it (bundleDependencies), and only
  # that one as its optional dependency: installing it needs no registry at all.
  read -r os cpu <<<"$(npm_platform "${targets[0]}")"
  log "staging the self-contained @agentsky/sky $version for $os-$cpu"
  bundled="$out/stage/bundled/sky"
  mkdir -p "$bundled/node_modules/@agentsky" "$out/bundled"
  cp -R "$main/." "$bundled/"
  cp -R "$out/stage/sky-$os-$cpu" "$bundled/node_modules/@agentsky/sky-$os-$cpu"
  node - "$bundled/package.json" "@agentsky/sky-$os-$cpu" "$version" <<'JS'
const fs = require('node:fs');
const [file, platformPackage, version] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
pkg.optionalDependencies = { [platformPackage]: version };
pkg.bundleDependencies = [platformPackage];
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n');
JS
  (cd "$out/bundled" && npm pack --silent "$bundled" >/dev/null)
fi

log "packed:"
ls -1 "$out"/*.tgz "$out"/platforms/*.tgz "$out"/bundled/*.tgz >&2 2>/dev/null
