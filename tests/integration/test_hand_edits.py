"""A person (or a script) edits MEMORY.md while memfold processes write it: nothing either side
finished is lost.

The editor takes no lock. It reads MEMORY.md, adds a line of its own under Notes, sometimes
changes one of its earlier lines or a line memfold wrote, and writes the file back, alternating
the two ways editors save: a temp file renamed over MEMORY.md, and truncate-then-write in place
(in two chunks, as a slow editor or a shell redirection may). Four writer processes add 60
memories each meanwhile. The workers embed with the hashing test embedder (the bundled model
costs ~80 ms of CPU per add; this is a test of the file path, not of the model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from memfold import Memory
from memfold.text import memory_markdown as md

from ..support.hash_embedder import HashEmbedder

WORKERS, ADDS = 4, 60
REPO = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent("""
    import faulthandler, json, random, sys
    faulthandler.dump_traceback_later(400, exit=True)  # a worker stuck shows where, instead of hanging the test
    from memfold import Memory
    from tests.support.hash_embedder import HashEmbedder

    root, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    words = ("apple river stone cloud piano garden rocket violet summer harbor candle forest lemon silver "
             "tiger window ocean pencil marble castle bridge copper desert falcon glacier hammer island "
             "jungle kettle ladder meadow needle orchard pepper quartz saddle thunder velvet walnut").split()
    rnd = random.Random(worker)
    mem = Memory(root=root, embedder=HashEmbedder(), policy={"dedupe_threshold": 0.99})
    done = []
    for i in range(n):
        text = f"worker {worker} item {i}: " + " ".join(rnd.sample(words, 6))
        res = mem.add(text, "shared", memory_type="note")
        assert len(res.added) == 1, (text, res)
        done.append([res.added[0].id, f"worker {worker} item {i}:"])
    mem.close()
    print(json.dumps(done))
""")

# An editor that takes no lock. Each save is logged only once it is complete.
EDITOR = textwrap.dedent("""
    import json, os, random, re, sys, time
    path, log, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    rnd = random.Random(7)
    k = 0
    edited = set()
    with open(log, "a", encoding="utf-8") as out:
        while not os.path.exists(stop):
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            lines = text.split("\\n")
            at = lines.index("## Notes")
            lines.insert(at + 1, f"- hand-{k}-v0 typed by a person")
            changed = None
            if k % 3 == 2:  # change one of its own earlier lines
                mine = sorted({int(j) for j in re.findall(r"hand-(\\d+)-v0", text)} - edited)
                if mine:
                    changed = rnd.choice(mine)
                    lines = [ln.replace(f"hand-{changed}-v0", f"hand-{changed}-v1") for ln in lines]
            if k % 4 == 1:  # change a line memfold wrote (the id comment stays)
                theirs = [i for i, ln in enumerate(lines) if ln.startswith("- ") and "worker " in ln
                          and " <!-- mf:" in ln and "(seen)" not in ln]
                if theirs:
                    i = rnd.choice(theirs)
                    lines[i] = lines[i].replace(" <!-- mf:", " (seen) <!-- mf:", 1)
            new = "\\n".join(lines)
            if k % 2 == 0:  # save to a temp file and rename it over the original
                tmp = path + f".edit{k}.tmp"
                with open(tmp, "w", encoding="utf-8") as fh:
                    fh.write(new)
                os.replace(tmp, path)
            else:  # truncate and write in place, in two chunks
                half = len(new) // 2
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(new[:half])
                    fh.flush()
                    time.sleep(0.002)
                    fh.write(new[half:])
            if changed is not None:
                edited.add(changed)
            out.write(json.dumps({"k": k, "changed": changed}) + "\\n")
            out.flush()
            k += 1
            time.sleep(rnd.uniform(0.05, 0.15))
