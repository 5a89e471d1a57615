#!/usr/bin/env python3
"""The build's layering, checked: a file in server/LAYER/ may include only headers of LAYER and
of the layers its library links (directly or through others), as server/CMakeLists.txt says.

    tests/ops/check_layers.py [REPO_ROOT]

Exits 1 and names every offending include. Directories of server/ without a layer library
(binaries such as the floor) may include anything.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
server = os.path.join(root, "server")
cmake = open(os.path.join(server, "CMakeLists.txt")).read()

layers = set(re.findall(r"^exchange_layer\((\w+)", cmake, re.M))
links = {layer: set() for layer in layers}
for target, deps in re.findall(r"target_link_libraries\(exchange-(\w+)\s+PUBLIC([^)]*)\)", cmake):
    if target in layers:
        links[target] |= {d for d in re.findall(r"exchange-(\w+)", deps) if d in layers}


def reachable(layer):
    seen, todo = set(), [layer]
    while todo:
        for dep in links[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen | {layer}


bad = []
checked = 0
for layer in sorted(layers):
    allowed = reachable(layer)
    folder = os.path.join(server, layer)
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".hpp", ".cpp")):
            continue
        checked += 1
        for n, line in enumerate(open(os.path.join(folder, name)), 1):
            m = re.match(r'\s*#include "(\w+)/', line)
            if m and m.group(1) in layers and m.group(1) not in allowed:
                bad.append(f"server/{layer}/{name}:{n}: {layer} includes {m.group(1)}, which "
                           f"exchange-{layer} does not link ({line.strip()})")

if not layers or checked == 0:
    sys.exit("check_layers: found no layer libraries in server/CMakeLists.txt")
for b in bad:
    print(b)
print(f"check_layers: {checked} files in {len(layers)} layers, {len(bad)} includes across the layering")
sys.exit(1 if bad else 0)
