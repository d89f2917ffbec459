"""Recipe configs: dataclasses read from YAML, with a clear error for an unknown or mistyped key."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, TypeVar

import yaml

from oopav.config import yaml_error

C = TypeVar("C")


class ConfigError(ValueError):
    pass


def load_config(cls: type[C], source: str | Path | dict[str, Any]) -> C:
    if isinstance(source, dict):
        data: Any = source
    else:
        try:
            data = yaml.safe_load(Path(source).read_text()) or {}
        except OSError as exc:
            raise ConfigError(f"cannot read config {source}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config {source} is not valid YAML: {yaml_error(exc)}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config {source} must be a mapping of settings")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]  # recipes are dataclasses; C is left unbound for recipe_of
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)} for {cls.__name__}; known: {', '.join(fields)}"
        )
    for name, value in data.items():
        default = getattr(cls, name, None) if not callable(getattr(cls, name, None)) else None
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ConfigError(f"{name} must be true or false, not {value!r}")
        if isinstance(default, int | float) and not isinstance(default, bool):
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ConfigError(f"{name} must be a number, not {value!r}")
    missing = [
        name
        for name, f in fields.items()
        if name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(
            f"config {source if not isinstance(source, dict) else ''} lacks the required "
            f"setting(s) {', '.join(missing)} for {cls.__name__}".replace("config  ", "config ")
        )
    return cls(**data)


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)
