#!/usr/bin/env python3
"""Generate src/python/layout_tables.inc from the headers of every installed CPython.

For each interpreter under $(pyenv root)/versions and in the Debian sid root that
scripts/debian-pythons makes (or the include directories given with --include), compile scripts/layout_probe.c against its headers with -DPy_BUILD_CORE, run it, and
emit one constexpr LayoutOffsets per minor version (from the first include directory of that minor:
pyenv's before Debian's). A few facts that are not in the installed
headers (the 3.6-3.10 dict keys object is private to Objects/) are added from EXTRA below.

  gen_layouts.py                 rewrite src/python/layout_tables.inc
  gen_layouts.py --check         regenerate the versions whose headers exist here and compare
                                 them with the committed file (exit 1 on a difference); headers
                                 of another patch release of a minor may differ in the struct
                                 sizes only (patch releases grow structs, offsets stay)
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = os.path.join(ROOT, "scripts", "layout_probe.c")
HEADER = os.path.join(ROOT, "include", "spyglass", "python", "layout.hpp")
OUTPUT = os.path.join(ROOT, "src", "python", "layout_tables.inc")

# Facts the installed headers do not expose. Keyed by (major, minor).
_DICT_KEYS_36_310 = dict(keys_size=8, keys_nentries=32, keys_indices=40, keys_entry_size=24)
EXTRA = {
    (2, 7): dict(module_dict=16),
    (3, 6): dict(module_dict=16, **_DICT_KEYS_36_310),
    (3, 7): dict(module_dict=16, **_DICT_KEYS_36_310),
    (3, 8): dict(module_dict=16, **_DICT_KEYS_36_310),
    (3, 9): dict(module_dict=16, **_DICT_KEYS_36_310),
    (3, 10): dict(module_dict=16, **_DICT_KEYS_36_310),
    (3, 11): dict(module_dict=16),
    (3, 12): dict(module_dict=16),
    (3, 13): dict(module_dict=16),
    (3, 14): dict(module_dict=16),
    (3, 15): dict(module_dict=16),
}
DEBIAN_ROOT = os.environ.get("SPYGLASS_DEBIAN_ROOT", "/var/cache/spyglass/debian-sid")


def field_names():
    text = open(HEADER).read()
    block = text[text.index("#define SPYGLASS_LAYOUT_FIELDS"):text.index("struct LayoutOffsets")]
    # clang-format may break a line inside "X(name)", leaving a backslash-newline in it.
    return re.findall(r"X\((?:\s|\\)*(\w+)(?:\s|\\)*\)", block)


def installed_include_dirs():
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                              check=True).stdout.strip() or root
    except (OSError, subprocess.CalledProcessError):
        pass
    dirs = []
    for version_dir in sorted(glob.glob(os.path.join(root, "versions", "*"))):
        for inc in glob.glob(os.path.join(version_dir, "include", "python[23]*")):
            if os.path.exists(os.path.join(inc, "Python.h")):
                dirs.append(inc)
    # Debian's release builds (not python3.Xd: a debug build differs in struct sizes only).
    if os.path.exists(os.path.join(DEBIAN_ROOT, ".spyglass-debian-pythons")):
        for inc in sorted(glob.glob(os.path.join(DEBIAN_ROOT, "usr", "include", "python3.*"))):
            if re.search(r"python3\.\d+$", inc) and os.path.exists(os.path.join(inc, "Python.h")):
                dirs.append(inc)
    return dirs


def probe(include_dir):
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "probe")
        # -idirafter: Debian's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>.
        subprocess.run(["gcc", "-w", "-I" + include_dir, "-idirafter",
                        os.path.dirname(include_dir), "-o", exe, PROBE], check=True)
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    values = {}
    for line in out.splitlines():
        name, value = line.split()
        values[name] = int(value)
    patch = subprocess.run(["gcc", "-E", "-dM", "-I" + include_dir, "-idirafter",
                            os.path.dirname(include_dir), "-x", "c", "-"],
                           input="#include <patchlevel.h>\n", capture_output=True, text=True,
                           check=True).stdout
    version = re.search(r'#define PY_VERSION "([^"]+)"', patch).group(1)
    major, minor = (int(x) for x in version.split(".")[:2])
    return (major, minor), version, values


def block_for(key, version, values, names):
    unknown = set(values) - set(names)
    if unknown:
        sys.exit("probe printed fields that layout.hpp does not declare: %s" % sorted(unknown))
    extra = EXTRA.get(key, {})
    lines = ["// --- %d.%d (from the %s headers)" % (key[0], key[1], version),
             "inline constexpr LayoutOffsets kOffsets_%d_%d = [] {" % key,
             "    LayoutOffsets o;"]
    for name in names:
        if name in values:
            lines.append("    o.%s = %d;" % (name, values[name]))
        elif name in extra:
            lines.append("    o.%s = %d; // not in the installed headers" % (name, extra[name]))
    lines += ["    return o;", "}();", ""]
    return "\n".join(lines)


def without_sizes(block):
    """The block without its header line and struct sizes: what another patch release keeps."""
    return [line for line in block.strip("\n").splitlines()[1:]
            if not re.match(r"\s*o\.\w+_size = ", line)]


def split_blocks(text):
    blocks = {}
    for match in re.finditer(r"// --- (\d+)\.(\d+) .*?\n\}\(\);\n", text, re.S):
        blocks[(int(match.group(1)), int(match.group(2)))] = match.group(0)
    return blocks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--include", action="append", help="a Python include directory")
    parser.add_argument("--output", default=OUTPUT)
    args = parser.parse_args()
    names = field_names()
    generated = {}  # the first include directory of each minor
    others = []  # (key, version, block) of further patch releases of a minor
    for inc in args.include or installed_include_dirs():
        key, version, values = probe(inc)
        block = block_for(key, version, values, names) + "\n"
        if key in generated:
            others.append((key, version, block))
        else:
            generated[key] = block

    if args.check:
        committed = split_blocks(open(args.output).read())
        status = 0
        for key in sorted(set(committed) | set(generated)):
            if key not in generated:
                print("%d.%d: headers not installed here, not checked" % key)
            elif key not in committed:
                print("%d.%d: missing from %s" % (key[0], key[1], args.output))
                status = 1
            elif committed[key].rstrip("\n") != generated[key].rstrip("\n"):
                print("%d.%d: DIFFERS from the headers; rerun scripts/gen_layouts.py" % key)
                status = 1
            else:
                print("%d.%d: matches the headers" % key)
        for key, version, block in others:
            if key in committed and without_sizes(committed[key]) != without_sizes(block):
                print("%d.%d: the %s headers differ in more than struct sizes" % (key + (version,)))
                status = 1
            elif key in committed:
                print("%d.%d: %s matches the table but for struct sizes" % (key + (version,)))
        return status

    if not generated:
        sys.exit("no CPython headers found (pyenv root/versions/*/include)")
    previous = split_blocks(open(args.output).read()) if os.path.exists(args.output) else {}
    previous.update(generated)  # keep versions whose headers are not installed here
    with open(args.output, "w") as out:
        out.write("// Generated by scripts/gen_layouts.py from the installed CPython headers.\n"
                  "// Do not edit: change scripts/layout_probe.c or the generator and rerun it.\n"
                  "// clang-format off\n\n")
        for key in sorted(previous):
            out.write(previous[key])
        out.write("// clang-format on\n")
    print("wrote %s: %s" % (args.output, ", ".join("%d.%d" % k for k in sorted(previous))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
