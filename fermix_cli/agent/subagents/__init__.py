"""The subagents domain: the `subagents` tool (`tools`) and its concurrent workers (`fanout`)."""
