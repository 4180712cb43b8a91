"""The C++ sources the house checks read (tests/house/*.py): every source and header under src/
and include/ of a repository, in sorted order. Python 3, standard library only."""
import os

EXTENSIONS = (".cpp", ".h", ".hpp", ".cc")


def cpp_files(repo):
    """(path relative to `repo`, '/'-separated; its text) of every C++ file under src/ and include/."""
    for top in ("src", "include"):
        for d, dirs, files in os.walk(os.path.join(repo, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(EXTENSIONS):
                    p = os.path.join(d, f)
                    with open(p, encoding="utf-8", errors="replace") as fh:
                        yield os.path.relpath(p, repo).replace(os.sep, "/"), fh.read()
