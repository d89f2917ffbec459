"""Event signatures with nkeys (ed25519, as NATS identities are): the keyring of a data
dir, the ``Oopav-Sig`` header the event store adds to what it appends, and checking one
signature. The policy (who may sign what, the notary, anchors) is ``history.signing``; this
module imports nothing of oopav so that the event store can use it."""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
import weakref
from pathlib import Path
from typing import Any

SIG_HEADER = "Oopav-Sig"


def _nkeys() -> Any:
    try:
        import nkeys
    except ImportError:  # pragma: no cover - a dependency; the message says what to do
        raise RuntimeError("signed history needs the nkeys package: pip install nkeys") from None
    return nkeys


def public_raw(public_key: str) -> bytes:
    """The 32 raw bytes of an nkey public key (base32: prefix byte, key, CRC16)."""
    text = public_key.strip()
    data = base64.b32decode(text + "=" * (-len(text) % 8))
    if len(data) != 35:
        raise ValueError(f"not an nkey public key: {public_key[:12]}…")
    return data[1:33]


def verify_signature(public_key: str, data: bytes, signature: bytes) -> bool:
    import nacl.exceptions
    import nacl.signing

    try:
        nacl.signing.VerifyKey(public_raw(public_key)).verify(data, signature)
    except (nacl.exceptions.BadSignatureError, ValueError):
        return False
    return True


class Keyring:
    """The identities' seeds of one data dir (made on first use; never leave the machine)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._pairs: dict[str, Any] = {}

    def pair(self, name: str) -> Any:
        if name not in self._pairs:
            nkeys = _nkeys()
            path = self.directory / f"{name}.nk"
            if not path.is_file():
                self._make_seed(path, nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))
            self._pairs[name] = nkeys.from_seed(path.read_bytes().strip())
        return self._pairs[name]

    def _make_seed(self, path: Path, seed: bytes) -> None:
        """Write a new seed whole, or keep the one another process made first: processes that
        share a data dir start together (`oopav up`'s handlers, a restarted one), and one
        that read a seed file another had created but not yet written signed nothing."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.stem}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:  # mkstemp: mode 0600
                fh.write(seed)
                fh.flush()
                os.fsync(fh.fileno())
            with contextlib.suppress(FileExistsError):  # link: never replaces a seed
                os.link(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def public(self, name: str) -> str:
        return self.pair(name).public_key.decode()

    def publics(self) -> dict[str, str]:
        """Every identity of this keyring that has a seed, and its public key."""
        if self.directory.is_dir():
            for p in sorted(self.directory.glob("*.nk")):
                self.pair(p.stem)
        return {name: kp.public_key.decode() for name, kp in self._pairs.items()}

    def header(self, name: str, subject: str, payload: bytes) -> str:
        sig = self.pair(name).sign(subject.encode() + b"\n" + payload)
        return f"{name} {self.public(name)} {base64.b64encode(sig).decode()}"


# One keyring per connection: every EventStore over a connection that ``open_bus`` (or a test)
# attached a keyring to signs what it appends.
_ATTACHED: weakref.WeakKeyDictionary[Any, Keyring] = weakref.WeakKeyDictionary()


def attach(nc: Any, keyring: Keyring | None) -> None:
    if keyring is None:
        _ATTACHED.pop(nc, None)
    else:
        _ATTACHED[nc] = keyring


def keyring_of(nc: Any) -> Keyring | None:
    try:
        return _ATTACHED.get(nc)
    except TypeError:
        return None


def identity_of(actor: str) -> str:
    """The signing identity of an actor: ``observer/0.1`` → observer, ``cli.answer/0.1`` →
    cli (a command's sub-actions share the command's key)."""
    return actor.split("/", 1)[0].split(".", 1)[0]


def sign_header(nc: Any, event: Any, payload: bytes) -> str | None:
    """The ``Oopav-Sig`` value for ``event`` encoded as ``payload``, or None when this
    connection signs nothing."""
    keyring = keyring_of(nc)
    if keyring is None:
        return None
    return keyring.header(identity_of(event.actor), event.subject, payload)
