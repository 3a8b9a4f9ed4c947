#!/usr/bin/env python3
"""Checks the size limits of lib/ and tools/: no file over 600 lines, no
function (body and signature) over 150. Run by ctest (`code-sizes`); prints
every offender with its length and exits 1 when there is one.

A function is a brace block opened at namespace or class scope whose header
(the text since the previous ';', '{' or '}') holds a parameter list;
lambdas and nested blocks count toward the function that holds them.
Comments, strings and character literals are blanked before scanning.
"""
import re
import sys
from pathlib import Path

MAX_FILE = 600
MAX_FUNCTION = 150
SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b|\bextern\s*\"")


def blank(text):
    """Comments, strings and char literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, length) of every function body at namespace or class scope."""
    code = blank(text)
    stack = []  # 'scope', 'function' or 'block'
    header_start = 0
    found = []
    for i, c in enumerate(code):
        if c == ";":
            header_start = i + 1
        elif c == "{":
            header = code[header_start:i]
            in_scope = all(entry[0] == "scope" for entry in stack)
            if SCOPE.search(header) and ")" not in header.split("(")[0]:
                stack.append(("scope", 0, ""))
            elif in_scope and ")" in header and "=" not in header.split("(")[0]:
                name = re.findall(r"([~\w:]+)\s*\(", header)
                first = code.count("\n", 0, header_start + len(header) - len(header.lstrip()))
                stack.append(("function", first, name[0] if name else "?"))
            else:
                stack.append(("block", 0, ""))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, first, name = stack.pop()
                if kind == "function":
                    last = code.count("\n", 0, i)
                    found.append((name, first + 1, last - first + 1))
            header_start = i + 1
    return found


def main(root):
    bad = []
    paths = [p for top in ("lib", "tools") for p in sorted((Path(root) / top).rglob("*"))]
    for path in paths:
        if path.suffix not in (".cpp", ".h"):
            continue
        text = path.read_text()
        lines = text.count("\n")
        rel = path.relative_to(root)
        if lines > MAX_FILE:
            bad.append(f"{rel}: {lines} lines (limit {MAX_FILE})")
        for name, line, length in functions(text):
            if length > MAX_FUNCTION:
                bad.append(f"{rel}:{line}: {name} is {length} lines (limit {MAX_FUNCTION})")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent))
