#!/usr/bin/env python3
"""Checks that the modules of src/ form the declared one-way layers.

Reads three things and compares them:
  - CMakeLists.txt: hbm_module(<name> <deps>...) gives each module's declared links;
  - the build's object files (nm): which file defines and which file uses each function;
  - #include lines of src/ and include/: which module's headers a file includes.
A public header include/hbm/<h>.h belongs to the module that defines the functions it
declares (a header declaring none belongs to the module of the same name).

Fails (exit 1) on: a module using one it does not declare, a declared link it does not use,
a cycle between modules, files that call each other (round a cycle of any length), and a
docs/ARCHITECTURE.md table row whose "depends on" differs from CMake. Usage: layering.py SOURCE_DIR BUILD_DIR
"""
import os
import re
import subprocess
import sys

# CMake link items that are not modules, as ARCHITECTURE.md names them.
SYSTEM_LIBS = {
    "PkgConfig::JANSSON": "jansson", "PkgConfig::PCRE2": "pcre2", "m": "libm",
    "${CMAKE_DL_LIBS}": "libdl", "${HBM_HTTPD}": "libmicrohttpd", "${HBM_TUI}": "ncurses",
    "crypt": "libcrypt",
}
TOP = "cli"  # the executable: may use every module, none may use it


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def cmake_modules(src):
    """Module -> (module deps, system libs), in declaration order."""
    text = re.sub(r"#[^\n]*", "", read(os.path.join(src, "CMakeLists.txt")))
    mods = {}
    for m in re.finditer(r"^\s*hbm_module\(\s*(\w+)([^)]*)\)", text, re.M):
        deps, libs = [], []
        for tok in m.group(2).split():
            if tok.startswith("hbm_"):
                deps.append(tok[4:])
            else:
                libs.append(SYSTEM_LIBS.get(tok, tok))
        mods[m.group(1)] = (deps, libs)
    for m in re.finditer(r"target_link_libraries\(\s*hbm_(\w+)\s+\w+([^)]*)\)", text):
        for tok in m.group(2).split():
            if tok.startswith("hbm_") and m.group(1) in mods:
                mods[m.group(1)][0].append(tok[4:])
    return mods


def objects(src, build):
    """src-relative path of each library/executable object file -> its path (objects left
    from sources that are gone are skipped)."""
    out = {}
    for root, _, files in os.walk(os.path.join(build, "CMakeFiles")):
        tgt = os.path.relpath(root, os.path.join(build, "CMakeFiles")).split(os.sep)[0]
        if not (tgt.startswith("hbm_") or tgt == "hbmctl.dir"):
            continue
        for f in files:
            if f.endswith(".c.o"):
                p = os.path.join(root, f)
                rel = os.path.relpath(p, os.path.join(build, "CMakeFiles", tgt))
                if rel.startswith("src" + os.sep) and os.path.isfile(os.path.join(src, rel[:-2])):
                    out[rel[:-2]] = p
    return out


def symbols(objs):
    """(defined: symbol -> file, used: file -> set of symbols). One nm over every object:
    a process per object cost more than the reading itself."""
    defined, used = {}, {rel: set() for rel in objs}
    if not objs:
        return defined, used
    rel_of = {path: rel for rel, path in objs.items()}
    res = subprocess.run(["nm", "-P", "-A", *objs.values()], capture_output=True, text=True,
                         check=True)
    for line in res.stdout.splitlines():
        path, _, rest = line.rpartition(": ")  # a symbol never holds ": ", a path may
        parts = rest.split()
        if path not in rel_of or len(parts) < 2:
            continue
        rel, name, kind = rel_of[path], parts[0], parts[1]
        if kind in ("U", "w", "v"):
            used[rel].add(name)
        elif kind in ("T", "D", "B", "R", "G", "S", "C", "V", "W"):
            defined[name] = rel
    return defined, used


def module_of(rel):
    parts = rel.split("/")
    return parts[1] if parts[0] == "src" and len(parts) > 2 else None


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
DECL = re.compile(r"\b(hbm_\w+)\s*\(")


def sources(src):
    for top in ("src", "include"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(root, f), src).replace(os.sep, "/")


def resolve(src, rel, inc):
    for cand in (os.path.join(os.path.dirname(rel), inc), "include/" + inc, "src/" + inc):
        cand = os.path.normpath(cand).replace(os.sep, "/")
        if os.path.isfile(os.path.join(src, cand)):
            return cand
    return None


def header_modules(src, defined, mods, errors):
    """include/hbm/<h>.h -> the module defining what it declares."""
    owner = {}
    for rel in sources(src):
        if not rel.startswith("include/"):
            continue
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", read(os.path.join(src, rel)), flags=re.S)
        found = {module_of(defined[n]) for n in DECL.findall(text) if n in defined}
        found.discard(None)
        name = os.path.splitext(os.path.basename(rel))[0]
        if len(found) > 1:
            errors.append(f"{rel}: declares functions of several modules: "
                          + ", ".join(sorted(found)))
        if found:
            owner[rel] = sorted(found)[0]
        elif name in mods:
            owner[rel] = name
        else:
            errors.append(f"{rel}: declares no function of any module and names none")
    return owner


