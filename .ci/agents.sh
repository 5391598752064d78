#!/usr/bin/env bash
# Installs the agent CLIs that activities/runner drives, and the ACP adapter
# of Claude Code, at pinned versions,
# into .cache/agents under the clone. Does nothing when every binary is there.
# The runner tests find them through AMPFLOW_AGENTS_BIN, which defaults to
# <repo>/.cache/agents/node_modules/.bin.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.cache/agents/node_modules/.bin"

packages=(
	@anthropic-ai/claude-code@2.1.332
	@openai/codex@0.171.0
	@google/gemini-cli@0.61.0
	opencode-ai@1.18.33
	# The ACP adapter the acp runner drives Claude Code through
	# (docs/runners.md, "Any agent that speaks ACP").
	@agentclientprotocol/claude-agent-acp@0.101.0
)
missing=0
for b in claude codex gemini opencode claude-agent-acp; do
	[ -x "$bin/$b" ] || missing=1
done
if [ "$missing" = 0 ]; then
	echo "agents: all installed in $bin"
	exit 0
fi
mkdir -p "$root/.cache/agents"
npm install --no-audit --no-fund --prefix "$root/.cache/agents" "${packages[@]}"
for b in claude codex gemini opencode claude-agent-acp; do
	if [ ! -x "$bin/$b" ]; then
		echo "agents: $b missing from $bin after npm install" >&2
		exit 1
	fi
done
echo "agents: installed in $bin"
