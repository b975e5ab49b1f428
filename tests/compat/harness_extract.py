"""Docstring example extraction for the compatibility harness.

An example is one `.. code-block:: python` block of a docstring, with the
doctest prompts stripped and the expected-output lines dropped. The text of
the examples is read from the installed paddle at run time and never stored
in this repository.
"""
import dataclasses
import hashlib
import re

# The areas, in the order that decides where an example shared by several
# names (paddle.abs and paddle.Tensor.abs) is counted: first area wins.
AREAS = [
    ("paddle", ["paddle"]),
    ("nn.functional", ["paddle.nn.functional"]),
    ("nn", ["paddle.nn"]),
    ("linalg", ["paddle.linalg"]),
    ("fft", ["paddle.fft"]),
    ("autograd", ["paddle.autograd"]),
    ("optimizer", ["paddle.optimizer", "paddle.optimizer.lr"]),
    ("io", ["paddle.io"]),
    ("metric", ["paddle.metric"]),
    ("jit", ["paddle.jit"]),
    ("Tensor", ["paddle.Tensor"]),
]

# Not-runnable rules, applied to the code of an example (after SKIP lines are
# dropped). Each is (reason, pattern). Kept few on purpose; everything else
# counts, and an example that raises under paddle itself is not runnable too.
SKIP_RULES = [
    ("needs distributed launch",
     re.compile(r"paddle\.distributed|\bfleet\b|init_parallel_env|DataParallel")),
    ("needs network download",
     re.compile(r"\bdatasets\b|download|pretrained\s*=\s*True|urlopen|https?://")),
    ("uses non-public paddle internals",
     re.compile(r"paddle\.base\b|paddle\.fluid\b|paddle\.framework\.core|\b_C_ops\b|"
                r"\b_legacy_C_ops\b|paddle\.pir\b|from paddle import base\b")),
]

# Calls whose results are random: such an example is compared by shape and
# dtype only. An example that calls paddle.seed() itself is about random
# numbers too (and its own seed hides them from the two-seed check).
RANDOM_API = re.compile(
    r"\b(rand|randn|randint|randint_like|randperm|rand_like|randn_like|uniform_?|"
    r"normal_?|standard_normal|gaussian|log_normal_?|dropout\w*|Dropout\w*|"
    r"alpha_dropout|AlphaDropout|shuffle|multinomial|bernoulli_?|poisson|"
    r"exponential_|random_|cauchy_|geometric_|binomial|sample|rrelu|RReLU|"
    r"gumbel_softmax|random|random_split|seed|\w*RandomSampler)\s*\(|shuffle\s*=\s*True")

# numpy's and Python's generators are seeded alike in both runs, so their
# numbers are the same under paddle and oar: not random for this purpose.
_SEEDED_GENERATORS = re.compile(r"\b(np|numpy)\.random\.\w+\s*\(|\brandom\.\w+\s*\(")


def calls_random_api(code):
    """True when code calls a paddle random API (numpy's seeded ones excepted)."""
    return bool(RANDOM_API.search(_SEEDED_GENERATORS.sub("(", code)))


_DIRECTIVE = re.compile(r"#\s*doctest:\s*([+-])(SKIP|REQUIRES)\s*(\(([^)]*)\))?")
_CODE_BLOCK = re.compile(r"^(\s*)\.\. code-block::\s*(python|pycon)\s*$")


@dataclasses.dataclass
class Example:
    id: str            # e.g. "paddle.nn.functional.relu" or "paddle.add#1"
    area: str
    code: str
    skip: str = ""     # non-empty: the reason it is not runnable
    random: bool = False

    @property
    def key(self):
        return hashlib.sha256(self.code.encode()).hexdigest()[:20]


def code_blocks(doc):
    """Return the raw text of every `.. code-block:: python` in doc, dedented."""
    lines = (doc or "").expandtabs().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = _CODE_BLOCK.match(lines[i])
        i += 1
        if not m:
            continue
        indent = len(m.group(1))
        body = []
        while i < len(lines):
            line = lines[i]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            body.append(line)
            i += 1
        while body and (not body[0].strip() or body[0].strip().startswith(":")):
            body.pop(0)   # blank lines and block options such as ":name: x"
        if body:
            cut = min(len(l) - len(l.lstrip()) for l in body if l.strip())
            blocks.append("\n".join(l[cut:] for l in body).rstrip())
    return blocks


