"""Which module declares each built-in tool, so one call imports one family.

Keep in step with the modules' TOOLS tuples; tests/core/test_registry.py fails when it drifts.
"""

TOOL_MODULES: dict[str, str] = {
    "file_read": "fermix_cli.tools.files",
    "file_write": "fermix_cli.tools.files",
    "file_edit": "fermix_cli.tools.files",
    "glob_search": "fermix_cli.tools.search",
    "content_search": "fermix_cli.tools.search",
    "tool_help": "fermix_cli.tools.meta.tools",
    "tool_search": "fermix_cli.tools.meta.tools",
    "tool_describe": "fermix_cli.tools.meta.tools",
    "tool_call": "fermix_cli.tools.meta.tools",
    "model_routing_config": "fermix_cli.tools.meta.tools",
    "memory_store": "fermix_cli.memory.tools",
    "memory_recall": "fermix_cli.memory.tools",
    "memory_sources_list": "fermix_cli.memory.tools",
    "memory_forget": "fermix_cli.memory.tools",
    "read": "fermix_cli.tools.coding.read",
    "hash_edit": "fermix_cli.tools.coding.edit",
    "write": "fermix_cli.tools.coding.write",
    "web_fetch": "fermix_cli.tools.web",
    "web_search": "fermix_cli.tools.web",
    "place_search": "fermix_cli.tools.web",
    "web": "fermix_cli.tools.web",
    "shell": "fermix_cli.tools.shell",
    "bash": "fermix_cli.tools.shell",
    "git_read": "fermix_cli.tools.git.tools",
    "git_write": "fermix_cli.tools.git.tools",
    "request_directory_access": "fermix_cli.tools.access",
    "grep": "fermix_cli.tools.coding.grep",
    "find": "fermix_cli.tools.coding.find",
    "list_files": "fermix_cli.tools.coding.find",
    "ast_grep": "fermix_cli.tools.coding.astgrep",
    "schedule_job": "fermix_cli.jobs.tools",
    "list_jobs": "fermix_cli.jobs.tools",
    "update_job": "fermix_cli.jobs.tools",
    "pause_job": "fermix_cli.jobs.tools",
    "resume_job": "fermix_cli.jobs.tools",
    "remove_job": "fermix_cli.jobs.tools",
    "run_job_now": "fermix_cli.jobs.tools",
    "list_job_runs": "fermix_cli.jobs.tools",
    "get_job_run": "fermix_cli.jobs.tools",
}

# Names a toolset accepts for another tool. Registry names are unique, so the coding contract's
# runtime aliases of `bash` live here: in the coding toolset `shell` and `cmd` mean `bash`, while
# everywhere else `shell` is fermix's own shell tool.
TOOLSET_ALIASES: dict[str, dict[str, str]] = {
    "coding": {"shell": "bash", "cmd": "bash"},
}

FAMILY_MODULES: tuple[str, ...] = tuple(sorted(set(TOOL_MODULES.values())))
