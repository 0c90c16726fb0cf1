"""The skills domain: SKILL.md skills as tools (`toolset`), the skill_* tools (`tools`), confined runs (`run`).

Parsing and discovery live in the kernel (`core/skillfile.py`, `core/skillrefs.py`) because `read
skill://…` and the jobs' `skill_name` need them too; this package adds what runs a skill.
"""
