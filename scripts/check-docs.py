#!/usr/bin/env python3
"""Checks README.md and docs/*.md; ctest runs it as `docs_links`.

  python3 scripts/check-docs.py [ROOT]      (ROOT: the repository, by default this script's)

For each file it checks that
  (a) every relative link names a file or folder that exists,
  (b) every #anchor (`#x` in the same file, `page.md#x` in another) is the slug of a
      heading there, as GitHub makes them,
  (c) every fenced block that shows a command or a request carries a mark on the line
      right before it: `<!-- illustrative -->` (no test runs it) or
      `<!-- tested: tests/e2e/test_x.py::test_name [more PATH::NAME] -->`, whose file must
      exist and define that test.
Links with a scheme (https:, mailto:), links that leave the repository and links inside
fenced blocks or `code spans` are not checked. Each problem is printed as
`file:line: message`; the exit status is 1 when there is any.
"""
import re
import sys
from pathlib import Path
from urllib.parse import unquote

# A fenced block is a command or a request when its info string is one of these, or,
# without an info string, when its first line starts with one of those. Other info
# strings (text, json, jsonc, ...) mark output and config excerpts: no mark needed.
COMMAND_INFO = {"bash", "sh", "shell", "console", "python", "http"}
COMMAND_START = ("curl", "make", "build/", "sluice", "python")

MARK = re.compile(r"^<!--\s*(illustrative|tested:(.*?))\s*-->$")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+).*?\1")


def slug(heading):
    """GitHub's anchor for a heading: link text kept, lowercase, punctuation other than
    '-' and '_' dropped, each space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def scan(path):
    """Yields ('heading', line, text), ('link', line, target) and
    ('block', line, info, first_line, line_before) for one markdown file."""
    lines = path.read_text(encoding="utf-8").split("\n")
    fence = None  # the opening fence's marker while inside a block
    for i, line in enumerate(lines):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                fence = None
            continue
        opening = re.match(r"(`{3,}|~{3,})(.*)", stripped)
        if opening:
            fence = opening.group(1)
            info = opening.group(2).strip().split(" ")[0].lower()
            first = next((l.strip() for l in lines[i + 1:] if l.strip()), "")
            before = lines[i - 1].strip() if i > 0 else ""
            yield ("block", i + 1, info, first, before)
            continue
        heading = HEADING.match(line)
        if heading:
            yield ("heading", i + 1, heading.group(2))
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            yield ("link", i + 1, target)


_anchors = {}


def anchors(path):
    """The anchors of a markdown file's headings; a repeated heading gets -1, -2, ..."""
    if path not in _anchors:
        seen, found = {}, set()
        for _, _, text in (e for e in scan(path) if e[0] == "heading"):
            base = slug(text)
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        _anchors[path] = found
    return _anchors[path]


def check_file(root, path, problems):
    def problem(line, message):
        problems.append(f"{path.relative_to(root)}:{line}: {message}")

    for entry in scan(path):
        if entry[0] == "link":
            _, line, target = entry
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # https:, mailto:, ...
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / unquote(file_part)).resolve() if file_part else path
            if file_part and not dest.is_relative_to(root):
                continue  # outside the repository (../shared): not in every checkout
            if not dest.exists():
                problem(line, f"link to a missing file: {target}")
            elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
                problem(line, f"no heading for #{anchor} in {dest.relative_to(root)}")
        elif entry[0] == "block":
            _, line, info, first, before = entry
            if info not in COMMAND_INFO and (info or not first.startswith(COMMAND_START)):
                continue  # output, a config excerpt: needs no mark
            mark = MARK.match(before)
            if not mark:
                problem(line, "command block without <!-- illustrative --> or <!-- tested: PATH::NAME -->")
                continue
            if mark.group(1) == "illustrative":
                continue
            tests = mark.group(2).split()
            if not tests:
                problem(line - 1, "tested: names no test")
            for test in tests:
                test_path, _, name = test.partition("::")
                test_file = root / test_path
                if not name or not test_file.is_file():
                    problem(line - 1, f"tested: no such test file: {test}")
                elif not re.search(rf"^\s*(async\s+)?def {re.escape(name)}\(",
                                   test_file.read_text(encoding="utf-8"), re.M):
                    problem(line - 1, f"tested: {test_path} defines no {name}")


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent).resolve()
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    problems = []
    for path in files:
        if path.exists():
            check_file(root, path, problems)
        else:
            problems.append(f"{path.relative_to(root)}:0: missing")
    for p in problems:
        print(p)
    print(f"check-docs: {len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
