"""The web family: web_fetch, web_search, place_search (fermix toolset) and web (coding toolset).

Every request goes through the network guard (`ToolContext.http_client`); httpx is imported only when a
tool actually sends one, and trafilatura only when a page is HTML. The tools are declared in `tools`,
the config sections in `config` and the page cache's migrations in `migrations`, so reading one part
imports no other.
"""
