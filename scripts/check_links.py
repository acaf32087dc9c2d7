#!/usr/bin/env python3
"""Check every relative link in the repository's Markdown files (issue 40: "every doc link resolves").

For each tracked *.md file (`git ls-files '*.md'` at the repository root, found from this script's place),
every relative link -- [text](target), ![alt](target), [ref]: target, <a href=...>, <img src=...> -- must
name a file or directory that git knows (tracked, or new and not ignored: a link into build/ is broken on
any other checkout), and a #anchor must be a heading of the target Markdown file under GitHub's rules
(lowercase; everything but letters, digits, spaces, - and _ dropped; each space a -; the second heading of
the same text gets -1, the third -2, ...) or an explicit <a name=...> / id=... anchor in it.
Links with a scheme (http:, https:, mailto:, ...) are not checked, nor anything inside fenced code blocks
or inline code.

Prints each broken link as `file:line: link: why`, then a summary line; exits 1 if any link is broken,
0 otherwise. Standard library only; any python3.

    python3 scripts/check_links.py            # the whole repository
    python3 scripts/check_links.py FILE.md    # only these files (paths from the repository root)
"""

import os
import re
import subprocess
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# ](target) or ](<target>), with an optional "title"; the text before it may span lines.
INLINE = re.compile(r"\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
HTMLATTR = re.compile(r"<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*(\"[^\"]*\"|'[^']*')", re.I)
ANCHOR_ATTR = re.compile(r"<[A-Za-z][^>]*?\b(?:name|id)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+)", re.I)


def git_files(*args):
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", *args], check=True,
                         stdout=subprocess.PIPE).stdout.decode("utf-8", "surrogateescape")
    return [p for p in out.split("\0") if p]


def blank(text, start, end):
    """text with [start, end) replaced by spaces, newlines kept (so offsets and line numbers stay)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def strip_fences(text):
    """Blank out fenced code blocks."""
    lines = text.split("\n")
    out, fence = [], None
    for line in lines:
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                out.append(" " * len(line))
                continue
            out.append(line)
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and \
                    line.strip().strip(fence[0]) == "":
                fence = None
            out.append(" " * len(line))
    return "\n".join(out)


def strip_code(text):
    """Blank out fenced code blocks and inline code spans."""
    text = strip_fences(text)
    # Inline code: a run of n backticks up to the next run of exactly n, not across a blank line.
    i = 0
    while True:
        m = re.compile(r"(?<!`)(`+)(?!`)").search(text, i)
        if not m:
            break
        n = len(m.group(1))
        close = re.compile(r"(?<!`)`{%d}(?!`)" % n).search(text, m.end())
        para_end = text.find("\n\n", m.end())
        if close and (para_end < 0 or close.start() < para_end):
            text = blank(text, m.start(), close.end())
            i = close.end()
        else:
            i = m.end()
    return text


def heading_text(raw):
    """The text GitHub renders for a heading's Markdown (what its anchor is made from)."""
    s = raw
    s = re.sub(r"!\[([^\]]*)\]\([^)]*\)", "", s)          # images: no text
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)        # links: their text
    s = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", s)       # reference links
    s = re.sub(r"<[^>]+>", "", s)                          # HTML tags
    s = s.replace("`", "")
    s = re.sub(r"(^|\W)_+([^_]+?)_+(?=\W|$)", r"\1\2", s)  # _emphasis_ (snake_case stays)
    return s


def slug(text):
    s = heading_text(text).strip().lower()
    s = "".join(c for c in s if c.isalnum() or c in "-_ " or c.isspace())
    return re.sub(r"\s", "-", s)


_anchor_cache = {}


def anchors(path):
    """Every anchor a Markdown file defines: its headings' slugs (with -1, -2 for repeats) and explicit ones."""
    if path in _anchor_cache:
        return _anchor_cache[path]
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = strip_fences(text).split("\n")
    found, seen = set(), {}

    def add(raw):
        base = slug(raw)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else "%s-%d" % (base, n))

    for i, line in enumerate(lines):
        m = ATX.match(line)
        if m and line.strip():
            add(m.group(2) or "")
            continue
        if i > 0 and SETEXT.match(line) and lines[i - 1].strip() and not ATX.match(lines[i - 1]) \
                and not (line.strip().startswith("-") and lines[i - 1].lstrip().startswith(("-", "*", "+", "|"))):
            add(lines[i - 1].strip())
    for m in ANCHOR_ATTR.finditer(strip_code(text)):
        found.add(m.group(1).strip("\"'"))
    _anchor_cache[path] = found
    return found


def links(text):
    """(offset, target) of every link in the text (code already blanked out)."""
    for m in INLINE.finditer(text):
        yield m.start(1), m.group(1)
    for m in REFDEF.finditer(text):
        yield m.start(1), m.group(1)
    for m in HTMLATTR.finditer(text):
        yield m.start(1), m.group(1).strip("\"'")


def main(argv):
    known = set(git_files("--cached", "--others", "--exclude-standard"))
    dirs = set()
    for p in known:
        d = os.path.dirname(p)
        while d and d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    sources = argv[1:] or git_files("*.md")
    broken = checked = 0
    for src in sources:
        with open(os.path.join(ROOT, src), encoding="utf-8", errors="replace") as f:
            text = strip_code(f.read())
        for offset, target in sorted(links(text)):
            raw = target
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1]
            if not target or SCHEME.match(target):
                continue
            checked += 1
            line = text.count("\n", 0, offset) + 1
            path, _, anchor = target.partition("#")
            path = urllib.parse.unquote(path.split("?", 1)[0])
            anchor = urllib.parse.unquote(anchor)
            if path:
                if path.startswith("/"):
                    dest = os.path.normpath(path.lstrip("/"))
                else:
                    dest = os.path.normpath(os.path.join(os.path.dirname(src), path))
                if dest.startswith(".."):
                    why = "points outside the repository"
                elif dest in known:
                    why = None
                elif dest in dirs or dest == ".":
                    why = None
                    if anchor:
                        readme = os.path.join(dest, "README.md") if dest != "." else "README.md"
                        dest = readme if readme in known else None
                elif os.path.exists(os.path.join(ROOT, dest)):
                    why = "%s exists here but git does not track it (ignored?)" % dest
                else:
                    why = "no file or directory %s" % dest
            else:
                dest, why = src, None
            if why is None and anchor and dest is not None:
                if not dest.endswith(".md"):
                    why = None  # anchors into source files (line numbers etc.) are not checked
                elif anchor not in anchors(dest):
                    why = "no heading or anchor #%s in %s" % (anchor, dest)
            if why:
                broken += 1
                print("%s:%d: %s: %s" % (src, line, raw, why))
    print("check_links: %d relative links in %d Markdown files, %d broken" % (checked, len(sources), broken))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
