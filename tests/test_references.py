"""The code the documentation cites exists: every `file.py:name` (also `dir/file.py:name`, `file.py:Class.method`,
a pytest node id `tests/test_x.py::test_y`),
every dotted `module.name` of this repository (`vpo.METHODS`, `tasks.base.Task`, `Task.score_rollouts`, ...) and
every repository path (`results/PLAN.md`, `bench/compare_runs.py`) that README.md, docs/*.md, results/*.md and
bench/README.md cite in backticks, in fenced code blocks or as the target of a markdown link. Nothing is imported:
the cited file is parsed with `ast` and the name looked up among its top-level definitions, assignments and imports
(a class's methods, attributes and `self.x` assignments for a dotted name, through its bases). Every failure is
reported at once, as file:line. A planted repository checks that the checker finds what is missing."""
import ast
import glob
import os
import re
import subprocess


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# results.md, heldout.md and the finished experiments' plans were written at an archive commit (results/README.md
# names them), whose code they cite; main keeps them as they were, so their references resolve there, not here
FROZEN = {"results/results.md", "results/heldout.md", "results/PLAN.md", "results/PLAN_CODE.md",
          "results/PLAN_REVIEW.md", "results/PLAN_SEARCH.md"}
DOCS = ["README.md", *sorted(os.path.relpath(p, ROOT) for pattern in ("docs/*.md", "results/*.md", "bench/*.md")
                             for p in glob.glob(os.path.join(ROOT, pattern)) if os.path.relpath(p, ROOT) not in FROZEN)]

# the first part of a dotted name that makes it a reference to this repository's code (besides its class names)
PREFIXES = {"vpo", "model", "sample", "kv_cache", "metrics", "evaluate", "search", "sft", "train", "tasks", "runs",
            "results", "bench", "examples"}
EXTENSIONS = ("py", "md", "json", "jsonl", "png", "txt", "cff", "pt", "toml", "cfg", "ipynb")

FENCE = re.compile(r"^ *```[^\n]*\n.*?^ *```", re.M | re.S)
SPAN = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FILE_NAME = re.compile(r"(?<![\w./-])((?:[\w.*-]+/)*[\w*-]+\.py)::?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")  # or pytest's ::
# a token with a slash (a directory, a file under one) or a file name with an extension; a dot ends a segment only
# if a name goes on after it (the full stop of a sentence is not part of the path), braces are a placeholder
SEGMENT = r"(?:[\w*-]|\{[\w,.]*\}|\.(?=[\w*{]))+"
PATH = re.compile(rf"(?<![\w./-])(\.?{SEGMENT}(?:/{SEGMENT})+/?|{SEGMENT}/|[\w*-]+(?:\.[\w*-]+)*\.(?:"
                  + "|".join(EXTENSIONS) + r"))(?![\w/])")
DOTTED = re.compile(r"(?<![\w./:-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/])")


