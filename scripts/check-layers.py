#!/usr/bin/env python3
"""Keeps the workspace's modules in the shape ARCHITECTURE.md draws.

    scripts/check-layers.py

Reads every `use` path and every `crate::`/`super::`/`self::` path in the
code (not the comments) of each .rs file under crates/*/src, resolves it to
the module that defines the item (through re-exports), and fails (exit 1,
one line a fault) when:

- a file of crates/pwned/src imports from a layer above its own, or beside
  it, in LAYERS below (a layer is a top-level folder or file);
- modules import each other in a circle (A imports B, B imports A,
  directly or through others) anywhere in a crate's src. A module written
  inside a file (`mod tests { … }`) is a module of its own, as Rust has it;
  a module re-exporting what its own submodules define (`pub use
  child::Item`) presents them, it does not import them: that is no edge;
- a module file (every .rs under crates/*/src, crates/*/tests/common and
  crates/*/benches) is not named exactly once in ARCHITECTURE.md, in its
  crate's part of the module list, by its path from the crate's folder
  (`src/serve/state.rs`, `tests/common/mod.rs`, `benches/stores.rs`), or a
  path named there is no file;
- ARCHITECTURE.md does not state LAYERS as written here.

Prints `check-layers: ok (N files, M imports)` otherwise. Python's standard
library only; well under a second.
"""

import re
import sys
from pathlib import Path

# Layers of crates/pwned/src, bottom up: a layer may import the layers
# before it, never one after it or one beside it (`·`); error.rs may be
# imported by every layer.
LAYERS = (
    "file_at.rs · tmpfile.rs · prefetch.rs ← format ← error.rs ← range"
    " ← read · bundle ← write ← prepare · update ← export.rs · sample.rs ← serve ← lib.rs"
)
IMPORTED_BY_ALL = {"error.rs"}
LAYERED = "crates/pwned/src"

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = "ARCHITECTURE.md"


def layer_levels():
    """Each layer's name mapped to its level, 0 at the bottom."""
    return {
        name.strip(): level
        for level, names in enumerate(LAYERS.split("←"))
        for name in names.split("·")
    }


# Lexing --------------------------------------------------------------------

TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<comment>//[^\n]*)
    | (?P<block>/\*)
    | (?P<raw>b?r(?P<hashes>\#*)")
    | (?P<string>b?"(?:\\.|[^"\\])*")
    | (?P<char>b?'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^'\\\n])')
    | (?P<lifetime>'[A-Za-z_]\w*)
    | (?P<ident>(?:r\#)?[A-Za-z_]\w*)
    | (?P<number>\d[\w.]*)
    | (?P<path>::)
    | (?P<punct>.)
    """,
    re.S | re.X,
)


def tokens(text):
    """The code's tokens as (text, line), comments and literals left out."""
    out = []
    pos, line = 0, 1
    while pos < len(text):
        m = TOKEN.match(text, pos)
        kind = m.lastgroup if m.lastgroup != "hashes" else "raw"
        end = m.end()
        if kind == "block":  # nested block comments
            depth, end = 1, pos + 2
            while depth and end < len(text):
                if text.startswith("/*", end):
                    depth, end = depth + 1, end + 2
                elif text.startswith("*/", end):
                    depth, end = depth - 1, end + 2
                else:
                    end += 1
        elif kind == "raw":
            close = '"' + m.group("hashes")
            end = text.find(close, end)
            end = len(text) if end < 0 else end + len(close)
        elif kind in ("ident", "path", "punct"):
            out.append((m.group(), line))
        line += text.count("\n", pos, end)
        pos = end
    return out


# Modules -------------------------------------------------------------------


class Module:
    """A module: a file, or a `mod name { … }` written inside one."""

    def __init__(self, path, module, inline=False):
        self.path = path  # the file it is written in
        self.module = module  # tuple of names from the crate root
        self.inline = inline
        self.names = {}  # name a `use` brings in -> its segments
        self.paths = []  # (segments, line, public) of every path used

    def name(self, src):
        """Its file from src, and `mod NAME` for a module inside a file."""
        file = self.path.relative_to(src).as_posix()
        return f"{file} (mod {self.module[-1]})" if self.inline else file


def parse_use(toks, i, prefix, out):
    """Parses the use tree at toks[i]; appends (segments, name) to out."""
    segs = list(prefix)
    while i < len(toks):
        t = toks[i][0]
        if t == "{":
            i += 1
            while i < len(toks) and toks[i][0] not in ("}", ";"):
                i = parse_use(toks, i, segs, out)
                if toks[i][0] == ",":
                    i += 1
            return i + 1
        if t == "*":
            out.append((segs, None))
            return i + 1
        if t in (",", "}", ";"):
            out.append((segs, segs[-1] if segs else None))
            return i
        if t == "as":
            out.append((segs, toks[i + 1][0]))
            return i + 2
        if t != "::" and not (t == "self" and segs):
            segs = segs + [t]
        i += 1
    return i


def read_modules(path, module):
    """The file's module and the modules written inside it."""
    toks = tokens(path.read_text(encoding="utf-8"))
    scope = [Module(path, module)]  # the module each token is in
    found = list(scope)
    opened = []  # brace depth at which each inline module opened
    depth = 0
    i = 0
    while i < len(toks):
        t, line = toks[i]
        prev = toks[i - 1][0] if i else ";"
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if opened and opened[-1] == depth:
                opened.pop()
                scope.pop()
        elif t == "mod" and i + 2 < len(toks) and toks[i + 2][0] == "{":
            scope.append(Module(path, scope[-1].module + (toks[i + 1][0],), True))
            found.append(scope[-1])
            opened.append(depth)
            depth += 1
            i += 2
        elif t == "use" and prev in (";", "{", "}", "]", ")", "pub"):
            public = prev in (")", "pub")
            uses = []
            end = parse_use(toks, i + 1, [], uses)
            for segs, name in uses:
                if segs:
                    scope[-1].paths.append((segs, line, public))
                    if name:
                        scope[-1].names[name] = segs
            while end < len(toks) and toks[end][0] != ";":
                end += 1
            i = end
        elif re.match(r"[a-z_]", t) and prev != "::" and toks[i + 1 : i + 2] and toks[i + 1][0] == "::":
            segs = [t]
            j = i + 2
            while j < len(toks) and re.match(r"\w", toks[j][0]):
                segs.append(toks[j][0])
                if j + 1 < len(toks) and toks[j + 1][0] == "::":
                    j += 2
                else:
                    break
            scope[-1].paths.append((segs, line, False))
            i = j
        i += 1
    return found


def module_path(src, path):
    """The module path of a file under src (lib.rs and main.rs are the root)."""
    parts = path.relative_to(src).with_suffix("").parts
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


class Crate:
    """One crate's src: its modules and the imports between them."""

    def __init__(self, src):
        self.src = src
        self.files = sorted(src.rglob("*.rs"))
        self.modules = {}  # module path -> Module
        for f in self.files:
            for m in read_modules(f, module_path(src, f)):
                self.modules[m.module] = m

    def absolute(self, scope, segs):
        """segs made absolute from scope, or None when not a module path."""
        segs = list(segs)
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("self", "super"):
            base = list(scope)
            if segs[0] == "self":
                segs = segs[1:]
            while segs and segs[0] == "super":
                if not base:
                    return None
                base.pop()
                segs = segs[1:]
            return base + segs
        if scope + (segs[0],) in self.modules:
            return list(scope) + segs
        return None

    def resolve(self, scope, segs, seen=()):
        """The module that defines what segs names, or None (outside the crate)."""
        path = self.absolute(scope, segs)
        if path is None:
            return None
        here = ()
        for name in path:
            if here + (name,) in self.modules:
                here += (name,)
                continue
            # `name` is an item of `here`, or a name `here` imports
            use = self.modules[here].names.get(name)
            if use and (here, name) not in seen:
                target = self.resolve(here, use, seen + ((here, name),))
                if target is not None:
                    return target
            break
        return self.modules.get(here)

    def edges(self):
        """{(importer, imported): first line} of the crate's imports."""
        out = {}
        for m in self.modules.values():
            for segs, line, public in m.paths:
                target = self.resolve(m.module, segs)
                if target is None or target is m:
                    continue
                if public and target.module[: len(m.module)] == m.module:
                    continue  # a re-export of its own submodule's item
                out.setdefault((m, target), line)
        return out


# Checks --------------------------------------------------------------------


def rel(path):
    return path.relative_to(ROOT).as_posix()


def layer_faults(crate, edges):
    """One line per import of crates/pwned/src that goes up or beside."""
    levels = layer_levels()
    tops = {p.name for p in crate.src.iterdir() if p.is_dir() or p.suffix == ".rs"}
    faults = [f"{rel(crate.src)}/{name} is not in LAYERS" for name in sorted(tops - set(levels))]
    faults += [f"LAYERS names {name}: not in {rel(crate.src)}" for name in sorted(set(levels) - tops)]
    found = []
    for (a, b), line in edges.items():
        la = a.path.relative_to(crate.src).parts[0]
        lb = b.path.relative_to(crate.src).parts[0]
        if la == lb or lb in IMPORTED_BY_ALL or la not in levels or lb not in levels:
            continue
        if levels[lb] >= levels[la]:
            where = "above" if levels[lb] > levels[la] else "beside"
            found.append((rel(a.path), line, f"{la} imports {lb}, a layer {where} it ({rel(b.path)})"))
    return faults + [f"{f}:{line}: {what}" for f, line, what in sorted(found)]


def circles(crate, edges):
    """One line per knot of modules that import each other."""
    graph = {}
    for (a, b), line in edges.items():
        graph.setdefault(a, {})[b] = line
    index, low, stack, on, knots = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            knot = []
            while True:
                w = stack.pop()
                on.discard(w)
                knot.append(w)
                if w is v:
                    break
            if len(knot) > 1:
                knots.append(knot)

    sys.setrecursionlimit(10000)
    for v in sorted(crate.modules.values(), key=lambda m: m.module):
        if v not in index:
            visit(v)
    faults = []
    for knot in knots:
        members = set(knot)
        start = min(knot, key=lambda m: m.module)
        # the shortest way from start back to itself inside the knot
        prev, queue = {start: None}, [start]
        for v in queue:
            for w in sorted(graph.get(v, ()), key=lambda m: m.module):
                if w in members and w not in prev:
                    prev[w] = v
                    queue.append(w)
        last = min(
            (v for v in prev if start in graph.get(v, ())),
            key=lambda v: len(chain(prev, v)),
        )
        loop = chain(prev, last) + [start]
        steps = " -> ".join(
            m.name(crate.src)
            + (f":{graph[m][loop[k + 1]]}" if k + 1 < len(loop) else "")
            for k, m in enumerate(loop)
        )
        more = sorted(m.name(crate.src) for m in members - set(loop))
        faults.append(
            f"{rel(crate.src)}: circle of modules: {steps}"
            + (f" (the same knot holds {', '.join(more)})" if more else "")
        )
    return faults


def chain(prev, v):
    out = []
    while v is not None:
        out.append(v)
        v = prev[v]
    return out[::-1]


MODULE_FILE = re.compile(r"(?<![\w/.<-])((?:src|benches|tests/common)/[\w/]*\.rs)(?![\w/.-])")


def architecture_faults(crates):
    text = (ROOT / ARCHITECTURE).read_text(encoding="utf-8")
    faults = []
    if LAYERS not in text:
        faults.append(f"{ARCHITECTURE}: does not state LAYERS as written in scripts/check-layers.py")
    sections = {}  # crate folder -> its part of the module list
    current = None
    for line in text.splitlines():
        m = re.match(r"(crates/[\w-]+)/\s", line + " ")
        if m:
            current = m.group(1)
            sections[current] = []
        elif line[:1].strip():
            current = None
        if current:
            sections[current].append(line)
    for crate_dir in crates:
        name = rel(crate_dir)
        files = {
            f.relative_to(crate_dir).as_posix()
            for sub in ("src", "tests/common", "benches")
            for f in (crate_dir / sub).rglob("*.rs")
        }
        named = {}
        for line in sections.get(name, []):
            for m in MODULE_FILE.finditer(line):
                named[m.group(1)] = named.get(m.group(1), 0) + 1
        for f in sorted(files):
            if f not in named:
                faults.append(f"{ARCHITECTURE}: {name}/{f} is not named (as {f}, under {name}/)")
            elif named[f] > 1:
                faults.append(f"{ARCHITECTURE}: {name}/{f} is named {named[f]} times")
        for f in sorted(set(named) - files):
            faults.append(f"{ARCHITECTURE}: {f} is named under {name}/ but there is no such file")
    return faults


def main():
    crate_dirs = sorted(p.parent for p in ROOT.glob("crates/*/Cargo.toml"))
    faults, files, imports = [], 0, 0
    for crate_dir in crate_dirs:
        src = crate_dir / "src"
        if not src.is_dir():
            continue
        crate = Crate(src)
        edges = crate.edges()
        files += len(crate.files)
        imports += len(edges)
        if rel(src) == LAYERED:
            faults += layer_faults(crate, edges)
        faults += circles(crate, edges)
    faults += architecture_faults(crate_dirs)
    for fault in faults:
        print(fault)
    if faults:
        print(f"check-layers: {len(faults)} faults")
        return 1
    print(f"check-layers: ok ({files} files, {imports} imports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
