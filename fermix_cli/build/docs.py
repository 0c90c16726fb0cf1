"""Write (or check) every generated file: the catalog, completions/, man/, docs/tools/ and the root help
(derived from the registry and the command tree), and the async network transport (derived from the sync one).
"""

from __future__ import annotations

from pathlib import Path

from ..cli.clitree import build_model
from ..cli.completions import FILENAMES, SHELLS
from ..cli.completions import render as render_completion
from ..core.registry import Registry
from .discovery import discover
from .discovery import render as render_catalog
from .manpages import render_all
from .roothelp import MODULE as ROOT_HELP_MODULE
from .roothelp import render as render_root_help
from .tooldocs import render_all as render_tool_docs
from .unasync import generated as unasync_generated

COMMAND = "python -m fermix_cli.build docs"

# Folders whose every file is generated (a file nothing generates any more is stale).
FOLDERS = ("completions", "man", "docs/tools")


def generated(repo: Path) -> dict[Path, str]:
    """Every generated file under `repo`, with its expected content."""
    catalog = discover()
    files = {repo / "fermix_cli" / "catalog.py": render_catalog(catalog)}
    # The registry as the discovered catalog has it (the catalog file on disk may be the stale one).
    model = build_model(Registry(catalog.tool_modules, catalog.toolset_aliases, catalog.toolset_modules))
    files |= {repo / "completions" / FILENAMES[sh]: render_completion(sh, model) for sh in SHELLS}
    files.update({repo / "man" / name: text for name, text in render_all(model).items()})
    tool_docs = render_tool_docs((t.spec for t in model.tools), catalog.tool_modules)
    files.update({repo / "docs" / "tools" / name: text for name, text in tool_docs.items()})
    files.update(unasync_generated(repo))
    files[repo / ROOT_HELP_MODULE] = render_root_help()
    return files


def stale(repo: Path) -> list[str]:
    """Generated files that are missing or differ, plus files in those folders that nothing generates."""
    files = generated(repo)
    out = [str(p.relative_to(repo)) for p, text in files.items() if not p.exists() or p.read_text() != text]
    for folder in FOLDERS:
        for p in sorted((repo / folder).glob("*")):
            if p not in files:
                out.append(f"{p.relative_to(repo)} (not generated any more)")
    return out


def write(repo: Path) -> list[str]:
    """Write every generated file; remove generated-folder files nothing generates. Returns changed paths."""
    changed = stale(repo)
    files = generated(repo)
    for folder in FOLDERS:
        for p in (repo / folder).glob("*"):
            if p not in files:
                p.unlink()
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return changed
