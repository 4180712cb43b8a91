#!/usr/bin/env python3
"""Keeps one op table (issue 35, item 3; STYLE.md "No op-name lists outside src/ops.cpp's table").

Its op names are the op types of the table in src/ops.cpp (the rows of kRows, `{"Reshape", ...}`)
and every op of the ONNX spec (onnx.defs.get_all_schemas_with_history(), every domain and
version: an op the code names before the table has its row is still seen); the com.microsoft ops
the code names are rows of the table. It fails on every line of the C++ sources under src/ and
include/ outside that table that holds two or more of them as string literals: such a line lists
ops by hand (a set, an array, an if-chain), where it should ask the table's traits (ops.h). One
comparison naming one op (`op == "Softmax"`) is fine. Comments do not count; string literals are
read as the compiler reads them (escapes, raw strings), so an op named in a message counts as one.

    op_lists.py REPO      check the tree (prints file:line for each list)
    op_lists.py --self-test

Python 3 and its standard library, and the onnx package (Debian's python3-onnx, which CI
installs): without it the check fails, as it would not see the spec's ops.
"""
import os
import re
import sys

from tree import cpp_files

TABLE_FILE = "src/ops.cpp"
TABLE_START = re.compile(r"\bkRows\s*\[\s*\]\s*=\s*\{")
ROW = re.compile(r'^\s*\{\s*"([A-Za-z0-9_]+)"\s*,')


def table_rows(text):
    """(op names, first line, last line) of the kRows table in ops.cpp's text; the lines are
    1-based and inclusive. Raises ValueError when the table is not found."""
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if TABLE_START.search(l)), None)
    if start is None:
        raise ValueError("no kRows table")
    names = []
    for i in range(start + 1, len(lines)):
        if lines[i].strip().startswith("};"):
            return names, start + 1, i + 1
        m = ROW.match(lines[i])
        if m:
            names.append(m.group(1))
    raise ValueError("kRows table not closed")


def literals(text):
    """Per line (1-based), the contents of the string literals that start on it; comments,
    char literals and preprocessor lines are skipped (an #include's "path" is no op)."""
    out = {}
    i, n, line = 0, len(text), 1
    line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            line_start = True
            i += 1
            continue
        if line_start and c in " \t":
            i += 1
            continue
        if line_start and c == "#":
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    line += 1
                    i += 1
                i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif c == '"':
            first = line
            if re.search(r"\b(?:u8|u|U|L)?R$", text[max(0, i - 3):i]):  # R"delim( ... )delim"
                open_paren = text.find("(", i)
                delim = text[i + 1:open_paren]
                end = text.find(")" + delim + '"', open_paren)
                j = n if end < 0 else end + len(delim) + 2
                content = text[open_paren + 1:end if end >= 0 else n]
            else:
                j = i + 1
                while j < n and text[j] != '"' and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                content = text[i + 1:j]
                j = min(j + 1, n)
            line += text.count("\n", i, j)
            out.setdefault(first, []).append(content)
            i = j
        elif c == "'" and not digit_separator(text, i):
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = min(j + 1, n)
        else:
            i += 1
    return out


