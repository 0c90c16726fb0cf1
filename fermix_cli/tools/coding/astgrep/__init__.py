"""ast_grep, syntax-aware search: `tool` (the ToolSpec), `workset` (the files to parse, within budgets),
`languages` (names, extensions, safe parsing), `matches` (search rows and rewrite previews), and `outline`
with its per-language `symbol_rules`."""
