"""The only code that writes user files: atomic writes, locks, backups, memory files."""

from .files import FileLock, atomic_write
from .userspace import UserSpace, Workspace

__all__ = ["FileLock", "atomic_write", "UserSpace", "Workspace"]
