"""What every command module shares, kept out of ``oopav.cli`` so that the command modules
next to what they drive (``cli/sandbox.py``, ``cli/tui.py``, …) never import the
entry point that registers them."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

T = TypeVar("T")


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async command; turn the errors a user can hit into one line and exit 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        import asyncio  # here: `oopav synth` starts without the event loop's modules

        from oopav.app import NoServer
        from oopav.bus.errors import BusError
        from oopav.bus.server import ServerError

        try:
            return asyncio.run(fn(*args, **kwargs))
        except (NoServer, BusError, ServerError) as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        except TimeoutError as exc:  # nats-py's request timeouts are TimeoutErrors too
            import nats.errors

            if isinstance(exc, nats.errors.TimeoutError):
                # A request the server never answered: down, restarting or overloaded.
                click.echo("error: the NATS server did not answer in time", err=True)
            else:
                click.echo(f"error: timed out: {exc or type(exc).__name__}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            sys.exit(130)

    return wrapper


class Ctx:
    def __init__(
        self,
        nats_url: str | None,
        data_dir: Path | None,
        log_level: str | None,
        verbose: bool = False,
        configure_logging: bool = True,
    ) -> None:
        self.log_level = log_level
        self.verbose = verbose
        if configure_logging:
            from oopav.logging import configure

            configure(log_level)
        kwargs: dict[str, Any] = {}
        if nats_url:
            kwargs["nats_url"] = nats_url
        if data_dir:
            kwargs["data_dir"] = data_dir.expanduser().resolve()
        self._settings_kwargs = kwargs
        self._settings: Any = None
        # TLS files and credentials, by their OOPAV_* names: every process this command
        # starts (handlers, the sandbox) and every connection it opens reads them from there.
        self.connection: dict[str, str | None] = {}

    @property
    def settings(self) -> Any:
        """The command's ``Settings``, built on first use: a command that needs none (``oopav
        synth``) starts without pydantic and platformdirs (issue 28: start-up time)."""
        if self._settings is None:
            from oopav.config import Settings

            self._settings = Settings(**self._settings_kwargs)
        return self._settings

    def environment(self) -> dict[str, str]:
        """The global options as OOPAV_* variables: code that builds its own ``Settings()``
        (sandbox, replay, model backends) sees the same choices as the command. Only what was
        given: a value from the environment (or the default data directory) is seen there
        already."""
        env: dict[str, str] = {}
        if "data_dir" in self._settings_kwargs:
            env["OOPAV_DATA_DIR"] = str(self._settings_kwargs["data_dir"])
        if "nats_url" in self._settings_kwargs:
            env["OOPAV_NATS_URL"] = self._settings_kwargs["nats_url"]
        if self.log_level:
            env["OOPAV_LOG_LEVEL"] = self.log_level
        for name, value in self.connection.items():
            if value:
                env[name] = str(Path(value).expanduser().resolve())
        return env

    def log_to_file(self, command: str) -> Path | None:
        """Send log lines to a file under the data directory (stderr keeps warnings and
        errors, everything with -v); returns the file, or None with -v."""
        import datetime

        from oopav.logging import configure

        if self.verbose:
            configure(self.log_level)
            return None
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        path = self.settings.data_dir / "logs" / f"{command}-{stamp}-{os.getpid()}.log"
        configure(self.log_level, log_file=path, stderr_level="WARNING")
        return path


pass_ctx = click.make_pass_decorator(Ctx)


def _json_out(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, sort_keys=False))
