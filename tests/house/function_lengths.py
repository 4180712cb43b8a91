#!/usr/bin/env python3
"""Keeps functions short (issue 35, item 2; STYLE.md "A function is one step").

Finds every function body in the C++ sources under src/ and include/ of the repository (brace
matching that skips comments, string and char literals, raw strings and preprocessor lines),
prints the ones over 80 lines, and fails when one is over 150 lines or more than MOST_OVER_80
are over 80. A body's length is counted from the line of its `{` to the line of its `}`.

    function_lengths.py REPO      check the tree
    function_lengths.py --self-test

Python 3, standard library only.
"""
import os
import re
import sys

from tree import cpp_files

SOFT_LIMIT = 80
HARD_LIMIT = 150

# How many functions may be over SOFT_LIMIT lines: the house's rule (issue 35) is at most 5.
MOST_OVER_80 = 5

# Data tables: a function whose body is a list of rows may be long. Neither limit counts them.
# (path relative to the repository, function name)
TABLES = {
    ("src/families.cpp", "families"),  # a list of rows: one Family per model family
    ("src/findings.cpp", "rules"),     # a list of rows: one Rule (id, severity, text) per finding rule
}

# Functions over HARD_LIMIT that a split in progress is allowed to leave for a while; they count
# toward MOST_OVER_80 but not against HARD_LIMIT. Empty: every function is within HARD_LIMIT.
PENDING_SPLITS = set()

CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "noexcept",
           "static_assert", "defined"}
QUALIFIERS = re.compile(r"(\s*(const|volatile|noexcept(\s*\(\s*\w*\s*\))?|override|final|mutable|&&|&))*\s*$")


QUALIFIERS_AFTER_PAREN = re.compile(r"\)" + QUALIFIERS.pattern)


def blank(text):
    """The text with comments, string and char literals, raw strings and preprocessor lines
    replaced by spaces (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            m = re.search(r'(?:\b(?:u8|u|U|L)?R)$', text[max(0, i - 3):i])
            if m:  # a raw string: R"delim( ... )delim"
                open_paren = text.find("(", i)
                delim = text[i + 1:open_paren]
                end = text.find(")" + delim + '"', open_paren)
                j = n if end < 0 else end + len(delim) + 2
            else:
                j = i + 1
                while j < n and text[j] != '"' and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and not digit_separator(text, i):
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def digit_separator(text, i):
    """Whether the quote at i separates digits (1'000'000) rather than opening a char literal."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_'."):
        j -= 1
    return j < i and text[j].isdigit()


def function_name(header):
    """The name of the function whose header (the code before its `{`) this is, or None when
    the brace opens no function body (a namespace, class, initializer, control statement)."""
    h = init_list_cut(header)
    h = re.sub(r"->[^(){};]*$", "", h)  # a trailing return type
    h = h[:QUALIFIERS.search(h).start()]
    if not h.endswith(")"):
        return None
    depth = 0
    for k in range(len(h) - 1, -1, -1):  # the parenthesis that opens the parameter list
        if h[k] == ")":
            depth += 1
        elif h[k] == "(":
            depth -= 1
            if depth == 0:
                break
    else:
        return None
    before = h[:k].rstrip()
    if before.endswith("]"):
        return "lambda"
    m = re.search(r"(operator\s*\(\s*\)|operator\s*[^\w\s(]+|[\w:~]+)$", before)
    if not m:
        return None
    name = m.group(1)
    if name.split("::")[-1] in CONTROL:
        return None
    return re.sub(r"\s+", "", name)


def init_list_cut(header):
    """The header without a constructor's member initialiser list (`) : a_(x), b_{y}`)."""
    depth = 0
    for k, c in enumerate(header):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ":" and depth == 0 and header[k - 1:k] != ":" and header[k + 1:k + 2] != ":":
            before = header[:k]
            if QUALIFIERS_AFTER_PAREN.search(before):
                return before
    return header


