"""The browser domain: a managed Chromium driven over the DevTools protocol, kept up between CLI calls.

- `config`: `[fermix_core.browser]`.
- `cdp`: a small synchronous CDP client over `websockets` (imported only here and by the warden).
- `runfiles`: what each profile records under `run/browser/` (endpoint, pid, tabs, refs, warden state).
- `launcher`: finding, starting, attaching to and stopping Chromium.
- `warden`: the per-browser process that applies the network guard to every request (CDP Fetch
  interception) and to every connection (`guardproxy`, the forward proxy Chromium is started behind),
  and records dialogs and console messages for the short-lived CLI calls.
- `page`, `snapshot`, `actions`, `pagestate`: what the `browser` tool's actions do to a tab.
- `tools`: the `browser` ToolSpec.
"""
