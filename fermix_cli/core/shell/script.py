"""The parsed form of a command line: simple commands, their words, redirections and pipelines."""

from __future__ import annotations

from fermix_cli.core.shell.words import Word

from ..records import Record, field


class Redirect(Record, frozen=True):
    """A redirection: `op` as written (`>`, `>>`, `&>`, `<<<`, ...) and its target word."""

    op: str
    target: Word


class HereDoc(Record, frozen=True):
    """A here-document body; `expands` is true when its delimiter was unquoted, and `expanded` is then
    the body as one word after expansion (its substitutions and variables as parts)."""

    body: str
    expands: bool
    expanded: Word | None = field(default=None, compare=False)


class Command(Record, frozen=True):
    """One simple command and where it sits: pipeline id, stage in it, background, enclosing functions."""

    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...] = ()
    heredocs: tuple[HereDoc, ...] = ()
    pipeline: int = 0
    stage: int = 0
    background: bool = False
    functions: tuple[str, ...] = ()


class Script(Record, frozen=True):
    """Every simple command of a command line, substitutions included, in the order they complete."""

    commands: tuple[Command, ...]
    _pipelines: dict[int, list[Command]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pipelines: dict[int, list[Command]] = {}
        for command in self.commands:
            pipelines.setdefault(command.pipeline, []).append(command)
        object.__setattr__(self, "_pipelines", pipelines)

    def earlier_stages(self, command: Command) -> tuple[Command, ...]:
        """The commands that feed `command` through pipes."""
        return tuple(c for c in self._pipelines.get(command.pipeline, ()) if c.stage < command.stage)
