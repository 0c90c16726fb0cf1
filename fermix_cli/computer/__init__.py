"""computer_use: drive the host desktop (Linux X11) by screenshot, mouse and keyboard (seed "Computer use").

Off by default; registered for the model only when `[fermix_core.computer_use] enabled` is set and the
helper programs are present. `geometry` holds the aiming rules, `posture` who may act and how, `x11` the
display, `session` what the last look showed, `tool` the ToolSpec.
"""
