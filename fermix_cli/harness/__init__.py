"""The coding-agent harness: background runs of the Codex and Claude Code CLIs, ledgered in state.db."""
