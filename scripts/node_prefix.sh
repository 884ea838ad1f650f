# Sourced (not run) by scripts/install_qmd.sh and scripts/install_openclaw.sh: the
# platform npm's Node packages are named for, and a Node of at least a given major
# version — the machine's own, or one installed from npm into a project-local prefix.
# The caller defines log() (its messages carry the caller's name) and uses `set -e`.

# Fail unless npm is on PATH.
require_npm() {
  if ! command -v npm >/dev/null 2>&1; then
    log "npm is required (install Node.js and npm first)"
    exit 1
  fi
}

# Set $os and $arch as npm's node-<os>-<arch> packages spell them; $1 is added to
# the "unsupported" message (what to do instead).
detect_platform() {
  local hint=${1:+: $1}
  case "$(uname -m)" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) log "unsupported CPU $(uname -m)$hint"; exit 1 ;;
  esac
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) log "unsupported OS $(uname -s)$hint"; exit 1 ;;
  esac
}

# The major version of the node binary $1 (0 when it does not run).
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# Set $node_bin to a Node >= $2: the machine's node if new enough, else npm's
# node-<os>-<arch>@$2 installed under $1/node (once; later runs reuse it).
ensure_node() {
  local prefix=$1 major=$2
  if command -v node >/dev/null 2>&1 && [ "$(node_major node)" -ge "$major" ]; then
    node_bin=$(command -v node)
  else
    node_bin="$prefix/node/node_modules/node-$os-$arch/bin/node"
    if [ ! -x "$node_bin" ] || [ "$(node_major "$node_bin")" -lt "$major" ]; then
      log "installing Node $major from npm (node-$os-$arch@$major)"
      npm install --silent --no-audit --no-fund --prefix "$prefix/node" \
        "node-$os-$arch@$major" >&2
    fi
  fi
  [ -x "$node_bin" ] || { log "no usable Node $major at $node_bin"; exit 1; }
}