def uses(src, objs, defined, used, owner):
    """(module -> {used module: example}, file-level call edges)."""
    mod_uses, file_edges = {}, {}
    for rel in sources(src):
        mod = module_of(rel) or owner.get(rel)
        for inc in INCLUDE.findall(read(os.path.join(src, rel))):
            tgt = resolve(src, rel, inc)
            tmod = tgt and (module_of(tgt) or owner.get(tgt))
            if mod and tmod and tmod != mod:
                mod_uses.setdefault(mod, {}).setdefault(tmod, f"{rel} includes {tgt}")
    for rel, names in used.items():
        for n in sorted(names):
            d = defined.get(n)
            if not d or d == rel:
                continue
            file_edges.setdefault(rel, {}).setdefault(d, n)
            if module_of(d) != module_of(rel):
                mod_uses.setdefault(module_of(rel), {}).setdefault(
                    module_of(d), f"{rel} calls {n} ({d})")
    return mod_uses, file_edges


def cycle(graph):
    """One cycle of a {node: iterable} graph as a list, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if not state.get(m):
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if not state.get(n):
            c = visit(n)
            if c:
                return c
    return None


def components(graph):
    """The strongly connected components of more than one node of a {node: iterable} graph
    (Tarjan's, iterative so a long chain does not hit Python's recursion limit)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def file_cycles(file_edges):
    """Files that call each other, directly or round a cycle of any length."""
    return components({a: set(outs) for a, outs in file_edges.items()})


def file_cycle_message(comp, file_edges):
    """Names one cycle through the component, each step with a function it calls."""
    inside = set(comp)
    c = cycle({a: set(file_edges.get(a, {})) & inside for a in comp})
    steps = ", ".join(f"{a} calls {file_edges[a][b]}" for a, b in zip(c, c[1:]))
    if len(comp) == 2:
        return f"{comp[0]} and {comp[1]} call each other: {steps}"
    return f"files call each other round a cycle: {' -> '.join(c)} ({steps})"


def doc_table(src, mods, errors):
    path = os.path.join(src, "docs", "ARCHITECTURE.md")
    rows = {}
    for line in read(path).splitlines():
        m = re.match(r"\|\s*`src/(\w+)/`\s*\|.*\|([^|]*)\|\s*$", line)
        if m:
            rows[m.group(1)] = {t.strip() for t in m.group(2).split(",") if t.strip()}
    for name, (deps, libs) in mods.items():
        want = set(deps) | set(libs)
        if name not in rows:
            errors.append(f"docs/ARCHITECTURE.md: no row for src/{name}/")
        elif rows[name] != want:
            errors.append(f"docs/ARCHITECTURE.md: src/{name}/ depends on "
                          f"{', '.join(sorted(rows[name])) or 'nothing'}, CMake says "
                          f"{', '.join(sorted(want)) or 'nothing'}")


def check(src, build):
    errors = []
    mods = cmake_modules(src)
    objs = objects(src, build)
    if not objs:
        return [f"{build}: no object files of src/ (build first)"]
    defined, used = symbols(objs)
    owner = header_modules(src, defined, mods, errors)
    mod_uses, file_edges = uses(src, objs, defined, used, owner)
    for mod in sorted(set(mods) | set(mod_uses)):
        if mod == TOP:
            continue
        if mod not in mods:
            errors.append(f"src/{mod}/: not a module in CMakeLists.txt")
            continue
        declared, actual = set(mods[mod][0]), mod_uses.get(mod, {})
        for m in sorted(set(actual) - declared):
            errors.append(f"src/{mod}/ uses {m} without declaring it: {actual[m]}")
        for m in sorted(declared - set(actual)):
            errors.append(f"src/{mod}/ declares {m} in CMakeLists.txt but does not use it")
    for mod, actual in sorted(mod_uses.items()):
        if TOP in actual and mod != TOP:
            errors.append(f"src/{mod}/ uses {TOP}: {actual[TOP]}")
    c = cycle({m: set(d) - {m} for m, d in mod_uses.items()})
    if c:
        errors.append("cycle between folders: " + " -> ".join(c))
    c = cycle({m: set(d[0]) for m, d in mods.items()})
    if c:
        errors.append("cycle in CMakeLists.txt links: " + " -> ".join(c))
    for comp in file_cycles(file_edges):
        errors.append(file_cycle_message(comp, file_edges))
    doc_table(src, mods, errors)
    return errors


def main():
    if len(sys.argv) != 3:
        print("usage: layering.py SOURCE_DIR BUILD_DIR", file=sys.stderr)
        return 2
    errors = check(sys.argv[1], sys.argv[2])
    for e in errors:
        print("layering: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
