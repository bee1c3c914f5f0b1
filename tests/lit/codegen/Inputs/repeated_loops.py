"""Fails if an --emit=cpp output defines two loop functions that differ
only in the names of their temporaries and in their dropouts' sites (which
the emitter writes as one function), or one function twice."""
import re
import sys


def canonical(function):
    """The function's text with its temporaries renamed in order of
    appearance and dropout sites as a placeholder."""
    names = {}

    def rename(match):
        return names.setdefault(match.group(0), f"v{len(names)}")

    text = re.sub(r"\b(?:t|c|state)\d+\b", rename, function)
    return re.sub(r"(dropoutKeeps\(\w+), (?:\d+u|site\d+)", r"\1, SITE", text)


text = open(sys.argv[1]).read()
seen = {}
for function, rest in re.findall(r"\nvoid (fused\d+)(\(.*?\n\}\n)", text, re.S):
    key = canonical(rest)
    if key in seen:
        sys.exit(f"{function} is {seen[key]} again")
    seen[key] = function
print("ok")
