"""Several processes writing at once lose nothing; a writer killed mid-write never tears a file.

The writers embed with the hashing test embedder: this is a test of the file and index path, and the
bundled model (~80 ms of CPU per add) would make it a test of the model's speed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from memfold import Memory
from memfold.text import memory_markdown as md
from memfold.workspace.editsafe import split_marker
from tests.support.hash_embedder import HashEmbedder

REPO = str(Path(__file__).resolve().parents[2])

WRITER = textwrap.dedent("""
    import random, sys
    sys.path.insert(0, sys.argv[4])
    from memfold import Memory
    from tests.support.hash_embedder import HashEmbedder
    root, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    words = ("apple river stone cloud violin tiger copper lantern meadow rocket harbor pepper glacier "
             "canyon orchid falcon marble velvet thunder bamboo saddle comet walnut ember prism quartz").split()
    rng = random.Random(name)
    m = Memory(root=root, embedder=HashEmbedder())
    for i in range(n if n > 0 else 10**9):
        text = f"{name} {i}: " + " ".join(rng.choice(words) for _ in range(7))
        m.add(text, "shared", memory_type="note", importance=0.5)
        if n <= 0:
            print(i, flush=True)
    m.close()
""")


def _writer(root: Path, name: str, n: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(root), name, str(n), REPO], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


ADDS = 150  # per writer: without the workspace lock, two writers lose or break adds well before this


def test_two_processes_adding_at_once_lose_nothing(root: Path):
    procs = [_writer(root, name, ADDS) for name in ("w1", "w2")]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    entries = md.parse((root / "shared" / "MEMORY.md").read_text())
    assert len(entries) == 2 * ADDS
    assert len({e.id for e in entries}) == 2 * ADDS
    assert {e.content.split(":")[0] for e in entries} == {f"w{w} {i}" for w in (1, 2) for i in range(ADDS)}
    mem = Memory(root=root, embedder=HashEmbedder())
    assert mem.index.count("shared") == 2 * ADDS
    assert len(mem.get_all("shared")) == 2 * ADDS
    hit = mem.search(entries[123].content, "shared", limit=1)[0]
    assert hit.record.id == entries[123].id
    mem.close()


def test_killed_writer_never_leaves_a_torn_memory_md(root: Path):
    path = root / "shared" / "MEMORY.md"
    for round_ in range(4):
        p = _writer(root, f"k{round_}", 0)
        # wait until it is writing, then kill it at an arbitrary moment
        assert p.stdout is not None
        for _ in range(3 + round_ * 2):
            p.stdout.readline()
        time.sleep(0.013 * round_)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        text = path.read_text()
        assert split_marker(text)[0].rstrip().endswith(
            "_Remember what matters, forget what doesn't. Tidy regularly, keep it concise._")
        entries = md.parse(text)
        assert all(e.id and e.content.startswith("k") for e in entries)
        # reopening reconciles whatever the kill left between file and index
        mem = Memory(root=root, embedder=HashEmbedder())
        assert {r.id for r in mem.get_all("shared")} == {e.id for e in entries}
        mem.close()


# The writer dies by SIGKILL right after its K-th file-system call (open, fsync, rename, link...)
# once warmed up: the test runs it for every K across more than one whole add, so some run dies at
# each step of writing MEMORY.md, whatever order of steps the write uses. Each writer is a process
# of its own, forked from one that imported memfold once (16 interpreters importing it again cost
# more than the writes), with its own workspace and its output in files of its own.
KILLED_WRITER = textwrap.dedent("""
    import builtins, io, json, os, signal, sys
    sys.path.insert(0, sys.argv[3])
    from memfold import Memory
    from tests.support.hash_embedder import HashEmbedder
    base, kills = sys.argv[1], [int(k) for k in sys.argv[2].split(",")]

    def writer(root, kill_at):
        m = Memory(root=root, embedder=HashEmbedder())
        for i in range(3):  # warm up: files exist, the model is loaded
            m.add(f"k {i}: apple river stone cloud", "shared", memory_type="note", importance=0.5)
            print(i, flush=True)
        count = 0
        def hook(real):
            def call(*a, **kw):
                nonlocal count
                out = real(*a, **kw)
                count += 1
                if count == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return out
            return call
        for mod, name in ((os, "open"), (io, "open"), (builtins, "open"), (os, "fdopen"), (os, "fsync"),
                          (os, "replace"), (os, "rename"), (os, "link"), (os, "unlink")):
            setattr(mod, name, hook(getattr(mod, name)))
        for i in range(3, 10):
            m.add(f"k {i}: violin tiger copper lantern", "shared", memory_type="note", importance=0.5)
            print(i, flush=True)
        print(f"calls {count}", file=sys.stderr, flush=True)  # a writer never killed (K = 0): the calls of 7 adds

    pids = {}
    for k in kills:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                for fd, name in ((1, "out"), (2, "err")):
                    os.dup2(os.open(f"{base}/ws{k}.{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
                writer(f"{base}/ws{k}", k)
            finally:
                os._exit(0)
        pids[k] = pid
    ends = {}
    for k, pid in pids.items():
        _, status = os.waitpid(pid, 0)
        ends[k] = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    print(json.dumps(ends))
""")


KILL_STEPS = 36  # more than the file-system calls of one add (28 when written)


def test_writer_killed_at_each_step_of_a_write_keeps_every_acknowledged_add(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    kills = range(1, KILL_STEPS + 1)
    run = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(tmp_path), ",".join(map(str, [0, *kills])),
                          str(Path(__file__).parents[2])], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    ends = {int(k): code for k, code in json.loads(run.stdout).items()}
    assert sorted(ends) == [0, *kills] and ends[0] == 0, (ends, (tmp_path / "ws0.err").read_text())
    per_add = int((tmp_path / "ws0.err").read_text().split("calls ")[-1]) / 7
    assert KILL_STEPS > per_add, f"an add makes {per_add:.0f} calls: KILL_STEPS must cover one whole add"
    for k in kills:
        out, err = (tmp_path / f"ws{k}.out").read_text(), (tmp_path / f"ws{k}.err").read_text()
        assert ends[k] == -signal.SIGKILL, (k, err)
        acked = {int(line) for line in out.split()}
        assert {0, 1, 2} <= acked
        text = (tmp_path / f"ws{k}" / "shared" / "MEMORY.md").read_text()
        assert split_marker(text)[0].rstrip().endswith(
            "_Remember what matters, forget what doesn't. Tidy regularly, keep it concise._"), (k, text)
        entries = md.parse(text)
        numbers = {int(e.content.split(":")[0].split()[1]) for e in entries}
        assert acked <= numbers, (k, acked, numbers)  # every acknowledged add is in the file
        assert all(e.id and e.content.startswith("k ") for e in entries)
        # reopening brings the index in line with the file, whatever step the kill interrupted
        # (e.g. between the revision log and the latest text of .edits/: the file is memfold's own)
        mem = Memory(root=tmp_path / f"ws{k}", embedder=HashEmbedder())
        assert {r.id for r in mem.get_all("shared")} == {e.id for e in entries}, k
        assert md.parse((tmp_path / f"ws{k}" / "shared" / "MEMORY.md").read_text()) == entries, k
        mem.close()