""")


def test_an_unlocked_editor_and_four_writers_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with Memory(root=root, embedder=HashEmbedder()) as mem:
        mem.init("shared")
    path = root / "shared" / "MEMORY.md"
    log, stop = tmp_path / "editor.log", tmp_path / "stop"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    editor = subprocess.Popen([sys.executable, "-c", EDITOR, str(path), str(log), str(stop)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    # each worker's output goes to a file: a pipe nobody reads while the test waits for another
    # worker fills up, and a worker blocked writing its warnings while holding the lock stops them all
    outs = [(tmp_path / f"worker{w}.out", tmp_path / f"worker{w}.err") for w in range(WORKERS)]
    procs = []
    for w, (out, err_path) in enumerate(outs):
        with open(out, "w") as fo, open(err_path, "w") as fe:
            procs.append(subprocess.Popen([sys.executable, "-c", WORKER, str(root), str(w), str(ADDS)],
                                          stdout=fo, stderr=fe, text=True, env=env, cwd=REPO))
    acked: list[tuple[str, str]] = []
    try:
        for p, (out, err_path) in zip(procs, outs):
            p.wait(timeout=600)
            assert p.returncode == 0, err_path.read_text(encoding="utf-8")[-3000:]
            acked += [tuple(x) for x in json.loads(out.read_text(encoding="utf-8").strip().splitlines()[-1])]
    finally:
        stop.touch()
        _, err = editor.communicate(timeout=60)
    assert editor.returncode == 0, err[-3000:]
    saves = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(acked) == WORKERS * ADDS and len(saves) > 20

    with Memory(root=root, embedder=HashEmbedder()) as mem:
        mem._store("shared").sync()
        text = path.read_text(encoding="utf-8")
        entries = md.parse(text)
        in_file = {e.id: e.content for e in entries}
        indexed = {r.id: r.content for r in mem.get_all("shared")}
    assert all(e.id for e in entries) and len(in_file) == len(entries)  # every line has its own id
    # every acknowledged add is in the file, maybe marked "(seen)" by the editor
    lost = [(i, prefix) for i, prefix in acked if not in_file.get(i, "").startswith(prefix)]
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged adds lost, e.g. {lost[:3]}"
    # every line the editor saved is there once, in its latest version
    changed = {s["changed"] for s in saves if s["changed"] is not None}
    contents = list(in_file.values())
    missing, doubled, undone = [], [], []
    for s in saves:
        k = s["k"]
        tag = f"hand-{k}-v1" if k in changed else f"hand-{k}-v0"
        n = sum(tag in c for c in contents)
        (missing if n == 0 else doubled if n > 1 else []).append(tag)
        if k in changed and any(f"hand-{k}-v0" in c for c in contents):
            undone.append(k)
    assert not missing, f"{len(missing)} of {len(saves)} editor lines lost, e.g. {missing[:5]}"
    assert not doubled and not undone, (doubled[:5], undone[:5])
    seen = [c for c in contents if c.startswith("worker ") and "(seen)" in c]
    assert seen  # the editor's changes of memfold's lines stand
    # the index holds exactly what the file holds
    assert indexed == in_file


def _contents(mem: Memory) -> list[str]:
    return sorted(r.content for r in mem.get_all())


def test_a_save_from_a_stale_copy_keeps_what_memfold_did_since(mem: Memory, root: Path) -> None:
    """The editor opened MEMORY.md, memfold added one memory and deleted another meanwhile, then
    the editor saved its copy with a line of its own and a changed line: all four changes stand."""
    bees = mem.add("I keep bees on the roof", memory_type="note").added[0]
    cello = mem.add("I play the cello on Sundays", memory_type="note").added[0]
    kite = mem.add("I fly kites at the beach", memory_type="note").added[0]
    path = root / "default" / "MEMORY.md"
    stale = path.read_text(encoding="utf-8")  # the editor reads the file
    sister = mem.add("My sister lives in Lisbon", memory_type="note").added[0]  # memfold writes meanwhile
    mem.delete(kite.id)
    saved = stale.replace("## Notes\n", "## Notes\n- I cycle to work\n").replace("the cello", "the viola")
    path.write_text(saved, encoding="utf-8")  # the editor saves its copy
    assert _contents(mem) == sorted(["I keep bees on the roof", "I play the viola on Sundays", "I cycle to work",
                                     "My sister lives in Lisbon"])
    entries = {e.id: e.content for e in md.parse(path.read_text(encoding="utf-8"))}
    assert entries[sister.id] == "My sister lives in Lisbon" and kite.id not in entries  # back in the file, not back
    assert entries[cello.id] == "I play the viola on Sundays" and bees.id in entries
    assert [h.action for h in mem.history(cello.id)][-1] == "edit"
    assert mem._store("default").sync() == 0


def test_a_half_written_file_is_not_taken_for_deletions(mem: Memory, root: Path) -> None:
    """An editor writing MEMORY.md in place has truncated it and written half when memfold reads
    it: memfold waits for the whole file instead of deleting the memories it cannot see yet."""
    import threading
    import time

    for i, thing in enumerate(("a red bicycle", "a blue kayak", "a green tent", "a yellow canoe", "a grey van")):
        mem.add(f"I own {thing} number {i}", memory_type="note")
    path = root / "default" / "MEMORY.md"
    full = path.read_text(encoding="utf-8").replace("## Notes\n", "## Notes\n- I also own a sled\n")
    fh = open(path, "w", encoding="utf-8")  # truncate, then write half
    fh.write(full[: len(full) // 2])
    fh.flush()

    def finish() -> None:
        time.sleep(0.3)
        fh.write(full[len(full) // 2:])
        fh.close()

    writer = threading.Thread(target=finish)
    writer.start()
    try:
        got = _contents(mem)  # reads (syncs) while the editor is half way
    finally:
        writer.join()
    assert len(got) == 6 and "I also own a sled" in got
    assert len(md.parse(path.read_text(encoding="utf-8"))) == 6
    assert mem._store("default").sync() == 0


def test_a_save_landing_between_memfolds_read_and_write_is_merged(mem: Memory, root: Path, monkeypatch) -> None:
    """An editor's save lands after memfold read MEMORY.md and before it replaced it (here: while
    memfold syncs its new file to disk): memfold's write must not overwrite it."""
    mem.add("I water the plants on Mondays", memory_type="note")
    path = root / "default" / "MEMORY.md"
    real_fsync = os.fsync
    saved: list[str] = []

    def fsync(fd: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}")
        if not saved and os.path.basename(name).startswith(".MEMORY.md.") and name.endswith(".tmp"):
            text = path.read_text(encoding="utf-8").replace("## Notes\n", "## Notes\n- I hate cold coffee\n")
            tmp = path.with_name("MEMORY.md.editor")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)  # the editor saves (rename over the file)
            saved.append(text)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    mem.add("My train leaves at 7:40", memory_type="note")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert saved
    text = path.read_text(encoding="utf-8")
    assert "I hate cold coffee" in text and "My train leaves at 7:40" in text
    assert _contents(mem) == sorted(["I water the plants on Mondays", "I hate cold coffee", "My train leaves at 7:40"])
