"""grep, the coding toolset's content search: `tool` (the ToolSpec and its flow), `searcher` (reading files
within the budgets), `ranking` (labels and order in ranked mode) and `printer` (the two output formats)."""
