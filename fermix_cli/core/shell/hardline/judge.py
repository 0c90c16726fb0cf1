"""The shell hardline: commands refused before anything runs, in every sandbox mode.

Two passes, as the reference describes: the original seven regular expressions over the collapsed
command, then the rules over a parsed form that sees through quoting, wrappers and nested shells.
This is a check for common and catastrophic mistakes, not a security boundary. It does not look
inside other interpreters (`python -c`, `perl -e`), remote or container commands (`ssh`, `docker`),
symlinks made earlier in the command, or deletes of paths below a protected root.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from fermix_cli.core.errors import ToolError
from fermix_cli.core.shell.hardline.original import original_finding
from fermix_cli.core.shell.hardline.payload import is_decoder, is_passthrough, literal_output
from fermix_cli.core.shell.hardline.rules import (
    OPAQUE,
    REMOTE,
    RM_MAY_EXPAND,
    UNPARSEABLE,
    Finding,
    judge_disk,
    judge_fork_bomb,
    judge_kill,
    judge_permissions,
    judge_recursive_delete,
    judge_redirects,
    judge_rm,
    judge_shutdown,
    judge_sudo,
    substitute_braces,
)
from fermix_cli.core.shell.hardline.targets import Roots, normalize
from fermix_cli.core.shell.hardline.unwrap import Invocation, dash_c_value, shell_command_string, unwrap
from fermix_cli.core.shell.lex import MAX_INPUT_CHARS, Command, Script, parse_script
from fermix_cli.core.shell.words import FRESH_TEMP, UNKNOWN_MARK, Part, ShellSyntaxError, Word, is_fresh_temp

from ...records import Record, field

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "lksh"})
EXPANSION_CHARACTERS = "$~`{}"
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_DASH_C_RUNNERS = frozenset({"su", "runuser", "script"})
# Commands that run shell code read from stdin, like a shell without -c.
_STDIN_RUNNERS = frozenset({"at", "batch"})
_PATH_MAX = 4096
# Programs that print what they download: their output run by a shell is code nobody has read.
_FETCHERS = frozenset({"curl", "wget", "wget2", "fetch", "http", "https", "xh", "aria2c", "lynx", "links"})
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


class HardlineEnv(Record, frozen=True):
    """Where the command would run: the OS home, fermix home, working dir, and more roots to protect.

    `home_aliases` lists other spellings of the home (its realpath, say); `extra_roots` are
    protected like `/etc`.
    """

    home: str
    fermix_home: str
    cwd: str
    extra_roots: tuple[str, ...] = ()
    home_aliases: tuple[str, ...] = ()


def check_command(command: str, env: HardlineEnv) -> None:
    """Raise ToolError `sandbox_hardline` when the command trips a hardline rule; return otherwise."""
    if not isinstance(command, str):
        raise ToolError("invalid_command", "command must be a string")
    if len(command) > MAX_INPUT_CHARS:
        detail = f"command is longer than {MAX_INPUT_CHARS} characters"
        raise _refusal(Finding(UNPARSEABLE, "parse_error"), "parsed", detail)
    finding = original_finding(command)
    if finding is not None:
        raise _refusal(finding, "original")
    checker = _Checker(env)
    checker.check_text(command, 0, checker.cwd)


def check_no_expansion(command: str) -> None:
    """Refuse any `$`, `~`, backquote, `{` or `}` (bash preflight when shell_expansion is false).

    The check is deliberately literal: the characters are refused anywhere, quoted or not, so the
    rule is easy to predict and no quoting subtlety can reopen expansion.
    """
    for index, char in enumerate(command):
        if char in EXPANSION_CHARACTERS:
            raise ToolError(
                "preflight_refused",
                f'shell expansion is disabled; the command contains "{char}" '
                "(capabilities.tools.bash.shell_expansion = false). Write the literal value instead "
                "(an absolute path for ~ or $HOME, the text for a variable), or set "
                "capabilities.tools.bash.shell_expansion = true.",
                {"character": char, "index": index, "setting": "capabilities.tools.bash.shell_expansion"},
            )


class _Blocked(Exception):
    def __init__(self, finding: Finding, detail: str = "") -> None:
        super().__init__(finding.reason)
        self.finding = finding
        self.detail = detail


# How to get a refused command through when what it means to do is fine.
_HINTS = {
    UNPARSEABLE: f"balance quotes and substitutions, keep nesting within 8 levels and the command within {MAX_INPUT_CHARS} characters",
    RM_MAY_EXPAND: "write the path to delete literally instead of through a variable or substitution",
    OPAQUE: "write the commands out, or save the script to a file and inspect it before running it",
    REMOTE: "download the script to a file (curl -o FILE URL), read it, then run `sh FILE`",
}


def _refusal(finding: Finding, pass_name: str, detail: str = "") -> ToolError:
    details: dict[str, str] = {"reason": finding.reason, "rule": finding.rule, "pass": pass_name}
    if detail:
        details["detail"] = detail
    if finding.reason in _HINTS:
        details["hint"] = _HINTS[finding.reason]
    return ToolError("sandbox_hardline", f"Sandbox hardline blocked command: {finding.reason}", details)


def _raise_if(finding: Finding | None) -> None:
    if finding is not None:
        raise _Blocked(finding)


def _refuse_payload_source(name: str | None, args: Sequence[str]) -> None:
    """A shell must not run what a decoder or a download prints: nobody can read it in advance."""
    if is_decoder(name, args):
        raise _Blocked(Finding(OPAQUE, "opaque_payload"))
    if name in _FETCHERS:
        raise _Blocked(Finding(REMOTE, "remote_script"))


class _State(Record):
    cwd: str | None
    aliases: dict[str, str] = field(default_factory=dict)


class _Checker:
    def __init__(self, env: HardlineEnv) -> None:
        self.roots = Roots.build(env.home, env.fermix_home, env.extra_roots, env.home_aliases)
        self.home = self.roots.home
        self.cwd = normalize(env.cwd) if env.cwd.startswith("/") else None
        self.variables = {"FERMIX_HOME": (Part("lit", env.fermix_home),)}

    def check_text(self, text: str, depth: int, cwd: str | None) -> None:
        try:
            self.check_script(self.parse(text, depth), depth, _State(cwd))
        except _Blocked as blocked:
            raise _refusal(blocked.finding, "parsed", blocked.detail) from None

    def check_script(self, script: Script, depth: int, state: _State) -> None:
        _raise_if(judge_fork_bomb(script))
        for command in script.commands:
            self.check_simple(command, script, depth, state)

    def nested(self, text: str, depth: int, cwd: str | None) -> None:
        self.check_script(self.parse(text, depth + 1), depth + 1, _State(cwd))

    def parse(self, text: str, depth: int) -> Script:
        try:
            return parse_script(text, depth=depth, variables=self.variables)
        except ShellSyntaxError as exc:
            raise _Blocked(Finding(UNPARSEABLE, "parse_error"), str(exc)) from None

    def unwrap(
        self, words: Sequence[Word], depth: int, piped: Callable[[], Sequence[Word]] = tuple
    ) -> Invocation:
        def relex(text: str) -> tuple[Word, ...]:
            return tuple(w for c in self.parse(text, depth + 1).commands for w in c.words)

        return unwrap(words, relex, piped)

    # -- one simple command ---------------------------------------------------------------------

    def check_simple(self, command: Command, script: Script, depth: int, state: _State) -> None:
        _raise_if(judge_redirects(command.redirects, self.home))
        if not command.words:
            return
        alias = state.aliases.get(command.words[0].literal or "")
        if alias is not None:
            rest = [self.quoted(w, depth) for w in command.words[1:]]
            self.nested(" ".join([alias, *rest]), depth, state.cwd)
            return
        inv = self.unwrap(command.words, depth, lambda: self.piped_words(command, script))
        for options in inv.sudo_options:
            _raise_if(judge_sudo(options))
        if inv.words:
            self.judge(inv, command, script, depth, state)

    def judge(self, inv: Invocation, command: Command, script: Script, depth: int, state: _State) -> None:
        name, args, roots = inv.name, inv.args, self.roots
        if name is None:
            # The command word is an expansion or a glob: it might be rm, so judge it as rm.
            _raise_if(judge_rm(args, inv.extra_targets, roots, state.cwd))
            return
        if name == "rm":
            _raise_if(judge_rm(args, inv.extra_targets, roots, state.cwd))
        elif name in ("chmod", "chown", "chgrp"):
            _raise_if(judge_permissions(args, inv.extra_targets, roots, state.cwd))
        elif name == "find":
            self.judge_find(args, command, script, depth, state)
        elif name in SHELLS:
            self.judge_shell(args, command, script, depth, state)
        elif name == "eval":
            self.nested(" ".join(self.rendered(w, depth) for w in args), depth, state.cwd)
        elif name == "trap":
            action = next((w for w in args if not (w.literal or "").startswith("-")), None)
            if action is not None:
                self.nested(self.rendered(action, depth), depth, state.cwd)
        elif name in _DASH_C_RUNNERS:
            string = dash_c_value(args)
            if string is not None:
                self.nested(self.rendered(string, depth), depth, state.cwd)
            elif name == "runuser":
                self.judge_runuser(args, command, script, depth, state)
        elif name in _STDIN_RUNNERS:
            self.check_stdin_script(command, script, depth, state)
        elif name in ("source", "."):
            self.check_substitutions(args, depth, state.cwd)
            if any(w.literal in _STDIN_FILES for w in args):
                self.check_stdin_script(command, script, depth, state)
        elif name in ("cd", "pushd", "popd"):
            state.cwd = self.next_cwd(name, args, state.cwd)
        elif name == "alias":
            for word in args:
                alias_name, eq, value = (word.literal or "").partition("=")
                if eq:
                    state.aliases[alias_name] = value
        for judged in (judge_disk, judge_kill, judge_shutdown):
            _raise_if(judged(name, args, self.home))

    def judge_shell(
        self, args: Sequence[Word], command: Command, script: Script, depth: int, state: _State
    ) -> None:
        has_c, string = shell_command_string(args)
        if has_c:
            if string is not None:
                self.nested(self.rendered(string, depth), depth, state.cwd)
                if self.may_run_stdin(string, depth):
                    # `curl URL | bash -c "$(cat)"`: the string runs what arrives on stdin.
                    self.check_stdin_script(command, script, depth, state)
            return
        self.check_substitutions(args, depth, state.cwd)
        self.check_stdin_script(command, script, depth, state)

    def may_run_stdin(self, string: Word, depth: int) -> bool:
        """Whether a `-c` string may run its stdin as code: through a substitution (`"$(cat)"`), or a
        shell, `eval`, `source` or `at` inside it that reads stdin."""
        if any(not is_fresh_temp(source) for source in string.substitutions):
            return True
        for command in self.parse(self.rendered(string, depth), depth + 1).commands:
            if any(w.substitutions for w in command.words):
                return True
            inv = self.unwrap(command.words, depth + 1)
            if inv.name in SHELLS or inv.name in _STDIN_RUNNERS or inv.name in ("eval", "source", "."):
                return True
        return False

    def check_stdin_script(self, command: Command, script: Script, depth: int, state: _State) -> None:
        """Check the shell code a command reads on stdin, as far as it can be seen."""
        for text in self.stdin_texts(command, depth):
            self.nested(text, depth, state.cwd)
        # `bash < <(curl URL)`: stdin from a process substitution.
        for redirect in command.redirects:
            if redirect.op in ("<", "<>"):
                self.check_substitutions([redirect.target], depth, state.cwd)
        earlier = script.earlier_stages(command)
        if earlier:
            for text in self.pipeline_output(earlier, depth) or ():
                self.nested(text, depth, state.cwd)

    def judge_runuser(
        self, args: Sequence[Word], command: Command, script: Script, depth: int, state: _State
    ) -> None:
        """`runuser -u USER [--] CMD...` runs CMD directly."""
        literals = [w.literal for w in args]
        for flag in ("-u", "--user"):
            if flag in literals:
                rest = list(args[literals.index(flag) + 2 :])
                if rest and rest[0].literal == "--":
                    rest = rest[1:]
                inv = self.unwrap(rest, depth)
                if inv.words:
                    self.judge(inv, command, script, depth, state)
                return

    def judge_find(
        self, args: Sequence[Word], command: Command, script: Script, depth: int, state: _State
    ) -> None:
        i = 0
        while i < len(args) and (
            args[i].literal in ("-H", "-L", "-P", "-D") or (args[i].literal or "").startswith("-O")
        ):
            i += 2 if args[i].literal == "-D" else 1
        paths: list[Word] = []
        while i < len(args) and not args[i].render(self.home, "?").startswith(("-", "(", "!", ")", ",")):
            paths.append(args[i])
            i += 1
        paths = paths or [Word.of(".")]
        expr = args[i:]
        if any(w.literal == "-delete" for w in expr):
            _raise_if(judge_recursive_delete(paths, self.roots, state.cwd, "find_delete"))
        j = 0
        while j < len(expr):
            if expr[j].literal not in _FIND_ACTIONS:
                j += 1
                continue
            k = j + 1
            while k < len(expr) and expr[k].literal not in (";", "+"):
                k += 1
            action, j = expr[j + 1 : k], k + 1
            inv = self.unwrap(action, depth)
            if inv.name in ("rm", "unlink", "shred", "rmdir"):
                _raise_if(judge_recursive_delete(paths, self.roots, state.cwd, "find_exec"))
            if action:
                inv = self.unwrap(substitute_braces(action, paths, self.home), depth)
                if inv.words:
                    self.judge(inv, command, script, depth, state)

    # -- payloads -------------------------------------------------------------------------------

    def pipeline_output(self, commands: Sequence[Command], depth: int) -> list[str] | None:
        """The literal texts reaching the end of a pipeline, None when unknowable.

        Walks upstream from the last stage: pass-through stages (`cat`, `tee`) are skipped, an
        `echo`/`printf` stage decides the text, and a decoder anywhere, or literal text reshaped by
        a filter on the way, makes the payload opaque (refused).
        """
        reshaped = False
        for stage in sorted({c.stage for c in commands}, reverse=True):
            texts: list[str] = []
            known = passthrough = False
            for c in (c for c in commands if c.stage == stage):
                inv = self.unwrap(c.words, depth)
                args = self.texts(inv.args, depth)
                _refuse_payload_source(inv.name, args)
                out = literal_output(inv.name, args, self.stdin_texts(c, depth) if inv.name == "cat" else ())
                known = known or out is not None
                texts.extend(out or ())
                passthrough = passthrough or is_passthrough(inv.name, args)
            if known:
                if reshaped:
                    raise _Blocked(Finding(OPAQUE, "opaque_payload"))
                return texts
            reshaped = reshaped or not passthrough
        return None

    def substitution_output(self, source: str, depth: int) -> list[str] | None:
        commands = self.parse(source, depth + 1).commands
        if not commands:
            return [""]
        if len({c.pipeline for c in commands}) > 1:
            for c in commands:
                inv = self.unwrap(c.words, depth + 1)
                _refuse_payload_source(inv.name, self.texts(inv.args, depth + 1))
            return None
        return self.pipeline_output(commands, depth + 1)

    def check_substitutions(self, words: Sequence[Word], depth: int, cwd: str | None) -> None:
        """Check the text of substitutions whose output a shell will run (`bash <(...)`, `source <(...)`)."""
        for word in words:
            for source in word.substitutions:
                for text in self.substitution_output(source, depth) or ():
                    self.nested(text, depth, cwd)

    def stdin_texts(self, command: Command, depth: int) -> list[str]:
        # An unquoted here-document reaches the command expanded: `$(curl URL)` in one is the download.
        texts = [
            doc.body if doc.expanded is None else self.rendered(doc.expanded, depth)
            for doc in command.heredocs
        ]
        texts += [self.rendered(r.target, depth) for r in command.redirects if r.op == "<<<"]
        return texts

    # -- rendering words for a second parse -----------------------------------------------------

    def rendered(self, word: Word, depth: int) -> str:
        """A word as text for a nested parse: home spelled out, unknowns kept unknown."""
        out: list[str] = []
        for part in word.parts:
            if part.kind == "lit":
                out.append(part.text)
            elif part.kind == "home":
                out.append(self.home)
            elif part.kind == "subst" and is_fresh_temp(part.text):
                out.append(FRESH_TEMP)
            elif part.kind == "subst":
                texts = self.substitution_output(part.text, depth)
                out.append(texts[0] if texts else UNKNOWN_MARK)
            else:
                out.append(UNKNOWN_MARK)
        return "".join(out)

    def quoted(self, word: Word, depth: int) -> str:
        return shlex.quote(word.literal) if word.literal is not None else self.rendered(word, depth)

    def texts(self, words: Sequence[Word], depth: int) -> list[str]:
        return [self.rendered(w, depth) for w in words]

    def piped_words(self, command: Command, script: Script) -> list[Word]:
        """Literal words that reach `command` on stdin, for `xargs`."""
        words = [w for c in script.earlier_stages(command) for w in c.words if not w.has_unknown]
        for doc in command.heredocs:
            words += [Word.of(t) for t in doc.body.split()]
        for r in command.redirects:
            if r.op == "<<<":
                words += [Word.of(t) for t in r.target.render(self.home, "").split()]
        return words

    def next_cwd(self, name: str, args: Sequence[Word], cwd: str | None) -> str | None:
        if name == "popd":
            return None
        operands = [w for w in args if not (w.literal or "").startswith("-") or w.literal == "-"]
        if not operands:
            return self.home if name == "cd" else None
        target = operands[0]
        if target.literal == "-" or target.has_unknown:
            return None
        text = target.render(self.home)
        if not text.startswith("/"):
            if cwd is None:
                return None
            text = cwd + "/" + text
        # Past PATH_MAX the directory is as good as unknown (and re-normalising it gets slow).
        return normalize(text) if len(text) <= _PATH_MAX else None
