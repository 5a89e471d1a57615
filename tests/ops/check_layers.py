#!/usr/bin/env python3
"""The build's layering, checked: a file in server/LAYER/ may include only headers of LAYER and
of the layers its library links (directly or through others), as server/CMakeLists.txt says,
and the CMake links themselves keep the edges the architecture names (docs/ARCHITECTURE.md):

    tests/ops/check_layers.py [REPO_ROOT]

Exits 1 and names every offending include or link. Directories of server/ without a layer
library (the binaries' cli/ and floor/) may include anything.
"""
import os
import re
import sys

# Layers (or external libraries, by their CMake names) a layer must never reach, whatever
# server/CMakeLists.txt says: the edges the architecture forbids. A concurrency model knows what
# it serves only through serving/ (a Handler and a MetricsSink), so it builds without the
# exchange's state, the store or libpqxx; net hands payloads to a dispatch function and knows
# nothing of the app's rooms; store keeps request bytes as received and knows nothing of
# protocol; auth (principals, keys, the logon throttle) sits just above util, so net and app may
# both ask it; leadership (the writer lock, lease, fencing token, takeover) sits on util and libpq
# alone, and store's writes carry its fencing token. The app's rooms (ROOMS): lifecycle (the
# shutdown) sits on util alone; the request gates and observability sit below app, side by side,
# and neither reaches the store, leadership or libpq (observability not the engine or protocol
# either: it counts what it is told); app chains the gates to the durability core, reports to
# observability, and sees the shutdown only as a util::StopFlag; none reaches net or
# concurrency.
PQ = {"PkgConfig::PQXX", "PkgConfig::PQ"}
ROOMS = {"lifecycle", "gates", "observability", "app"}
MUST_NOT_REACH = {
    "util": {"market", "protocol", "store", "serving", "net", "concurrency"} | ROOMS | PQ,
    "auth": {"market", "protocol", "store", "serving", "net", "concurrency"} | ROOMS | PQ,
    "market": {"protocol", "store", "serving", "net", "concurrency"} | ROOMS | PQ,
    "protocol": {"store", "serving", "net", "concurrency"} | ROOMS | PQ,
    "leadership": {"market", "protocol", "store", "serving", "net", "concurrency",
                   "PkgConfig::PQXX"} | ROOMS,
    "store": {"protocol", "serving", "net", "concurrency"} | ROOMS,
    "serving": {"market", "protocol", "store", "net", "concurrency"} | ROOMS | PQ,
    "lifecycle": {"auth", "market", "protocol", "leadership", "store", "serving", "net",
                  "concurrency"} | (ROOMS - {"lifecycle"}) | PQ,
    "gates": {"leadership", "store", "net", "concurrency"} | (ROOMS - {"gates"}) | PQ,
    "observability": {"market", "protocol", "leadership", "store", "net", "concurrency"}
                     | (ROOMS - {"observability"}) | PQ,
    "app": {"net", "concurrency", "lifecycle"},
    "net": {"store", "serving", "concurrency"} | ROOMS | PQ,
    "concurrency": {"store"} | ROOMS | PQ,
}
# Headers of external libraries, by the CMake name of the library that provides them.
EXTERNAL_HEADERS = {"pqxx/": "PkgConfig::PQXX", "libpq-fe.h": "PkgConfig::PQ"}

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
server = os.path.join(root, "server")
cmake = open(os.path.join(server, "CMakeLists.txt")).read()
cmake = re.sub(r"#[^\n]*", "", cmake)  # comments name layers too

layers = set(re.findall(r"^exchange_layer\((\w+)", cmake, re.M))
links = {layer: set() for layer in layers}
for target, deps in re.findall(
        r"target_link_libraries\(exchange-(\w+)\s+(?:PUBLIC|INTERFACE)([^)]*)\)", cmake):
    if target in layers:
        for dep in deps.split():
            m = re.fullmatch(r"exchange-(\w+)", dep)
            if m:
                if m.group(1) in layers:
                    links[target].add(m.group(1))
            else:
                links[target].add(dep)  # an external library (PkgConfig::PQXX, Boost::thread)


def reachable(layer):
    seen, todo = set(), [layer]
    while todo:
        for dep in links.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen | {layer}


bad = []
missing = sorted(set(MUST_NOT_REACH) - layers)
if missing:
    bad.append(f"server/CMakeLists.txt: no layer library for {', '.join(missing)}")
for layer in sorted(layers):
    if layer not in MUST_NOT_REACH:
        bad.append(f"tests/ops/check_layers.py: say what layer {layer} must not reach "
                   f"(MUST_NOT_REACH)")
        continue
    for dep in sorted(reachable(layer) & MUST_NOT_REACH[layer]):
        bad.append(f"server/CMakeLists.txt: exchange-{layer} links {dep} (directly or through "
                   f"another layer), which the layering forbids")

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
            m = re.match(r"\s*#include <([^>]+)>", line)
            if m:
                for prefix, lib in EXTERNAL_HEADERS.items():
                    if m.group(1).startswith(prefix) and lib not in allowed:
                        bad.append(f"server/{layer}/{name}:{n}: {layer} includes a header of "
                                   f"{lib}, which exchange-{layer} does not link "
                                   f"({line.strip()})")

if not layers or checked == 0:
    sys.exit("check_layers: found no layer libraries in server/CMakeLists.txt")
for b in bad:
    print(b)
print(f"check_layers: {checked} files in {len(layers)} layers, {len(bad)} problems")
sys.exit(1 if bad else 0)
