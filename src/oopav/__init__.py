"""oopav: an event-sourced agent kernel for code changes."""

__version__ = "0.1.0"
