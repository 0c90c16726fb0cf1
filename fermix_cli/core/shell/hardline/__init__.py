"""The hardline: commands refused whatever the sandbox mode (recursive deletes of protected roots, ...).

`judge` runs the rule families of `rules` (and the reference's `original` table) over a parsed script,
seeing through wrappers (`unwrap`), payload strings (`payload`) and target paths (`targets`).
"""
