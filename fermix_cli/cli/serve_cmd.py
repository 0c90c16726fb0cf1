"""`fermix serve telegram`: answer the owner's Telegram chat with the agent loop, until stopped."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import context, handles_errors

app = typer.Typer(
    help="Long-running conversation channels: `serve telegram` answers the owner's Telegram chat.",
    no_args_is_help=True,
)

UNIT = "fermix-telegram"


@app.command("telegram")
@handles_errors
def telegram_cmd(
    model: Annotated[str | None, typer.Option("-m", "--model", help="Model to use.")] = None,
    provider: Annotated[str | None, typer.Option("--provider", help="Provider to use.")] = None,
    toolset: Annotated[
        str | None, typer.Option("--toolset", help="fermix (default) or coding.", show_default=False)
    ] = None,
    poll_timeout: Annotated[
        int, typer.Option("--poll-timeout", min=1, max=50, help="Seconds one getUpdates long poll waits.")
    ] = 25,
    systemd: Annotated[
        bool,
        typer.Option("--systemd", help="Print a systemd user service that runs this, and how to start it."),
    ] = False,
) -> None:
    """Serve the owner's Telegram chat: each message is one agent turn with fermix's tools.

    Needs [fermix_core.channels.telegram] bot_token (or bot_token_env) and owner_user_id. Messages from
    any other chat are refused and logged. Stop with SIGTERM or Ctrl-C (a second one interrupts the turns
    in progress); a closed terminal's SIGHUP stops it the same way.
    """
    from ..agent.assemble import AgentOptions
    from ..channels.http import http_client
    from ..channels.telegram import BotApi, bot_token
    from ..core.errors import ToolError
    from ..core.logs import setup_logging
    from .telegram_serve import TelegramServer

    ctx = context()
    if systemd:
        _print_unit(ctx)
        return
    setup_logging(ctx.paths.log_file)
    settings = ctx.config.fermix_core.channels.telegram
    if settings.owner_user_id is None:
        raise ToolError(
            "not_configured",
            "fermix serve telegram answers only the owner: set [fermix_core.channels.telegram] owner_user_id "
            "(your Telegram user id) first.",
            {"key": "fermix_core.channels.telegram.owner_user_id"},
        )
    from ..channels.base import ChannelError

    try:
        token = bot_token(settings)
        api = BotApi(token, settings.api_base, http_client(ctx.config, settings.timeout_seconds))
    except ChannelError as e:
        raise ToolError(e.code, str(e), {}) from None
    from ..core.net.guarded import guarded_client

    downloads = guarded_client(
        allowed_private_hosts=tuple(ctx.config.fermix_core.net.allowed_private_hosts),
        follow_redirects=False,
        max_body=20 * 1024 * 1024,
        read_timeout=settings.timeout_seconds,
    )
    ctx.origin = "interactive"
    options = AgentOptions(
        provider=provider, model=model, toolset=toolset, session=f"telegram-{settings.owner_user_id}"
    )
    server = TelegramServer(
        ctx,
        options,
        api,
        settings.owner_user_id,
        downloads=downloads,
        poll_timeout=poll_timeout,
        guests=settings.guest_user_ids,
        guest_chats=settings.guest_chat_ids,
    )
    typer.echo(
        f"fermix: serving Telegram chat {settings.owner_user_id} (stop with Ctrl-C, SIGTERM or SIGHUP)",
        err=True,
    )
    try:
        server.serve()
    finally:
        api.client.close()
        downloads.close()
        ctx.close()


def _print_unit(ctx: object) -> None:
    from ..jobs.install import environment, fermix_command, systemd_value, unit_dir

    paths = ctx.paths  # type: ignore[attr-defined]
    command = fermix_command()
    env = environment(paths, command)
    # systemd.exec: a value with spaces is quoted as a whole ("KEY=value"); `$` in ExecStart= is doubled.
    env_lines = "".join(f"Environment={systemd_value(f'{k}={v}')}\n" for k, v in sorted(env.items()))
    settings = ctx.config.fermix_core.channels.telegram  # type: ignore[attr-defined]
    if settings.bot_token is None and settings.bot_token_env:
        env_file = paths.config_file.parent / "telegram.env"
        env_lines += (
            f"# The bot token is read from ${settings.bot_token_env} (bot_token_env), which a service does not\n"
            f"# inherit from your shell: put the line {settings.bot_token_env}=<token> in {env_file}\n"
            f"# (chmod 600 it), or set bot_token in config.toml.\n"
            f"EnvironmentFile=-{str(env_file).replace('%', '%%')}\n"
        )
    run = " ".join(systemd_value(c).replace("$", "$$") for c in command)
    directory = unit_dir(ctx.os_home)  # type: ignore[attr-defined]
    typer.echo(
        f"# {directory}/{UNIT}.service\n"
        "[Unit]\n"
        "Description=fermix Telegram conversation (fermix serve telegram)\n"
        "After=network-online.target\n\n"
        "[Service]\n"
        "Type=simple\n"
        f"{env_lines}"
        f"ExecStart={run} serve telegram\n"
        "Restart=on-failure\n"
        "RestartSec=10\n"
        "KillSignal=SIGTERM\n\n"
        "[Install]\n"
        "WantedBy=default.target\n"
        f"# then: systemctl --user daemon-reload && systemctl --user enable --now {UNIT}.service\n"
        "# (keep it running after logout: loginctl enable-linger $USER)"
    )
