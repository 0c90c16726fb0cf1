"""`fermix completions SHELL`: print the completion script for bash, zsh or fish."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def completions_cmd(shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.")]) -> None:
    """Print the completion script for SHELL (commands, tool names and each tool's flags).

    A pip or pipx install already puts them under its prefix (share/bash-completion/completions,
    share/zsh/site-functions, share/fish/vendor_completions.d; and the man pages in share/man). Where a
    shell does not look there: bash `fermix completions bash > ~/.local/share/bash-completion/completions/fermix`;
    zsh `fermix completions zsh > ~/.zfunc/_fermix` (with ~/.zfunc on fpath);
    fish `fermix completions fish > ~/.config/fish/completions/fermix.fish`.
    """
    from .completions import render

    typer.echo(render(shell.value), nl=False)
