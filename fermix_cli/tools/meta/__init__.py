"""The meta family: tool_help, the deferral bridges (tool_search, tool_describe, tool_call), model_routing_config.

`tools` declares them; `bm25` ranks deferred tools for tool_search.
"""
