"""Reflection, training-free: the critic's pack and verdict policy, the reflector's prompts to
its critic and consolidator, guidance as the loop reads it from the mission library, and groups
of rollouts (one task sampled several ways). The reflector handler (``handlers/reflector.py``)
drives these; the library itself is a projection (``projections/guidance.py``); the rules that
choose what to reflect on are pure (``decide/reflection.py``). See docs/reflection.md."""
