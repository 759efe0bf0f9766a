#!/usr/bin/env python3
"""Fails when a layer includes the headers of a layer it may not use (docs/architecture.md).

  check_layers.py [ROOT]

Every file under src/<layer>/ and include/spyglass/<layer>/ is read; its
#include "spyglass/<other>/<header>" lines must name <layer> itself, a layer in
ALLOWED[<layer>], or that one header ("<other>/<header>") in ALLOWED[<layer>].
"""
import os
import re
import sys

ALLOWED = {
    "process": set(),
    "python": {"process"},
    "model": set(),
    "native": {"process"},
    # The sampling thread (capture) and the resolver thread (resolve) meet only in handoff.
    # A label source (label_source.hpp) follows model's rules for a label's name and value.
    "handoff": {"process", "python", "model/labels.hpp"},
    "capture": {"process", "python", "model", "native", "handoff"},
    "resolve": {"process", "python", "model", "native", "handoff"},
    "sampling": {"process", "python", "model", "native", "handoff", "capture", "resolve"},
    "output": {"model"},
    # The readers read what output/ writes: the raw format (its header and its byte-level
    # codec) and the labels profiles are written with; nothing else of output/.
    "input": {"model", "output/raw.hpp", "output/raw_codec.hpp", "output/writer.hpp"},
    # A comparison of two profiles, by the labels they are shown with.
    "analysis": {"model", "output/writer.hpp"},
    # Where record's outputs go (the sink graph, window files, --push) and how every output
    # file is written: by output's writers, of model's profiles and windows.
    "delivery": {"model", "output"},
    "cli": {"process", "python", "model", "native", "handoff", "capture", "resolve", "sampling",
            "output", "input", "analysis", "delivery"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"spyglass/(([a-z_]+)/[^"]*)"')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    problems = []
    for base in (os.path.join(root, "src"), os.path.join(root, "include", "spyglass")):
        for layer in sorted(os.listdir(base)):
            directory = os.path.join(base, layer)
            if not os.path.isdir(directory):
                continue
            if layer not in ALLOWED:
                problems.append("%s: a layer check_layers.py does not know" % directory)
                continue
            for folder, _, files in os.walk(directory):
                for name in sorted(files):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        for number, line in enumerate(f, 1):
                            match = INCLUDE.match(line)
                            if not match:
                                continue
                            header, other = match.group(1), match.group(2)
                            if other != layer and other not in ALLOWED[layer] and \
                                    header not in ALLOWED[layer]:
                                problems.append("%s:%d: the %s layer may not include %s" % (
                                    os.path.relpath(path, root), number, layer, header))
    for problem in problems:
        print("check_layers: " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
