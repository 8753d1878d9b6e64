#!/usr/bin/env bash
# Installs what svc needs on a fresh Debian machine, and nothing that is already there:
#   Debian packages: postgresql (tests start throwaway servers; no cluster is created),
#                    pgbouncer (a test runs the services through a transaction-mode pooler),
#                    bubblewrap (local sandboxes), tmux (terminal e2e tests), curl (the
#                    red-team agent calls the sandbox's socket with it),
#                    chromium (the web console's browser tests, driven by playwright-core),
#                    git (the tests' git server is its smart-HTTP CGI, git-http-backend)
#   nats-server      via `go install`, pinned in .ci/versions.env (Debian's 2.9 is too old)
#   helm             via `go install`, pinned in .ci/versions.env (the chart's tests)
#   node_modules     via `npm ci`, re-run only when package-lock.json changed
#   agent CLIs       the real Claude Code and Codex versions the sidecar is tested with, and the
#                    ACP agents (Gemini CLI, Claude's and Codex's ACP builds, OpenCode), each in
#                    .cache/agents/<name>-<version> (outside the workspace's lockfile)
#   git hooks        core.hooksPath=deploy/git-hooks in a git checkout: commit-msg refuses a
#                    subject over 72 characters
# Idempotent and quick when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../.ci/versions.env
source .ci/versions.env

say() { printf 'dev-setup: %s\n' "$*"; }
sudo_cmd=()
[ "$(id -u)" = 0 ] || sudo_cmd=(sudo)

# --- git hooks -------------------------------------------------------------
# Only in a checkout of this repository (a copy without .git, or one inside another repository, has none to set).
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  git config core.hooksPath deploy/git-hooks
fi

# --- Debian packages -------------------------------------------------------
packages=()
command -v curl >/dev/null 2>&1 || packages+=(curl)
command -v tmux >/dev/null 2>&1 || packages+=(tmux)
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
command -v bwrap >/dev/null 2>&1 || packages+=(bubblewrap)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || packages+=(postgresql)
[ -x /usr/sbin/pgbouncer ] || command -v pgbouncer >/dev/null 2>&1 || packages+=(pgbouncer)
# The tests' git server (libs/test-support/src/git-server.ts) is git's own smart-HTTP CGI.
[ -x /usr/lib/git-core/git-http-backend ] || packages+=(git)
if [ "${#packages[@]}" -gt 0 ]; then
  say "installing ${packages[*]}"
  # Tests start their own servers: the package's default cluster would only hold port 5432.
  "${sudo_cmd[@]}" mkdir -p /etc/postgresql-common
  grep -qs '^create_main_cluster *= *false' /etc/postgresql-common/createcluster.conf ||
    echo 'create_main_cluster = false' | "${sudo_cmd[@]}" tee -a /etc/postgresql-common/createcluster.conf >/dev/null
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  # Tests start their own poolers: one the package may have started would only hold port 6432.
  if [[ " ${packages[*]} " == *" pgbouncer "* ]] && command -v service >/dev/null 2>&1; then
    "${sudo_cmd[@]}" service pgbouncer stop >/dev/null 2>&1 || true
  fi
fi

# --- nats-server -----------------------------------------------------------
gobin="$(go env GOBIN 2>/dev/null || true)"
[ -n "$gobin" ] || gobin="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
if ! "$gobin/nats-server" --version 2>/dev/null | grep -qF "$NATS_SERVER_VERSION"; then
  command -v go >/dev/null 2>&1 || { say "Go is needed to install nats-server (https://go.dev/dl/)"; exit 1; }
  say "installing nats-server $NATS_SERVER_VERSION into $gobin"
  go install "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"
fi

# --- helm ------------------------------------------------------------------
# A `go install`ed helm reports no release version of its own; its module version says it.
if ! go version -m "$gobin/helm" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+helm.sh/helm/v3[[:space:]]+$HELM_VERSION([[:space:]]|$)"; then
  say "installing helm $HELM_VERSION into $gobin (compiles from source: a few minutes)"
  go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi

# --- node_modules ----------------------------------------------------------
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat node_modules/.svc-lock-hash 2>/dev/null)" != "$lock_hash" ]; then
  say "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > node_modules/.svc-lock-hash
fi
# --- agent CLIs (real-agent tests) ------------------------------------------
for version in $CLAUDE_CODE_VERSIONS; do
  dir=".cache/agents/claude-code-$version"
  if [ "$("$dir/node_modules/.bin/claude" --version 2>/dev/null | cut -d' ' -f1)" != "$version" ]; then
    say "installing Claude Code $version into $dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$version"
    # npm 11 skips the package's postinstall, which puts the native binary in place.
    node "$dir/node_modules/@anthropic-ai/claude-code/install.cjs"
  fi
done

for version in $CODEX_VERSION; do
  dir=".cache/agents/codex-$version"
  if [ "$("$dir/node_modules/.bin/codex" --version 2>/dev/null | cut -d' ' -f2)" != "$version" ]; then
    say "installing Codex $version into $dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@openai/codex@$version"
  fi
done

# The ACP agents (issue 39): one npm package each, pinned in .ci/versions.env.
install_npm_agent() { # <name> <package> <version>
  local dir=".cache/agents/$1-$3"
  if [ "$(node -p "require('./$dir/node_modules/$2/package.json').version" 2>/dev/null)" != "$3" ]; then
    say "installing $2 $3 into $dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$2@$3"
  fi
}
install_npm_agent gemini-cli @google/gemini-cli "$GEMINI_CLI_VERSION"
install_npm_agent claude-agent-acp @zed-industries/claude-agent-acp "$CLAUDE_AGENT_ACP_VERSION"
install_npm_agent codex-acp @zed-industries/codex-acp "$CODEX_ACP_VERSION"
install_npm_agent opencode opencode-ai "$OPENCODE_VERSION"

say "ready (nats-server: $("$gobin/nats-server" --version), helm: $HELM_VERSION, node: $(node --version))"
