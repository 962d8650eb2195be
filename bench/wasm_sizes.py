#!/usr/bin/env python3
"""Where the wasm's bytes are: section sizes, and code bytes per crate and per function.

Needs a wasm that kept its name section (`PROFILING=1 bash scripts/build.sh`, or `make profile`); a stripped
one is still split by section. Usage: python3 bench/wasm_sizes.py build/index_bg.wasm [TOP]
Names are Rust's mangled (`_ZN…`/`_R…`) or demangled symbols; a function is counted under the crate its
path starts with (generic code instantiated in our crate for a dependency's type counts under the path the
compiler gave it).
"""
import re
import sys
from collections import Counter


def leb(b, i):
    out = shift = 0
    while True:
        x = b[i]
        i += 1
        out |= (x & 0x7F) << shift
        shift += 7
        if x < 0x80:
            return out, i


def name_str(b, i):
    n, i = leb(b, i)
    return b[i : i + n].decode("utf-8", "replace"), i + n


SECTIONS = {0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory", 6: "global",
            7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "datacount"}


def crate_of(name):
    m = re.match(r"_ZN(?:\d+_\$LT\$)?(\d+)([A-Za-z_][A-Za-z0-9_]*)", name)
    if m:
        return m.group(2)[: int(m.group(1))]
    m = re.match(r"<?&?(?:mut )?([A-Za-z_][A-Za-z0-9_]*)::", name)
    if m:
        return m.group(1)
    return "(unnamed: " + name.split("(")[0][:30] + ")" if name else "(no name)"


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    b = open(path, "rb").read()
    i = 8
    sections = Counter()
    imported_fns = 0
    bodies = []
    names = {}
    while i < len(b):
        sid = b[i]
        size, j = leb(b, i + 1)
        end = j + size
        label = SECTIONS.get(sid, str(sid))
        if sid == 0:
            cname, k = name_str(b, j)
            label = f"custom {cname}"
            if cname == "name":
                while k < end:
                    sub, k = b[k], k + 1
                    sub_size, k = leb(b, k)
                    if sub == 1:
                        n, m = leb(b, k)
                        for _ in range(n):
                            idx, m = leb(b, m)
                            names[idx], m = name_str(b, m)
                    k += sub_size
        elif sid == 2:
            n, k = leb(b, j)
            for _ in range(n):
                _, k = name_str(b, k)
                _, k = name_str(b, k)
                kind, k = b[k], k + 1
                if kind == 0:
                    _, k = leb(b, k)
                    imported_fns += 1
                elif kind == 1:
                    k += 1
                    flags, k = leb(b, k)
                    _, k = leb(b, k)
                    if flags & 1:
                        _, k = leb(b, k)
                elif kind == 2:
                    flags, k = leb(b, k)
                    _, k = leb(b, k)
                    if flags & 1:
                        _, k = leb(b, k)
                elif kind == 3:
                    k += 2
                else:
                    k += 2
        elif sid == 10:
            n, k = leb(b, j)
            for f in range(n):
                s, k2 = leb(b, k)
                bodies.append((imported_fns + f, k2 - k + s))
                k = k2 + s
        sections[label] += end - i
        i = end
    print(f"{path}: {len(b)} bytes")
    for label, size in sections.most_common():
        print(f"{size:>10}  {100 * size / len(b):5.1f} %  {label}")
    if not names:
        print("\n(no name section: build with PROFILING=1 for per-crate sizes)")
        return
    code = sum(s for _, s in bodies)
    crates = Counter()
    fns = Counter()
    for idx, s in bodies:
        name = names.get(idx, "")
        crates[crate_of(name)] += s
        fns[name] += s
    print(f"\ncode bytes by crate ({code} in {len(bodies)} functions)")
    for c, s in crates.most_common(top):
        print(f"{s:>10}  {100 * s / code:5.1f} %  {c}")
    print(f"\nlargest {top} functions")
    for f, s in fns.most_common(top):
        print(f"{s:>10}  {f[:160]}")


if __name__ == "__main__":
    main()