def _prompt(line, in_code):
    """The source after a `>>> `/`... ` prompt, or None for an output line.

    `...` only continues a statement right after a prompt line, and needs a
    space or the end of the line after it: a printed tensor's `...,` is output.
    """
    s = line.lstrip()
    if s == ">>>" or s.startswith(">>> "):
        return s[4:]
    if in_code and (s == "..." or s.startswith("... ")):
        return s[4:]
    return None


def parse_block(text):
    """Strip prompts from one block. Returns (code, requires, random_hint).

    Lines without a prompt are expected output and are dropped (a block
    without any prompt is taken as plain code). Lines between a standalone
    `# doctest: +SKIP` and `-SKIP` are dropped, as doctest would not run
    them; an inline `+SKIP` only skips a line's output check, and the harness
    checks no output, so that line stays.
    """
    lines = text.splitlines()
    if not any(_prompt(l, False) is not None for l in lines):
        return text.strip() + "\n", [], False
    code, requires, random_hint, skipping, in_code = [], [], False, False, False
    for line in lines:
        src = _prompt(line, in_code)
        in_code = src is not None
        if src is None:
            continue
        d = _DIRECTIVE.search(src)
        if d:
            sign, kind, arg = d.group(1), d.group(2), d.group(4) or ""
            if kind == "REQUIRES" and sign == "+":
                requires.append(arg.strip())
            if kind == "SKIP" and "random" in arg.lower():
                random_hint = True
            if src[:d.start()].strip() == "":   # a standalone directive line
                if kind == "SKIP":
                    skipping = sign == "+"
                continue
            src = src[:d.start()].rstrip()
        if not skipping:
            code.append(src)
    return "\n".join(code).strip() + "\n", requires, random_hint


def is_trivial(code):
    """True when code has no statement other than imports and comments."""
    for line in code.splitlines():
        s = line.strip()
        if s and not s.startswith("#") and not re.match(r"(import|from)\s", s):
            return False
    return True


def examples_from_docstring(name, area, doc):
    """All examples of one docstring, with their skip reasons decided."""
    out = []
    blocks = code_blocks(doc)
    for k, block in enumerate(blocks):
        code, requires, random_hint = parse_block(block)
        ex = Example(id=name if len(blocks) == 1 else f"{name}#{k}", area=area, code=code)
        if requires:
            ex.skip = "needs " + ", ".join(sorted(set(r.replace("env:", "") for r in requires)))
        elif is_trivial(code):
            ex.skip = "no code to run (only imports or skipped lines)"
        else:
            for reason, pattern in SKIP_RULES:
                if pattern.search(code):
                    ex.skip = reason
                    break
        ex.random = random_hint or calls_random_api(code)
        out.append(ex)
    return out


def _public_members(obj, module_all):
    """(name, value) of the public API of a module (its __all__) or a class."""
    if module_all is not None:
        names = list(module_all)
    else:
        names = sorted(n for n in dir(obj) if not n.startswith("_"))
    for n in names:
        try:
            yield n, getattr(obj, n)
        except Exception:
            continue


def walk(paddle, importlib):
    """Every example of the configured areas in the installed paddle."""
    import inspect
    seen, examples = set(), []

    def add(name, area, doc):
        for ex in examples_from_docstring(name, area, doc):
            if ex.code not in seen:
                seen.add(ex.code)
                examples.append(ex)

    for area, modules in AREAS:
        for modname in modules:
            if modname == "paddle.Tensor":
                for n, v in _public_members(paddle.Tensor, None):
                    add(f"paddle.Tensor.{n}", area, getattr(v, "__doc__", None))
                continue
            mod = importlib.import_module(modname)
            for n, v in _public_members(mod, getattr(mod, "__all__", None)):
                if inspect.ismodule(v) or v is paddle.Tensor:
                    continue   # Tensor's members are their own area
                add(f"{modname}.{n}", area, getattr(v, "__doc__", None))
                if inspect.isclass(v):
                    for m, mv in sorted(vars(v).items()):
                        if m.startswith("_"):
                            continue
                        add(f"{modname}.{n}.{m}", area, getattr(mv, "__doc__", None))
    return examples