def digit_separator(text, i):
    """Whether the quote at i separates digits (1'000'000) rather than opening a char literal."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_'."):
        j -= 1
    return j < i and text[j].isdigit()


def lists_in(text, ops, skip=None):
    """(line, [op names]) of every line of text holding two or more op names as string literals,
    outside the lines `skip` (first, last) inclusive."""
    found = []
    for line, contents in sorted(literals(text).items()):
        if skip and skip[0] <= line <= skip[1]:
            continue
        named = [s for s in contents if s in ops]
        if len(named) >= 2:
            found.append((line, named))
    return found


def spec_ops():
    """The op types of the ONNX spec, every domain and version, from the onnx package. Raises
    ValueError when onnx cannot be imported."""
    try:
        import onnx.defs
    except ImportError as e:
        raise ValueError(f"cannot import onnx ({e}): install python3-onnx; without the spec's "
                         "op names the check would not see them") from e
    return {s.name for s in onnx.defs.get_all_schemas_with_history()}


def scan(repo):
    """(path, line, [op names]) of every list under src/ and include/, and the table's size and
    the number of op names the check knows (the table's and the spec's)."""
    with open(os.path.join(repo, TABLE_FILE), encoding="utf-8") as fh:
        rows, first, last = table_rows(fh.read())
    ops = set(rows) | spec_ops()
    out = []
    for rel, text in cpp_files(repo):
        skip = (first, last) if rel == TABLE_FILE else None
        for line, named in lists_in(text, ops, skip):
            out.append((rel, line, named))
    return out, len(set(rows)), len(ops)


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        found, size, known = scan(argv[1])
    except ValueError as e:
        print(f"FAIL: {e}")
        return 1
    print(f"op table: {size} ops; op names known with the ONNX spec's: {known}; "
          f"lines outside the table that list two or more: {len(found)}")
    for path, line, named in found:
        print(f"{path}:{line}: lists {', '.join(named)}: ask the op table's traits (src/ops.h)")
    return 1 if found else 0


def self_test():
    """Each case can fail: the rows, lines and verdicts are worked by hand from the snippets."""
    errors = []

    def expect(what, got, want):
        if got != want:
            errors.append(f"{what}: got {got!r}, want {want!r}")

    table = '''// ops.cpp
constexpr Row kRows[] = {
    {"Reshape", Trait::LayoutOnly, ShapeRule::Reshape},
    {"Add", Trait::Arithmetic},  // a comment
    {"Mul", Trait::Arithmetic},
    {"Softmax", Trait::Softmax},
};
bool f(std::string_view op) { return op == "Add" || op == "Mul"; }
'''
    names, first, last = table_rows(table)
    expect("rows", (names, first, last), (["Reshape", "Add", "Mul", "Softmax"], 2, 7))
    ops = set(names)
    # The table's own lines are skipped; line 8 below it lists two.
    expect("ops.cpp", lists_in(table, ops, (first, last)), [(8, ["Add", "Mul"])])

    snippet = r'''#include "Add"
// {"Add", "Mul"} in a comment is no list
/* "Add" "Mul"
   "Softmax" "Reshape" */
if (op == "Softmax") return 1;                       // one op: fine
if (op == "Add"sv || op == "Mul"sv) return 2;        // a list (line 6)
const char* s = "Add, Mul";                          // one literal that names no op
for (const char* o : {"Reshape",
                      "Add", "Mul"}) {}              // line 9 lists two
auto r = R"x("Add" "Mul")x"; char c = '"'; auto q = "Mul";
int big = 1'000'000; auto t = "Add" "Softmax";       // line 11: two literals
auto u = "add"; auto w = "Mul";                      // case-sensitive: one op
'''
    got = lists_in(snippet, ops)
    expect("lists", got, [(6, ["Add", "Mul"]), (9, ["Add", "Mul"]), (11, ["Add", "Softmax"])])
    try:
        table_rows("int x;\n")
        errors.append("a missing table: no error")
    except ValueError:
        pass

    # An op of the spec that is not in the table (Einsum, Loop, CumSum: ai.onnx) is an op name all
    # the same; a com.microsoft op (MoE) is one only as a row of the table.
    try:
        spec = spec_ops()
    except ValueError as e:
        errors.append(str(e))
        spec = set()
    expect("spec ops", {o: o in spec for o in ("Einsum", "Loop", "CumSum", "Add", "MoE", "Addd")},
           {"Einsum": True, "Loop": True, "CumSum": True, "Add": True, "MoE": False, "Addd": False})
    known = ops | spec
    spec_lines = '''if (op == "Loop"sv || op == "Scan"sv) return;   // line 1: two of the spec, none of the table
if (op == "Einsum"sv || op == "Add"sv) return;  // line 2: one of each
if (op == "MoE"sv || op == "Add"sv) return;     // line 3: MoE is no op of the table or the spec
'''
    expect("spec lists", lists_in(spec_lines, known), [(1, ["Loop", "Scan"]), (2, ["Einsum", "Add"])])
    expect("table only", lists_in(spec_lines, ops), [])

    for e in errors:
        print("FAIL: " + e)
    print("self-test: " + ("failed" if errors else "passed"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
