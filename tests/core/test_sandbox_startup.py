"""Start-up and autostart locations are protected: in `open` mode no tool may plant code that runs later.

Through the real CLI, one `--jsonl` process: every row is a write that would run code at the next
login, session, shell or tool start (or leak a credential), and must be refused with nothing written.
"""

from __future__ import annotations

import json
import os

from tests.conftest import Env

STARTUP_WRITES = [
    # Linux desktop and session autostart
    ".config/autostart/evil.desktop",
    ".config/systemd/user/evil.service",
    ".config/systemd/user/default.target.wants/evil.service",
    ".local/share/systemd/user/evil.service",
    ".config/environment.d/50-evil.conf",
    ".config/upstart/evil.conf",
    ".config/plasma-workspace/env/evil.sh",
    ".kde/Autostart/evil.sh",
    ".config/lxsession/LXDE/autostart",
    ".config/openbox/autostart",
    ".pam_environment",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    # macOS
    "Library/LaunchAgents/com.evil.plist",
    "Library/LaunchDaemons/com.evil.plist",
    "Library/Application Support/com.apple.backgroundtaskmanagementagent/backgrounditems.btm",
    "Library/Preferences/com.apple.loginitems.plist",
    ".MacOSX/environment.plist",
    # shells
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".config/fish/config.fish",
    ".config/fish/conf.d/evil.fish",
    ".config/nushell/config.nu",
    ".oh-my-zsh/custom/evil.zsh",
    ".inputrc",
    ".ssh/rc",
    ".ssh/authorized_keys",
    # tools that run code or hold credentials
    ".gitconfig",
    ".config/git/config",
    ".vimrc",
    ".config/nvim/init.lua",
    ".emacs",
    ".emacs.d/init.el",
    ".gdbinit",
    ".ipython/profile_default/startup/00-evil.py",
    ".tmux.conf",
    ".cargo/config.toml",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".gradle/init.d/evil.gradle",
    ".config/pip/pip.conf",
    ".npmrc",
    ".curlrc",
    ".config/direnv/direnvrc",
    # case variants (matching ignores case, as on macOS)
    ".Config/Autostart/evil.desktop",
    "library/launchagents/com.evil.plist",
]


def test_open_mode_refuses_every_startup_location(world: Env) -> None:
    world.fermix_home.mkdir(parents=True)
    (world.fermix_home / "config.toml").write_text('[sandbox]\nmode = "open"\n')
    rows = [{"path": str(world.home / rel), "content": "touch /tmp/pwned\n"} for rel in STARTUP_WRITES]
    control = {"path": str(world.home / "notes" / "ok.txt"), "content": "fine\n"}
    lines = "".join(json.dumps(r) + "\n" for r in [*rows, control])
    r = world.run("tool", "file_write", "--jsonl", input=lines)
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(out) == len(rows) + 1
    let_through = [rel for rel, env in zip(STARTUP_WRITES, out, strict=False) if env["ok"]]
    assert let_through == []
    assert {env["error"]["code"] for env in out[:-1]} == {"protected_path"}
    for rel in STARTUP_WRITES:
        assert not os.path.lexists(world.home / rel), rel
    assert out[-1]["ok"] is True
    assert (world.home / "notes" / "ok.txt").read_text() == "fine\n"