# ------------------------------------------------------------------------------------------ the repository's code
class Code:
    """The Python files under root, parsed on demand: modules by dotted name, classes by name."""

    def __init__(self, root):
        self.root = root
        self.files = tracked_files(root)
        self._trees = {}
        self.classes = {}   # class name -> [(file, ClassDef)]
        for f in self.files:
            if f.endswith(".py"):
                for node in ast.walk(self.tree(f)):
                    if isinstance(node, ast.ClassDef):
                        self.classes.setdefault(node.name, []).append((f, node))

    def tree(self, f):
        if f not in self._trees:
            with open(os.path.join(self.root, f), encoding="utf-8") as fh:
                self._trees[f] = ast.parse(fh.read(), f)
        return self._trees[f]

    def module_file(self, dotted):
        """'tasks.base' -> 'tasks/base.py', 'tasks' -> 'tasks/__init__.py', or None."""
        base = dotted.replace(".", "/")
        for f in (base + ".py", base + "/__init__.py"):
            if f in self.files:
                return f
        return None

    def is_package(self, dotted):
        base = dotted.replace(".", "/") + "/"
        return any(f.startswith(base) for f in self.files)

    # -- names
    def resolve_in_file(self, f, parts, seen=()):
        """Does the dotted name `parts` exist in file f (parts[0] at its top level, the rest inside)?"""
        if (f, tuple(parts)) in seen:
            return False
        seen = seen + ((f, tuple(parts)),)
        node = top_level(self.tree(f)).get(parts[0])
        if node is None:
            return False
        if len(parts) == 1:
            return True
        if isinstance(node, ast.ClassDef):
            return self.resolve_in_class(f, node, parts[1:])
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            target = self.import_target(f, node, parts[0])
            if target is None:
                return False
            kind, where, name = target
            if kind == "module":
                return self.resolve_module(where, parts[1:])
            return self.resolve_in_file(where, [name, *parts[1:]], seen)
        return False  # an attribute of a function or of an assigned value: not something we can check

    def import_target(self, f, node, bound):
        """Where the name `bound` that an import in f binds comes from: ("module", dotted) or ("name", file, name)
        for one of our modules; None for an outside library."""
        if isinstance(node, ast.Import):
            for a in node.names:
                if (a.asname or a.name.split(".")[0]) == bound:
                    name = a.name if a.asname else a.name.split(".")[0]
                    return ("module", name, None) if self.module_file(name) or self.is_package(name) else None
            return None
        package = os.path.dirname(f).replace("/", ".")
        if node.level:
            up = package.split(".") if package else []
            up = up[:len(up) - (node.level - 1)] if node.level > 1 else up
            source = ".".join([*up, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        for a in node.names:
            if (a.asname or a.name) == bound:
                sub = f"{source}.{a.name}" if source else a.name
                if self.module_file(sub) or self.is_package(sub):
                    return ("module", sub, None)
                where = self.module_file(source)
                return ("name", where, a.name) if where else None
        return None

    def resolve_module(self, dotted, rest):
        """A dotted module plus names inside it, e.g. ('tasks.base', ['Task', 'score'])."""
        if not rest:
            return bool(self.module_file(dotted) or self.is_package(dotted))
        sub = f"{dotted}.{rest[0]}"
        if self.module_file(sub) or self.is_package(sub):
            return self.resolve_module(sub, rest[1:])
        f = self.module_file(dotted)
        return bool(f) and self.resolve_in_file(f, rest)

    def resolve_in_class(self, f, cls, parts, depth=0):
        if depth > 10:
            return False
        members = class_members(cls)
        if parts[0] in members:
            inner = members[parts[0]]
            if len(parts) == 1:
                return True
            return isinstance(inner, ast.ClassDef) and self.resolve_in_class(f, inner, parts[1:], depth + 1)
        for base in cls.bases:  # inherited, from a base class of this repository
            name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
            for bf, bcls in self.classes.get(name, []):
                if self.resolve_in_class(bf, bcls, parts, depth + 1):
                    return True
        return False

    def resolve_class_ref(self, parts):
        """'Task.score_rollouts': a class of the repository (any module) with that attribute."""
        return any(self.resolve_in_class(f, cls, parts[1:]) if parts[1:] else True
                   for f, cls in self.classes.get(parts[0], []))


def tracked_files(root):
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root, capture_output=True,
                             text=True, check=True).stdout
        files = [f for f in out.splitlines() if os.path.exists(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs]
    return set(files)


def top_level(tree):
    """{name: the node that binds it} over a module's top level (into if/try/with blocks, not into functions)."""
    names = {}

    def visit(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.setdefault(node.name, node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            names.setdefault(n.id, node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    names.setdefault(a.asname or a.name.split(".")[0], node)
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []) or [])
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
    visit(tree.body)
    return names


def class_members(cls):
    """A class's methods, nested classes, class attributes (dataclass fields too) and the attributes its methods
    assign on self."""
    members = {}
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            members.setdefault(node.name, node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        members.setdefault(n.id, node)
    for node in ast.walk(cls):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    members.setdefault(t.attr, node)
    return members


# ------------------------------------------------------------------------------------------ what the docs cite
def citations(text):
    """(line, kind, token) for every reference in a markdown text, kind file:name, dotted, path, script or link:
    backtick spans and fenced code blocks are searched for code references and paths, link targets are paths."""
    def line_of(pos):
        return text.count("\n", 0, pos) + 1
    chunks = [(m.start(), m.group(0)) for m in FENCE.finditer(text)]
    outside = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)  # the same offsets, fences blanked
    chunks += [(m.start(1), m.group(1)) for m in SPAN.finditer(outside)
               if not m.group(1).startswith("git checkout ")]   # a command at another commit cites that commit's code
    found = [(line_of(start + offset), kind, token)
             for start, chunk in chunks for offset, kind, token in references(chunk)]
    found += [(line_of(m.start(1)), "link", m.group(1)) for m in LINK.finditer(outside)]
    return sorted(found)


def references(chunk):
    """(offset, kind, token) of the code references and paths in a piece of text; a span is taken by the first
    pattern that matches it (`vpo.py:set_rewards` is not also the path vpo.py)."""
    found, taken = [], []
    for kind, pattern in (("file:name", FILE_NAME), ("path", PATH), ("dotted", DOTTED)):
        for m in pattern.finditer(chunk):
            if not any(a <= m.start() < b for a, b in taken):
                token = m.group(0) if kind == "file:name" else m.group(1)
                if kind == "path" and re.search(r"python3? $", chunk[:m.start()]):
                    kind_here = "script"  # `python x.py`: run from the repository root, so x.py is a root path
                else:
                    kind_here = kind
                found.append((m.start(), kind_here, token))
                taken.append(m.span())
    return found


def check(code, doc, kind, token, prefixes=PREFIXES):
    """None if the reference resolves, else why not."""
    if kind == "file:name":
        path, name = token.split(":", 1)
        name = name.removeprefix(":")  # a pytest node id, tests/x.py::test_y
        files = matching_files(code, path)
        if not files:
            return f"{path} does not exist"
        if not any(code.resolve_in_file(f, name.split(".")) for f in files if f.endswith(".py")):
            return f"{path} defines no {name}"
        return None
    if kind == "dotted":
        parts = token.split(".")
        if parts[0] in prefixes:
            return None if code.resolve_module(parts[0], parts[1:]) else f"no {token} in this repository"
        if parts[0] in code.classes:
            return None if code.resolve_class_ref(parts) else f"no class {parts[0]} with {'.'.join(parts[1:])}"
        return None  # not ours: torch.compile, np.random, ...
    target = token.split("#", 1)[0]
    if kind == "script":
        return None if target in code.files or not is_repository_path(code, target) else f"{target} does not exist"
    if kind == "link":
        if re.match(r"^[a-z]+:", token) or not target:
            return None  # a URL, or an anchor in the same file
        target = os.path.normpath(os.path.join(os.path.dirname(doc), target))
        return None if matching_files(code, target) else f"{target} does not exist"
    if not is_repository_path(code, target):
        return None
    beside = os.path.normpath(os.path.join(os.path.dirname(doc), target))  # results/README.md: `runs/...`
    return None if matching_files(code, target) or matching_files(code, beside) else f"{target} does not exist"


def is_repository_path(code, path):
    """A path that names a file of this repository: one under a tracked top-level directory, or a bare Python file
    name (the README knows tasks/base.py as `base.py` in the tasks/ row). Run outputs (out/..., summary.json),
    placeholders ({log,eval}.jsonl, the README's `tasks/yours.py`) and absolute paths are not."""
    if path.startswith(("/", "~")) or "{" in path:
        return False
    if "yours" in path:
        return False
    if "/" in path:
        first = path.split("/", 1)[0]
        return any(f.startswith(first + "/") for f in code.files)
    return path.endswith(".py")


def matching_files(code, path):
    """The tracked files a cited path names: the file itself, the files under it (a directory) or those a glob
    matches; a bare file name (no directory) in any directory."""
    path = path.rstrip("/")
    if "/" in path:
        pattern = re.compile(glob_to_regex(path) + "(/.*)?$")
    else:
        pattern = re.compile(r"(.*/)?" + glob_to_regex(path) + "(/.*)?$")
    return sorted(f for f in code.files if pattern.match(f))


def glob_to_regex(path):
    return "".join("[^/]*" if ch == "*" else re.escape(ch) for ch in path)


def failures(root, docs, prefixes=PREFIXES):
    """'doc:line: `token`: why' for every reference of the docs that does not resolve."""
    code = Code(root)
    out = []
    for doc in docs:
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            text = f.read()
        for line, kind, token in citations(text):
            why = check(code, doc, kind, token, prefixes)
            if why:
                out.append(f"{doc}:{line}: `{token}`: {why}")
    return out


def test_every_code_reference_of_the_docs_exists():
    missing = failures(ROOT, DOCS)
    assert not missing, f"{len(missing)} references to code or files that do not exist:\n" + "\n".join(missing)


# ------------------------------------------------------------------------------------------ the checker itself
PLANTED = {
    "alpha.py": "from pkg.inner import Helper\nimport pkg.inner as inner_mod\nX = 1\ntry:\n    Y = 2\n"
                "except ImportError:\n    pass\ndef run():\n    pass\nclass Thing:\n    size: int = 3\n"
                "    def __init__(self):\n        self.count = 0\n    def go(self):\n        pass\n",
    "pkg/__init__.py": "from pkg.inner import Helper, make\nfrom . import inner\n",
    "pkg/inner.py": "class Base:\n    def shared(self):\n        pass\nclass Helper(Base):\n    pass\n"
                    "def make():\n    pass\n",
    "docs/a.md": "",
    ".ci/run": "",
}
GOOD = ["`alpha.py:run`", "`alpha.py::run`", "`pkg/yours.py`", "`.ci/run`", "`.venv/bin/activate`",
        "`alpha.py:Thing.go`", "`alpha.py:Thing.count`", "`alpha.py:Thing.size`", "`alpha.Y`",
        "`pkg/inner.py:Helper`", "`alpha.Helper`", "`pkg.make`", "`pkg.inner.Helper.shared`", "`Thing.go`",
        "`Helper.shared`", "`docs/a.md`", "`docs/`", "`pkg/*.py`", "[`alpha.py:X`](alpha.py)", "[a](docs/a.md#x)",
        "`torch.compile` and `np.random`", "`out/vpo-maze-s0/ckpt.pt` `summary.json` `--flag`", "`inner.py:make`",
        "```\npython alpha.py --x 1\nx = torch.zeros(3).mean()\n```", "[page](https://example.org/x.py)",
        "`alpha.inner_mod.Helper`", "`python -m pkg.inner`",
        "`python pkg/inner.py --x`", "`see docs/a.md.`", "`runs/maze/NAME/{log,eval}.jsonl`",
        "`git checkout abc1234 && python -m pkg.outer`"]
BAD = ["`alpha.py:walk`", "`alpha.py::walk`", "`alpha.py:Thing.stop`", "`beta.py:run`", "`pkg/inner.py:Gone`",
       "`alpha.Gone`", "`pkg.gone`", "`pkg.inner.Helper.missing`", "`Thing.stop`", "`docs/b.md`", "[x](missing.md)",
       "```\npython gamma.py\n```", "`pkg/other.py`", "`python -m pkg.outer`", "`alpha.run.inner`", "`python inner.py`",
       "`.ci/test`"]


def test_the_checker_finds_every_missing_reference_and_passes_the_others(tmp_path):
    for name, text in PLANTED.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    prefixes = {"alpha", "pkg"}
    for cited in GOOD + BAD:
        (tmp_path / "README.md").write_text("intro\n\n" + cited + "\n")
        found = failures(str(tmp_path), ["README.md"], prefixes)
        if cited in GOOD:
            assert found == [], (cited, found)
        else:
            lines = range(3, 3 + cited.count("\n") + 1)
            assert len(found) == 1 and int(found[0].split(":")[1]) in lines, (cited, found)
    # every failure at once, each at its own line
    (tmp_path / "README.md").write_text("\n".join(BAD) + "\n")
    found = failures(str(tmp_path), ["README.md"], prefixes)
    assert len(found) == len(BAD), found
    assert [int(f.split(":")[1]) for f in found] == sorted(int(f.split(":")[1]) for f in found)
