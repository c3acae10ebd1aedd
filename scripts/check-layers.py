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
  crates/*/benches) or a test file (a .rs, .sh or .py directly in
  crates/*/tests) is not named exactly once in ARCHITECTURE.md, in its
  crate's part of the module list, by its path from the crate's folder
  (`src/serve/state.rs`, `tests/common/mod.rs`, `benches/stores.rs`,
  `tests/api.rs`), or a path named there is no file;
- a test file of a crate with `autotests = false` (the CLI's) is neither a
  [[test]] program nor a `mod` of one, so it would never run;
- ARCHITECTURE.md does not state LAYERS as written here;
- a source file (SIZED below) is over the line limit ARCHITECTURE.md
  states ("No source file is over N lines and no function over M lines"),
  or a function in one is over the function limit and not among the
  exceptions listed under that rule (`- `PATH::NAME`: why`); or an
  exception listed there is no function, or no longer over the limit; or
  the rule's paragraph does not name each of SIZED. A function is measured
  from its `fn` line to its matching closing brace, braces in comments and
  literals left out, nested functions each measured too;
- .ci/run's "The N targets" comment does not count its fuzz_targets list
  (N in words), or the list and fuzz/fuzz_targets differ.

Each fault names a file and line. Prints `check-layers: ok (N files, M
imports)` otherwise. Python's standard library only; about a second.
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


# Each file's tokens, read once: path -> tokens(its text).
TOKENS = {}


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
    toks = TOKENS[path] = tokens(path.read_text(encoding="utf-8"))
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


# The module list ------------------------------------------------------------

MODULE_FILE = re.compile(r"(?<![\w/.<-])((?:src|benches|tests/common)/[\w/]*\.rs)(?![\w/.-])")
# A test file: directly in a crate's tests/, a test program or a script.
TEST_FILE = re.compile(r"(?<![\w/.<-])(tests/\w+\.(?:rs|sh|py))(?![\w/.-])")
TEST_SUFFIXES = (".rs", ".sh", ".py")


def module_list(text):
    """{crate folder: [(line number, line)]}: each crate's part of the list."""
    sections = {}
    current = None
    for number, line in enumerate(text.splitlines(), 1):
        m = re.match(r"(crates/[\w-]+)/\s", line + " ")
        if m:
            current = m.group(1)
            sections[current] = [(number, line)]
        elif line[:1].strip():
            current = None
        elif current:
            sections[current].append((number, line))
    return sections


def architecture_faults(crates, text):
    """One line per module or test file the module list misnames."""
    faults = []
    if LAYERS not in text:
        faults.append(f"{ARCHITECTURE}: does not state LAYERS as written in scripts/check-layers.py")
    sections = module_list(text)
    for crate_dir in crates:
        name = rel(crate_dir)
        lines = sections.get(name, [(1, "")])
        files = {
            f.relative_to(crate_dir).as_posix()
            for sub in ("src", "tests/common", "benches")
            for f in (crate_dir / sub).rglob("*.rs")
        }
        tests = crate_dir / "tests"
        files |= {
            f.relative_to(crate_dir).as_posix()
            for f in (tests.iterdir() if tests.is_dir() else ())
            if f.is_file() and f.suffix in TEST_SUFFIXES
        }
        named = {}  # path -> the lines naming it
        for number, line in lines:
            for pattern in (MODULE_FILE, TEST_FILE):
                for m in pattern.finditer(line):
                    named.setdefault(m.group(1), []).append(number)
        heading = lines[0][0]
        for f in sorted(files):
            if f not in named:
                faults.append(f"{ARCHITECTURE}:{heading}: {name}/{f} is not named (as {f}, under {name}/)")
            elif len(named[f]) > 1:
                faults.append(f"{ARCHITECTURE}:{named[f][1]}: {name}/{f} is named {len(named[f])} times")
        for f in sorted(set(named) - files):
            faults.append(f"{ARCHITECTURE}:{named[f][0]}: {f} is named under {name}/, but is no file")
    return faults


# Sizes ---------------------------------------------------------------------

# What ARCHITECTURE.md's size rule covers: every .rs file under these
# folders (test programs and benchmarks are not held to it). The rule's
# paragraph names each of them as written here.
SIZED = ("crates/*/src", "crates/*/examples", "crates/*/tests/common", "fuzz/")
SIZE_RULE = re.compile(r"No source file is over (\d+) lines\s+and no function over (\d+) lines")
# An exception in the list under the rule: `PATH::FUNCTION` opening a line.
EXCEPTION = re.compile(r"- `((?:crates|fuzz)/[\w/.-]+\.rs)::(\w+)`")


def functions(toks):
    """(name, first line, lines) of every `fn` with a body, nested ones too:
    from the `fn` to its matching closing brace (comments and literals are
    not in toks, so their braces do not count)."""
    out = []
    for i, (t, line) in enumerate(toks):
        if t != "fn" or i + 1 >= len(toks) or not re.match(r"[A-Za-z_]", toks[i + 1][0]):
            continue  # `fn(u8) -> u8` is a type; `fn $name` a macro's
        depth, j = 0, i + 2
        while j < len(toks):  # the body's `{`, past parameters and bounds
            x = toks[j][0]
            if x in "([":
                depth += 1
            elif x in ")]":
                depth -= 1
            elif depth == 0 and x in "{;":
                break
            j += 1
        if j == len(toks) or toks[j][0] == ";":
            continue  # a declaration without a body
        depth = 0
        for k in range(j, len(toks)):
            x = toks[k][0]
            depth += x == "{"
            depth -= x == "}"
            if depth == 0:
                break
        out.append((toks[i + 1][0], line, toks[k][1] - line + 1))
    return out


def paragraphs(text):
    """(first line's number, [lines]) of each run of non-blank lines."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if out and out[-1][0] + len(out[-1][1]) == number:
            out[-1][1].append(line)
        else:
            out.append((number, [line]))
    return out


def size_rule(text):
    """The rule: (file limit, function limit, its paragraph's line, its
    paragraph, {(path, function): line} of the exceptions listed after it),
    or None when ARCHITECTURE.md states none."""
    blocks = paragraphs(text)
    for k, (number, lines) in enumerate(blocks):
        paragraph = " ".join(" ".join(lines).split())
        m = SIZE_RULE.search(paragraph)
        if not m:
            continue
        exceptions = {}
        following = blocks[k + 1] if k + 1 < len(blocks) else (0, [])
        for at, line in enumerate(following[1], following[0]):
            e = EXCEPTION.match(line)
            if e:
                exceptions[(e.group(1), e.group(2))] = at
        return int(m.group(1)), int(m.group(2)), number, paragraph, exceptions
    return None


def sized_files():
    """Every .rs file the size rule covers."""
    return sorted(
        f
        for folder in SIZED
        for f in ROOT.glob(folder.rstrip("/") + "/**/*.rs")
        if "target" not in f.relative_to(ROOT).parts
    )


def size_faults(text, token_cache):
    """One line per file or function over ARCHITECTURE.md's limits, and per
    exception it names that is not over them."""
    rule = size_rule(text)
    if rule is None:
        return [f"{ARCHITECTURE}: states no size rule (the script reads {SIZE_RULE.pattern!r})"]
    file_limit, fn_limit, where, paragraph, exceptions = rule
    rule_at = f"{ARCHITECTURE}:{where}"
    faults = [
        f"{ARCHITECTURE}:{where}: the size rule does not name {folder}, which the script holds to it"
        for folder in SIZED
        if folder not in paragraph
    ]
    sized = sized_files()
    lengths = {}  # (path, name) -> [(line, length)] of every sized fn
    for f in sized:
        path = rel(f)
        text_f = f.read_text(encoding="utf-8")
        count = len(text_f.splitlines())
        if count > file_limit:
            faults.append(f"{path}:{file_limit + 1}: {count} lines, over the {file_limit} of {rule_at}")
        toks = token_cache[f] if f in token_cache else tokens(text_f)
        for name, line, length in functions(toks):
            lengths.setdefault((path, name), []).append((line, length))
    for (path, name), found in sorted(lengths.items()):
        if (path, name) in exceptions:
            continue
        for line, length in found:
            if length > fn_limit:
                faults.append(
                    f"{path}:{line}: fn {name} is {length} lines, over the {fn_limit} of"
                    f" {rule_at} (split it, or name it there with its reason)"
                )
    for (path, name), line in sorted(exceptions.items(), key=lambda e: e[1]):
        longest = max((length for _, length in lengths.get((path, name), ())), default=None)
        named = f"{ARCHITECTURE}:{line}: names {path}::{name}"
        if not (ROOT / path).is_file():
            faults.append(f"{named}, but there is no such file")
        elif ROOT / path not in sized:
            faults.append(f"{named}, but the size rule does not cover {path}")
        elif longest is None:
            faults.append(f"{named}, but {path} has no fn {name}")
        elif longest <= fn_limit:
            faults.append(f"{named}, {longest} lines now, not over {fn_limit}: take it off the list")
    return faults


def test_program_faults(crates):
    """One line per test file that never runs: in a crate with `autotests =
    false`, a .rs directly in tests/ that is neither a [[test]] program nor
    a `mod` of one."""
    faults = []
    for crate_dir in crates:
        manifest = (crate_dir / "Cargo.toml").read_text(encoding="utf-8")
        if not re.search(r"^autotests\s*=\s*false", manifest, re.M):
            continue
        programs = re.findall(r'^path\s*=\s*"(tests/[\w/]+\.rs)"', manifest, re.M)
        declared = set()
        for program in programs:
            toks = [t for t, _ in tokens((crate_dir / program).read_text(encoding="utf-8"))]
            declared |= {toks[i + 1] for i in range(len(toks) - 2) if toks[i] == "mod" and toks[i + 2] == ";"}
        for f in sorted((crate_dir / "tests").glob("*.rs")):
            name = f.relative_to(crate_dir).as_posix()
            if name not in programs and f.stem not in declared:
                faults.append(
                    f"{rel(f)}:1: never runs: autotests = false, and it is no [[test]]"
                    f" and no `mod {f.stem};` of {', '.join(programs) or 'one'}"
                )
    return faults


# Counts in words -----------------------------------------------------------

NUMBER_WORDS = {
    w: n
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
        " fifteen sixteen seventeen eighteen nineteen twenty twenty-one twenty-two twenty-three"
        " twenty-four twenty-five".split()
    )
}
CI = ".ci/run"


def fuzz_faults():
    """.ci/run's fuzz comment ("The fifteen targets") against its list, and
    the list against fuzz/fuzz_targets."""
    lines = (ROOT / CI).read_text(encoding="utf-8").splitlines()
    said = start = None
    for n, line in enumerate(lines, 1):
        m = re.match(r"# The ([\w-]+) targets", line)
        said = said or (m and (n, m.group(1)))
        start = start or (line.startswith("fuzz_targets=(") and n)
    if not said or not start:
        return [f"{CI}: no `# The N targets` comment or no fuzz_targets=( list (the script reads both)"]
    listed = {}
    for n in range(start, len(lines)):
        line = lines[n].strip()
        if line == ")":
            break
        if line.startswith('"'):
            listed.setdefault(line.strip('"').split()[0], n + 1)
    faults = []
    number, word = said
    if (int(word) if word.isdigit() else NUMBER_WORDS.get(word.lower())) != len(listed):
        faults.append(f"{CI}:{number}: says {word} targets, fuzz_targets lists {len(listed)}")
    files = {f.stem for f in (ROOT / "fuzz/fuzz_targets").glob("*.rs")}
    for target, line in listed.items():
        if target not in files:
            faults.append(f"{CI}:{line}: fuzz target {target}: no fuzz/fuzz_targets/{target}.rs")
    for target in sorted(files - set(listed)):
        faults.append(f"{CI}:{start}: fuzz/fuzz_targets/{target}.rs is not in fuzz_targets")
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
    text = (ROOT / ARCHITECTURE).read_text(encoding="utf-8")
    faults += architecture_faults(crate_dirs, text)
    faults += size_faults(text, TOKENS)
    faults += test_program_faults(crate_dirs)
    faults += fuzz_faults()
    for fault in faults:
        print(fault)
    if faults:
        print(f"check-layers: {len(faults)} faults")
        return 1
    print(f"check-layers: ok ({files} files, {imports} imports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