def functions(text):
    """(name, first line, length in lines) of every function body outside another one."""
    code = blank(text)
    found = []
    stack = []  # per open brace: "fn", "init" or "other"
    header = []
    line = 1
    start = 0
    name = None
    for ch in code:
        if ch == "\n":
            line += 1
        if ch == "{":
            in_fn = "fn" in stack
            h = "".join(header)
            if not in_fn and re.search(r"\)\s*:[^;]*[\w>]\s*$", h):
                stack.append("init")  # a member initialised with braces in a constructor's list
                header.append("{")
                continue
            fn = None if in_fn else function_name(h)
            if fn:
                stack.append("fn")
                start, name = line, fn
            else:
                stack.append("other")
            header = []
        elif ch == "}":
            kind = stack.pop() if stack else "other"
            if kind == "fn":
                found.append((name, start, line - start + 1))
            if kind == "init":
                header.append("}")
                continue
            header = []
        elif ch == ";":
            header = []
        else:
            header.append(ch)
    return found


def scan(repo):
    """(path, name, line, length) of every function under src/ and include/."""
    out = []
    for rel, text in cpp_files(repo):
        for name, line, length in functions(text):
            out.append((rel, name, line, length))
    return out


def check(found, most_over_80=MOST_OVER_80, tables=TABLES, pending=PENDING_SPLITS):
    """The failures (empty when the tree keeps the limits) and the report lines."""
    report, failures = [], []
    long = sorted((f for f in found if f[3] > SOFT_LIMIT and (f[0], f[1]) not in tables), key=lambda f: -f[3])
    for path, name, line, length in long:
        report.append(f"{length:5d} {path}:{line} {name}")
        if length > HARD_LIMIT and (path, name) not in pending:
            failures.append(f"{path}:{line} {name} is {length} lines, over {HARD_LIMIT}")
    if len(long) > most_over_80:
        failures.append(f"{len(long)} functions are over {SOFT_LIMIT} lines, more than {most_over_80}")
    return failures, report


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    failures, report = check(scan(argv[1]))
    print(f"functions over {SOFT_LIMIT} lines (data tables excepted): {len(report)}, at most {MOST_OVER_80}")
    for r in report:
        print(r)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


def body(lines):
    return "\n".join(f"  x{i} = 1;" for i in range(lines - 2))


def self_test():
    """Each case can fail: the lengths, names and verdicts are worked by hand from the snippet."""
    errors = []

    def expect(what, got, want):
        if got != want:
            errors.append(f"{what}: got {got!r}, want {want!r}")

    # A 5-line function, a class with an inline 3-line member and a constructor with a braced
    # member initialiser, a namespace, a table of rows and braces inside comments and literals.
    snippet = r'''namespace a {
// int fake() {
/* void fake2() { */
int f(int x) {
  if (x) { return 1; }
  const char* s = "}{";
  return '}' + 1'000;
}
struct S {
  S(int v) : v_{v}, w_(v) {
    v_ = 2;
  }
  int get() const noexcept { return v_; }
  int v_, w_;
};
const int table[] = {1, 2, 3};
auto raw = R"x(} void g() {)x";
#define BAD(x) { x }
auto h() -> int {
  auto l = [&](int y) { return y; };
  return l(1);
}
}  // namespace a
'''
    got = functions(snippet)
    expect("functions", got, [("f", 4, 5), ("S", 10, 3), ("get", 13, 1), ("h", 19, 4)])

    # A long body is counted from `{` to `}`; a function over 150 fails, one over 80 counts.
    long_text = "void big() {\n" + body(151) + "\n}\nvoid mid() {\n" + body(81) + "\n}\nvoid ok() {\n" + body(80) + "\n}\n"
    got = functions(long_text)
    expect("lengths", [(n, l) for n, _, l in got], [("big", 151), ("mid", 81), ("ok", 80)])
    found = [("src/x.cpp", n, s, l) for n, s, l in got]
    failures, report = check(found, most_over_80=5, tables=set(), pending=set())
    expect("over 150 fails", len(failures), 1)
    expect("report", [r.split()[-1] for r in report], ["big", "mid"])
    failures, _ = check(found, most_over_80=1, tables=set(), pending=set())
    expect("too many over 80", len(failures), 2)
    failures, report = check(found, most_over_80=1, tables={("src/x.cpp", "big")}, pending=set())
    expect("a table is excepted", (failures, len(report)), ([], 1))
    failures, _ = check(found, most_over_80=2, tables=set(), pending={("src/x.cpp", "big")})
    expect("a pending split passes the hard limit", failures, [])

    for e in errors:
        print("FAIL: " + e)
    print("self-test: " + ("failed" if errors else "passed"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
